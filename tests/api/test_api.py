"""The public API drives the kit as the CLI does, and returns frozen values."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import attrs
import pytest

import forge

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RACE = EXAMPLES / "explore" / "store-race.md"
TEXT = """---
name: t
description: t
promptforge: 0
---

# T

## Main

```lua
local a = tasks.spawn('## Worker')
local _, ok, got = tasks.join_any({ a })
return 'got ' .. got
```

## Worker

```lua
return 'w'
```
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge", *args], cwd=ROOT,
                          capture_output=True, text=True)


def test_run_prompt_matches_forge_run_json():
    """`run_prompt(...).to_json()` is byte for byte what `forge run --json` prints."""
    obs = forge.run_prompt(EXAMPLES / "two-tasks.md", seed=5)
    cli = _cli("run", "examples/two-tasks.md", "--seed", "5", "--json")
    assert obs.to_json() == cli.stdout.strip()
    assert obs.ok and obs.result == "alpha text + beta text"


def test_observation_is_frozen_all_the_way_down():
    """Fields cannot be reassigned, and nested mappings and lists are read-only."""
    obs = forge.run_prompt(source=TEXT)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        obs.outcome = "failed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        obs.tasks["0.0"] = {}  # type: ignore[index]
    assert isinstance(obs.events, tuple)
    assert obs.result == "got w"
    assert json.loads(obs.to_json())["tasks"]["0.0"]["state"] == "done"


def test_run_prompt_takes_scripts_as_data_and_cancel_at():
    """A model script may be JSON data; `cancel_at` ends the run cancelled."""
    script = json.loads((EXAMPLES / "delegator.model.json").read_text(encoding="utf-8"))
    obs = forge.run_prompt(EXAMPLES / "delegator.md", model_script=script, args="tides")
    cli = _cli("run", "examples/delegator.md", "--model-script", "examples/delegator.model.json",
               "--args", "tides", "--json")
    assert obs.outcome == "ok" and obs.to_json() == cli.stdout.strip()
    cancelled = forge.run_prompt(EXAMPLES / "delegator.md", model_script=script, args="tides",
                                 cancel_at=0.5)
    assert cancelled.outcome == "cancelled" and cancelled.error["kind"] == "Cancelled"


def test_bad_input_is_an_input_error_with_the_cli_line():
    """A missing prompt raises `InputError` (a ValueError), naming the file."""
    with pytest.raises(ValueError, match="no-such.md"):
        forge.run_prompt("no-such.md")
    with pytest.raises(forge.InputError):
        forge.run_prompt("a.md", source=TEXT)
    with pytest.raises(forge.InputError, match="strategy"):
        forge.run_prompt(source=TEXT, strategy="sideways")


def test_explore_passes_and_reports_in_plain_words():
    """A passing exploration is ok, and its summary names counts, not a Python repr."""
    report = forge.explore(EXAMPLES / "two-tasks.md", runs=30)
    assert report.ok and report.runs == 30 and report.outcomes == {"ok": 30}
    assert "outcomes: 30 ok" in report.summary() and "{" not in report.summary()
    assert json.loads(report.to_json())["runs"] == 30


def test_explore_finds_shrinks_and_writes_a_replay_that_reproduces(tmp_path):
    """A failing schedule is shrunk and written; `replay()` and the printed
    `forge replay FILE` reproduce it byte for byte."""
    out = tmp_path / "race.replay.json"
    report = forge.explore(RACE, runs=100, expect_result="alpha beta gamma", replay_out=out)
    assert not report.ok
    failure = report.failures[0]
    assert failure.observation.result != "alpha beta gamma"
    # the problem's first line, then where the result differs (forge.difference)
    assert [p.splitlines()[0] for p in failure.problems] == [
        f"result {failure.observation.result!r} != 'alpha beta gamma'"]
    assert failure.problems[0].splitlines()[2] == '    expected: "alpha beta gamma"'
    assert len(failure.shrunk) <= len(failure.choices)
    assert failure.story and failure.divergence[0].startswith("step ")
    assert failure.replay_command == f"forge replay {out}"
    again = forge.replay(out)
    assert again.reproduced and again.identical and again.drift is None
    assert again.observation.to_json() == failure.observation.to_json()
    assert again.observation.trace == failure.observation.trace
    cli = _cli(*failure.replay_command.split()[1:])
    assert cli.returncode == 1
    assert cli.stdout.splitlines()[0] == f"ok: {failure.observation.result}"
    assert "reproduced byte for byte" in cli.stderr


