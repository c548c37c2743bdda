"""The lifecycle adapter's newer operations: their shape rules, and that the
observation names tasks and sessions by the case's aliases."""

from __future__ import annotations

import pytest

from forge.conformance.lifecycle_adapter import lifecycle_observation, validate
from forge.errors import InputError


@pytest.mark.parametrize("operations, message", [
    ([{"op": "config", "store": "postgres"}], "`store` is one of memory, sqlite"),
    ([{"op": "config", "sessions": "magic"}], "`sessions` is one of plain, cascading"),
    ([{"op": "tools", "only": "some"}], "`only` is one of all, spawn_tool, task_tools"),
    ([{"op": "tool"}], "(tool): needs `name`"),
    ([{"op": "tool", "name": "task_status", "args": [1]}], "`args` is a table"),
    ([{"op": "later", "seconds": -1, "operations": []}], "`seconds` is a non-negative number"),
    ([{"op": "later", "seconds": 1, "operations": [{"op": "fly"}]}],
     "operations[0] (later).operations[0]: unknown op 'fly'"),
    ([{"op": "status", "task": "a", "wait": "long"}], "`wait` is a non-negative number"),
    ([{"op": "model_has_result", "task": "a", "status": "done"}], "`status` is a task status"),
    ([{"op": "model_has_result", "task": "a", "attempt": 0}], "`attempt` is a positive integer"),
    ([{"op": "config", "describe_state": "yes"}], "`describe_state` is a boolean"),
])
def test_malformed_new_operations_are_refused(operations, message):
    with pytest.raises(InputError) as e:
        validate(operations)
    assert message in str(e.value)


def test_unknown_tool_and_alias_are_input_errors():
    with pytest.raises(InputError, match="unknown tool 'fly'"):
        lifecycle_observation([{"op": "tool", "name": "fly"}])
    with pytest.raises(InputError, match="alias 'a' is already bound"):
        lifecycle_observation([{"op": "spawn", "as": "a"},
                               {"op": "tool", "name": "spawn_task", "as": "a"}])


def test_tool_texts_use_aliases_and_sessions_their_names():
    obs = lifecycle_observation([
        {"op": "recover"},
        {"op": "tool", "name": "spawn_task", "as": "job", "args": {"label": "x"}},
        {"op": "tool", "name": "task_status", "args": {"task_id": "job"}},
        {"op": "sessions", "include_hidden": True},
    ])
    assert obs["outcome"] == "ok"
    assert obs["results"][2]["text"].startswith("task_id: job\n")
    assert obs["results"][2]["details"]["task_id"] == "job"
    assert obs["results"][3] == [
        {"id": "p", "hidden": False, "parent": "", "title": "p"},
        {"id": "job/session", "hidden": True, "parent": "p", "title": "task: x"}]


def test_scheduled_operations_run_when_time_passes():
    obs = lifecycle_observation([
        {"op": "spawn", "as": "a"},
        {"op": "later", "seconds": 5, "operations": [{"op": "run_completes", "task": "a"}]},
        {"op": "advance", "seconds": 4},
        {"op": "get", "task": "a"},
        {"op": "advance", "seconds": 1},
        {"op": "get", "task": "a"},
    ])
    assert [r if not isinstance(r, dict) else r["status"] for r in obs["results"][2:]] == [
        4.0, "working", 5.0, "completed"]
    clock = [r for r in obs["reports"] if r["hook"] == "clock"]
    assert clock == [{"hook": "clock", "at": 5.0, "during": [
        clock[0]["during"][0]]}] and clock[0]["during"][0]["status"] == "completed"
