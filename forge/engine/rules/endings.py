"""How tasks end: cancel, abandonment and its five reasons, and `tasks_live`.

A task ends exactly once: done (ok or failed), cancelled by its owner, or
abandoned with one reason, chosen by what ended first:

- `owner_returned`: its owner chain returned (or ran off its walk);
- `owner_failed`: its owner chain failed;
- `tool_loop_exhausted`: its owner's model tool loop ran out of rounds;
- `owner_aborted`: its owner chain was itself stopped (cancelled or
  abandoned), which abandons everything beneath it, nested tasks first;
- `run_terminated`: the run ended around it.

A chain that returns with author tasks still live fails with `tasks_live`,
naming them in spawn order joined by ", "; those tasks are abandoned as
`owner_returned`.  Model-started tasks are settled quietly instead.

What lives here: the reasons with the phrases the model is told, which
reason each way an owner ends gives (`abandon_reason`: the one place that
choice is made), the leak check and its message.  What does not:
the state changes of ending a task and who is told (`tasks`, the run loop).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from forge.variation import declare

FAILED_OWNER_SAYS_RETURNED = declare("endings.failed-owner-says-returned", "endings",
                                     "tasks of a failing owner are abandoned as owner_returned")
NESTED_RUN_TERMINATED = declare("endings.nested-run-terminated", "endings",
                                "tasks nested under a stopped task are abandoned as "
                                "run_terminated, not owner_aborted")
ABANDON_READS_CANCELLED = declare("endings.abandon-recorded-as-cancel", "endings",
                                  "an abandoned task reads state cancelled")
ABANDON_ALSO_FAILED = declare("endings.abandon-also-failed", "endings",
                              "an abandoned task is also recorded as failed")
CANCEL_LOST_WHEN_PARKED = declare("endings.cancel-lost-when-parked", "endings",
                                  "a cancel of a task parked on a wait never lands")
LEAK_NOT_REPORTED = declare("endings.leak-not-reported", "endings",
                            "a chain ending with live tasks ends cleanly")
LEAK_IDS_COMMA = declare("endings.leak-ids-comma", "endings",
                         "tasks_live joins the leaked ids with ',' instead of ', '")
MODEL_TASKS_LEAK = declare("endings.model-tasks-leak", "endings",
                           "a live model task makes its owner fail with tasks_live")


class AbandonReason(str, enum.Enum):
    """Why a task was abandoned; the value is the spec's reason string."""

    OWNER_RETURNED = "owner_returned"
    OWNER_FAILED = "owner_failed"
    TOOL_LOOP_EXHAUSTED = "tool_loop_exhausted"
    OWNER_ABORTED = "owner_aborted"
    RUN_TERMINATED = "run_terminated"

    @property
    def phrase(self) -> str:
        """What a model is told an abandoned task of its own ended by."""
        return _PHRASES[self]

    def __str__(self) -> str:
        return self.value


_PHRASES = {
    AbandonReason.OWNER_RETURNED: "the section ended",
    AbandonReason.OWNER_FAILED: "the owner failed",
    AbandonReason.TOOL_LOOP_EXHAUSTED: "the tool loop was exhausted",
    AbandonReason.OWNER_ABORTED: "the owner was aborted",
    AbandonReason.RUN_TERMINATED: "the run ended",
}

#: Every reason string, for checks that read an observation.
REASONS = frozenset(r.value for r in AbandonReason)


class OwnerEnd(enum.Enum):
    """How the chain that owns live tasks came to its end."""

    #: It returned, or ran off the end of its walk.
    RETURNED = "returned"
    #: It failed (with the failure's kind beside it).
    FAILED = "failed"
    #: It was stopped from outside: cancelled, or abandoned itself.
    STOPPED = "stopped"
    #: The run ended around it.
    RUN_ENDED = "run_ended"


def abandon_reason(end: OwnerEnd, failure_kind: str | None = None) -> AbandonReason:
    """The reason the live tasks of an owner that ended by `end` are abandoned
    with; `failure_kind` is the kind of the failure that ended a FAILED owner.
    Every place a chain's end settles what it owns asks here."""
    if end is OwnerEnd.RETURNED:
        return AbandonReason.OWNER_RETURNED
    if end is OwnerEnd.FAILED:
        if failure_kind == "tool_loop_exhausted":
            return AbandonReason.TOOL_LOOP_EXHAUSTED
        if FAILED_OWNER_SAYS_RETURNED.on:
            return AbandonReason.OWNER_RETURNED
        return AbandonReason.OWNER_FAILED
    if end is OwnerEnd.STOPPED:
        return (AbandonReason.RUN_TERMINATED if NESTED_RUN_TERMINATED.on
                else AbandonReason.OWNER_ABORTED)
    return AbandonReason.RUN_TERMINATED


def abandoned_state() -> str:
    """The state an abandoned task reads."""
    return "cancelled" if ABANDON_READS_CANCELLED.on else "abandoned"


def terminal_events(state: str) -> tuple[str, ...]:
    """The terminal events recorded for a task that ends in `state`."""
    if state == "abandoned" and ABANDON_ALSO_FAILED.on:
        return ("task_abandoned", "task_failed")
    return {"cancelled": ("task_cancelled",), "abandoned": ("task_abandoned",)}[state]


def leaked(owned: Iterable[Any]) -> list[Any]:
    """The live tasks that make a returning chain fail with tasks_live."""
    if LEAK_NOT_REPORTED.on:
        return []
    return [t for t in owned if t.live and (t.origin == "author" or MODEL_TASKS_LEAK.on)]


def tasks_live(leaked_ids: list[str]) -> tuple[str, str]:
    """The tasks_live value's `tasks` field and message."""
    id_list = ("," if LEAK_IDS_COMMA.on else ", ").join(leaked_ids)
    message = (f"chain ended with author tasks still live: {id_list}; "
               "wait on or cancel every task a chain spawns before it ends")
    return id_list, message
