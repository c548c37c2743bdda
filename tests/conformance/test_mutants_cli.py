"""`forge mutants` on the command line, and naming a mutant (kit: mutants-cli).

The catalogue can be listed (the ids `FORGE_MUTANT` takes); `-k` selects as
in `forge conformance` (a regular expression; an invalid one or an empty
selection is bad input); cases load as the suite loads them; flag refusals
are worded as every other command's; a report file refused at write time
names its flag.
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance.case import DEFAULT_CASES_DIR
from forge.conformance.mutants import CATALOGUE
from forge.conformance.serve import switch_mutant
from forge.errors import InputError


def forge(*args):
    return CliRunner().invoke(main, list(args))


def test_list_prints_every_mutant_id_without_running_any():
    """`--list`: one line per mutant, its id first; `--json -` the same as JSON."""
    listed = forge("mutants", "--list")
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [m.id for m in CATALOGUE]
    as_json = forge("mutants", "--list", "--json", "-")
    rows = json.loads(as_json.stdout)["mutants"]
    assert [r["id"] for r in rows] == [m.id for m in CATALOGUE]
    assert set(rows[0]) == {"id", "category", "description", "site", "equivalent"}


def test_k_is_a_regular_expression_as_in_conformance():
    """`-k '^tie-'` selects by regex (a substring would also match `..-tie-..`);
    repeated, any of them."""
    listed = forge("mutants", "--list", "-k", "^tie-", "-k", "^ids-one-based$")
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    assert ids and all(i.startswith("tie-") or i == "ids-one-based" for i in ids)
    assert "ids-one-based" in ids


@pytest.mark.parametrize("args, message", [
    (["-k", "nosuch"], "forge: no mutant matches the selection (-k); `forge mutants --list` "
                       "lists them\n"),
    (["-k", "["], "forge: -k must be a regular expression (unterminated character set at "
                  "position 0), got '['\n"),
    (["--workers", "0"], "forge: --workers must be at least 1, got 0\n"),
    (["--list", "--seeds", "3", "--workers", "2"],
     "forge: --seeds, --workers: --list runs nothing (it takes -k, --json)\n"),
])
def test_bad_selections_and_flags_are_one_line_and_exit_2(args, message):
    """Nothing runs: an empty selection exits 2 (it scored 0/0 = 100% before),
    and flag rules are worded as in `forge conformance`."""
    result = forge("mutants", *args)
    assert (result.exit_code, result.stderr) == (2, message)


def test_a_mutant_id_not_in_the_catalogue_gets_the_nearest():
    """FORGE_MUTANT=join-any-last-end names the flag's variable and suggests the id."""
    with pytest.raises(InputError) as refused:
        with switch_mutant("join-any-last-end"):
            pass
    assert refused.value.render() == (
        "FORGE_MUTANT: no mutant is named 'join-any-last-end' (did you mean "
        "`join-any-last-ended`?); `forge mutants --list` lists them")


def test_cases_citing_unknown_clauses_are_refused_as_conformance_refuses_them(tmp_path):
    """`--cases DIR` loads through the catalogue, like `forge conformance`: a case
    citing unknown clause ids stops the run before any mutant, naming them all."""
    root = tmp_path / "cases"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", root / "examples")
    bad = root / "examples" / "bad.toml"
    bad.write_text('clauses = ["tasks.not-a-clause", "tasks.wait.join-entri"]\n'
                   'prompt = "# P"\n')
    result = forge("mutants", "--cases", str(root), "-k", "^tie-goes-to-timeout$")
    assert result.exit_code == 2
    assert result.stderr == (
        f"forge: {bad}:1: clause: unknown clause ids `tasks.not-a-clause`, "
        "`tasks.wait.join-entri` (not in the catalogue) (did you mean "
        "`tasks.wait.join-entries`?)\n")


def test_a_report_refused_at_write_time_names_its_flag(monkeypatch, tmp_path):
    """`--json FILE` that the system refuses when written: `forge: --json: FILE: ...`."""
    from forge.conformance import cli

    def refuse(path, text):
        raise InputError("cannot write this file: No space left on device", file=path)

    monkeypatch.setattr(cli, "write_output", refuse)
    out = tmp_path / "m.json"
    result = forge("mutants", "--list", "--json", str(out))
    assert result.exit_code == 2
    assert result.stderr == f"forge: --json: {out}: cannot write this file: No space left on " \
                            "device\n"