def test_explore_seed_n_is_run_prompt_seed_n():
    """A failure random found at seed N is `run_prompt(seed=N)`'s run (one
    `RunSpec` for both); one the default strategy's member found is the run
    of that member's spelling, which `Failure.strategy` gives."""
    report = forge.explore(RACE, runs=100, expect_result="alpha beta gamma", strategy="random")
    failure = report.failures[0]
    drawn = forge.run_prompt(RACE, seed=failure.seed)
    assert drawn.result == failure.observation.result
    assert drawn.choices == failure.choices
    failure = forge.explore(RACE, runs=100, expect_result="alpha beta gamma").failures[0]
    how = failure.strategy
    spelled = ":".join(str(how[k]) for k in ("strategy", "seed", "depth", "horizon") if k in how)
    drawn = forge.run_prompt(RACE, strategy=spelled)
    assert drawn.choices == failure.choices and drawn.result != "alpha beta gamma"


def test_faults_and_latency_are_run_prompt_keywords_as_forge_run_flags():
    """`faults`/`fault_budget` are `--faults`/`--fault-budget`, byte for byte; a latency
    override changes the virtual time; a bad one is refused."""
    kw = dict(model_script=EXAMPLES / "race.model.json", concurrency=2)
    obs = forge.run_prompt(EXAMPLES / "race.md", seed=3, faults=["model"], fault_budget=2, **kw)
    cli = _cli("run", "examples/race.md", "--seed", "3", "--faults", "model", "--fault-budget",
               "2", "--model-script", "examples/race.model.json", "--concurrency", "2", "--json")
    assert obs.to_json() == cli.stdout.strip()
    assert forge.run_prompt(RACE).virtual_time == 0.01      # one store write, 0.01s
    assert forge.run_prompt(RACE, latency={"store": 0.5}).virtual_time == 0.5
    with pytest.raises(forge.InputError, match="latency"):
        forge.run_prompt(EXAMPLES / "two-tasks.md", latency={"teleport": 1.0})
    with pytest.raises(forge.InputError, match="^run_prompt: faults: unknown fault kind 'disk'"):
        forge.run_prompt(EXAMPLES / "two-tasks.md", faults="disk")


def test_explore_with_faults_reports_the_faults_fired(tmp_path):
    """Faults are choices: the shrunk failure names the faults that fired, its story
    shows them in place, and the replay file brings them back."""
    out = tmp_path / "faults.replay.json"
    report = forge.explore(EXAMPLES / "race.md", model_script=EXAMPLES / "race.model.json",
                           concurrency=2, faults="model", expect_result="Quick: 4", runs=100,
                           replay_out=out)
    failure = report.failures[0]
    assert failure.faults and failure.faults[0][0] == "model"
    assert any("FAULT model" in line for line in failure.story)
    # and the report counts the faults every schedule fired, up to the failing one
    assert set(report.faults) == {"model"} and report.faults["model"] >= 1
    assert json.loads(report.to_json())["faults"] == dict(report.faults)
    assert f"faults fired: {report.faults['model']} model" in report.summary()
    again = forge.replay(out)
    assert again.reproduced and again.identical


def test_run_prompt_writes_a_replay_file_of_its_run(tmp_path):
    """`replay_out` is `forge run --replay-out`: replaying it gives the same run, passing."""
    out = tmp_path / "run.replay.json"
    obs = forge.run_prompt(RACE, seed=4, replay_out=out)
    again = forge.replay(out)
    assert again.ok and not again.reproduced and again.identical
    assert again.observation.to_json() == obs.to_json()


def test_a_what_if_replay_has_nothing_to_compare(tmp_path):
    """An override changes the recorded run: `identical` is None."""
    out = tmp_path / "run.replay.json"
    forge.run_prompt(RACE, seed=4, replay_out=out)
    assert forge.replay(out, concurrency=1).identical is None


def test_a_source_prompt_replays_from_its_file_alone(tmp_path):
    """A prompt given as text is recorded in the replay file: `forge replay FILE` runs it."""
    out = tmp_path / "text.replay.json"
    report = forge.explore(source=RACE.read_text(encoding="utf-8"), runs=100,
                           expect_result="alpha beta gamma", replay_out=out)
    cli = _cli(*report.failures[0].replay_command.split()[1:])
    assert cli.returncode == 1 and "reproduced byte for byte" in cli.stderr
    # A what-if changes the run, not the prompt: the recorded text is used, no file read.
    what_if = forge.replay(out, concurrency=1)
    assert what_if.identical is None and what_if.observation.result == "alpha beta gamma"


