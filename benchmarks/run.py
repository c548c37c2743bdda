"""Benchmarks of the reference engine: one command, ratios measured in one run.

    python3 benchmarks/run.py [--seconds S] [--json] [--quick]

Every figure is CPU time (`time.process_time`) per call, min and median over
rounds, and the functions compared are measured interleaved
(`timing.interleaved`), so a busy machine moves them alike.  What matters
is the ratios; the absolute rates are for this machine only.

- `fresh_floor`: lupa itself doing a run's Lua work - a fresh `LuaRuntime`
  with the engine's options, every block of the prompt loaded as text into
  its own environment and run in a coroutine (host names answered by a stub),
  and the run's trace records hashed exactly as a run hashes them.  No
  engine could do less with a runtime of its own per run.
- `reused_floor`: the same with one runtime kept across runs.
- `two_tasks` and `walk_call_store`: a whole run of each prompt
  (`run_prompt(...).observation()`) on a reused runtime, and their ratios
  to the floors; `two_tasks_fresh_runtime` the same run with
  `FORGE_FRESH_RUNTIME=1` (a runtime of its own, the escape hatch).
- `run_creation`: `Run(prompt)` alone (its reused runtime given back)
  against a bare `LuaRuntime`; `run_creation_fresh_runtime` with a runtime
  of its own.
- `phases`: where a two-tasks run's time goes, read with the CPU clock
  between the phases of each run (`phase_split`): creating the run,
  executing it, building its observation less hashing the trace, and
  hashing the trace (which the floors pay too), as fractions of a run.
- `explore`: one random schedule of two-tasks plus the oracle checks.
- `users`: what a user pays through the public API (`forge.api`), on the
  prompt's path, next to the same floor: `run_prompt(path)` (a run with its
  observation, per call), and one schedule of `explore(path)` (random and
  PCT, a campaign of `EXPLORE_RUNS` schedules divided by them: a schedule
  that repeats one the campaign ran before is not run again,
  `forge.watched`), and the same random campaign with every schedule run
  as one never seen is (`api_explore_random_unseen`: no schedule
  predicted); beside them
  a plain run (`Run(prompt).execute()`, no observation), the Lua kernel
  bound (`lua_kernel_bound.py`'s kernel, the same observation in Lua) and
  the Python kernel bound (`python_kernel_bound.py`'s: the same observation
  from the happy path alone, in Python on lupa, as the engine's kernel is).
  `parallel_exhaustive`: the exhaustive walk of `campaigns.py` (10,080
  schedules) with 2 workers against one process, on the wall clock (None
  with `--quick`).
- `conformance`: every case on its canonical schedule, cases per second.
- `endless_jump`: the runaway prompt that jumps between two sections until
  the section entry budget (50,000 entries) stops it.
- `rss`: the process's resident memory after 1,000 and after 10,000 runs of
  two-tasks on the reused runtime (`--rss-runs` sets the second count).
- `python_calls_per_run`: the Python function calls one run of two-tasks
  (and of the walk prompt) makes, counted under cProfile: the same on any
  machine, so a change too small for CPU time's noise still shows; and
  those of `api.run_prompt` and of one schedule of `api.explore` (random)
  on two-tasks, the public API's path around the same run.  A measured
  `explore` call takes the set-up the call before it left
  (`forge.repro.Shelf`), as a user's second campaign of a prompt does;
  `api_explore_random_first` is the same campaign with nothing kept, as a
  process's first campaign of the prompt pays for it.

A run takes an idle runtime and gives it back (`forge.lua.runtime`); a
test checks over every example and case that such runs are byte-identical
to runs on fresh runtimes, and
`benchmarks/lupa_hazards.py` shows lupa's collector hazards next to the
engine staying clear of them.  Where the same prompt runs again, runs are
skipped too: the conformance adapter reuses the observation of a schedule
that made the very choices and never read the seed, and a mutant's run
where the reference run never read the mutant's site
(`forge.conformance.adapters`).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import lupa.lua55 as lua55  # noqa: E402

from timing import interleaved  # noqa: E402
from forge.engine.run import Run, RunConfig, run_prompt  # noqa: E402
from forge.harness import Harness  # noqa: E402
from forge.lua import runtime as lua_runtime  # noqa: E402
from forge.prompt import parse_prompt  # noqa: E402
from forge.sim.trace import Trace  # noqa: E402

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

JUMP = """---
name: endless-jump
description: jumps between two sections until the entry budget stops it
promptforge: 0
---

# Jump

## A

```lua
jump('## B')
```

## B

