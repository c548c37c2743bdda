"""The event-queue kernel: virtual time and what happens next.

The queue holds `(time, priority, seq, event)` entries in a heap.  `seq` comes
from a counter, so entries at the same instant and priority leave in the order
they were scheduled and no two entries are ever compared by object identity.

Time is an integer count of nanoseconds.  Integers keep every sum exact, so a
schedule computed on one machine is the same schedule on every other; a float
clock would let `0.1 + 0.2` decide a tie.

What lives here: the clock, scheduling, cancellation, popping.  What does not:
which chain runs (the engine's loop asks the chooser), and what an event means
(the engine's handlers).
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

    Invariant: every entry in `_queue` has `time >= now`; `now` never
    decreases.
    """

    def __init__(self) -> None:
        self.now: int = 0
        self._queue: list[tuple[int, int, int, Any]] = []
        self._seq = itertools.count()
        self._cancelled: set[int] = set()

    def schedule(self, delay_ns: int, priority: int, event: Any) -> Timer:
        if delay_ns < 0:
            raise ValueError(f"negative delay {delay_ns}")
        seq = next(self._seq)
        time = self.now + delay_ns
        heapq.heappush(self._queue, (time, priority, seq, event))
        return Timer(seq, time)

    def cancel(self, timer: Timer) -> None:
        """Drop a scheduled entry; cancelling twice or after it fired is harmless."""
        self._cancelled.add(timer.seq)

    def _drop_cancelled(self) -> None:
        while self._queue and self._queue[0][2] in self._cancelled:
            _, _, seq, _ = heapq.heappop(self._queue)
            self._cancelled.discard(seq)

    def peek(self) -> int | None:
        """Time of the next live entry, or None when nothing is scheduled."""
        self._drop_cancelled()
        return self._queue[0][0] if self._queue else None

    def pop(self) -> tuple[int, Any]:
        """Advance the clock to the next live entry and return (seq, event)."""
        self._drop_cancelled()
        time, _, seq, event = heapq.heappop(self._queue)
        assert time >= self.now, "the clock never runs backwards"
        self.now = time
        return seq, event

    def __len__(self) -> int:
        self._drop_cancelled()
        return len(self._queue) - sum(1 for e in self._queue if e[2] in self._cancelled)