def test_named_checks_are_recorded_and_callable_checks_are_not(tmp_path):
    """A `module:function` check is in the replay file and re-checked by `replay`; a
    callable check is code: the file keeps only the run, which replays identically."""
    (tmp_path / "api_order_check.py").write_text(
        "def in_order(obs):\n"
        "    return None if obs['result'] == 'alpha beta gamma' else 'out of order'\n",
        encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        named = tmp_path / "named.replay.json"
        report = forge.explore(RACE, runs=100, named_checks=["api_order_check:in_order"],
                               replay_out=named)
        assert report.failures[0].problems == ("check api_order_check:in_order: out of order",)
        assert forge.replay(named).reproduced
    finally:
        sys.path.remove(str(tmp_path))

    def in_order(obs: forge.Observation) -> None:
        assert obs.result == "alpha beta gamma"

    plain = tmp_path / "plain.replay.json"
    forge.explore(RACE, runs=100, checks=[in_order], same_ids=False, replay_out=plain)
    again = forge.replay(plain)
    assert again.identical and again.ok and not again.reproduced


def test_explore_runs_user_checks_that_assert():
    """A check that raises AssertionError fails the schedule with its message."""
    def result_is_sorted(obs: forge.Observation) -> None:
        assert obs.result == "alpha beta gamma", f"order was {obs.result}"

    report = forge.explore(RACE, strategy="pct", runs=60, checks=[result_is_sorted])
    assert report.failures
    assert report.failures[0].problems[0].startswith("check result_is_sorted: order was ")


def test_explore_exhaustive_covers_the_tree():
    """The exhaustive strategy reports whether it covered the whole tree."""
    report = forge.explore(EXAMPLES / "two-tasks.md", strategy="exhaustive", runs=500)
    assert report.ok and report.complete and report.strategy == "exhaustive"


def test_run_conformance_on_the_reference_in_process():
    """The reference passes a selection of the suite; the report matches the runner's line."""
    report = forge.run_conformance(patterns=["examples/two-tasks"])
    assert report.ok and report.passed >= 1
    assert report.summary.endswith("0 failed, 0 errored, 0 skipped")
    assert json.loads(report.to_json())["summary"]["passed"] == report.passed


def test_run_conformance_over_the_pipe():
    """`impl` is a command spoken to over the protocol (here the reference itself)."""
    report = forge.run_conformance([sys.executable, "-m", "forge", "impl-serve"],
                                   patterns=["examples/two-tasks"])
    assert report.ok and report.implementation


def test_run_conformance_refuses_an_unknown_feature():
    """An unknown feature names the known ones."""
    with pytest.raises(forge.InputError, match="the suite's features are"):
        forge.run_conformance(features=["no-such-feature"])


def test_lifecycle_entry_points_are_the_managers_own():
    """The lifecycle names are `forge.lifecycle`'s classes, and the store contract runs."""
    from forge.lifecycle.manager import Manager

    assert forge.LifecycleManager is Manager
    assert forge.run_store_contract(forge.MemoryTaskStore) == []


def test_a_failure_with_a_script_given_as_data_replays_from_its_file_alone(tmp_path):
    """A model script given as data is recorded in the replay file: `forge replay FILE`
    alone prints the failing result."""
    script = json.loads((EXAMPLES / "delegator.model.json").read_text(encoding="utf-8"))
    out = tmp_path / "d.replay.json"
    report = forge.explore(EXAMPLES / "delegator.md", model_script=script, args="tides",
                           runs=5, expect_result="something else", replay_out=out)
    failure = report.failures[0]
    assert failure.replay_command == f"forge replay {out}"
    cli = _cli(*failure.replay_command.split()[1:])
    assert cli.returncode == 1
    assert cli.stdout.splitlines()[0] == f"ok: {failure.observation.result}"


def test_run_explore_and_replay_take_the_tool_script_and_refusals(tmp_path):
    """`tool_script` and `refuse` reach the run as `--tool-script` and `--refuse`
    do (the same parsing): the same observation as the command, in both of
    refuse's spellings, and a replay what-if can change them."""
    page = ["examples/page-fetcher.md", "--model-script", "examples/page-fetcher.model.json",
            "--tool-script", "examples/page-fetcher.tools.json"]
    tools = json.loads((EXAMPLES / "page-fetcher.tools.json").read_text(encoding="utf-8"))
    obs = forge.run_prompt(EXAMPLES / "page-fetcher.md",
                           model_script=EXAMPLES / "page-fetcher.model.json", tool_script=tools)
    assert obs.to_json() == _cli("run", *page, "--json").stdout.strip()
    refused = forge.run_prompt(RACE, refuse=["write:beta"])
    assert refused.to_json() == _cli("run", str(RACE), "--refuse", "write:beta",
                                     "--json").stdout.strip()
    assert refused.result == "alpha store operation failed gamma"
    assert forge.run_prompt(RACE, refuse={"write": ["beta"]}).to_json() == refused.to_json()
    with pytest.raises(forge.InputError, match="^run_prompt: refuse: unknown operation 'fly'"):
        forge.run_prompt(RACE, refuse="fly")
    report = forge.explore(RACE, refuse="write:beta", runs=20, schedule_independent=True)
    assert report.failures and "store operation failed" in report.failures[0].problems[0]
    out = tmp_path / "race.replay.json"
    forge.run_prompt(RACE, replay_out=out)
    what_if = forge.replay(out, refuse=["write:beta"])
    assert what_if.identical is None
    assert what_if.observation.result == "alpha store operation failed gamma"
    faulty = forge.explore(EXAMPLES / "page-fetcher.md", tool_script=tools, faults="tool",
                           model_script=EXAMPLES / "page-fetcher.model.json", runs=20)
    assert faulty.faults.get("tool")


def _check_module(tmp_path, body: str) -> None:
    (tmp_path / "api_checks_rule.py").write_text(body, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))


