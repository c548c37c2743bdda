"""Spread campaigns: schedules per second of `forge explore` serial, with a
local pool of 2 workers, and (with the distributed extra) on a Dask local
cluster of 2 workers - one run, so the figures are ratios.

    python benchmarks/campaigns.py [--runs N] [--rounds R] [--no-dask] [--json]
                                   [--only random|exhaustive]

**Wall time, not CPU time**, unlike the other benchmarks: the point of a
pool is that the wall clock moves less while more CPUs work; this process's
CPU clock barely moves while its workers run.  So the figures suffer when
other work shares the cores: run it on an otherwise quiet machine.  Each
round runs every configuration in turn (the first one rotating) and the
report gives the min and the median over rounds.  Every configuration's
report is checked to be the serial one.

Two campaigns, every schedule passing (a failure would end one early):
`examples/explore/store-race.md --args 2`, random, `--runs` seeds; and
the exhaustive walk of `store-race.md --args 3` without reduction, the
whole tree of 10,080 schedules, spread by subtrees.  The pool's and
the cluster's start-up are inside each timed campaign, as a user waits for
them; the cluster's start-up is also timed alone.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forge.campaign import explore_campaign, walk_campaign  # noqa: E402
from forge.pool import Backend  # noqa: E402
from forge.repro import explore_prompt  # noqa: E402
from forge.runspec import spec_from_flags  # noqa: E402

PROMPT = ROOT / "examples" / "explore" / "store-race.md"


#: The exhaustive walk's tree: every schedule of the race among three writers.
WALK_RUNS = 20_000


def campaigns(runs: int, dask: bool) -> dict:
    """Each campaign's configurations: name -> a function giving its report."""
    seeds_spec = spec_from_flags(str(PROMPT), args="2")
    walk_spec = spec_from_flags(str(PROMPT), args="3")
    seeds = range(0, runs)
    out = {
        f"random, {runs} seeds of store-race --args 2": {
            "serial": lambda: explore_prompt(seeds_spec, runs=runs).report,
            "local pool, 2 workers": lambda: explore_campaign(
                seeds_spec, seeds=seeds, workers=2).outcome.report,
            "dask local cluster, 2 workers": lambda: explore_campaign(
                seeds_spec, seeds=seeds, workers=2, where=Backend("dask")).outcome.report,
        },
        "exhaustive, the whole tree of store-race --args 3, no reduction": {
            "serial": lambda: explore_prompt(walk_spec, strategy="exhaustive", runs=WALK_RUNS,
                                             reduce=False).report,
            "local pool, 2 workers": lambda: walk_campaign(
                walk_spec, strategy="exhaustive", runs=WALK_RUNS, workers=2,
                reduce=False).outcome.report,
            "dask local cluster, 2 workers": lambda: walk_campaign(
                walk_spec, strategy="exhaustive", runs=WALK_RUNS, workers=2, reduce=False,
                where=Backend("dask")).outcome.report,
        },
    }
    if not dask:
        for configs in out.values():
            del configs["dask local cluster, 2 workers"]
    return out


def measure(configs: dict, rounds: int) -> dict:
    """Wall seconds of each configuration over `rounds` interleaved rounds,
    the first configuration rotating; every report must be the serial one."""
    names = list(configs)
    times: dict = {n: [] for n in names}
    expected = configs["serial"]()
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            start = time.perf_counter()
            report = configs[name]()
            times[name].append(time.perf_counter() - start)
            assert report == expected, f"{name}: not the serial report"
    base = statistics.median(times["serial"])
    return {"schedules": expected.runs,
            "configs": {name: {"schedules_per_s_median": expected.runs / statistics.median(t),
                               "schedules_per_s_best": expected.runs / min(t),
                               "seconds_min": min(t), "seconds_median": statistics.median(t),
                               "speedup_median": base / statistics.median(t)}
                        for name, t in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--only", choices=["random", "exhaustive"], default=None)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    out: dict = {"clock": "wall", "rounds": opts.rounds, "campaigns": {}}
    for title, configs in campaigns(opts.runs, not opts.no_dask).items():
        if opts.only is None or title.startswith(opts.only):
            out["campaigns"][title] = measure(configs, opts.rounds)
    if not opts.no_dask:
        from distributed import Client, LocalCluster
        starts = []
        for _ in range(opts.rounds):
            start = time.perf_counter()
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster):
                starts.append(time.perf_counter() - start)
        out["dask_cluster_start_s"] = {"min": min(starts), "median": statistics.median(starts)}
    if opts.json:
        print(json.dumps(out, indent=2))
        return
    for title, result in out["campaigns"].items():
        print(f"{title}: {result['schedules']} schedules, wall clock, {opts.rounds} rounds")
        for name, row in result["configs"].items():
            print(f"  {name:32} {row['schedules_per_s_median']:8.0f} schedules/s median "
                  f"({row['schedules_per_s_best']:.0f} best), {row['speedup_median']:.2f}x serial")
    if "dask_cluster_start_s" in out:
        s = out["dask_cluster_start_s"]
        print(f"  dask LocalCluster(2) start-up: {s['min']:.2f} s min, {s['median']:.2f} s median")


if __name__ == "__main__":
    main()
