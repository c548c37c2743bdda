"""Python's cyclic collector while a run executes.

A run builds a graph of long-lived objects (tasks, chains, events, trace
records) that grows with its work.  With CPython's default thresholds the
collector makes full passes over everything alive every few thousand
allocations; in a run of 10,000 tasks those full passes over the run's own
live graph were a quarter of its CPU time, and their number grows with the
run.  While a run executes (and while its observation is built from that
graph), `deferred` raises the oldest generation's threshold, so full
passes wait for the run's end, and the youngest's, so a pass over new
objects comes every `DEFERRED_YOUNGEST` allocations rather than 700: a run's
graph is cyclic (its tasks, chains and parts point back at it), so each
pass over it while it lives is work done for nothing, and a small run made
one or two.  Garbage a run makes and drops is still freed as it goes, and
memory stays bounded by what the run keeps alive.  Once the run ends, its
parts let go of it (`Run._let_go`), so its graph is freed by reference
counting, not left to these passes.

The thresholds are process-wide: the first run to start (in any thread)
saves them and the last to end puts them back.  Nothing here changes what
a run does or observes - only when Python's collector works.

What does not live here: Lua's collector (`forge.lua.runtime`).
"""

from __future__ import annotations

import gc
import threading

#: The oldest generation's threshold while a run executes: full passes wait
#: for this many collections of the middle one (CPython's default is 10).
DEFERRED_OLDEST = 1_000
#: The youngest generation's threshold while a run executes (CPython's
#: default is 700 allocations).
DEFERRED_YOUNGEST = 10_000


class _Deferred:
    """The context manager `deferred` is (a class: entered twice a run)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: tuple[int, ...] | None = None

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                saved = self._saved = gc.get_threshold()
                if saved[0] > 0:                # 0: the process turned the collector off
                    gc.set_threshold(max(saved[0], DEFERRED_YOUNGEST), saved[1],
                                     max(saved[2], DEFERRED_OLDEST))
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._saved is not None:
                gc.set_threshold(*self._saved)
                self._saved = None


_deferred = _Deferred()


def deferred() -> _Deferred:
    """Full collections wait inside `with deferred():` (see the module docstring)."""
    return _deferred
