"""Benchmarks: one command, ratios measured in one run.

    python benchmarks/run.py [--seconds S] [--json]

Measures, in-process:
- runs/s of a small walk/call/store prompt on the reference engine;
- runs/s of the seed's first example (two tasks joined);
- the cost of creating a run (Run construction: a fresh Lua runtime, the
  sandbox and the host library) against a bare lupa runtime as the baseline;
- schedules/s of `forge explore`'s inner loop (random chooser + invariants).
Each figure is the median of several timed rounds; ratios compare numbers
taken in the same process, so they travel between machines better than the
absolute rates.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from timing import rate  # noqa: E402
from forge.engine.run import Run, RunConfig, run_prompt  # noqa: E402
from forge.harness import Harness  # noqa: E402
from forge.prompt import parse_prompt  # noqa: E402
from conformance import oracles  # noqa: E402
from sim.chooser import Chooser, RandomProvider  # noqa: E402

WALK = """---
name: walk
description: walk, call and store
promptforge: 0
---

# Walk

## First

```lua
var.n = 1
store.write('notes/a.md', 'alpha')
```

## Second

```lua
local got = call('### Helper', 'x')
return got .. store.read('notes/a.md') .. var.n
```

### Helper

```lua
store.append('notes/a.md', '+')
return 'helper:' .. args .. ':'
```
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()

    import lupa.lua55 as lua55

    walk = parse_prompt(WALK, "walk.md")
    two = parse_prompt((ROOT / "examples" / "two-tasks.md").read_text(), "two-tasks.md")
    assert run_prompt(walk).observation()["result"] == "helper:x:alpha+1"
    assert run_prompt(two).observation()["result"] == "alpha text + beta text"

    seed = iter(range(10**9))

    def explore_one():
        obs = run_prompt(two, Harness(), Chooser(RandomProvider(next(seed))), RunConfig()).observation()
        for check in oracles.DEFAULT_CHECKS:
            check(obs)

    results = {
        "walk_call_store_runs_per_s": rate(lambda: run_prompt(walk), opts.seconds),
        "two_tasks_runs_per_s": rate(lambda: run_prompt(two), opts.seconds),
        "run_creation_per_s": rate(lambda: Run(walk), opts.seconds),
        "bare_lupa_runtime_per_s": rate(lambda: lua55.LuaRuntime(encoding=None), opts.seconds),
        "explore_schedules_per_s": rate(explore_one, opts.seconds),
    }
    results["run_creation_cost_vs_bare_lupa"] = (
        results["bare_lupa_runtime_per_s"] / results["run_creation_per_s"]
    )
    results["run_creation_ms"] = 1000 / results["run_creation_per_s"]
    if opts.json:
        print(json.dumps({k: round(v, 3) for k, v in results.items()}, sort_keys=True))
        return
    for key, value in results.items():
        print(f"{key:36} {value:12.2f}")


if __name__ == "__main__":
    main()
