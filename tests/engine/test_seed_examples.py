"""The Tasks chapter's worked examples give exactly the stated results.

Each runs under the canonical schedule and under many random schedules,
since the chapter says none of these outcomes depends on timing.
"""

from __future__ import annotations

import pytest

from forge.conformance import oracles
from tests.conftest import EXAMPLES, run_text

EXPECTED = {
    "two-tasks.md": ("ok", "alpha text + beta text"),
    "pros-and-cons.md": ("ok", "Pros: fast to build\nCons: hard to maintain"),
    "seeded-task.md": ("ok", "index=7 item=alpha args=child args k=1"),
    "early-start.md": ("ok", "job done"),
    "freeform.md": ("ok", "alpha\n\nbeta"),
    "leak-check.md": (
        "ok",
        "tasks_live|0.0.0|chain ended with author tasks still live: 0.0.0; "
        "wait on or cancel every task a chain spawns before it ends",
    ),
}

SEEDS = range(200)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_canonical(name):
    """The stated result under the canonical schedule (tasks.glance.example-two-tasks,
    tasks.spawn.example-pros-and-cons, tasks.spawn.example-seeded-task,
    tasks.handles.example-early-start, tasks.freeform.example-freeform,
    tasks.leak.example-leak-check)."""
    outcome, result = EXPECTED[name]
    obs = run_text((EXAMPLES / name).read_text())
    assert (obs["outcome"], obs["result"]) == (outcome, result)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_every_schedule(name):
    """The same result, the same task ids and every invariant under 200 random schedules
    (tasks.glance.example-two-tasks, tasks.spawn.example-pros-and-cons,
    tasks.spawn.example-seeded-task, tasks.handles.example-early-start,
    tasks.freeform.example-freeform, tasks.leak.example-leak-check, kit: conformance.oracles)."""
    outcome, result = EXPECTED[name]
    text = (EXAMPLES / name).read_text()
    canonical = run_text(text)
    checks = (*oracles.DEFAULT_CHECKS, oracles.same_ids(canonical))
    for seed in SEEDS:
        obs = run_text(text, seed=seed)
        assert (obs["outcome"], obs["result"]) == (outcome, result), f"seed {seed}"
        assert [p for c in checks for p in c(obs)] == [], f"seed {seed}"


def test_checked_join_reports_each_member():
    """The first line names the succeeded member; the second the failure with its text
    (tasks.wait.example-checked-join, tasks.wait.join-entries)."""
    for seed in (None, *range(50)):
        obs = run_text((EXAMPLES / "checked-join.md").read_text(), seed=seed)
        first, second = obs["result"].split("\n")
        assert first == "0.0 ok: alpha text"
        assert second.startswith("0.1 failed: ") and "beta boom" in second


def test_leaky_walk_fails_with_tasks_live():
    """Falling through with a live task fails the run with tasks_live naming 0.0. The run error
    is kind Lua and the task ends abandoned (tasks.leak.example-leaky-walk,
    tasks.leak.tasks-live, tasks.leak.tasks-field, tasks.errors.run-error-kind-lua,
    tasks.abandon.state)."""
    for seed in (None, *range(50)):
        obs = run_text((EXAMPLES / "leaky-walk.md").read_text(), seed=seed)
        assert obs["outcome"] == "failed"
        assert obs["error"]["kind"] == "Lua"
        assert obs["error"]["value_kind"] == "tasks_live"
        assert obs["error"]["tasks"] == "0.0"
        assert obs["error"]["message"] == (
            "chain ended with author tasks still live: 0.0; "
            "wait on or cancel every task a chain spawns before it ends"
        )
        assert obs["tasks"]["0.0"]["state"] == "abandoned"
