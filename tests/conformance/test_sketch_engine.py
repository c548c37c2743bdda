"""The kit as a judge of another engine: a sketch engine written apart from
the reference (tests/conformance/sketch_engine.py, level 2), explored with
`forge explore --impl` and no hand-written check (kit: explore-impl.judge).

Each of the three bug classes a quick engine gets wrong is planted by a
flag, and found within 200 random schedules with a minimal replay; the same
engine without bugs passes 200 schedules of every prompt (no false alarm
from what the spec leaves to an implementation: it numbers `seq` its own
way, reports no boundary events, `effects` or `rounds`).
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
from click.testing import CliRunner

from forge.cli import main

HERE = pathlib.Path(__file__).parent
SKETCH = f"{sys.executable} {HERE / 'sketch_engine.py'}"
PROMPTS = HERE / "differential"

#: bug -> the prompt it shows on.
BUGS = {
    # a timed join whose timeout wins a same-instant tie
    "tie-to-timeout": "tie.md",
    # join_any returning the later of two same-instant finishers
    "join-any-latest": "first-in-set-order.md",
    # cancel forgetting a task queued behind the concurrency limit
    "cancel-forgets-queued": "cancel-queued.md",
}


def explore(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["explore", *args])
    return done.exit_code, done.output


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_planted_bug_is_found_within_200_schedules(bug, tmp_path):
    """tasks.timeouts.tie-member-wins; tasks.wait.join-any-set-order-tie; tasks.stop.unstarted-never-runs"""
    replay = tmp_path / "found.replay.json"
    code, out = explore("--impl", f"{SKETCH} --bug {bug}", str(PROMPTS / BUGS[bug]),
                        "--runs", "200", "--replay-out", str(replay), "--json")
    assert code == 1, out
    report = json.loads(out)
    assert report["runs"] <= 200
    assert any("reference" in p for p in report["problems"]), report["problems"]
    record = json.loads(replay.read_text())
    assert record["failure"]["deviations"] <= 1          # shrunk to a minimal schedule
    code, again = explore("--impl", f"{SKETCH} --bug {bug}", str(replay))
    assert code == 1, again
    # On the sketch without the bug: fixed, or - where the bug changed which
    # decisions the engine asks - a one-line drift and no problem after it.
    code, fixed = explore("--impl", SKETCH, str(replay))
    if code == 4:
        assert fixed.splitlines()[1].startswith("fixed: "), fixed
    else:
        assert code == 1 and fixed.startswith("drifted: the engine now asks other decisions")
        assert fixed.splitlines()[1].startswith("no problem on the run as it went"), fixed


@pytest.mark.parametrize("prompt", sorted(set(BUGS.values())))
def test_the_sketch_without_bugs_passes_200_schedules(prompt, tmp_path):
    code, out = explore("--impl", SKETCH, str(PROMPTS / prompt), "--runs", "200",
                        "--replay-out", str(tmp_path / "r.json"))
    assert code == 0, out
    assert out.startswith("200 schedules")


def test_the_suite_fails_the_queued_cancel_bug_and_passes_the_sketch_without_it():
    """The suite itself, not only exploration, catches a `cancel` that
    forgets a queued task: decisions/cancel-queued fails on the buggy
    sketch (a later admission runs the cancelled task) and passes on the
    sketch without the bug (tasks.cancel.stops-returns-nothing,
    tasks.concurrency.queued)."""
    def conformance(command: str) -> tuple[int, str]:
        done = CliRunner().invoke(main, ["conformance", "--impl", command,
                                         "-k", "decisions/cancel-queued"])
        return done.exit_code, done.output

    code, out = conformance(SKETCH)
    assert code == 0 and "1 passed, 0 failed" in out, out
    code, out = conformance(f"{SKETCH} --bug cancel-forgets-queued")
    assert code == 1, out
    assert 'logs[1]: expected "gamma ran", got "beta ran"' in out
    assert 'decisions[2]: expected "chain [root:0]", got "chain [root:0, task:0.1]"' in out
