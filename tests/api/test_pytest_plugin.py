"""The pytest plugin, run in pytest's own `pytester`: marker, fixtures, options, profiles,
and a failure report whose command, pasted into a shell, reproduces the failure."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib

import pytest

import forge.conformance.oracles  # noqa: F401 - see below
import forge.api
import forge.sim.exhaustive  # noqa: F401

pytest_plugins = ["pytester"]

# pytester's in-process runs drop the modules they import when they end; the
# kit's variation sites refuse to be declared twice, so everything the inner
# runs use is imported here first, and survives them.
forge.api.run_prompt(pathlib.Path(__file__).resolve().parents[2] / "examples" / "two-tasks.md")

ROOT = pathlib.Path(__file__).resolve().parents[2]
RACE = ROOT / "examples" / "explore" / "store-race.md"
TWO = ROOT / "examples" / "two-tasks.md"


def _installed() -> bool:
    return any(e.value == "forge.pytest_plugin"
               for e in importlib.metadata.entry_points(group="pytest11"))


#: Load the plugin by hand only where the environment's install predates its entry point.
PLUGIN = [] if _installed() else ["-p", "forge.pytest_plugin"]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", *args)


def test_the_entry_point_names_the_plugin():
    """pyproject registers `forge.pytest_plugin` under the `pytest11` group."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["entry-points"]["pytest11"] == {"forge": "forge.pytest_plugin"}


def test_a_passing_exploration_passes_and_counts_its_runs(pytester):
    """The fixture explores `--forge-runs` schedules and returns the report."""
    pytester.makepyfile(f"""
        def test_two(forge_explore):
            report = forge_explore({str(TWO)!r}, expect_result="alpha text + beta text")
            assert report.ok and report.runs == 7
    """)
    result = _run(pytester, "--forge-runs", "7")
    result.assert_outcomes(passed=1)


