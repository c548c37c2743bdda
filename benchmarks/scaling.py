"""How a run's cost grows with its tasks: one owner spawning N tasks and
joining them all, with and without a store write in each task, and (`wide`)
with a harness ceiling that lets every task be ready at once, so each
scheduling decision is among up to N chains, with the default chooser and
(`wide_pct`) with PCT, which ranks every chain it has seen; and one
`fanout` over N items.

    python3 benchmarks/scaling.py [--reps R] [--json] [--max N]

Sizes 1, 10, 100, 1,000 and 10,000 run interleaved, R rounds (each round
runs every size of both series once), CPU time.  Every figure is also given
as a ratio to the run of one task measured in the same rounds, and per task.
The growth exponent between two sizes is log(t2/t1) / log(n2/n1) on the
minimum times: 1.0 is linear; `exponent` is the one from 1,000 to 10,000
tasks, `fit` the least-squares slope from 100 up.

CPU time on a shared machine moves by tens of percent between rounds, which
is as much as the exponent's margin; so each size is also run once under
cProfile to count the Python calls it makes - a figure that does not depend
on the machine at all - and `calls_exponent` is that count's growth from
1,000 to 10,000 tasks (1.0: the engine does the same work per task at
every size).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import math
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forge.engine.run import RunConfig, run_prompt  # noqa: E402
from forge.harness import Harness  # noqa: E402
from forge.prompt import parse_prompt  # noqa: E402
from forge.sim.chooser import Chooser  # noqa: E402
from forge.sim.pct import PCTProvider  # noqa: E402

SIZES = (1, 10, 100, 1_000, 10_000)


def prompt(n: int, writes: bool, fanout: bool = False) -> str:
    body = "store.write('f/' .. sys.taskid, 'x') return 'ok'" if writes else "return 'ok'"
    if fanout:
        return f"""---
name: scaling
description: one fanout over {n} items
promptforge: 0
---

# Scaling

## Main

```lua
local items = {{}}
for i = 1, {n} do items[i] = i end
return tostring(#fanout('### W', items))
```

### W

```lua
{body}
```
"""
    return f"""---
name: scaling
description: one owner, {n} tasks
promptforge: 0
---

# Scaling

## Main

```lua
local hs = {{}}
for i = 1, {n} do hs[#hs + 1] = tasks.spawn('### W') end
local r = tasks.join(hs)
return tostring(#r)
```

### W

```lua
{body}
```
"""


def harness(n: int, wide: bool) -> Harness:
    """The default harness, or (`wide`) one whose ceiling lets every task run at once."""
    return Harness(ceiling=n + 10) if wide else Harness()


def chooser(n: int, pct: bool) -> Chooser | None:
    """The default chooser, or PCT with change points over the run's decisions."""
    return Chooser(PCTProvider(1, 3, 3 * n)) if pct else None


def once(parsed, n: int, wide: bool = False, pct: bool = False) -> float:
    config = RunConfig(max_tasks=2 * n + 10, max_steps=100 * n + 1000)
    gc.collect()        # the previous run's garbage is not this run's cost
    start = time.process_time()
    run = run_prompt(parsed, harness(n, wide), chooser(n, pct), config)
    run.observation()
    spent = time.process_time() - start
    assert run.outcome == "ok" and run.result == str(n), run.error
    return spent


def calls(parsed, n: int, wide: bool = False, pct: bool = False) -> int:
    """Python function calls one run (and its observation) makes."""
    config = RunConfig(max_tasks=2 * n + 10, max_steps=100 * n + 1000)
    profile = cProfile.Profile()
    profile.enable()
    run_prompt(parsed, harness(n, wide), chooser(n, pct), config).observation()
    profile.disable()
    return sum(entry.callcount for entry in profile.getstats())


def exponent(a: tuple[int, float], b: tuple[int, float]) -> float:
    return math.log(b[1] / a[1]) / math.log(b[0] / a[0])


def fit(points: list[tuple[int, float]]) -> float:
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
            / sum((x - mx) ** 2 for x in xs))


def measure(reps: int, sizes: tuple[int, ...]) -> dict:
    #: name -> (a store write in each task, every task ready at once, a
    #: fanout's arms, PCT's choices)
    series = {"joins": (False, False, False, False), "store_writes": (True, False, False, False),
              "wide_joins": (False, True, False, False), "wide_pct": (False, True, False, True),
              "fanout": (False, False, True, False)}
    parsed = {(name, n): parse_prompt(prompt(n, writes, fan), "scaling.md")
              for name, (writes, _, fan, _) in series.items() for n in sizes}
    times: dict = {key: [] for key in parsed}
    for _ in range(reps):
        for key, p in parsed.items():
            _, wide, _, pct = series[key[0]]
            times[key].append(once(p, key[1], wide, pct))
    counted = {key: calls(p, key[1], series[key[0]][1], series[key[0]][3])
               for key, p in parsed.items()}
    out: dict = {}
    for name in series:
        base = min(times[(name, sizes[0])])
        rows = []
        for n in sizes:
            t = times[(name, n)]
            rows.append({"tasks": n, "min_s": min(t), "median_s": statistics.median(t),
                         "vs_smallest": min(t) / base, "per_task_vs_smallest": min(t) / base / n,
                         "python_calls": counted[(name, n)],
                         "python_calls_per_task": counted[(name, n)] / n})
        points = [(r["tasks"], r["min_s"]) for r in rows]
        for a, b in zip(rows, rows[1:]):
            b["exponent_from_previous"] = exponent((a["tasks"], a["min_s"]), (b["tasks"], b["min_s"]))
        big = [p for p in points if p[0] >= 100]
        out[name] = {
            "rows": rows,
            "exponent": exponent(points[-2], points[-1]),
            "fit": fit(big) if len(big) >= 2 else None,
            "calls_exponent": exponent((rows[-2]["tasks"], rows[-2]["python_calls"]),
                                       (rows[-1]["tasks"], rows[-1]["python_calls"])),
        }
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--max", type=int, default=SIZES[-1], help="largest size")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args(argv)
    out = measure(opts.reps, tuple(n for n in SIZES if n <= opts.max))
    if opts.json:
        print(json.dumps(out, indent=1))
        return 0
    for name, s in out.items():
        for r in s["rows"]:
            grow = (f"  exponent {r['exponent_from_previous']:.2f}"
                    if "exponent_from_previous" in r else "")
            print(f"{name:12} {r['tasks']:>6} tasks  min {r['min_s'] * 1000:9.1f} ms  "
                  f"median {r['median_s'] * 1000:9.1f} ms  {r['vs_smallest']:8.1f}x one task  "
                  f"{r['python_calls_per_task']:7.1f} calls/task{grow}")
        fitted = f", fit from 100: {s['fit']:.2f}" if s["fit"] is not None else ""
        print(f"{name:12} exponent {s['rows'][-2]['tasks']:,} -> {s['rows'][-1]['tasks']:,}: "
              f"{s['exponent']:.2f}{fitted}; Python calls: {s['calls_exponent']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
