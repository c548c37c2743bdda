"""Admission: the concurrency limit, slots, and the queue of tasks waiting for one.

A task needs a slot to run.  A slot is free when fewer tasks run than the
run's ceiling (the harness's limit) and fewer of the owner's tasks run than
the owner's limit (`tasks.concurrency`, clamped to the parent's limit).
Queued tasks are admitted in spawn order, the order of their ids.  A task
gives its slot back while it waits on other tasks (a join, a fanout, an
`await_tasks`), so tasks that wait on their own children cannot starve each
other into a deadlock, and takes a slot again before it resumes.  Nothing is
ever preempted: a running task keeps its slot until it waits or ends.

What lives here: the queue, the holder maps, admitting, giving a slot back while
waiting and taking it again on wake-up, and the clamp of `tasks.concurrency`.
What does not: when a chain parks or runs (the run loop), and the tasks
namespace's argument checks (`tasks`).

Invariants: a task holds a slot only while it is admitted, live and not
waiting on other tasks (checked at the transitions); `running` never exceeds
the ceiling.  Who holds a slot is recorded once, in the holder maps (the
run's and each owner's `Chain.holding`): `running`, an owner's `busy` and a
task's `holds_slot` are read off them, so they are counts by construction.

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

from typing import Any, Protocol

from sortedcontainers import SortedKeyList

from forge.engine.requests import Slot
from forge.engine.rules import ids
from forge.variation import declare

WAITING_KEEPS_SLOT = declare("admission.waiting-keeps-slot", "admission",
                             "a task parked on a wait keeps its slot")
NEWEST_FIRST = declare("admission.newest-first", "admission", "queued tasks are admitted newest first")
NO_LIMIT = declare("admission.no-limit", "admission", "the harness ceiling and owner limits are ignored")
RELEASE_ADMITS_NOBODY = declare("admission.release-admits-nobody", "admission",
                                "a slot an ending task gives back admits nobody queued "
                                "(a lost wake-up)")
WAKE_WAITS_FOR_SLOT = declare("admission.wake-waits-for-slot", "admission",
                              "a woken task queued for its slot again is not admitted though "
                              "a slot is free (a lost wake-up)")
NOT_CLAMPED = declare("admission.not-clamped", "admission",
                      "tasks.concurrency(n) is not clamped to the parent's limit")


class Scheduler(Protocol):
    """What admission needs of the run loop."""

    def make_ready(self, chain: Any, value: Any) -> None: ...

    def park(self, chain: Any, request: Any) -> Any: ...

    def note(self, what: str, **fields: Any) -> None: ...


class Admission:
    def __init__(self, scheduler: Scheduler, ceiling: int) -> None:
        self.scheduler = scheduler
        self.ceiling = ceiling
        #: Tasks waiting for a slot, in spawn order (made when the first one
        #: waits: most runs never queue a task).
        self.queue: Any = ()
        #: Tasks holding a slot now, by id (each is in its owner's
        #: `holding` too), and the most that ever did at once.
        self._holding: dict[str, Any] = {}
        self.peak = 0

    @property
    def running(self) -> int:
        """How many tasks hold a slot now."""
        return len(self._holding)

    # ------------------------------------------------------------ the rule
    def _ceiling_reached(self) -> bool:
        return not NO_LIMIT.on and len(self._holding) >= self.ceiling

    def _slot_free(self, task: Any) -> bool:
        return NO_LIMIT.on or (not self._ceiling_reached() and len(task.owner.holding) < task.owner.limit)

    def clamp(self, limit: int, parent_limit: int) -> int:
        """The limit `tasks.concurrency(limit)` sets: never above the parent's."""
        return limit if NOT_CLAMPED.on else min(limit, parent_limit)

    # ------------------------------------------------------------ transitions
    def enqueue(self, task: Any) -> None:
        """A new task waits for its first slot."""
        if not self.queue and self._slot_free(task):
            # Nobody queued before it: admitting it now is what `admit`
            # would do, without the queue's bookkeeping.
            self._admit(task)
            return
        self._queue(task)
        self.admit()

    def admit(self) -> None:
        """Admit queued tasks in spawn order while slots are free.

        Walks the queue in place (O(log n) a step) and stops as soon as the
        ceiling is reached, so a full run costs nothing per call however long
        the queue is."""
        i = 0
        while i < len(self.queue) and not self._ceiling_reached():
            task = self.queue[len(self.queue) - 1 - i] if NEWEST_FIRST.on else self.queue[i]
            if not task.live:
                self.queue.discard(task)
                continue
            if not self._slot_free(task):
                i += 1
                continue
            self.queue.discard(task)
            self._admit(task)

    def _admit(self, task: Any) -> None:
        """`task` takes a free slot: it starts, or resumes from its wait."""
        assert task.id not in self._holding, f"task {task.id} is queued while holding a slot"
        self._holding[task.id] = task.owner.holding[task.id] = task
        self.peak = max(self.peak, len(self._holding))
        self.scheduler.note("admit", task=task.id)
        if not task.admitted:
            task.admitted = True
            self.scheduler.make_ready(task.chain, None)
        else:
            chain = task.waking
            task.waking = None
            assert isinstance(chain.parked_on, Slot)
            self.scheduler.make_ready(chain, chain.parked_on.resume)

    def _queue(self, task: Any) -> None:
        if isinstance(self.queue, tuple):     # the first task to wait
            self.queue = SortedKeyList(key=_spawn_order)
        self.queue.add(task)

    def release(self, task: Any) -> None:
        """A task stops holding its slot (it ended, or it waits on others)."""
        if task.id in self._holding:
            del self._holding[task.id], task.owner.holding[task.id]

    def waiting(self, task: Any) -> None:
        """`task`'s chain parks on a wait for other tasks: its slot goes back."""
        if task.is_main or task.id not in self._holding or WAITING_KEEPS_SLOT.on:
            return
        self.release(task)
        self.admit()

    def wake(self, chain: Any, value: Any) -> None:
        """Resume a chain parked on a wait, re-taking its task's slot first."""
        task = chain.task
        if task.is_main or task.id in self._holding:
            self.scheduler.make_ready(chain, value)
            return
        assert task.waking is None, f"task {task.id} wakes twice"
        task.waking = chain
        self.scheduler.park(chain, Slot(value))
        self._queue(task)
        if not WAKE_WAITS_FOR_SLOT.on:
            self.admit()

    def after_end(self) -> None:
        """An ending's wake-ups are made: the slot it gave back admits the
        first queued task that fits."""
        if not RELEASE_ADMITS_NOBODY.on:
            self.admit()

    def ended(self, task: Any) -> None:
        """A task ended: its slot (or its place in the queue) goes.  The caller
        admits once the end's wake-ups are made, so woken owners run first."""
        self.release(task)
        if self.queue:
            self.queue.discard(task)


def _spawn_order(task: Any) -> tuple:
    return ids.id_key(task.id)
