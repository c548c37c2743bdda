"""`forge conformance` on the command line (conformance.cli)."""

import json
import shutil

import pytest
from click.testing import CliRunner

from forge.conformance import schemas
from forge.conformance.case import DEFAULT_CASES_DIR
from forge.cli import main


@pytest.fixture
def cases(tmp_path):
    """A copy of the shipped example cases, to edit."""
    root = tmp_path / "cases"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", root / "examples")
    return root


def forge(*args):
    return CliRunner().invoke(main, list(args))


def test_the_shipped_suite_passes_on_the_reference_engine(tmp_path):
    """Default cases, in-process engine: exit 0 and the summary line last; the
    JSON report validates against its schema and lists every schedule run."""
    report = tmp_path / "r.json"
    result = forge("conformance", "--json", str(report), "--workers", "2")
    assert result.exit_code == 0, result.output
    last = result.stdout.splitlines()[-1]
    assert last.endswith(" passed, 0 failed, 0 errored, 0 skipped")
    data = json.loads(report.read_text())
    assert schemas.violations("report", data) == []
    assert sum(len(c["schedules"]) for c in data["cases"]) > 4000
    assert data["implementation"]["name"] == "forge reference engine (in-process)"
    assert data["coverage"]["tasks"]["covered"] > 0


def test_a_failing_case_exits_1_with_a_diff(cases):
    """A wrong expectation fails the run and is shown with a diff."""
    path = cases / "examples" / "two-tasks.toml"
    path.write_text(path.read_text().replace('result = "alpha text + beta text"',
                                             'result = "beta text + alpha text"'))
    result = forge("conformance", "--cases", str(cases), "-k", "two-tasks")
    assert result.exit_code == 1
    assert "FAIL examples/two-tasks [canonical schedule]" in result.stdout
    assert '-  "result": "beta text + alpha text"' in result.stdout
    assert result.stdout.splitlines()[-1] == "0 passed, 1 failed, 0 errored, 0 skipped"


def test_expectations_and_junit(cases, tmp_path):
    """A declared skip is not run; the JUnit report is written."""
    known = tmp_path / "known.json"
    known.write_text('{"examples/leak-check": "skip"}')
    junit = tmp_path / "r.xml"
    result = forge("conformance", "--cases", str(cases), "--expectations", str(known),
                   "--junit", str(junit))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed, 0 errored, 1 skipped"
    assert '<skipped message="skipped by the expectations file"' in junit.read_text()


def test_a_malformed_case_is_one_line_and_exit_2(cases):
    """Bad input anywhere in the suite: one line naming the file and rule, exit code 2."""
    bad = cases / "examples" / "bad.toml"
    bad.write_text('clauses = ["tasks.not-a-clause"]\nprompt = "# P"\n')
    result = forge("conformance", "--cases", str(cases))
    assert result.exit_code == 2
    assert result.stderr == (f"forge: {bad}:1: clause: unknown clause id `tasks.not-a-clause` "
                             "(not in the catalogue)\n")
    bad.write_text('clauses = ["tasks.wait.join-entrie"]\nprompt = "# P"\n')
    result = forge("conformance", "--cases", str(cases))
    assert result.exit_code == 2
    assert result.stderr.endswith("(did you mean `tasks.wait.join-entries`?)\n")


def test_every_unknown_clause_id_of_a_case_is_named_in_its_line(cases):
    """Not only the first: each unknown id, then the nearest known ones (kit: cases.load)."""
    bad = cases / "examples" / "bad.toml"
    bad.write_text('clauses = ["tasks.glance.example-two-tasks", "tasks.nope",\n'
                   '           "tasks.wait.join-entrie"]\nprompt = "# P"\n')
    result = forge("conformance", "--cases", str(cases))
    assert result.exit_code == 2
    assert result.stderr == (f"forge: {bad}:1: clause: unknown clause ids `tasks.nope`, "
                             "`tasks.wait.join-entrie` (not in the catalogue) (did you mean "
                             "`tasks.wait.join-entries`?)\n")


