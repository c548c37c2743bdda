"""The explorer finds a broken invariant, shrinks the schedule, and the
shrunk schedule replays to the same failure byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys

from forge.conformance.mutants import by_id
from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import load_prompt
from forge.conformance import oracles
from forge.sim.chooser import Chooser, ReplayProvider
from forge.sim.exhaustive import exhaustive
from forge.sim.explore import explore
from tests.conftest import EXAMPLES, ROOT


def subject_for(name: str):
    prompt = load_prompt(str(EXAMPLES / name))

    def subject(chooser):
        obs = run_prompt(prompt, Harness(), chooser, RunConfig()).observation()
        return obs, obs["trace_sha256"]

    return subject


def test_a_clean_engine_passes_every_schedule():
    report = explore(subject_for("freeform.md"), range(30), oracles.DEFAULT_CHECKS)
    assert report.findings == () and report.runs == 30
    assert report.distinct_traces > 1


def test_a_broken_engine_is_caught_shrunk_and_replayed():
    subject = subject_for("leaky-walk.md")
    with by_id()["abandon-also-failed"].applied():
        report = explore(subject, range(10), oracles.DEFAULT_CHECKS)
        assert report.findings, "the mutant breaks 'each task ends exactly once'"
        finding = report.findings[0]
        assert any("ended 2 times" in p for p in finding.problems)
        first, sha1 = subject(Chooser(ReplayProvider(finding.shrunk)))
        again, sha2 = subject(Chooser(ReplayProvider(finding.shrunk)))
        assert sha1 == sha2 and oracles.each_task_ends_once(first)


def test_exhaustive_visits_every_interleaving_of_a_small_prompt():
    report = exhaustive(subject_for("checked-join.md"), oracles.DEFAULT_CHECKS)
    assert report.findings == ()
    assert report.runs == 2          # Alpha first or Beta first
    assert report.distinct_traces == 2


def test_explore_command_reports_and_replay_reproduces(tmp_path):
    replay = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "forge", "explore", str(EXAMPLES / "freeform.md"), "--runs", "20",
           "--json", "--replay-out", str(replay), "--expect-result", "not the result"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["failures"] and report["replay"] == str(replay)
    first = subprocess.run([sys.executable, "-m", "forge", "replay", str(EXAMPLES / "freeform.md"),
                            str(replay), "--json"], capture_output=True, text=True, cwd=ROOT)
    second = subprocess.run([sys.executable, "-m", "forge", "replay", str(EXAMPLES / "freeform.md"),
                             str(replay), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert first.stdout == second.stdout
    assert json.loads(first.stdout)["result"] == "alpha\n\nbeta"


RACE = """---
name: race
description: Which of two writers ends first depends on the schedule
promptforge: 0
---

# Race

## Main

```lua
local a = tasks.spawn('## Alpha')
local b = tasks.spawn('## Beta')
local first = tasks.join_any({ a, b })
tasks.join(tasks.pending())
return first.task
```

## Alpha

```lua
store.write('a', 'x')
```

## Beta

```lua
store.write('b', 'x')
```
"""


def test_a_schedule_dependent_result_is_found_and_shrunk_to_a_replayable_minimum():
    from forge.prompt import parse_prompt

    prompt = parse_prompt(RACE, "race.md")

    def subject(chooser):
        obs = run_prompt(prompt, Harness(), chooser, RunConfig()).observation()
        return obs, obs["trace_sha256"]

    def expect_alpha(obs):
        return [] if obs["result"] == "0.0" else [f"beta ended first: {obs['result']}"]

    report = explore(subject, range(50), [expect_alpha])
    assert report.findings, "some schedule lets Beta end first"
    finding = report.findings[0]
    replayed, _ = subject(Chooser(ReplayProvider(finding.shrunk)))
    assert replayed["result"] == "0.1"
    # Shrinking leaves no choice that could be lowered and still fail.
    for i, value in enumerate(finding.shrunk):
        if value:
            lower = list(finding.shrunk)
            lower[i] = 0
            assert subject(Chooser(ReplayProvider(lower)))[0]["result"] == "0.0", \
                f"lowering choice {i} of {finding.shrunk} still fails: not shrunk"
