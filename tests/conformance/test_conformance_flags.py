"""`forge conformance`'s pytest-grade flags (issue 29, item 4): `-x` /
`--exitfirst`, `--maxfail N`, `--lf` (the cases that failed last time, from
the failure database), `-q` and `--collect-only`; a run they stop early
says so above the summary line, and in the JSON report."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance import schemas
from forge.conformance.case import DEFAULT_CASES_DIR


@pytest.fixture
def cases(tmp_path):
    """The example cases, two of them broken: checked-join and two-tasks
    fail, leak-check passes (the ids run in that order)."""
    root = tmp_path / "cases"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", root / "examples")
    two = root / "examples" / "two-tasks.toml"
    two.write_text(two.read_text().replace('result = "alpha text + beta text"',
                                           'result = "beta text + alpha text"'))
    join = root / "examples" / "checked-join.toml"
    join.write_text(join.read_text().replace('outcome = "ok"', 'outcome = "failed"'))
    return root


def forge(cases, tmp_path, *args):
    return CliRunner().invoke(main, ["conformance", "--cases", str(cases), "--database",
                                     str(tmp_path / "db"), *args])


def test_two_of_the_three_fail(cases, tmp_path):
    result = forge(cases, tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "1 passed, 2 failed, 0 errored, 0 skipped"


@pytest.mark.parametrize("flags", [["-x"], ["--exitfirst"], ["--maxfail", "1"]])
def test_exitfirst_stops_at_the_first_failure_and_says_so(cases, tmp_path, flags):
    report = tmp_path / "r.json"
    result = forge(cases, tmp_path, *flags, "--json", str(report))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[-2] == "stopped after 1 failing case (--maxfail 1): 2 of 3 cases not run"
    assert lines[-1] == "0 passed, 1 failed, 0 errored, 0 skipped"
    data = json.loads(report.read_text())
    assert schemas.violations("report", data) == []
    assert data["stopped"].startswith("stopped after 1 failing case")
    assert len(data["cases"]) == 1


def test_maxfail_two_runs_until_the_second_failure(cases, tmp_path):
    result = forge(cases, tmp_path, "--maxfail", "2")
    assert result.exit_code == 1
    assert "stopped after 2 failing cases (--maxfail 2)" not in result.stdout  # all ran
    assert result.stdout.splitlines()[-1] == "1 passed, 2 failed, 0 errored, 0 skipped"


def test_lf_runs_what_failed_last_time_then_all_once_fixed(cases, tmp_path):
    forge(cases, tmp_path)
    listed = forge(cases, tmp_path, "--lf", "--collect-only")
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == ["examples/checked-join", "examples/two-tasks",
                                          "2 cases selected"]
    assert "--lf: running the 2 cases that failed last time" in listed.output
    # Fix one; --lf runs the two, and then only the one still failing.
    two = cases / "examples" / "two-tasks.toml"
    two.write_text(two.read_text().replace('result = "beta text + alpha text"',
                                           'result = "alpha text + beta text"'))
    again = forge(cases, tmp_path, "--lf")
    assert again.stdout.splitlines()[-1] == "1 passed, 1 failed, 0 errored, 0 skipped"
    assert forge(cases, tmp_path, "--lf", "--collect-only").stdout.splitlines() == [
        "examples/checked-join", "1 case selected"]
    # Another engine (--impl) keeps its own list: nothing failed there yet.
    other = forge(cases, tmp_path, "--lf", "--collect-only", "--impl", "forge impl-serve")
    assert other.stdout.splitlines()[-1] == "3 cases selected"
    assert "no case of this selection failed last time; running all of them" in other.output


def test_quiet_leaves_out_the_clause_tally(cases, tmp_path):
    loud, quiet = forge(cases, tmp_path), forge(cases, tmp_path, "-q")
    assert "per clause" in loud.stdout and "clauses cited" in loud.stdout
    assert "per clause" not in quiet.stdout and "clauses cited" not in quiet.stdout
    assert "FAIL examples/two-tasks" in quiet.stdout
    assert quiet.stdout.splitlines()[-1] == loud.stdout.splitlines()[-1]


def test_collect_only_runs_nothing(cases, tmp_path):
    result = forge(cases, tmp_path, "-k", "leak", "--collect-only")
    assert (result.exit_code, result.stdout) == (0, "examples/leak-check\n1 case selected\n")
    assert not (tmp_path / "db" / "conformance").exists()


def test_ctrl_c_reports_what_ran_and_exits_130(cases, tmp_path, monkeypatch):
    """Ctrl-C during the second case: the first's result, the line saying the
    run was interrupted and how many cases did not run, then exit 130."""
    from forge.conformance import adapters

    real = adapters.InProcessAdapter.run
    calls = []

    def run(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(adapters.InProcessAdapter, "run", run)
    result = forge(cases, tmp_path)
    assert result.exit_code == 130, result.output
    lines = result.stdout.splitlines()
    assert lines[-2] == "interrupted (Ctrl-C): 2 of 3 cases not run"
    assert lines[-1] == "0 passed, 1 failed, 0 errored, 0 skipped"
