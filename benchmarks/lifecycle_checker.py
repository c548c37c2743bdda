"""The history checker's cost: CPU seconds to decide histories of 8 processes,
by size, and the cost of a failing one (search plus shrinking).

    python benchmarks/lifecycle_checker.py [--sizes 1000,2000,5000,10000,20000] [--json]

A history is made the way a real one happens: 8 processes each issue store
operations one after another on a virtual clock, each taking a random
duration, and each takes effect at a random instant inside its interval; the
reference store, run in the order of those instants, gives every answer. So
the histories are linearizable, with real overlap (about 8 calls in flight at
any time); 1% of the operations lose their outcome (a crashed caller: it took
effect or not, at random). Tasks are drawn from a pool of size/20, so every
task sees about 20 operations, and a tenth of the operations are reads of a
whole parent's listing (which join that parent's tasks into one part).

Each size is decided five times, interleaved with the others; the figure is
CPU time (``time.process_time``), min and median, with the ratio of seconds
per operation to the smallest size (1.0 means linear). The failing case flips
one answer in the middle of the largest history.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attrs  # noqa: E402

from forge.lifecycle.history import Operation, encode, error_kind  # noqa: E402
from forge.lifecycle.linearizability import check  # noqa: E402
from forge.lifecycle.records import Task  # noqa: E402
from forge.lifecycle.store import MemoryStore  # noqa: E402

PROCESSES = 8


def history(size: int, seed: int = 1) -> list[Operation]:
    """A linearizable history of ``size`` operations by 8 processes."""
    rng = random.Random(seed)
    pool = max(size // 20, 4)
    parents = max(pool // 8, 1)
    plans = []  # (effect instant, call, return, process, method, args)
    clock = [0.0] * PROCESSES
    for k in range(size):
        p = k % PROCESSES
        call = clock[p] + rng.uniform(0.0, 1.0)
        ret = call + rng.uniform(0.5, 8.0)
        clock[p] = ret
        n = rng.randrange(pool)
        tid, parent = f"t{n}", f"p{n % parents}"
        roll = rng.random()
        if roll < 0.15:
            name, args = "create", [Task(id=tid, run_id="r1", parent_session_id=parent,
                                         child_session_id=f"s{n}", label=tid)]
        elif roll < 0.40:
            name, args = "finalize", [tid, rng.choice(["r1", "r2"]),
                                      rng.choice(["completed", "failed"]), "s", "r"]
        elif roll < 0.55:
            name, args = "retry_claim", [tid, "r2", 3]
        elif roll < 0.65:
            name, args = "release_retry_claim", [tid, "r2", "x", "x"]
        elif roll < 0.80:
            name, args = "get", [tid]
        elif roll < 0.90:
            name, args = "list_by_parent", [parent]
        else:
            name, args = "settle", [tid, "r1"]
        plans.append((rng.uniform(call, ret), call, ret, p, name, args))
    store = MemoryStore()
    out = []
    for effect, call, ret, p, name, args in sorted(plans, key=lambda x: x[0]):
        lost = rng.random() < 0.01
        if lost and rng.random() < 0.5:
            answer = None  # crashed before it took effect
        else:
            try:
                answer = encode(getattr(store, name)(*args))
            except Exception as exc:  # noqa: BLE001 - refusals are answers too
                answer = {"error": error_kind(exc)}
        out.append(Operation(p, name, tuple(encode(args)), None if lost else answer,
                             int(call * 1000), None if lost else int(ret * 1000)))
    out.sort(key=lambda op: op.call)
    return out


def broken(ops: list[Operation]) -> list[Operation]:
    """``ops`` with one read in the middle answering a status nobody wrote."""
    ops = list(ops)
    for i in range(len(ops) // 2, len(ops)):
        op = ops[i]
        if op.op == "get" and isinstance(op.result, dict) and "status" in op.result:
            ops[i] = attrs.evolve(op, result={**op.result, "status": "cancelled"})
            return ops
    raise AssertionError("no read to break")


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    made = {n: history(n) for n in sizes}
    for n, ops in made.items():
        verdict = check(ops)
        assert verdict.ok, f"size {n}: {verdict.text()}"
    times: dict[int, list[float]] = {n: [] for n in sizes}
    for r in range(5):  # interleaved: each round decides every size, rotating
        order = sizes[r % len(sizes):] + sizes[:r % len(sizes)]
        for n in order:
            times[n].append(cpu(lambda n=n: check(made[n])))
    bad = broken(made[sizes[-1]])
    failing = [cpu(lambda: check(bad)) for _ in range(3)]
    verdict = check(bad)
    assert not verdict.ok
    base = statistics.median(times[sizes[0]]) / sizes[0]
    rows = [{"operations": n, "parts": check(made[n]).parts,
             "min_s": round(min(times[n]), 4), "median_s": round(statistics.median(times[n]), 4),
             "per_op_vs_smallest": round(statistics.median(times[n]) / n / base, 2)}
            for n in sizes]
    report = {"processes": PROCESSES, "sizes": rows,
              "failing": {"operations": sizes[-1], "min_s": round(min(failing), 4),
                          "median_s": round(statistics.median(failing), 4),
                          "minimal": len(verdict.minimal)}}
    if a.json:
        print(json.dumps(report, sort_keys=True))
        return
    print(f"history checker, {PROCESSES} processes, CPU seconds (min / median of 5, interleaved)")
    for row in rows:
        print(f"  {row['operations']:>6} ops  {row['parts']:>5} parts  {row['min_s']:.3f} / "
              f"{row['median_s']:.3f} s   per-op cost x{row['per_op_vs_smallest']} of the smallest")
    f = report["failing"]
    print(f"  failing {f['operations']} ops (search + shrink to {f['minimal']} operations): "
          f"{f['min_s']:.3f} / {f['median_s']:.3f} s")


if __name__ == "__main__":
    main()
