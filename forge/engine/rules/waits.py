"""Waits on tasks: the one recipe by which a chain parks on other tasks, and
how it stops waiting.

Four waits park a chain on tasks: `tasks.join`, `tasks.join_any`, the
model's `await_tasks`, and a fanout waiting on its arms.  Each parks the same
way, in this order (`park`):

1. a wait the child counter covers takes its index (`ids.wait_parks`: a timed
   wait that really waits takes one, an untimed one none); a fanout's arms
   took theirs when they started, so its wait takes none;
2. the chain registers once on each live member it waits on (a task named
   twice in a join set is registered once), and counts them in `join_left`;
   `await_tasks` registers on none - no task end delivers into it;
3. the chain's task gives its concurrency slot back (`admission.waiting`), so
   tasks waiting on their own children cannot starve each other;
4. the wait is traced (every wait but a fanout's);
5. the chain parks on the wait's request, with its timer when it has a
   timeout (`timeouts.schedule`, through the scheduler).

`leave` is the way back out: the timer goes and the chain leaves every
member's waiters, whether the wait was answered, timed out or the chain was
stopped.  Waking goes through `admission.wake`, which takes a slot again
first.

What lives here: the recipe and its inverse.  What does not: a wait's
argument checks, what it returns (`tasks`, `fanout`, `modeltasks`), the
index rule (`ids`), slots (`admission`), the timer's place among events
(`timeouts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from forge.engine.rules import ids
from forge.variation import declare

LAST_END_WAKES_NOBODY = declare("waits.last-end-wakes-nobody", "waits",
                                "a join of every member is not woken when its last member "
                                "ends (a lost wake-up)")


class Parking(Protocol):
    """What a wait needs of the run loop."""

    def park(self, chain: Any, request: Any, timeout_ns: int | None = None,
             expire: Callable[[], None] | None = None) -> Any: ...

    def note(self, what: str, **fields: Any) -> None: ...


class Slots(Protocol):
    """What a wait needs of admission."""

    def waiting(self, task: Any) -> None: ...


class Timers(Protocol):
    def cancel(self, timer: Any) -> None: ...


def park(scheduler: Parking, admission: Slots, chain: Any, request: Any,
         members: Iterable[Any] = (), *, counted: bool = True, call: str | None = None,
         shown: list[str] | None = None, timeout_ns: int | None = None,
         expire: Callable[[], None] | None = None) -> Any:
    """Park `chain` on the wait `request` over `members` (the tasks whose end
    may answer it), following the recipe above; returns what the scheduler's
    park returns (`PARK`).  `counted`: the child counter covers this wait.
    `call` and `shown`: the wait's name and the member ids its trace record
    shows (no record without a name)."""
    if counted:
        ids.wait_parks(chain, timed=timeout_ns is not None)
    live = [t for t in dict.fromkeys(members) if t.live]
    for t in live:
        t.waiters.append(chain)
    chain.join_left = len(live)
    admission.waiting(chain.task)
    if call is not None:
        scheduler.note("wait", chain=chain.id, call=call, members=shown, timeout=timeout_ns)
    return scheduler.park(chain, request, timeout_ns, expire)


def leave(chain: Any, members: Iterable[Any], timers: Timers) -> None:
    """`chain` stops waiting: its timer goes and it leaves every member's waiters."""
    if chain.timer is not None:
        timers.cancel(chain.timer)
        chain.timer = None
    for t in members:
        if chain in t.waiters:
            t.waiters.remove(chain)
