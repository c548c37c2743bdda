"""The event-queue kernel: virtual time and what happens next.

The queue holds `(time, priority, seq, event)` entries in a heap.  `seq` comes
from a counter, so entries at the same instant and priority leave in the order
they were scheduled and no two entries are ever compared by object identity.

Time is an integer count of nanoseconds.  Integers keep every sum exact, so a
schedule computed on one machine is the same schedule on every other; a float
clock would let `0.1 + 0.2` decide a tie.

In orders mode (`forge.sim.orders`) an entry scheduled `free` (a harness
completion whose duration nobody pinned) may fire ahead of its turn: `pop`
hands the entries that could fire next to the picker, and an entry left
behind fires late, when it is popped: at the current instant, or just after
it if it would otherwise sort before the entry popped last.  Everything
else (timers, pinned durations, host faults) keeps its instant.

What lives here: the clock, scheduling, cancellation, popping.  What does not:
which chain runs (the engine's loop asks the chooser), which completion fires
first (the picker asks it), and what an event means (the engine's handlers).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import attrs

NS_PER_SECOND = 1_000_000_000
#: The largest duration the engine accepts: a signed 64-bit count of
#: nanoseconds, the range most host languages give a duration.
MAX_DURATION_NS = 2**63 - 1

# Priorities order events that fall on the same instant; lower leaves first.
#: A harness operation finishes (store answer, model reply, operator answer).
COMPLETE = 0
#: A host-side fault or cancellation scheduled by the harness script.
FAULT = 5
#: A wait's timeout expires.  It sorts after everything else at its instant,
#: and the engine runs every ready chain before it pops an event, so a task
#: that ends at the same instant as a timeout always wins the tie.
TIMEOUT = 10


def seconds_to_ns(seconds: float | int) -> int:
    """Convert a count of seconds to whole nanoseconds, rounding to nearest."""
    if isinstance(seconds, int):
        return seconds * NS_PER_SECOND
    return round(seconds * NS_PER_SECOND)


def duration_ns(seconds) -> int | None:
    """A count of seconds as a duration in nanoseconds, or None when it is not
    one: not a number (booleans included), negative, not finite, or past the
    largest duration."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    if seconds != seconds or seconds < 0 or seconds * NS_PER_SECOND > MAX_DURATION_NS:
        return None
    return seconds_to_ns(seconds)


def ns_to_seconds(ns: int) -> float:
    return ns / NS_PER_SECOND


@attrs.frozen
class Timer:
    """A handle to a scheduled entry, used to cancel it."""

    seq: int
    time: int


