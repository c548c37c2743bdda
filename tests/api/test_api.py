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
    """A failing schedule is shrunk, written, and `replay()` and the printed command reproduce it."""
    out = tmp_path / "race.replay.json"
    report = forge.explore(RACE, runs=100, expect_result="alpha beta gamma", replay_out=out)
    assert not report.ok
    failure = report.failures[0]
    assert failure.observation.result != "alpha beta gamma"
    assert len(failure.shrunk) <= len(failure.choices)
    again = forge.replay(out)
    assert again.result == failure.observation.result and again.drifted_at is None
    assert failure.replay_command == f"forge replay {RACE} {out}"
    cli = _cli(*failure.replay_command.split()[1:])
    assert cli.stdout.strip() == f"ok: {failure.observation.result}"


def test_explore_runs_user_checks_that_assert():
    """A check that raises AssertionError fails the schedule with its message."""
    def result_is_sorted(obs: forge.Observation) -> None:
        assert obs.result == "alpha beta gamma", f"order was {obs.result}"

    report = forge.explore(RACE, strategy="pct", runs=60, checks=[result_is_sorted])
    assert report.failures
    assert report.failures[0].problems[0].startswith("result_is_sorted: order was ")


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


def test_a_failure_with_a_script_given_as_data_prints_a_command_that_runs(tmp_path):
    """A run with a model script given as data gets the script written beside the replay
    file, and a `forge run --strategy replay:FILE` command that prints the failing result."""
    script = json.loads((EXAMPLES / "delegator.model.json").read_text(encoding="utf-8"))
    out = tmp_path / "d.replay.json"
    report = forge.explore(EXAMPLES / "delegator.md", model_script=script, args="tides",
                           runs=5, expect_result="something else", replay_out=out)
    failure = report.failures[0]
    assert failure.replay_command == (
        f"forge run {EXAMPLES / 'delegator.md'} --strategy replay:{out} --args tides "
        f"--model-script {tmp_path / 'd.replay.model.json'}")
    cli = _cli(*failure.replay_command.split()[1:])
    assert cli.stdout.strip() == failure.observation.result