def test_callable_and_named_checks_hold_and_fail_by_one_rule(tmp_path):
    """A callable check and a named one that do the same give the same
    problems: a string is one problem (not its characters), False fails,
    another value (0) fails naming it, and a check that raises is a failed
    schedule, not an aborted exploration."""
    verdicts = {"text": "'bad'", "false": "False", "zero": "0", "boom": "int('x')",
                "fine": "True"}
    _check_module(tmp_path, "".join(f"def {name}(obs):\n    return {value}\n"
                                    for name, value in verdicts.items()))
    try:
        import api_checks_rule as module

        for name in verdicts:
            callable_report = forge.explore(RACE, runs=3, checks=[getattr(module, name)])
            named_report = forge.explore(RACE, runs=3,
                                         named_checks=[f"api_checks_rule:{name}"])
            if name == "fine":
                assert callable_report.ok and named_report.ok
                continue
            (problem,) = callable_report.failures[0].problems
            (named,) = named_report.failures[0].problems
            assert named == problem.replace(f"check {name}", f"check api_checks_rule:{name}")
            assert problem == {
                "text": "check text: bad", "false": "check false failed",
                "zero": "check zero returned int '0': a check returns None, True or [] when "
                        "it holds, and False, a string or a list of strings when it does not",
                "boom": "check boom raised ValueError: invalid literal for int() with base "
                        "10: 'x'"}[name]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("api_checks_rule", None)


@pytest.mark.parametrize("keywords, message", [
    ({"checks": ["mod:fn"]}, "checks[0]: a check is a callable taking an Observation"),
    ({"checks": [len, 3]}, "checks[1]: a check is a callable"),
    ({"checks": "mod:fn"}, "checks: a list of checks"),
    ({"named_checks": [print]}, "named_checks[0]: a check is a string module:function"),
    ({"named_checks": "mod:fn"}, "named_checks: a list of checks"),
])
def test_check_entries_are_checked_before_anything_runs(keywords, message):
    """A check that is not one is an `InputError` naming the argument and its
    index, raised before any schedule runs (not a TypeError deep in the explorer)."""
    with pytest.raises(forge.InputError) as caught:
        forge.explore(RACE, runs=2, **keywords)
    assert str(caught.value).startswith(f"explore: {message}")


def test_a_deviation_bound_is_refused_for_random_and_pct():
    """`max_deviations` bounds the exhaustive walk only; random and pct refuse it
    as `--max-deviations` does."""
    for strategy in ("random", "pct"):
        with pytest.raises(forge.InputError, match="^explore: max_deviations: bounds only the "):
            forge.explore(RACE, strategy=strategy, max_deviations=1)  # type: ignore[arg-type]
    assert forge.explore(RACE, strategy="exhaustive", max_deviations=0, runs=50).complete
