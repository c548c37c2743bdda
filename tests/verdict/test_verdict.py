"""The default verdict (`forge.verdict`): a schedule whose run ends failed or
cancelled fails the campaign unless the user says what they expect; one rule
for `forge explore`, `forge replay`, the API and the pytest plugin
(kit: default-verdict).

`racy.md` raises on the schedules where Beta ends first; `same-file.md`
ends failed with a `Determinism` error on every schedule (three tasks write
one store file).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

import forge
from forge.cli import main
from forge.errors import InputError
from forge.runspec import Expectation
from forge.verdict import Verdict
from tests.api.test_pytest_plugin import PLUGIN
from tests.conftest import EXAMPLES

HERE = pathlib.Path(__file__).parent
RACY = str(HERE / "racy.md")
SAME_FILE = str(HERE / "same-file.md")


def forge_cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_prompt_where_some_schedules_raise_fails_with_no_flags(tmp_path):
    """No flag: exit 1, a replay file, the error in the problem, and the one
    flag that accepts the ending; the replay file fails again on its own."""
    out = tmp_path / "r.json"
    result = forge_cli("explore", RACY, "--runs", "50", "--replay-out", str(out))
    assert result.exit_code == 1, result.output
    assert "FAILED at seed" in result.output
    assert "the run ended failed with a Lua error:" in result.output
    assert "Beta ended first" in result.output
    assert "accept it with --expect-error Lua (or any ending with --allow-failed)" \
        in result.output
    replayed = forge_cli("replay", str(out))
    assert replayed.exit_code == 1, replayed.output
    assert "Beta ended first" in replayed.output


def test_the_racy_prompt_passes_with_allow_failed_and_its_outcomes_are_mixed():
    result = forge_cli("explore", RACY, "--runs", "50", "--allow-failed", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.splitlines()[-1])
    assert report["outcomes"]["failed"] > 0 and report["outcomes"]["ok"] > 0
    assert report["accept"] is None


@pytest.mark.parametrize("flags", [["--expect-error", "Determinism"],
                                   ["--expect-outcome", "failed"], ["--allow-failed"]])
def test_a_prompt_expected_to_fail_passes_with_one_flag(flags):
    """Every schedule ends failed with a Determinism error: each one flag accepts it."""
    assert forge_cli("explore", SAME_FILE, "--runs", "10").exit_code == 1
    result = forge_cli("explore", SAME_FILE, "--runs", "10", *flags)
    assert result.exit_code == 0, result.output
    assert "outcomes: 10 failed" in result.output


def test_an_expectation_the_ending_breaks_names_both():
    wrong_kind = forge_cli("explore", SAME_FILE, "--runs", "10", "--expect-error", "Lua")
    assert wrong_kind.exit_code == 1
    assert "the run ended failed with a Determinism error: store determinism violation" \
        in wrong_kind.output
    assert "expected error kind Lua (--expect-error)" in wrong_kind.output
    ok_run = forge_cli("explore", str(EXAMPLES / "two-tasks.md"), "--runs", "5",
                       "--expect-outcome", "failed")
    assert ok_run.exit_code == 1
    assert "the run ended ok; expected it to end failed (--expect-outcome)" in ok_run.output


@pytest.mark.parametrize("flags, flag", [
    (["--allow-failed", "--expect-error", "Lua"], "--allow-failed"),
    (["--expect-outcome", "ok", "--expect-error", "Lua"], "--expect-error"),
    (["--expect-error", "not a kind"], "--expect-error"),
    (["--expect-outcome", "maybe"], "--expect-outcome"),
])
def test_contradicting_or_bad_flags_are_one_line_exit_2(flags, flag):
    result = forge_cli("explore", RACY, "--runs", "5", *flags)
    assert result.exit_code == 2, result.output
    assert flag in result.output and "Traceback" not in result.output


def test_faults_may_end_a_run_cancelled_by_default():
    """A fault plan is asked to end runs: its cancelled runs pass the verdict."""
    result = forge_cli("explore", str(EXAMPLES / "checked-join.md"), "--runs", "20",
                       "--faults", "cancel")
    assert result.exit_code == 0, result.output
    assert "cancelled" in result.output


def test_the_api_follows_the_rule():
    report = forge.explore(RACY, runs=50)
    assert not report.ok
    assert report.failures[0].observation.outcome == "failed"
    assert forge.explore(RACY, runs=50, allow_failed=True).ok
    assert forge.explore(SAME_FILE, runs=5, expect_error="Determinism").ok
    with pytest.raises(InputError, match="explore: expect_outcome: an outcome is one of"):
        forge.explore(RACY, runs=5, expect_outcome="maybe")


def test_the_rule_is_recorded_and_a_record_from_before_it_allows_any_ending():
    expect = Expectation(ending=Verdict.of(error="Lua"))
    assert Expectation.from_json(expect.to_json()) == expect
    legacy = {k: v for k, v in expect.to_json().items() if k != "ending"}
    assert Expectation.from_json(legacy).ending == Verdict(allow_failed=True)
    with pytest.raises(InputError, match=r"\$\.expect\.ending"):
        Verdict.from_json({"outcome": "ok", "error": "Lua", "allow_failed": False})
    check = Verdict().check()
    assert check({"outcome": "ok"}) == []
    assert check({"outcome": "cancelled"}) == ["the run ended cancelled"]
    # a crash is no_crash's to report, whatever is allowed
    assert Verdict().check()({"outcome": "crashed", "error": {}}) == []


PLUGIN_TEST = """
def test_racy(forge_explore):
    forge_explore({racy!r}, runs=50)

def test_racy_accepted(forge_explore):
    forge_explore({racy!r}, runs=50, allow_failed=True)
"""


def test_the_pytest_plugin_fails_the_test_and_names_the_keyword(tmp_path):
    (tmp_path / "test_p.py").write_text(PLUGIN_TEST.format(racy=RACY), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *PLUGIN, "test_p.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "accept it with expect_error='Lua' (or any ending with allow_failed=True)" \
        in done.stdout
