"""Lifecycle cases: malformed operation lists are refused with the operation's
index and the rule; a small script runs to a readable observation."""

from __future__ import annotations

import pytest

from forge.conformance.lifecycle_adapter import lifecycle_observation, validate
from forge.errors import InputError


@pytest.mark.parametrize("operations, message", [
    ([], "operations: is a non-empty list of operation tables"),
    ([5], "operations[0]: an operation is a table"),
    ([{"op": "fly"}], "operations[0]: unknown op 'fly'"),
    ([{"op": "spawn"}], "operations[0] (spawn): needs `as`"),
    ([{"op": "spawn", "as": "t", "colour": "red"}], "operations[0] (spawn): unknown key `colour`"),
    ([{"op": "spawn", "as": "t"}, {"op": "retry", "task": "t", "via": "pigeon"}],
     'operations[1] (retry): `via` is "tool" or "host"'),
])
def test_malformed_operations_name_the_index_and_the_rule(operations, message):
    with pytest.raises(InputError) as e:
        validate(operations)
    assert message in str(e.value)


def test_a_spawned_task_that_completes_is_reported_once():
    obs = lifecycle_observation([
        {"op": "spawn", "as": "t1", "input": "index the docs"},
        {"op": "run_completes", "task": "t1", "result": "done"},
    ])
    assert obs["outcome"] == "ok"
    assert obs["tasks"]["t1"]["status"] == "completed"
    finished = [r for r in obs["reports"] if r.get("hook") == "on_finished"]
    assert len(finished) == 1 and finished[0]["task"] == "t1"
