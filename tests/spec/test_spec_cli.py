"""`forge spec` on the command line (kit: spec-cli).

`-k` selects clauses as `forge conformance -k` selects cases (regular
expressions, repeatable; an empty selection is bad input); the listing's
flags are refused before a subcommand, which would ignore them; `coverage
--cases` takes one case file as the suite does, and refuses what the suite
refuses; `render`'s default folder is shown in its help.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance.case import DEFAULT_CASES_DIR

TWO_TASKS = DEFAULT_CASES_DIR / "examples" / "two-tasks.toml"


def forge(*args):
    return CliRunner().invoke(main, list(args))


def test_k_is_a_repeatable_regular_expression():
    """Two anchored patterns select the clauses either matches, and only those."""
    result = forge("spec", "--json", "-k", r"^tasks\.wait\.join-entries$", "-k",
                   r"^tasks\.glance\.example-two-tasks$")
    assert result.exit_code == 0, result.output
    assert [c["id"] for c in json.loads(result.stdout)] == [
        "tasks.glance.example-two-tasks", "tasks.wait.join-entries"]


@pytest.mark.parametrize("args, message", [
    (["-k", "no-clause-says-this"], "forge: no clause matches the selection (-k / --feature)\n"),
    (["--feature", "tasks", "render", "out"],
     "forge: --feature: a flag of the `forge spec` listing, which `forge spec render` would "
     "ignore (`forge spec render --help` lists its own flags, given after its name)\n"),
    (["-k", "wait", "--json", "coverage"],
     "forge: -k, --json: a flag of the `forge spec` listing, which `forge spec coverage` would "
     "ignore (`forge spec coverage --help` lists its own flags, given after its name)\n"),
])
def test_selections_and_flags_that_would_do_nothing_are_refused(args, message, tmp_path):
    """One line, exit 2, and nothing written."""
    result = CliRunner().invoke(main, ["spec", *[str(tmp_path / a) if a == "out" else a
                                                for a in args]])
    assert (result.exit_code, result.stderr.replace(str(tmp_path / "out"), "out")) == \
        (2, message)
    assert not (tmp_path / "out").exists()


def test_coverage_takes_one_case_file():
    """`--cases FILE` as in `forge conformance`: the file's clauses count as covered."""
    result = forge("spec", "coverage", "--cases", str(TWO_TASKS), "--feature", "tasks", "--json")
    assert result.exit_code == 1, result.output     # one case leaves most clauses uncovered
    tasks = json.loads(result.stdout)["tasks"]
    assert "tasks.glance.example-two-tasks" not in tasks["uncovered"]
    assert tasks["covered"] >= 1


def test_coverage_refuses_every_case_citing_unknown_clauses(tmp_path):
    """The suite's loading: each malformed case file on its own line, exit 2."""
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "c.toml").write_text('clauses = ["tasks.nope"]\nprompt = "# P"\n')
    result = forge("spec", "coverage", "--cases", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"forge: {tmp_path / name / 'c.toml'}:1: clause: unknown clause id `tasks.nope` "
        "(not in the catalogue)" for name in ("a", "b")]


def test_render_shows_where_it_writes_by_default():
    """Without OUT_DIR it writes docs/spec under the current folder; --help says so."""
    text = " ".join(forge("spec", "render", "--help").stdout.split())
    assert "[OUT_DIR]" in text and "OUT_DIR defaults to docs/spec, under the current folder" in text
