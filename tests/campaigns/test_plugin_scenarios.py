"""The pytest plugin explores a lifecycle scenario inside a user's test: a
failure prints the shrunk schedule step by step and the exact `forge replay`
command, writes the replay file beside the test's output, and that command,
pasted into a shell, reproduces the failure (kit: pytest-plugin).

The inner runs are subprocesses (`runpytest_subprocess`): the lifecycle
manager declares its variation sites on import, once per process.
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess

import pytest

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[2]
FINISHERS = ROOT / "examples" / "lifecycle" / "two-finishers.scenario.toml"
PLUGIN = [] if any(e.value == "forge.pytest_plugin" for e in
                   importlib.metadata.entry_points(group="pytest11")) \
    else ["-p", "forge.pytest_plugin"]


def _wrong_scenario(pytester: pytest.Pytester) -> pathlib.Path:
    """two-finishers expecting only `completed`: the schedules where the
    failure report wins break it."""
    text = FINISHERS.read_text(encoding="utf-8").replace(
        'final_status = ["completed", "failed"]', 'final_status = ["completed"]')
    path = pytester.path / "wrong.scenario.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_passing_scenario_passes_and_returns_its_outcome(pytester):
    pytester.makepyfile(f"""
        def test_finishers(forge_explore):
            out = forge_explore({str(FINISHERS)!r})
            assert out.failure is None and out.runs == 9
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "--forge-runs", "9")
    result.assert_outcomes(passed=1)


def test_a_failing_scenario_reports_and_its_command_reproduces(pytester, tmp_path):
    _wrong_scenario(pytester)
    replay_dir = tmp_path / "replays"
    pytester.makepyfile("""
        import pytest

        @pytest.mark.forge_explore(runs=30)
        def test_wrong(forge_explore):
            forge_explore("wrong.scenario.toml")
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider",
                                           "--forge-replay-dir", str(replay_dir))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "forge: a schedule of the lifecycle scenario" in out
    assert "problem: task 1 ended failed, not one of completed" in out
    assert "finalize t2 r3 failed -> failed r3 attempt 1" in out
    replays = list(replay_dir.glob("*.replay.json"))
    assert len(replays) == 1 and f"replay file: {replays[0]}" in out
    command = re.search(r"reproduce with:\n\s+(forge replay .+)\n", out).group(1)
    # pasted into a shell, from anywhere: the paths are absolute
    shell = subprocess.run(["bash", "-c", command.replace("forge ", "python3 -m forge ", 1)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert shell.returncode == 1, shell.stderr
    assert "FAILED: task 1 ended failed, not one of completed" in shell.stdout


def test_the_summary_lists_the_race_outcomes_reached_and_require_fails_a_test(pytester):
    """A scenario's race outcomes (forge.lifecycle.probes) are summed into the
    session's probe summary, and `require=` fails a scenario that never reached
    its probe (lifecycle.finalize.single-winner, lifecycle.restart.fails-working)."""
    pytester.makepyfile(f"""
        def test_finishers(forge_explore):
            out = forge_explore({str(FINISHERS)!r}, require=["finalize-cas-lost"])
            assert out.probes["finalize-cas-lost"] > 0

        def test_no_sweep(forge_explore):
            forge_explore({str(FINISHERS)!r}, require=["sweep-failed-orphan"])
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "--forge-runs", "9")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*never reached the required probe(s) sweep-failed-orphan*",
                                 "*forge probes*", "probes reached: finalize-cas-lost *",
                                 "never reached: *sweep-failed-orphan*"])
