"""How a run's cost grows with its tasks: one owner spawning N tasks and
joining them all, with and without a store write in each task.

Each size runs a few times; the figure is CPU time (min and median), and the
growth exponent between two sizes is log(t2/t1) / log(n2/n1): 1.0 is linear.

    python3 benchmarks/scaling.py            # 10 .. 10,000 tasks
    python3 benchmarks/scaling.py --json     # the numbers as JSON
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import parse_prompt

SIZES = (10, 100, 1_000, 10_000)


def prompt(n: int, writes: bool) -> str:
    body = "store.write('f/' .. sys.taskid, 'x') return 'ok'" if writes else "return 'ok'"
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


def measure(n: int, writes: bool, reps: int) -> list[float]:
    parsed = parse_prompt(prompt(n, writes), "scaling.md")
    config = RunConfig(max_tasks=2 * n + 10, max_steps=100 * n + 1000)
    times = []
    for _ in range(reps):
        start = time.process_time()
        run = run_prompt(parsed, Harness(), None, config)
        times.append(time.process_time() - start)
        assert run.outcome == "ok" and run.result == str(n), run.error
    return times


def main(argv: list[str]) -> int:
    rows = []
    for writes in (False, True):
        previous = None
        for n in SIZES:
            times = measure(n, writes, reps=3 if n < 10_000 else 1)
            low = min(times)
            row = {"tasks": n, "store_writes": writes, "min_s": low,
                   "median_s": statistics.median(times)}
            if previous is not None:
                row["exponent"] = math.log(low / previous[1]) / math.log(n / previous[0])
            previous = (n, low)
            rows.append(row)
            if "--json" not in argv:
                grow = f"  exponent {row['exponent']:.2f}" if "exponent" in row else ""
                print(f"{'writes' if writes else 'joins ':6} {n:>6} tasks  "
                      f"min {low * 1000:9.1f} ms  median {row['median_s'] * 1000:9.1f} ms{grow}",
                      flush=True)
    if "--json" in argv:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