```lua
jump('## A')
```
"""

#: The floor's Lua side: a stub for every host name, and a driver that loads
#: each block into a fresh environment and runs it in a coroutine.
FLOOR_LUA = b"""
local stub_mt, stub = {}, nil
stub = setmetatable({}, stub_mt)
stub_mt.__index = function() return stub end
stub_mt.__call = function() return stub end
stub_mt.__concat = function() return '' end
local env_mt = { __index = function() return stub end }
return function(...)
  local n = select('#', ...)
  for i = 1, n, 2 do
    local source, name = select(i, ...)
    local f = assert(load(source, name, 't', setmetatable({}, env_mt)))
    coroutine.resume(coroutine.create(function() return pcall(f) end))
  end
end
"""


def _no_attributes(obj, name, is_setting):
    # The engine's runtimes refuse every Python attribute (`Keeper.filter`).
    raise AttributeError(lua_runtime.ATTRIBUTES_UNREACHABLE)


def _runtime():
    return lua55.LuaRuntime(
        encoding=None, unpack_returned_tuples=True, register_eval=False,
        register_builtins=False, attribute_filter=_no_attributes,
        string_hash_seed=lua_runtime.STRING_HASH_SEED,
        max_memory=lua_runtime.DEFAULT_MAX_MEMORY)


class Floor:
    """The least a run of `prompt` could cost: its Lua chunks and its trace hash."""

    def __init__(self, prompt) -> None:
        blocks = list(prompt.h1_blocks) + [b for s in prompt.sections for b in s.blocks]
        self.chunks = []
        for block in blocks:
            self.chunks += [("\n" * (block.first_line - 1) + block.source).encode("utf-8"),
                            block.location.encode("utf-8")]
        records = run_prompt(prompt).trace.records
        self.records = [(r["t"], r["what"], {k: v for k, v in r.items() if k not in ("i", "t", "what")})
                        for r in records]
        self.driver_bytecode = _runtime().execute(
            b"return function(s) return string.dump(assert(load(s, '=floor'))) end")(FLOOR_LUA)
        self.kept = self._driver(_runtime())

    def _driver(self, lua):
        return lua.globals().load(self.driver_bytecode, b"=floor", b"b")()

    def _hash(self) -> str:
        trace = Trace()
        for t, what, fields in self.records:
            trace.emit(t, what, **fields)
        return trace.sha256()

    def fresh(self) -> str:
        self._driver(_runtime())(*self.chunks)
        return self._hash()

    def reused(self) -> str:
        self.kept(*self.chunks)
        return self._hash()


def _fresh(fn):
    """`fn` with a runtime of its own for every run (the escape hatch)."""
    def call():
        os.environ[lua_runtime.FRESH_ENV] = "1"
        try:
            return fn()
        finally:
            del os.environ[lua_runtime.FRESH_ENV]
    return call


def _created(prompt):
    """`Run(prompt)`, its reused runtime given back as a run's end does."""
    run = Run(prompt)
    lua_runtime.release(run.lua)
    return run


def python_calls(call, runs: int = 1) -> int:
    """Python function calls (built-ins included) `call()` makes per run (it
    makes `runs`), warm (a reused runtime, every cache filled by a call
    before): a figure no machine's load moves, for changes smaller than CPU
    time's noise."""
    call()
    profile = cProfile.Profile()
    profile.enable()
    call()
    profile.disable()
    return round(sum(entry.callcount for entry in profile.getstats()) / runs)


def phase_split(prompt, runs: int) -> dict:
    """The fraction of a run each phase takes, summed over `runs` runs read
    with the CPU clock between phases (each read costs well under a
    microsecond).  The trace hash is timed again right after the observation
    that includes it, and taken out of the observation's share."""
    clock = time.process_time
    sums = dict.fromkeys(("creation", "execute", "observation_less_hash", "trace_hash"), 0.0)
    for _ in range(runs):
        t0 = clock()
        run = Run(prompt)
        t1 = clock()
        run.execute()
        t2 = clock()
        run.observation()
        t3 = clock()
        # The observation kept the trace's text it hashed: hash the records
        # again as a trace of them, as the observation did.
        again = Trace()
        again.records = run.trace.records
        again.sha256()
        t4 = clock()
        sums["creation"] += t1 - t0
        sums["execute"] += t2 - t1
        sums["observation_less_hash"] += (t3 - t2) - (t4 - t3)
        sums["trace_hash"] += t4 - t3
    total = sum(sums.values())
    return {name: t / total for name, t in sums.items()}


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def rss_series(runs: int) -> dict:
    """Resident memory after 1,000 runs of two-tasks and after `runs` runs, in a
    process of its own (so nothing else this benchmark did sits in it)."""
    done = subprocess.run([sys.executable, __file__, "--rss-child", str(runs)],
                          capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(done.stdout).items()}


