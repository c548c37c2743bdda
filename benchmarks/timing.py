"""Timing for the benchmarks: calls per second on the CPU clock.

CPU time (`time.process_time`), not wall time, so a busy machine slows a
figure less - except where the work waits on the disk (a SQLite store that
syncs), where wall time is what a user waits for; the median of five rounds, so one interrupted round does not
decide it.  Each benchmark compares against a baseline measured in the same
run, so what it reports is a ratio.
"""

from __future__ import annotations

import statistics
import time


def rate(fn, seconds: float, clock=time.process_time) -> float:
    """Calls per second of `clock` (CPU time unless the caller waits on I/O):
    the median over five rounds of ~seconds/5 each."""
    rounds = []
    for _ in range(5):
        n, start = 0, clock()
        deadline = start + seconds / 5
        while True:
            fn()
            n += 1
            now = clock()
            if now >= deadline:
                break
        rounds.append(n / (now - start))
    return statistics.median(rounds)