def test_a_fuzz_case_refused_at_write_time_names_its_flag(monkeypatch, tmp_path):
    """`--fuzz-case FILE` refused when written: `forge: --fuzz-case: FILE: ...`, after
    the difference is shown (kit: conformance.flags)."""
    pytest.importorskip("hypothesis")
    import sys

    from forge.conformance import cli, fuzz
    from forge.errors import InputError

    class Level2:
        level = 2

        def __init__(self, argv, timeout, **limits):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    found = fuzz.Difference("## Main\n", (), {"outcome": "ok", "result": "a", "logs": []},
                            {}, ("result: reference \"a\" != implementation \"b\"",))

    def refuse(path, text):
        raise InputError("cannot write this file: No space left on device", file=path)

    monkeypatch.setattr(fuzz, "fuzz", lambda *a, **k: fuzz.FuzzReport(1, 0, 0.1, found))
    monkeypatch.setattr("forge.conformance.adapters.SubprocessAdapter", Level2)
    monkeypatch.setattr(cli, "write_output", refuse)
    out = tmp_path / "f.toml"
    result = forge("conformance", "--impl", sys.executable, "--fuzz", "1", "--fuzz-case", str(out))
    assert result.exit_code == 2
    assert "DIFFERENT from the reference" in result.stdout
    assert result.stderr == (f"forge: --fuzz-case: {out}: cannot write this file: No space left "
                             "on device\n")


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "forge: --workers must be at least 1, got 0\n"),
    (["--timeout", "0"], "forge: --timeout must be a positive number of seconds, got 0\n"),
    (["--impl", "no-such-engine-here --flag"],
     "forge: --impl: no such command `no-such-engine-here`\n"),
    (["--impl", "'unbalanced"], "forge: --impl: cannot split the command line: No closing quotation\n"),
    (["-k", "no-case-is-called-this"], "forge: no case matches the selection (-k / --features)\n"),
    # (kit: conformance.flags) a pattern is a regex, never a substring fallback
    (["-k", "["], "forge: -k must be a regular expression (unterminated character set at "
                  "position 0), got '['\n"),
    (["--catalogue", "/nonexistent"], "forge: --catalogue: /nonexistent: no clause catalogue "
                                      "here (expected spec/*.toml files)\n"),
    # flags the chosen mode would ignore
    (["--fuzz", "2", "--json", "out.json", "-k", "x", "--workers", "2"],
     "forge: -k, --workers, --json: not for --fuzz, which takes only --impl, --seed, "
     "--fuzz-case, --known-differences, --timeout, --max-run-seconds, --max-decisions\n"),
    (["--fuzz", "2", "--dump-cases"], "forge: --dump-cases: not for --fuzz, which takes only "
                                      "--impl, --seed, --fuzz-case, --known-differences, "
                                      "--timeout, --max-run-seconds, "
                                      "--max-decisions\n"),
    (["--seed", "3"], "forge: --seed: for --fuzz only, which is not given\n"),
    (["--fuzz-case", "f.toml", "-k", "two-tasks"],
     "forge: --fuzz-case: for --fuzz only, which is not given\n"),
])
def test_bad_flags_are_one_line_and_exit_2(args, message):
    """Flag values the suite cannot use are reported in one line, exit code 2."""
    result = forge("conformance", *args)
    assert (result.exit_code, result.stderr) == (2, message)


def test_dump_cases_prints_the_selection():
    """--dump-cases lists the selected cases as JSON without running them."""
    result = forge("conformance", "--dump-cases", "-k", "^examples/leak-check$")
    assert result.exit_code == 0
    assert [c["id"] for c in json.loads(result.stdout)] == ["examples/leak-check"]


def test_help_has_examples():
    """The help shows how to point the suite at another engine."""
    result = forge("conformance", "--help")
    assert "forge conformance --impl 'node my-engine.js'" in result.output
    assert "forge conformance --impl 'forge impl-serve'" in forge("impl-serve", "--help").output
