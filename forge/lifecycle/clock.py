"""Clocks for the lifecycle manager's two bounded waits.

The Manager waits in two places: a stop that heard "already finished" gives
the run's outcome a moment to land before looking again, and ``task_status``
may block until a task finishes (capped by MaxStatusWait). Both go through a
``Clock`` so that a test or a simulation decides what "a moment later" means.

Lives here: the ``Clock`` protocol, ``VirtualClock`` (virtual seconds and a
queue of scheduled callbacks; a 120 s wait costs no wall time) and
``ThreadClock`` (real monotonic time and a condition variable, for hosts that
call the Manager from several threads).
Does not live here: what the waits wait for (``manager``).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Block until ``ready()`` is true or ``timeout`` seconds pass; the last answer."""
        ...

    def notify(self) -> None:
        """Something a waiter may be waiting for has changed (a finalize landed)."""
        ...


class VirtualClock:
    """Virtual time that only moves inside ``wait_for`` (or ``advance``).

    ``call_at``/``call_later`` schedule what happens "meanwhile": a waiter runs
    every callback due before its deadline, in time order (ties in scheduling
    order), checking ``ready`` after each, so the wait ends at the first
    moment the condition holds, or at the deadline.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._queue: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, fn: Callable[[], object]) -> None:
        heapq.heappush(self._queue, (max(float(when), self._now), next(self._order), fn))

    def call_later(self, delay: float, fn: Callable[[], object]) -> None:
        self.call_at(self._now + max(0.0, float(delay)), fn)

    def pending(self) -> int:
        return len(self._queue)

    def _run_until(self, deadline: float, ready: Callable[[], bool]) -> bool:
        while True:
            if ready():
                return True
            if not self._queue or self._queue[0][0] > deadline:
                self._now = max(self._now, deadline)
                return ready()
            when, _, fn = heapq.heappop(self._queue)
            self._now = max(self._now, when)
            fn()

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        return self._run_until(self._now + max(0.0, float(timeout)), ready)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass, running whatever falls due."""
        self._run_until(self._now + max(0.0, float(seconds)), lambda: False)

    def notify(self) -> None:
        return None  # waiters re-check ``ready`` after every event anyway


class ThreadClock:
    """Monotonic wall time for multi-threaded hosts (never used by the tests' logic).

    A waiter sleeps on a condition that ``notify`` wakes, and re-checks at
    least every ``poll`` seconds so a change made by another process is seen.
    """

    def __init__(self, poll: float = 0.25) -> None:
        self._cond = threading.Condition()
        self._poll = poll

    def now(self) -> float:
        return time.monotonic()

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cond:
            while not ready():
                left = deadline - time.monotonic()
                if left <= 0:
                    return ready()
                self._cond.wait(min(left, self._poll))
            return True

    def notify(self) -> None:
        with self._cond:
            self._cond.notify_all()
