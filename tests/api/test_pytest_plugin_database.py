"""The pytest plugin keeps the failure database and draws a fresh first seed,
as `forge explore` does (issue 29, item 3; kit: failure-database): a failing
schedule is kept (`.forge` in the rootdir, `--forge-database DIR` or
`FORGE_DATABASE`) and runs first next session, and is dropped once it
passes; with no seed set, each session draws one and the failure says it;
every failure prints a one-line reproduction that needs no file, which, run
as printed, fails the same way."""

from __future__ import annotations

import re
import shlex
import shutil

import pytest

from forge.sim.strategies import DEFAULT
from tests.api.test_pytest_plugin import PLUGIN, RACE, TWO

pytest_plugins = ["pytester"]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", *args)


def _failing_seed(out: str) -> int:
    return int(re.search(r"drawn at seed (\d+)", out).group(1))


def _problems(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith("problem: ")]


@pytest.fixture
def racy_test(pytester):
    prompt = pytester.path / "store-race.md"
    shutil.copy(RACE, prompt)
    pytester.makepyfile(test_race=f"""
        def test_order(forge_explore):
            forge_explore({str(prompt)!r}, args="2", expect_result="alpha beta gamma")
    """)
    return prompt


def test_a_drawn_seed_is_said_and_the_fileless_line_fails_the_same(pytester, racy_test,
                                                                    monkeypatch):
    monkeypatch.delenv("FORGE_START_SEED", raising=False)
    first = _run(pytester, "--forge-database", "none")
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    seed = re.search(r"first seed (\d+) \(drawn; --forge-seed \1 repeats these schedules\)",
                     out)
    assert seed is not None, out
    line = re.search(r"or, with no file:\n\s+(pytest .*)", out).group(1)
    words = shlex.split(line)
    assert words[:2] == ["pytest", "test_race.py::test_order"]
    # A PCT member's failure names the horizon its session had learned.
    learned = words[6:8] if words[6] == "--forge-pct-horizon" else []
    assert words[2:] == ["--forge-seed", str(_failing_seed(out)), "--forge-runs", "1",
                         *learned, "--forge-database", "none"]
    again = _run(pytester, *words[1:])
    again.assert_outcomes(failed=1)
    assert _problems(again.stdout.str()) == _problems(out)
    assert f"(after 1 of 1 {DEFAULT} schedules" in again.stdout.str()


def test_a_failure_is_kept_run_first_and_dropped_once_fixed(pytester, racy_test):
    db = pytester.path / "db"
    first = _run(pytester, "--forge-database", str(db))
    first.assert_outcomes(failed=1)
    assert len(list(db.rglob("*.replay.json"))) == 1
    again = _run(pytester, "--forge-database", str(db), "--forge-seed", "123456")
    again.assert_outcomes(failed=1)
    assert "failed again: a failure an earlier run kept in the failure database" in \
        again.stdout.str()
    assert _problems(again.stdout.str()) == _problems(first.stdout.str())
    # The prompt now gives what the test expects on every schedule.
    racy_test.write_text(racy_test.read_text().replace("return table.concat(order, ' ')",
                                                       "return 'alpha beta gamma'"))
    fixed = _run(pytester, "--forge-database", str(db))
    fixed.assert_outcomes(passed=1)
    assert not list(db.rglob("*.replay.json"))


def test_the_database_defaults_to_the_rootdir(pytester, racy_test, monkeypatch):
    monkeypatch.delenv("FORGE_DATABASE", raising=False)
    _run(pytester).assert_outcomes(failed=1)
    assert len(list((pytester.path / ".forge").rglob("*.replay.json"))) == 1
    assert (pytester.path / ".forge" / ".gitignore").read_text().endswith("*\n")


def test_dev_pins_the_first_seed_and_default_draws_one(pytester, monkeypatch):
    monkeypatch.delenv("FORGE_START_SEED", raising=False)
    pytester.makepyfile("def test_nothing(): pass")
    assert "first seed 0" in _run(pytester, "--forge-profile", "dev").stdout.str()
    assert "a fresh first seed" in _run(pytester, "--forge-profile", "ci").stdout.str()


