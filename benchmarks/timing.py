"""Timing for the benchmarks: calls per second on the CPU clock.

CPU time (`time.process_time`), not wall time, so a busy machine slows a
figure less - except where the work waits on the disk (a SQLite store that
syncs), where wall time is what a user waits for; the median of five rounds, so one interrupted round does not
decide it.  Each benchmark compares against a baseline measured in the same
run, so what it reports is a ratio.  The kernel bounds' shared options
(`bound_parser`) live here too.
"""

from __future__ import annotations

import argparse
import statistics
import time


def bound_parser(doc: str) -> argparse.ArgumentParser:
    """The options of a kernel bound (`lua_kernel_bound.py`,
    `python_kernel_bound.py`): CPU seconds to spend and JSON output."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="CPU seconds to spend measuring in all (default 6)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return parser


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


def interleaved(fns: dict, seconds: float, rounds: int = 7, clock=time.process_time) -> dict:
    """Seconds per call of each function, measured interleaved: every round
    runs each function in turn (the starting one rotating), so a machine that
    slows down or speeds up mid-benchmark moves every figure alike.

    Each function gets about seconds/len(fns) in all.  Returns
    {name: {"min": s, "median": s}} per call.
    """
    names = list(fns)
    counts = {}
    for name in names:                # calibrate: calls per ~1/rounds of its share
        fn, n, start = fns[name], 0, clock()
        while clock() - start < 0.02 or n < 1:
            fn()
            n += 1
        per_call = (clock() - start) / n
        counts[name] = max(1, int(seconds / len(names) / rounds / per_call))
    samples: dict = {name: [] for name in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            fn, n = fns[name], counts[name]
            start = clock()
            for _ in range(n):
                fn()
            samples[name].append((clock() - start) / n)
    return {name: {"min": min(s), "median": statistics.median(s)} for name, s in samples.items()}