def _rss_child(runs: int) -> None:
    two = parse_prompt((ROOT / "examples" / "two-tasks.md").read_text(), "two-tasks.md")
    out = {}
    for i in range(1, runs + 1):
        run_prompt(two).observation()
        if i in (1_000, runs):
            out[i] = _rss_kib()
    print(json.dumps(out))


def _conformance_pass():
    from forge.conformance.adapters import InProcessAdapter
    from forge.conformance.case import DEFAULT_CASES_DIR, load_cases

    cases = [c for c in load_cases(DEFAULT_CASES_DIR) if c.prompt is not None]
    adapter = InProcessAdapter()

    def one_pass():
        for case in cases:
            try:
                adapter.run(case, None)
            except Exception:  # noqa: BLE001 - a case's outcome is not what is measured
                pass

    return one_pass, len(cases)


#: Schedules in each measured `forge.api.explore` campaign: a user's campaign
#: is some hundreds, and its set-up (the canonical run, the checks) is spread
#: over them as here.
EXPLORE_RUNS = 100


def _pair(row: dict, floor: dict) -> dict:
    return {stat: row[stat] / floor[stat] for stat in ("min", "median")}


def parallel_exhaustive(rounds: int = 2) -> dict:
    """The exhaustive walk of `campaigns.py` (10,080 schedules) on a local
    pool of 2 workers against one process: wall clock, as a pool's gain is
    (this process's CPU clock barely moves while its workers run)."""
    from campaigns import campaigns, measure as measure_spread

    walk = next(configs for title, configs in campaigns(0, dask=False).items()
                if title.startswith("exhaustive"))
    result = measure_spread(walk, rounds)
    serial, pool = result["configs"]["serial"], result["configs"]["local pool, 2 workers"]
    return {"schedules": result["schedules"], "clock": "wall",
            "speedup": {"min": serial["seconds_min"] / pool["seconds_min"],
                        "median": serial["seconds_median"] / pool["seconds_median"]}}