def test_a_hypothesis_profile_is_reused_not_copied(pytester, monkeypatch):
    """`pytest --hypothesis-profile NAME` (issue 29, item 7): the schedules an
    exploration runs are the profile's `max_examples`, and `derandomize`
    pins the first seed to 0, with no forge profile of that name.  (In a
    subprocess: a Hypothesis profile loaded in this one would stay loaded for
    the kit's own Hypothesis tests.)"""
    pytest.importorskip("hypothesis")
    monkeypatch.delenv("FORGE_START_SEED", raising=False)
    pytester.makeconftest("""
        from hypothesis import settings
        settings.register_profile("quick", max_examples=7, derandomize=True)
        settings.register_profile("wide", max_examples=9, derandomize=False)
    """)
    pytester.makepyfile(f"""
        def test_two(forge_explore):
            report = forge_explore({str(TWO)!r}, expect_result="alpha text + beta text")
            assert report.runs == 7
    """)
    def _sub(pytester, *args):
        return pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", *args)

    result = _sub(pytester, "--hypothesis-profile", "quick")
    result.assert_outcomes(passed=1)
    assert f"forge: profile quick, Hypothesis's (7 runs, {DEFAULT} strategy, first seed 0)" \
        in result.stdout.str()
    wide = _sub(pytester, "--hypothesis-profile", "wide")
    wide.assert_outcomes(failed=1)      # 9 runs, not 7
    assert f"forge: profile wide, Hypothesis's (9 runs, {DEFAULT} strategy, a fresh first " \
        "seed)" in wide.stdout.str()
    # A forge profile picked by name beats the Hypothesis one.
    forge_own = _sub(pytester, "--hypothesis-profile", "wide", "--forge-profile", "dev")
    assert "forge: profile dev (20 runs" in forge_own.stdout.str()


def test_a_hypothesis_profile_loaded_in_a_conftest_is_reused(pytester, monkeypatch):
    """Hypothesis's usual way to pick a profile, `settings.load_profile(...)`
    in a conftest with no command-line flag, sets the plugin's schedules and
    first seed too, as it sets the examples Hypothesis tries."""
    pytest.importorskip("hypothesis")
    monkeypatch.delenv("FORGE_START_SEED", raising=False)
    pytester.makeconftest("""
        from hypothesis import settings
        settings.register_profile("quick", max_examples=7, derandomize=True)
        settings.load_profile("quick")
    """)
    pytester.makepyfile(f"""
        def test_two(forge_explore):
            assert forge_explore({str(TWO)!r}, expect_result="alpha text + beta text").runs == 7
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert f"forge: profile quick, Hypothesis's (7 runs, {DEFAULT} strategy, first seed 0)" \
        in result.stdout.str()


def test_the_three_front_ends_keep_one_database(pytester, racy_test):
    """The command line, `forge.explore` and the plugin draw with one default
    strategy (`forge.sim.strategies.DEFAULT`) and key a campaign alike, so a
    failure one of them kept runs first in the others, and a fix drops it
    for all three."""
    import json

    from click.testing import CliRunner

    import forge
    from forge.cli import main

    db = pytester.path / "db"
    flags = ("--args", "2", "--expect-result", "alpha beta gamma", "--database", str(db))
    found = CliRunner().invoke(main, ["explore", str(racy_test), *flags, "--start-seed", "0",
                                      "--replay-out", str(pytester.path / "r.json")])
    assert found.exit_code == 1, found.output
    kept = list(db.rglob("*.replay.json"))
    assert len(kept) == 1
    report = forge.explore(racy_test, args="2", expect_result="alpha beta gamma", database=db,
                           start_seed=1000)
    assert report.strategy == DEFAULT
    assert report.runs == 0 and report.failures[0].problems
    assert json.loads(kept[0].read_text())["failure"]["problems"] == \
        list(report.failures[0].problems)
    plugin = _run(pytester, "--forge-database", str(db))
    plugin.assert_outcomes(failed=1)
    assert "failed again: a failure an earlier run kept in the failure database" in \
        plugin.stdout.str()
    racy_test.write_text(racy_test.read_text().replace("return table.concat(order, ' ')",
                                                       "return 'alpha beta gamma'"))
    again = CliRunner().invoke(main, ["explore", str(racy_test), *flags, "--start-seed", "0",
                                      "--runs", "5"])
    assert again.exit_code == 0, again.output
    assert not list(db.rglob("*.replay.json"))


def test_a_coverage_failure_s_line_reruns_its_lane(pytester, racy_test):
    """Under `--forge-strategy coverage` a run's schedule grows from the
    corpus of its lane's earlier seeds: the line explores the lane again
    from its first seed up to the failing one, and fails the same way."""
    from forge.sim.strategies import lookup

    lane = lookup("coverage").chunk
    first = _run(pytester, "--forge-database", "none", "--forge-strategy", "coverage",
                 "--forge-seed", "3", "--forge-runs", "500")
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    failing = _failing_seed(out)
    start = 3 + (failing - 3) // lane * lane
    words = shlex.split(re.search(r"or, with no file:\n\s+(pytest .*)", out).group(1))
    assert words[2:8] == ["--forge-seed", str(start), "--forge-runs", str(failing - start + 1),
                          "--forge-strategy", "coverage"]
    again = _run(pytester, *words[1:])
    again.assert_outcomes(failed=1)
    assert _failing_seed(again.stdout.str()) == failing
    assert _problems(again.stdout.str()) == _problems(out)