class Kernel:
    """Virtual clock plus a heap of pending events.

    Invariant: `now` never decreases, and every entry in `_queue` has
    `time >= now` except, in orders mode, a free entry another one overtook.
    """

    def __init__(self, orders: Any = None) -> None:
        self.now: int = 0
        self._queue: list[tuple[int, int, int, Any]] = []
        self._seq = itertools.count()
        self._cancelled: set[int] = set()
        #: The completion picker (`forge.sim.orders.CompletionOrder`), or None.
        self.orders = orders
        #: Orders mode: the label and footprint keys of each free entry, by seq.
        self._free: dict[int, tuple[str, frozenset[str]]] = {}
        #: (time, seq) of every entry that is not a completion, and the seqs
        #: of those not yet popped (`until_timer`).
        self._timers: list[tuple[int, int]] = []
        self._timer_seqs: set[int] = set()
        #: Orders mode: (time, priority, seq) of the entry popped last, and
        #: whether it was a timer (not a completion).
        self._last: tuple[int, int, int] = (-1, 0, 0)
        self._last_timer = False

    def schedule(self, delay_ns: int, priority: int, event: Any,
                 free: tuple[str, frozenset[str]] | None = None) -> Timer:
        """Schedule `event`; `free` (label, keys) marks a completion that
        orders mode may fire ahead of its turn (ignored otherwise)."""
        if delay_ns < 0:
            raise ValueError(f"negative delay {delay_ns}")
        seq = next(self._seq)
        time = self.now + delay_ns
        heapq.heappush(self._queue, (time, priority, seq, event))
        if priority != COMPLETE:
            heapq.heappush(self._timers, (time, seq))
            self._timer_seqs.add(seq)
        if free is not None and self.orders is not None:
            self._free[seq] = free
        return Timer(seq, time)

    def cancel(self, timer: Timer) -> None:
        """Drop a scheduled entry; cancelling twice or after it fired is harmless."""
        self._cancelled.add(timer.seq)
        self._timer_seqs.discard(timer.seq)

    def _drop_cancelled(self) -> None:
        while self._queue and self._queue[0][2] in self._cancelled:
            _, _, seq, _ = heapq.heappop(self._queue)
            self._cancelled.discard(seq)
            self._timer_seqs.discard(seq)

    def peek(self) -> int | None:
        """Time of the next live entry, or None when nothing is scheduled."""
        self._drop_cancelled()
        return self._queue[0][0] if self._queue else None

    def until_timer(self) -> int | None:
        """Nanoseconds from now to the earliest live timer later than now (an
        entry that is not a completion: a wait's timeout, a host fault), or
        None when there is none: where a duration must end to tie with it.

        Timers have a heap of their own (`_timers`), walked from its root
        down to the first live entry later than now on each path: entries at
        or before now, fired or cancelled, are few, so this costs about
        their number, not the number of pending completions."""
        timers, live, best, now = self._timers, self._timer_seqs, None, self.now
        while timers and (timers[0][1] not in live or timers[0][1] in self._cancelled):
            heapq.heappop(timers)           # fired or cancelled: never again
        stack = [0] if timers else []
        while stack:
            i = stack.pop()
            time, seq = timers[i]
            if best is not None and time >= best:
                continue        # every entry below is as late or later
            if time > now and seq in live and seq not in self._cancelled:
                best = time
                continue
            stack.extend(j for j in (2 * i + 1, 2 * i + 2) if j < len(timers))
        return None if best is None else best - now

    def pop(self) -> tuple[int, Any]:
        """Advance the clock to the next live entry and return (seq, event)."""
        self._drop_cancelled()
        if self.orders is not None:
            return self._pop_picked()
        time, _, seq, event = heapq.heappop(self._queue)
        assert time >= self.now, "the clock never runs backwards"
        self.now = time
        self._timer_seqs.discard(seq)
        return seq, event

    def _pop_picked(self) -> tuple[int, Any]:
        """Orders mode: the picker chooses among the entries that can fire next."""
        live = sorted(e for e in self._queue if e[2] not in self._cancelled)
        fixed = next((e for e in live if e[2] not in self._free), None)
        options: list[tuple[tuple, int]] = []        # (entry, the instant it fires at)
        for entry in live:
            time, priority, seq, _ = entry
            if seq not in self._free:
                if entry is fixed:
                    options.append((entry, time))
                continue
            # Never before (or tied ahead of) the entry popped last: a
            # completion left behind by a timer fires after the timer.
            lo = self.now if (self.now, priority, seq) > self._last else self.now + 1
            at = max(time, lo)
            if self._last_timer and lo == self.now:
                # Right after a timer, at its instant, if the engine sorts
                # the timer first there: the tie the engine gives the timer
                # (never, with timers sorting last at their instant).
                at = lo
            if fixed is not None and (at, priority, seq) > fixed[:3]:
                # Before the fixed entry: at its instant if that still sorts
                # first, else one nanosecond earlier.
                at = fixed[0] if (priority, seq) < fixed[1:3] else fixed[0] - 1
                if at < lo:
                    continue
            options.append((entry, at))
        labels = [self._free[e[2]][0] if e[2] in self._free else str(e[3][0]) for e, _ in options]
        keys = [self._free[e[2]][1] if e[2] in self._free else frozenset({"*"})
                for e, _ in options]
        entry, at = options[self.orders.pick(labels, keys)]
        self._queue.remove(entry)
        heapq.heapify(self._queue)
        self._free.pop(entry[2], None)
        self._timer_seqs.discard(entry[2])
        self.now = max(self.now, at)
        self._last = (self.now, entry[1], entry[2])
        self._last_timer = entry[1] != COMPLETE
        return entry[2], entry[3]

    def drop_pending(self) -> None:
        """Forget every entry still scheduled: the run has ended and none of
        them fires (their events hold what the run was made of)."""
        self._queue.clear()
        self._cancelled.clear()
        self._free.clear()
        self._timers.clear()
        self._timer_seqs.clear()

    def __len__(self) -> int:
        self._drop_cancelled()
        return len(self._queue) - sum(1 for e in self._queue if e[2] in self._cancelled)
