"""Task ids and how they are numbered: the child counter and the depth cap.

An id is one or more plain decimal components, each 0..4294967295, joined by
single dots.  Spawn order is the order of ids compared component by
component as numbers, so `0.9` sorts before `0.10`.

Every chain owns one child counter, starting at 0.  Everything that takes an
index from it goes through `take`: a spawn (author or model), a fanout arm,
a `call`, and a timed wait that really waits (a Lua `tasks.join`/`join_any`
with a timeout, or a timed `await_tasks`), through `wait_parks` (`waits.park`
asks it for every wait).  An untimed wait, a timed wait answered at once, and
a section entry take nothing.

The depth cap (8) bounds call, spawn and fanout alike; `depth_refusal` is
the one check, and names the call or fanout that would cross it.

A section entry's id (`sys.id`) is the chain's id plus the number of the
entry, from the chain's own entry counter: entries count sections entered,
not children, so they never take from the child counter.  The H1 pass always
takes entry 0, whether it runs or not (`skip_h1_entry`).

What lives here: id syntax and order, the child counter, the entry counter
and entry ids, the cap.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from forge.variation import declare

#: How deep call, spawn and fanout may nest.
DEPTH_CAP = 8

ONE_BASED = declare("ids.one-based", "ids", "child indexes start at 1 instead of 0")
PER_SECTION = declare("ids.per-section", "ids", "the child counter restarts at each section entry")
TIMED_WAIT_NO_INDEX = declare("ids.timed-wait-takes-no-index", "ids",
                              "a timed wait that waits takes no child index")
UNTIMED_WAIT_INDEX = declare("ids.untimed-wait-takes-index", "ids",
                             "every wait that parks takes a child index")
CALL_NO_INDEX = declare("ids.call-takes-no-index", "ids",
                        "call does not take an index from the child counter")
STRING_ORDER = declare("ids.string-order", "ids",
                       "spawn order compares ids as strings (0.10 before 0.9)")
TASKID_IN_CALL_IS_CHAIN = declare("ids.taskid-in-call-is-chain", "ids",
                                  "sys.taskid inside a called chain names the called chain")
H1_TAKES_NO_ENTRY = declare("ids.h1-takes-no-entry", "ids",
                            "a prompt without an H1 pass starts its walk at entry 0.0")
DEPTH_OFF_BY_ONE = declare("ids.depth-cap-off-by-one", "ids",
                           "call, spawn and fanout may nest to depth 9")


class Counted(Protocol):
    """What the counter needs of a chain."""

    id: str
    kind: str
    depth: int
    child_counter: int
    entry_counter: int
    task: Any

MAX_COMPONENT = 4294967295
_ID = re.compile(r"(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*")


#: Ids found well-formed so far: a run checks the same few ids again and again.
_VALID: set[str] = set()


def is_task_id(text: str) -> bool:
    if text in _VALID:
        return True
    if not _ID.fullmatch(text) or any(int(part) > MAX_COMPONENT for part in text.split(".")):
        return False
    if len(_VALID) >= 100_000:
        _VALID.clear()
    _VALID.add(text)
    return True


#: Sort keys made so far: the same few ids recur in every run of a process.
_KEYS: dict[str, tuple] = {}


def id_key(task_id: str) -> tuple:
    """Sort key giving spawn order."""
    if STRING_ORDER.on:
        return (task_id,)
    key = _KEYS.get(task_id)
    if key is None:
        if len(_KEYS) >= 100_000:
            _KEYS.clear()
        key = _KEYS[task_id] = tuple(map(int, task_id.split(".")))
    return key


def take(chain: Counted) -> str:
    """The id of the next child of `chain`: a task, an arm or a called chain."""
    index = chain.child_counter
    chain.child_counter += 1
    if ONE_BASED.on:
        index += 1
    return f"{chain.id}.{index}"


def take_for_call(chain: Counted) -> str:
    """A called chain's id; `call` takes an index like a spawn does."""
    if CALL_NO_INDEX.on:
        return f"{chain.id}.{chain.child_counter}"
    return take(chain)


def wait_parks(chain: Counted, timed: bool) -> None:
    """A wait is about to park: a timed one takes one child index."""
    if (timed and not TIMED_WAIT_NO_INDEX.on) or (not timed and UNTIMED_WAIT_INDEX.on):
        take(chain)


def enter_section(chain: Counted) -> str:
    """A chain enters a section: the new entry's id.  The child counter
    belongs to the chain and goes on."""
    if PER_SECTION.on:
        chain.child_counter = 0
    entry = f"{chain.id}.{chain.entry_counter}"
    chain.entry_counter += 1
    return entry


def current_entry(chain: Counted) -> str:
    """The id of the section entry a chain is in (`sys.id`)."""
    return f"{chain.id}.{chain.entry_counter - 1}"


def taskid(chain: Counted) -> str:
    """`sys.taskid`: the task a chain's code runs inside (a called chain runs
    inside its caller's task; the walk inside task 0)."""
    if TASKID_IN_CALL_IS_CHAIN.on and chain.kind == "call":
        return chain.id
    return chain.task.id


def skip_h1_entry(chain: Counted) -> None:
    """The prompt has no H1 pass: its entry number is taken all the same, so
    the walk starts at entry 1."""
    chain.entry_counter = 0 if H1_TAKES_NO_ENTRY.on else 1


def in_first_entry(chain: Counted) -> bool:
    """Whether a chain is in its first section entry (where a task's seeds,
    `item` and `sys.index`, show)."""
    return chain.entry_counter == 1


def depth_refusal(chain: Counted, what: str) -> str | None:
    """The message refusing a `what` (call or fanout) that would cross the cap."""
    cap = DEPTH_CAP + 1 if DEPTH_OFF_BY_ONE.on else DEPTH_CAP
    if chain.depth + 1 > cap:
        return f"{what} recursion exceeded cap of {DEPTH_CAP}"
    return None


def not_an_id_message(text: str) -> str:
    return f"`{text}` is not a task id: required a dot-separated path such as `0.1`"
