"""Python's cyclic collector while a run executes.

A run builds a graph of long-lived objects (tasks, chains, events, trace
records) that grows with its work.  With CPython's default thresholds the
collector makes full passes over everything alive every few thousand
allocations; in a run of 10,000 tasks those full passes over the run's own
live graph were a quarter of its CPU time, and their number grows with the
run.  While a run executes (and while its observation is built from that
graph), `deferred` raises only the oldest generation's threshold, so full
passes wait for the run's end; the young generations are
collected as usual, so garbage a run makes and drops is still freed as it
goes, and memory stays bounded by what the run keeps alive.

The thresholds are process-wide: the first run to start (in any thread)
saves them and the last to end puts them back.  Nothing here changes what
a run does or observes - only when Python's collector works.

What does not live here: Lua's collector (`forge.lua.runtime`).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: The oldest generation's threshold while a run executes: full passes wait
#: for this many collections of the middle one (CPython's default is 10).
DEFERRED_OLDEST = 1_000

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] | None = None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Full collections wait while the block runs (see the module docstring)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if _saved[0] > 0:                   # 0: the process turned the collector off
                gc.set_threshold(_saved[0], _saved[1], max(_saved[2], DEFERRED_OLDEST))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