def test_the_marker_is_the_exploration_and_fails_with_a_replayable_report(pytester, tmp_path):
    """A marked test fails on a failing schedule, printing the shrunk schedule and a
    `forge replay FILE` command that, pasted into a shell, reproduces the failure."""
    replays = tmp_path / "replays"
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.forge_explore(prompt={str(RACE)!r}, runs=50,
                                   expect_result="alpha beta gamma")
        def test_order():
            raise AssertionError("the body runs only when every schedule passed")
    """)
    result = _run(pytester, "--forge-replay-dir", str(replays))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "forge: a schedule of" in out and "problem: result 'beta alpha gamma'" in out
    assert "shrunk schedule:" in out and "in virtual time:" in out
    assert "non-canonical choices:" in out and "first divergence from the canonical run:" in out
    assert "the body runs only" not in out
    timeline = re.search(r"timeline: file://(\S+)", out).group(1)
    assert "Timeline of the shrunk failing schedule" in pathlib.Path(timeline).read_text()
    command = re.search(r"reproduce with:\n\s+(forge replay .*)", out).group(1)
    assert str(replays) in command
    words = shlex.split(command)
    assert len(words) == 3 and pathlib.Path(words[2]).is_absolute()
    done = subprocess.run([sys.executable, "-m", "forge", *words[1:]], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "ok: beta alpha gamma", "FAILED: result 'beta alpha gamma' != 'alpha beta gamma'",
        "  at $: differs (first at character 0)", '    expected: "alpha beta gamma"',
        '    result  : "beta alpha gamma"']
    assert "the recorded failure, reproduced byte for byte" in done.stderr


def test_a_source_prompt_replays_from_its_file_alone(pytester, tmp_path):
    """A prompt given as text is recorded in the replay file: the printed
    `forge replay FILE` runs it with nothing else."""
    text = RACE.read_text(encoding="utf-8")
    pytester.makepyfile(f"""
        def test_text(forge_explore):
            forge_explore(source={text!r}, expect_result="alpha beta gamma", runs=50)
    """)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    command = re.search(r"reproduce with:\n\s+(forge replay .*)", result.stdout.str()).group(1)
    words = shlex.split(command)
    assert len(words) == 3 and pathlib.Path(words[2]).is_file()
    done = subprocess.run([sys.executable, "-m", "forge", *words[1:]], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 1 and "reproduced byte for byte" in done.stderr


def test_user_checks_fail_with_their_message(pytester):
    """A check passed to the fixture fails the test with its assertion message."""
    pytester.makepyfile(f"""
        def test_check(forge_explore):
            def sorted_order(obs):
                assert obs.result == "alpha beta gamma", "order " + obs.result
            forge_explore({str(RACE)!r}, checks=[sorted_order])
    """)
    result = _run(pytester, "--forge-strategy", "pct", "--forge-runs", "60")
    result.assert_outcomes(failed=1)
    assert "problem: check sorted_order: order " in result.stdout.str()
    assert "60 pct schedules" in result.stdout.str()


def test_profiles_set_the_runs_and_the_command_line_beats_them(pytester):
    """`--forge-profile` picks a registered profile; `--forge-runs` beats it and the marker."""
    pytester.makeconftest("""
        from forge.pytest_plugin import register_profile
        register_profile("plugin-test-tiny", runs=3, strategy="pct")
    """)
    pytester.makepyfile(f"""
        import pytest

        def test_profile(forge_explore):
            report = forge_explore({str(TWO)!r})
            assert (report.runs, report.strategy) == (3, "pct")

        @pytest.mark.forge_explore(runs=5)
        def test_marker(forge_explore):
            assert forge_explore({str(TWO)!r}).runs == 5
    """)
    _run(pytester, "--forge-profile", "plugin-test-tiny").assert_outcomes(passed=2)
    result = _run(pytester, "--forge-profile", "plugin-test-tiny", "--forge-runs", "4")
    result.assert_outcomes(passed=0, failed=2)
    assert "assert 4 == 5" in result.stdout.str()


def test_the_ci_profile_and_an_unknown_one(pytester):
    """The built-in `ci` profile runs 1000 schedules; an unknown profile is a usage error."""
    from forge.pytest_plugin import get_profile

    assert get_profile("ci").runs == 1000 and get_profile("dev").runs < get_profile("default").runs
    pytester.makepyfile(f"""
        def test_x(forge_explore):
            forge_explore({str(TWO)!r})
    """)
    result = _run(pytester, "--forge-profile", "nope")
    assert "no settings profile 'nope'" in result.stdout.str() + result.stderr.str()


def test_forge_run_uses_the_seed_option(pytester):
    """`forge_run` runs one schedule with `--forge-seed`."""
    pytester.makepyfile(f"""
        import forge

        def test_seed(forge_run):
            assert forge_run({str(TWO)!r}).to_json() == forge.run_prompt({str(TWO)!r}, seed=9).to_json()
    """)
    _run(pytester, "--forge-seed", "9").assert_outcomes(passed=1)


def test_a_suite_that_does_not_use_the_plugin_is_untouched(pytester):
    """Installed, the plugin adds no header line and changes no plain test."""
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    assert "forge:" not in result.stdout.str()


def test_hypothesis_s_automatic_ci_profile_chooses_nothing(pytester, monkeypatch):
    """On a CI machine Hypothesis loads its `ci` profile by itself; nobody
    chose it, so a suite that never explores still gets no header line (and
    explorations keep the default profile), while `--hypothesis-profile ci`
    still picks it.  In a subprocess with Hypothesis's plugin loaded first,
    as a CI machine's session would have it."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("FORGE_PROFILE", raising=False)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    quiet = pytester.runpytest_subprocess("-p", "hypothesis", *PLUGIN, "-p", "no:cacheprovider")
    quiet.assert_outcomes(passed=1)
    assert "forge:" not in quiet.stdout.str()
    chosen = pytester.runpytest_subprocess("-p", "hypothesis", *PLUGIN, "-p", "no:cacheprovider",
                                           "--hypothesis-profile", "ci")
    chosen.assert_outcomes(passed=1)
    assert "forge: profile ci (1000 runs" in chosen.stdout.str()


