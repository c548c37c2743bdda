"""Spread campaigns: schedules per second of `forge explore` serial, with a
local pool of 2 workers, and (with the distributed extra) on a Dask local
cluster of 2 workers - one campaign, one run, so the figures are ratios.

    python benchmarks/campaigns.py [--runs N] [--rounds R] [--no-dask] [--json]

**Wall time, not CPU time**, unlike the other benchmarks: the point of a
pool is that the wall clock moves less while more CPUs work; this process's
CPU clock barely moves while its workers run.  So the figures suffer when
other work shares the cores: run it on an otherwise quiet machine.  Each
round runs every configuration in turn (the first one rotating) and the
report gives the min and the median over rounds.  Every configuration's
report is checked to be the serial one.

The campaign: `examples/explore/store-race.md --args 2`, random, every
schedule passing (a failure would end the campaign early).  The pool's and
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

from forge.campaign import explore_campaign  # noqa: E402
from forge.pool import Backend  # noqa: E402
from forge.repro import explore_prompt  # noqa: E402
from forge.runspec import spec_from_flags  # noqa: E402

PROMPT = ROOT / "examples" / "explore" / "store-race.md"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    spec = spec_from_flags(str(PROMPT), args="2")
    seeds = range(0, opts.runs)

    def serial():
        return explore_prompt(spec, runs=opts.runs).report

    def pool2():
        return explore_campaign(spec, seeds=seeds, workers=2).outcome.report

    def dask2():
        return explore_campaign(spec, seeds=seeds, workers=2,
                                where=Backend("dask")).outcome.report

    configs = {"serial": serial, "local pool, 2 workers": pool2}
    if not opts.no_dask:
        configs["dask local cluster, 2 workers"] = dask2
    names = list(configs)
    times: dict = {n: [] for n in names}
    expected = serial()
    for r in range(opts.rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            start = time.perf_counter()
            report = configs[name]()
            times[name].append(time.perf_counter() - start)
            assert report == expected, f"{name}: not the serial report"
    out = {"runs": opts.runs, "clock": "wall", "configs": {}}
    base = statistics.median(times["serial"])
    for name in names:
        med, low = statistics.median(times[name]), min(times[name])
        out["configs"][name] = {"schedules_per_s_median": opts.runs / med,
                                "schedules_per_s_best": opts.runs / low,
                                "speedup_median": base / med}
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
    print(f"{opts.runs} schedules of {PROMPT.name} --args 2, random, wall clock, "
          f"{opts.rounds} rounds:")
    for name, row in out["configs"].items():
        print(f"  {name:32} {row['schedules_per_s_median']:8.0f} schedules/s median "
              f"({row['schedules_per_s_best']:.0f} best), {row['speedup_median']:.2f}x serial")
    if "dask_cluster_start_s" in out:
        s = out["dask_cluster_start_s"]
        print(f"  dask LocalCluster(2) start-up: {s['min']:.2f} s min, {s['median']:.2f} s median")


if __name__ == "__main__":
    main()