def measure(seconds: float, quick: bool, rss_runs: int = 10_000) -> dict:
    import forge.api as api
    from forge.conformance import oracles
    from forge.sim.chooser import Chooser, RandomProvider
    from forge.watched import Watched
    from lua_kernel_bound import LuaKernel
    from python_kernel_bound import PythonKernel

    walk = parse_prompt(WALK, "walk.md")
    two = parse_prompt((ROOT / "examples" / "two-tasks.md").read_text(), "two-tasks.md")
    assert run_prompt(walk).observation()["result"] == "helper:x:alpha+1"
    assert run_prompt(two).observation()["result"] == "alpha text + beta text"
    two_floor, walk_floor = Floor(two), Floor(walk)
    two_path = str(ROOT / "examples" / "two-tasks.md")
    kernel, py_kernel = LuaKernel(two), PythonKernel(two)
    assert kernel.observation() == run_prompt(two).observation(), \
        "the Lua kernel bound no longer does the engine's work (lua_kernel_bound.py)"
    assert py_kernel.observation() == run_prompt(two).observation(), \
        "the Python kernel bound no longer does the engine's work (python_kernel_bound.py)"
    assert api.explore(two_path, runs=EXPLORE_RUNS).ok
    seed = iter(range(10**9))

    def first_campaign(campaign):
        """`campaign` as a process's first campaign of its prompt pays for
        it: no set-up kept from a campaign before (`forge.repro.Shelf`)."""
        def call():
            api._campaigns.cache_clear()
            return campaign()
        return call

    def unseen(campaign):
        """`campaign` with every schedule run as a schedule the campaign
        never saw is: nothing predicted from the runs watched before."""
        def call():
            predict = Watched.predict
            Watched.predict = lambda self, chooser: None
            try:
                return campaign()
            finally:
                Watched.predict = predict
        return call

    def explore_one():
        obs = run_prompt(two, Harness(), Chooser(RandomProvider(next(seed))), RunConfig()).observation()
        for check in oracles.DEFAULT_CHECKS:
            check(obs)

    per_call = interleaved({
        "two_tasks": lambda: run_prompt(two).observation(),
        "two_tasks_fresh_runtime": _fresh(lambda: run_prompt(two).observation()),
        "two_tasks_fresh_floor": two_floor.fresh,
        "two_tasks_reused_floor": two_floor.reused,
        "walk_call_store": lambda: run_prompt(walk).observation(),
        "walk_fresh_floor": walk_floor.fresh,
        "walk_reused_floor": walk_floor.reused,
        "run_creation": lambda: _created(two),
        "run_creation_fresh_runtime": _fresh(lambda: Run(two)),
        "bare_lupa_runtime": _runtime,
        "explore_schedule": explore_one,
        "two_tasks_run": lambda: Run(two).execute(),
        "lua_kernel_bound": kernel.observation,
        "python_kernel_bound": py_kernel.observation,
        "api_run_prompt": lambda: api.run_prompt(two_path),
        # Named: the API's default is the portfolio now, not random.
        "api_explore_random": lambda: api.explore(two_path, runs=EXPLORE_RUNS, strategy="random"),
        "api_explore_pct": lambda: api.explore(two_path, runs=EXPLORE_RUNS, strategy="pct"),
        "api_explore_random_unseen": unseen(
            lambda: api.explore(two_path, runs=EXPLORE_RUNS, strategy="random")),
        "api_explore_random_first": first_campaign(
            lambda: api.explore(two_path, runs=EXPLORE_RUNS, strategy="random")),
    }, seconds)
    for name in ("api_explore_random", "api_explore_pct", "api_explore_random_first",
                 "api_explore_random_unseen"):
        per_call[name] = {stat: v / EXPLORE_RUNS for stat, v in per_call[name].items()}
    out: dict = {"per_call_s": per_call}
    m = {k: v["min"] for k, v in per_call.items()}
    med = {k: v["median"] for k, v in per_call.items()}
    out["ratios"] = {
        "two_tasks_vs_fresh_floor": {"min": m["two_tasks"] / m["two_tasks_fresh_floor"],
                                     "median": med["two_tasks"] / med["two_tasks_fresh_floor"]},
        "two_tasks_fresh_runtime_vs_fresh_floor": {
            "min": m["two_tasks_fresh_runtime"] / m["two_tasks_fresh_floor"],
            "median": med["two_tasks_fresh_runtime"] / med["two_tasks_fresh_floor"]},
        "two_tasks_fresh_runtime_vs_two_tasks": {
            "min": m["two_tasks_fresh_runtime"] / m["two_tasks"],
            "median": med["two_tasks_fresh_runtime"] / med["two_tasks"]},
        "two_tasks_vs_reused_floor": {"min": m["two_tasks"] / m["two_tasks_reused_floor"],
                                      "median": med["two_tasks"] / med["two_tasks_reused_floor"]},
        "walk_vs_fresh_floor": {"min": m["walk_call_store"] / m["walk_fresh_floor"],
                                "median": med["walk_call_store"] / med["walk_fresh_floor"]},
        "walk_vs_reused_floor": {"min": m["walk_call_store"] / m["walk_reused_floor"],
                                 "median": med["walk_call_store"] / med["walk_reused_floor"]},
        "run_creation_vs_bare_runtime": {"min": m["run_creation"] / m["bare_lupa_runtime"],
                                         "median": med["run_creation"] / med["bare_lupa_runtime"]},
        "run_creation_fresh_runtime_vs_bare_runtime": {
            "min": m["run_creation_fresh_runtime"] / m["bare_lupa_runtime"],
            "median": med["run_creation_fresh_runtime"] / med["bare_lupa_runtime"]},
        "explore_schedule_vs_two_tasks": {"min": m["explore_schedule"] / m["two_tasks"],
                                          "median": med["explore_schedule"] / med["two_tasks"]},
    }
    floor = per_call["two_tasks_fresh_floor"]
    out["users"] = {
        "run_vs_fresh_floor": _pair(per_call["two_tasks_run"], floor),
        "run_with_observation_vs_fresh_floor": _pair(per_call["two_tasks"], floor),
        "api_run_prompt_vs_fresh_floor": _pair(per_call["api_run_prompt"], floor),
        "api_explore_random_vs_fresh_floor": _pair(per_call["api_explore_random"], floor),
        "api_explore_pct_vs_fresh_floor": _pair(per_call["api_explore_pct"], floor),
        "api_explore_random_first_vs_fresh_floor": _pair(per_call["api_explore_random_first"],
                                                         floor),
        "api_explore_random_unseen_vs_fresh_floor": _pair(per_call["api_explore_random_unseen"],
                                                          floor),
        "lua_kernel_bound_vs_fresh_floor": _pair(per_call["lua_kernel_bound"], floor),
        "python_kernel_bound_vs_fresh_floor": _pair(per_call["python_kernel_bound"], floor),
        # The parallel exhaustive search's speedup over serial (2 workers,
        # wall clock): filled in below unless --quick.
        "parallel_exhaustive": None,
    }
    out["runs_per_s"] = {
        "two_tasks": 1 / med["two_tasks"],
        "walk_call_store": 1 / med["walk_call_store"],
        "explore_schedules": 1 / med["explore_schedule"],
    }
    out["phases"] = phase_split(two, 2_000 if quick else 10_000)
    out["python_calls_per_run"] = {
        "two_tasks": python_calls(lambda: run_prompt(two).observation()),
        "walk_call_store": python_calls(lambda: run_prompt(walk).observation()),
        # The public API's path around the same run (issue 32): a call, and a schedule.
        "api_run_prompt": python_calls(lambda: api.run_prompt(two_path)),
        "api_explore_random": python_calls(
            lambda: api.explore(two_path, runs=EXPLORE_RUNS, strategy="random"), EXPLORE_RUNS),
    }
    if not quick:
        out["users"]["parallel_exhaustive"] = parallel_exhaustive()
        jump = parse_prompt(JUMP, "jump.md")
        one_pass, n_cases = _conformance_pass()
        # Each of these takes seconds: a few rounds, each next to a floor
        # measured right then, so the ratio is of numbers taken together.
        rows: dict = {"endless_jump": [], "conformance_pass": [], "floor_then": []}
        for _ in range(3):
            # As in scaling.py: what an earlier section left (the runaway's
            # 50,000 entries, alive or garbage) is not the next one's cost.
            gc.collect()
            start = time.process_time()
            run = run_prompt(jump)
            rows["endless_jump"].append(time.process_time() - start)
            assert run.error is not None and run.error.message.startswith(
                "section entry budget exhausted"), run.error
            del run
            gc.collect()
            start = time.process_time()
            one_pass()
            rows["conformance_pass"].append(time.process_time() - start)
            gc.collect()
            start = time.process_time()
            for _ in range(200):
                two_floor.fresh()
            rows["floor_then"].append((time.process_time() - start) / 200)
        jump_s, pass_s, floor_s = (sorted(rows[k])[1] for k in ("endless_jump", "conformance_pass",
                                                                   "floor_then"))
        out["endless_jump_s"] = {"min": min(rows["endless_jump"]), "median": jump_s}
        out["endless_jump_entry_vs_fresh_floor"] = jump_s / 50_000 / floor_s
        out["conformance"] = {"cases": n_cases, "cases_per_s": n_cases / pass_s,
                              "case_vs_fresh_floor": pass_s / n_cases / floor_s}
        out["rss_kib"] = rss_series(rss_runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=12.0,
                        help="CPU seconds shared by the interleaved measurements")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--quick", action="store_true",
                        help="leave out the conformance pass, the endless-jump runaway and RSS")
    parser.add_argument("--rss-runs", type=int, default=10_000,
                        help="runs after which RSS is read again (default 10,000)")
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.rss_child:
        _rss_child(opts.rss_child)
        return
    out = measure(opts.seconds, opts.quick, opts.rss_runs)
    if opts.json:
        print(json.dumps(out, indent=1, sort_keys=True))
        return
    for name, v in out["per_call_s"].items():
        print(f"{name:28} min {v['min'] * 1e6:9.1f} us   median {v['median'] * 1e6:9.1f} us")
    for name, v in out["ratios"].items():
        print(f"{name:34} min {v['min']:6.2f}x  median {v['median']:6.2f}x")
    for name, v in out["users"].items():
        if v is not None:
            print(f"{name:34} min {v['min']:6.2f}x  median {v['median']:6.2f}x")
    print("two_tasks phases: " + ", ".join(f"{name} {share:.0%}"
                                           for name, share in out["phases"].items()))
    for name, v in out["runs_per_s"].items():
        print(f"{name + ' per s':34} {v:9.0f}")
    for name, n in out["python_calls_per_run"].items():
        print(f"{name + ' Python calls a run':34} {n:9,}")
    if "conformance" in out:
        c = out["conformance"]
        print(f"{'conformance cases per s':34} {c['cases_per_s']:9.1f}   "
              f"({c['cases']} cases; a case costs {c['case_vs_fresh_floor']:.0f} fresh floors)")
        j = out["endless_jump_s"]
        print(f"{'endless jump (50,000 entries)':34} min {j['min']:.2f} s  median {j['median']:.2f} s"
              f"   (an entry costs {out['endless_jump_entry_vs_fresh_floor']:.2f} fresh floors)")
        rss = out["rss_kib"]
        print("RSS after " + ", ".join(f"{n:,} runs {kib / 1024:.1f} MiB" for n, kib in rss.items()))


if __name__ == "__main__":
    main()