@pytest.mark.parametrize("args, env, message", [
    (("--forge-runs", "0"), {}, "forge: --forge-runs must be at least 1, got 0"),
    (("--forge-seed", str(2**63)), {},
     f"forge: --forge-seed must be at most {2**63 - 1}, got {2**63}"),
    (("--forge-strategy", "sideways"), {},
     "forge: --forge-strategy must be one of portfolio, random, pct, ties, coverage, exhaustive, "
     "got 'sideways'"),
    (("--forge-profile", "nope"), {}, "forge: --forge-profile: no settings profile 'nope'"),
    ((), {"FORGE_PROFILE": "nope"}, "forge: FORGE_PROFILE: no settings profile 'nope'"),
])
def test_a_bad_option_stops_the_session_once_naming_it(pytester, monkeypatch, args, env,
                                                       message):
    """A bad `--forge-*` option is one usage error at session start naming it
    (exit 4, no test run), not a plugin traceback in every test that uses it."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(f"""
        def test_one(forge_explore):
            forge_explore({str(TWO)!r})

        def test_two(forge_run):
            forge_run({str(TWO)!r})
    """)
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert f"ERROR: {message}" in output
    assert "Traceback" not in output and "passed" not in output and "failed" not in output


@pytest.mark.parametrize("test, message", [
    (f"""
        @pytest.mark.forge_explore(prompt={str(TWO)!r}, runs=0)
        def test_x():
            pass
    """, "forge: @pytest.mark.forge_explore: runs must be at least 1, got 0"),
    (f"""
        @pytest.mark.forge_explore(prompt={str(TWO)!r}, rnus=3)
        def test_x():
            pass
    """, "forge: @pytest.mark.forge_explore: explore() takes no keyword 'rnus' "
         "(did you mean runs?)"),
    (f"""
        @pytest.mark.forge_explore(concurrency="2")
        def test_x(forge_explore):
            forge_explore({str(TWO)!r})
    """, "forge: @pytest.mark.forge_explore: concurrency must be a whole number (an int), "
         "got str '2'"),
    (f"""
        def test_x(forge_explore):
            forge_explore({str(TWO)!r}, pct_depth=0)
    """, "forge: forge_explore(): pct_depth must be at least 1, got 0"),
    (f"""
        def test_x(forge_explore):
            forge_explore({str(TWO)!r}, start_seed=3)
    """, "forge: forge_explore(): start_seed is the plugin's to set; use seed="),
    ("""
        def test_x(forge_explore):
            forge_explore(123)
    """, "forge: forge_explore(): prompt must be a path (a str or an os.PathLike), got int 123"),
    ("""
        def test_x(forge_explore):
            forge_explore("no-such-prompt.md")
    """, "forge: "),
], ids=["marker-runs", "marker-unknown", "marker-defaults", "call-setting", "call-owned",
        "call-prompt", "call-missing-prompt"])
def test_a_bad_keyword_fails_its_test_in_one_line_naming_it(pytester, test, message):
    """A marker's or a call's bad keyword (a setting out of range, an unknown
    keyword, a value `forge.explore` refuses) fails its test with one line
    naming the marker or the call and the keyword: no UsageError or TypeError
    traceback from inside the plugin (kit: api.pytest-keywords)."""
    pytester.makepyfile("import pytest\n" + textwrap.dedent(test))
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert message in out
    assert "Traceback" not in out and "UsageError" not in out and "TypeError" not in out
    assert "pytest_plugin.py" not in out and "During handling" not in out


def test_a_callable_check_failure_says_the_replay_cannot_recheck_it(pytester):
    """When a callable check fails, the block says `forge replay` cannot
    re-check it; every line of a problem pytest's assertion rewriting spread
    over several stays indented inside the block (kit: api.pytest-report)."""
    pytester.makepyfile(f"""
        def test_check(forge_explore):
            def sorted_order(obs):
                assert obs.result == "alpha beta gamma"
            forge_explore({str(RACE)!r}, checks=[sorted_order], runs=50)
    """)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert ("note: sorted_order is a check in Python, which a replay file cannot hold: forge "
            "replay reruns this schedule byte for byte but does not re-check it, so it "
            "reports the run as passing what the file expects") in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("forge: a schedule of"))
    end = next(i for i, line in enumerate(lines) if line.startswith("  note: "))
    block = lines[start + 1:end + 1]
    assert any("- alpha beta gamma" in line for line in block)     # the rewritten assert
    assert all(line.startswith("  ") or not line.strip() for line in block), block


def test_a_named_check_failure_has_no_note(pytester, tmp_path):
    """Only a callable check gets the note: expect_result is re-checked by the
    replay (kit: api.pytest-report)."""
    pytester.makepyfile(f"""
        def test_order(forge_explore):
            forge_explore({str(RACE)!r}, expect_result="alpha beta gamma", runs=50,
                          checks=[lambda obs: None])
    """)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    assert "reproduce with:" in result.stdout.str() and "note:" not in result.stdout.str()


def test_a_profile_with_a_bad_setting_is_refused():
    """`register_profile` checks each setting by its `forge explore` flag's rule
    (kit: api.pytest-keywords)."""
    from forge.pytest_plugin import register_profile

    with pytest.raises(pytest.UsageError, match="^forge: profile 'bad': runs must be at least "
                                                "1, got 0$"):
        register_profile("bad", runs=0)
    with pytest.raises(pytest.UsageError, match="'rnus' is not a setting"):
        register_profile("bad", rnus=3)


TIE = ROOT / "examples" / "explore" / "watch-tie.md"


def test_the_summary_lists_the_probes_reached_and_require_fails_a_test(pytester):
    """The session's summary sums each probe over the explorations and names
    those never reached; `require=` fails an exploration that never reached
    its probe (tasks.timeouts.tie-member-wins, tasks.stop.unstarted-never-runs)."""
    pytester.makepyfile(f"""
        def test_tie(forge_explore):
            report = forge_explore({str(TIE)!r}, require=["timeout-tie"])
            assert report.probes["timeout-tie"] > 0

        def test_queued(forge_explore):
            forge_explore({str(TIE)!r}, require=["cancel-queued"])
    """)
    result = _run(pytester, "--forge-runs", "60", "--forge-seed", "0")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*never reached the required probe(s) cancel-queued*",
                                 "*forge probes*", "probes reached: timeout-tie *",
                                 "never reached: join-any-same-instant, task-queued*"])
