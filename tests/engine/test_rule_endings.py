"""`rules.endings` tested where it lives: which abandon reason each way an
owner ends gives, the phrases a model is told, the states and terminal
events an ending records, and the leak check with its message - on plain
records, without a run."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.engine.rules import endings
from forge.engine.rules.endings import AbandonReason, OwnerEnd


@attrs.define
class Task:
    id: str
    live: bool = True
    origin: str = "author"


@pytest.mark.parametrize(("end", "kind", "reason", "phrase"), [
    (OwnerEnd.RETURNED, None, "owner_returned", "the section ended"),
    (OwnerEnd.FAILED, "lua", "owner_failed", "the owner failed"),
    (OwnerEnd.FAILED, "tool_loop_exhausted", "tool_loop_exhausted", "the tool loop was exhausted"),
    (OwnerEnd.STOPPED, None, "owner_aborted", "the owner was aborted"),
    (OwnerEnd.RUN_ENDED, None, "run_terminated", "the run ended"),
])
def test_each_way_an_owner_ends_gives_its_reason_and_phrase(end, kind, reason, phrase):
    """(tasks.reasons.owner-returned, tasks.reasons.owner-failed,
    tasks.reasons.tool-loop-exhausted, tasks.reasons.owner-aborted,
    tasks.reasons.run-terminated, tasks.leak.own-error-wins)"""
    got = endings.abandon_reason(end, kind)
    assert got.value == reason and str(got) == reason and got.phrase == phrase
    assert reason in endings.REASONS


@given(st.sampled_from(list(OwnerEnd)), st.one_of(st.none(), st.text(max_size=20)))
def test_every_ending_gives_exactly_one_known_reason(end, kind):
    """A task ends exactly once, with one of the five reasons; only a failure
    of kind tool_loop_exhausted tells a failing owner apart
    (tasks.abandon.recorded-once, tasks.reasons.tool-loop-exhausted)."""
    reason = endings.abandon_reason(end, kind)
    assert isinstance(reason, AbandonReason)
    if end is OwnerEnd.FAILED:
        expected = ("tool_loop_exhausted" if kind == "tool_loop_exhausted" else "owner_failed")
        assert reason.value == expected
    else:
        assert reason is endings.abandon_reason(end, None)


def test_abandoned_and_cancelled_stay_distinct():
    """An abandoned task reads state abandoned, recorded by one task_abandoned
    event; a cancelled one reads cancelled (tasks.abandon.state,
    tasks.abandon.recorded-once, tasks.cancel.marks-cancelled)."""
    assert endings.abandoned_state() == "abandoned"
    assert endings.terminal_events("abandoned") == ("task_abandoned",)
    assert endings.terminal_events("cancelled") == ("task_cancelled",)


def test_only_live_author_tasks_leak():
    """Ended tasks and model-started ones never make a returning chain fail
    with tasks_live (tasks.leak.tasks-live, tasks.leak.model-tasks-excluded)."""
    owned = [Task("0.0", live=False), Task("0.1"), Task("0.2", origin="model"), Task("0.3")]
    assert [t.id for t in endings.leaked(owned)] == ["0.1", "0.3"]
    assert endings.leaked([Task("0.0", live=False), Task("0.1", origin="model")]) == []


def test_the_tasks_live_message_lists_the_leaked_ids():
    """The tasks field joins the ids with comma-space, in spawn order, and the
    message names them (tasks.leak.tasks-field, tasks.leak.example-leak-check)."""
    assert endings.tasks_live(["0.0", "0.1"])[0] == "0.0, 0.1"
    assert endings.tasks_live(["0.0.0"]) == (
        "0.0.0", "chain ended with author tasks still live: 0.0.0; "
                 "wait on or cancel every task a chain spawns before it ends")
