"""Exploration benchmarks: does each strategy earn its name?  Counts first,
CPU time beside them, baselines measured in the same run.

    python benchmarks/explore.py [--campaigns N] [--shrink-cases K] [--full] [--json] [--only S]

- **pct vs random** on two planted ordering bugs of depth 2, campaigns of
  100 runs, seeds drawn from SplitMix64(campaign): the share of campaigns
  that find each, per strategy, and the median runs to the first find.
  Each strategy runs in the mode `forge explore --strategy NAME` runs it
  in (`forge.runspec.in_mode`): pct in orders mode, where it schedules
  completions, random under the duration menu unless the bug's prompt is
  measured in orders mode.  `examples/explore/slowest-first.md` (Gamma, the
  slowest of three tasks, ends first) is measured as the command line runs
  it; `examples/explore/between-writes.md` (all of Beta's writes between
  Alpha's first two) in orders mode for both.
  On the latter also the per-run rate over 2,000 runs, beside PCT's bound
  1 / (n k) for the chains and steps it saw.  `--only pct` runs this
  section alone.
- **shrink** the first K failing random schedules of that prompt with
  today's shrinker and with the previous one (kept below as the baseline),
  and the first finds of K pct campaigns (shrunk by `explore` itself):
  deviations from canonical before and after, whether each result is
  proven a local minimum, and the proven minimum - no schedule with fewer
  deviations fails, shown by trying every placement of fewer deviations
  on the choice tree (an enumeration that shares no code with the
  shrinker).
- **exhaustive** on `examples/explore/store-race.md` (three tasks, each
  writing the store N times): the naive tree (every vector of duration
  multipliers, unreduced) against orders mode (`forge.sim.orders`: which
  completion fires next) unreduced and with sleep sets, and a deviation
  bound of 1; runs and distinct outcomes of each, whether the reduced
  search covers every outcome of the naive tree and of a campaign of 2,000
  random schedules, and whether reduced and unreduced orders searches see
  the same outcomes.  `--full` adds N=2: 93,750 naive schedules, several
  CPU minutes.  `--only exhaustive` runs this section alone.
- **faults** on `examples/explore/refused-write.md` (a planted bug: Beta
  does not retry its second write when the store refuses it) with
  `--faults store --fault-budget 1`: the share of campaigns of 100 runs that
  find it, per strategy, the median runs to find, and the deviations of
  the shrunk finds (the minimum is 1: that one refusal).
- **replay** each campaign's shrunk find through its replay record in this
  process: how many reproduce the recorded trace byte for byte
  (`tests/sim/test_repro.py` does the same across processes).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forge.engine.run import RunConfig, run_prompt  # noqa: E402
from forge.harness import Harness, LatencyModel  # noqa: E402
from forge.prompt import load_prompt  # noqa: E402
from forge.sim.chooser import Chooser, RandomProvider, ReplayProvider, SplitMix64  # noqa: E402
from forge.sim.exhaustive import exhaustive
from forge.sim.explore import explore, shrink_result  # noqa: E402
from forge.sim.strategies import lookup  # noqa: E402

EXAMPLES = ROOT / "examples" / "explore"


def subject_for(name: str, args: str = "", orders: bool = False):
    prompt = load_prompt(str(EXAMPLES / name))

    def subject(chooser):
        harness = Harness(latency_model=LatencyModel(orders=orders))
        obs = run_prompt(prompt, harness, chooser, RunConfig(args=args)).observation()
        return obs, obs["trace_sha256"]

    return subject


def gamma_first(obs: dict) -> list[str]:
    return ["Gamma, the slowest, ended first"] if obs["result"] == "0.2" else []


def deviations(values) -> int:
    return sum(1 for v in values if v)


# --------------------------------------------------------------- pct vs random
def between_writes(obs: dict) -> list[str]:
    """The planted depth-2 bug of `between-writes.md`: Alpha's first write
    lands, then all three of Beta's, then Alpha's other two."""
    order = "".join(e["section"][0] for e in obs["events"] if e["kind"] == "store_write_succeeded")
    return ["Beta's writes fell between Alpha's first two"] if order == "ABBBAA" else []


#: The planted bugs PCT is measured on: (prompt, orders mode, check).
BUGS = {"slowest-first": ("slowest-first.md", False, gamma_first),
        "between-writes": ("between-writes.md", True, between_writes)}


def campaigns(strategy: str, count: int, runs: int, bug: str = "slowest-first") -> dict:
    name, orders, check = BUGS[bug]
    # As `forge explore --strategy` runs it (`forge.runspec.in_mode`).
    subject = subject_for(name, orders=orders or lookup(strategy).orders)
    found, to_find = 0, []
    start = time.process_time()
    for campaign in range(count):
        rng = SplitMix64(campaign)
        seeds = [rng.next_u64() for _ in range(runs)]
        report = explore(subject, seeds, [check], strategy=strategy, pct_depth=2,
                         shrink_budget=0)
        if report.findings:
            found += 1
            to_find.append(report.runs)
    return {"campaigns": count, "found": found, "rate": found / count,
            "median_runs_to_find": statistics.median(to_find) if to_find else None,
            "cpu_s": round(time.process_time() - start, 2)}


def per_run_rate(runs: int) -> dict:
    """PCT of depth 2 (one campaign learning its horizon) and random on
    `between-writes.md` in orders mode: the share of runs that hit the bug,
    beside PCT's bound 1 / (n k) for the n chains and k steps it saw."""
    from forge.sim.pct import PCTCampaign

    subject = subject_for("between-writes.md", orders=True)
    campaign, chains = PCTCampaign(depth=2), set()
    pct_hits = random_hits = 0
    for seed in range(runs):
        provider = campaign.provider(seed)
        obs, _ = subject(Chooser(provider, seed=seed))
        campaign.learn(provider)
        chains.update(provider.ranking)
        pct_hits += bool(between_writes(obs))
        obs, _ = subject(Chooser(RandomProvider(seed), seed=seed))
        random_hits += bool(between_writes(obs))
    n, k = len(chains), campaign.horizon
    return {"runs": runs, "chains": n, "steps": k, "bound": 1 / (n * k),
            "pct": pct_hits / runs, "random": random_hits / runs}


# ---------------------------------------------------------------------- shrink
def legacy_shrink(subject, choices, fails, budget: int = 300) -> tuple[int, ...]:
    """The shrinker before this change, verbatim in behaviour: the baseline."""
    best = list(choices)
    tries = 0

    def attempt(candidate):
        nonlocal best, tries
        if tries >= budget:
            return False
        tries += 1
        chooser = Chooser(ReplayProvider(candidate))
        obs, _ = subject(chooser)
        if fails(obs):
            used = chooser.values()
            while used and used[-1] == 0:
                used.pop()
            if (len(used), used) < (len(best), best):
                best = used
            return True
        return False

    while best and best[-1] == 0:
        best.pop()
    for size in (8, 4, 2, 1):
        i = 0
        while i < len(best):
            if not attempt(best[:i] + best[i + size:]):
                i += 1
            while best and best[-1] == 0:
                best.pop()
    i = 0
    while i < len(best):
        if best[i] > 0:
            for lower in range(0, best[i]):
                if attempt(best[:i] + [lower] + best[i + 1:]):
                    break
        i += 1
        while best and best[-1] == 0:
            best.pop()
    return tuple(best)


def fails_within(subject, fails, prefix: tuple[int, ...], budget: int, counter: list[int]) -> bool:
    """Whether some schedule extending `prefix` with at most `budget` more
    deviations fails: every placement on the tree, option counts read from
    each run."""
    chooser = Chooser(ReplayProvider(prefix))
    obs, _ = subject(chooser)
    counter[0] += 1
    if fails(obs):
        return True
    if budget == 0:
        return False
    record = chooser.choices
    for pos in range(len(prefix), len(record)):
        for alt in range(1, record[pos].n):
            head = tuple(c.value for c in record[:pos]) + (alt,)
            if fails_within(subject, fails, head, budget - 1, counter):
                return True
    return False


def shrink_cases(k: int) -> dict:
    subject = subject_for("slowest-first.md")

    def fails(o):
        return bool(gamma_first(o))

    cases = []
    legacy_cpu, new_cpu = [], []
    seed = 0
    while len(cases) < k:
        chooser = Chooser(RandomProvider(seed))
        obs, _ = subject(chooser)
        if fails(obs):
            t = time.process_time()
            old = legacy_shrink(subject, chooser.values(), fails)
            legacy_cpu.append(time.process_time() - t)
            t = time.process_time()
            new = shrink_result(subject, chooser, fails)
            new_cpu.append(time.process_time() - t)
            cases.append({"seed": seed, "found": deviations(chooser.values()),
                          "legacy": deviations(old), "shrunk": new.deviations,
                          "proven_local_minimum": new.proven, "runs": new.runs,
                          "choices": list(new.choices)})
        seed += 1
    # PCT's finds start elsewhere (every step of the top chain at the
    # shortest duration); explore shrinks them itself.
    from_pct = []
    for campaign in range(k):
        rng = SplitMix64(campaign)
        seeds = [rng.next_u64() for _ in range(100)]
        report = explore(subject, seeds, [gamma_first], strategy="pct", pct_depth=2)
        if report.findings:
            f = report.findings[0]
            from_pct.append({"found": deviations(f.choices), "shrunk": f.deviations,
                             "proven_local_minimum": f.proven})
    least = min(c["shrunk"] for c in cases + from_pct)
    counter = [0]
    # The proof: no schedule with fewer deviations than the least found fails.
    none_fewer = not fails_within(subject, fails, (), least - 1, counter)
    return {
        "cases": cases,
        "pct_cases": from_pct,
        "pct_shrunk_deviations": sorted(c["shrunk"] for c in from_pct),
        "legacy_deviations": sorted(c["legacy"] for c in cases),
        "shrunk_deviations": sorted(c["shrunk"] for c in cases),
        "proven_minimum": least if none_fewer else None,
        "minimum_proof_runs": counter[0],
        "all_at_minimum": none_fewer and all(c["shrunk"] == least for c in cases + from_pct),
        "cpu_s_new": {"min": round(min(new_cpu), 3), "median": round(statistics.median(new_cpu), 3)},
        "cpu_s_legacy": {"min": round(min(legacy_cpu), 3),
                         "median": round(statistics.median(legacy_cpu), 3)},
        "cpu_ratio_new_to_legacy_median": round(statistics.median(new_cpu)
                                                / statistics.median(legacy_cpu), 2),
    }


# ------------------------------------------------------------------ exhaustive
def behaviour(obs: dict) -> str:
    """An outcome up to the order of commuting steps: no virtual time, and
    events grouped per task (each task's own order kept)."""
    per_task: dict[str, list[str]] = {}
    for event in obs["events"]:
        per_task.setdefault(str(event.get("provenance", {}).get("task")), []).append(
            json.dumps(event, sort_keys=True))
    return json.dumps([obs["outcome"], obs["result"], obs["error"], obs["store"], obs["tasks"],
                       obs["logs"], sorted(per_task.items())], sort_keys=True, default=str)


def exhaustive_counts(writes: int, random_runs: int = 2000) -> dict:
    """The naive tree (duration menu, unreduced) against orders mode, with
    and without sleep sets, and a random campaign: runs and outcome sets."""
    out: dict = {"writes_per_task": writes}
    searches = (("naive", False, {"reduce": False}),
                ("orders_unreduced", True, {"reduce": False}),
                ("reduced", True, {}),
                ("reduced_bound_1", True, {"max_deviations": 1}))
    for name, orders, options in searches:
        subject = subject_for("store-race.md", str(writes), orders=orders)
        seen: set[str] = set()

        def record(obs):
            seen.add(behaviour(obs))
            return []

        start = time.process_time()
        report = exhaustive(subject, [record], limit=10**7, **options)
        out[name] = {"runs": report.runs, "pruned": report.pruned, "bounded": report.bounded,
                     "redundant": report.redundant, "complete": report.complete,
                     "distinct_outcomes": len(seen),
                     "distinct_results": len({json.loads(b)[1] for b in seen}),
                     "cpu_s": round(time.process_time() - start, 2), "_seen": seen}
    subject = subject_for("store-race.md", str(writes))
    drawn: set[str] = set()
    start = time.process_time()
    for seed in range(random_runs):
        obs, _ = subject(Chooser(RandomProvider(seed)))
        drawn.add(behaviour(obs))
    out["random"] = {"runs": random_runs, "distinct_outcomes": len(drawn),
                     "cpu_s": round(time.process_time() - start, 2)}
    naive = out["naive"]
    for name in ("orders_unreduced", "reduced", "reduced_bound_1"):
        got = out[name]
        got["covers_every_outcome"] = naive["_seen"] <= got["_seen"]
        got["covers_every_random_outcome"] = drawn <= got["_seen"]
        got["outcomes_beyond_naive"] = len(got["_seen"] - naive["_seen"])
        got["share_of_naive"] = round(got["runs"] / naive["runs"], 4)
    out["reduced"]["same_outcomes_as_unreduced"] = \
        out["reduced"]["_seen"] == out["orders_unreduced"]["_seen"]
    for name, _, _ in searches:
        del out[name]["_seen"]
    return out


# ---------------------------------------------------------------------- faults
def fault_campaigns(strategy: str, count: int, runs: int) -> dict:
    from forge.repro import explore_prompt, replay_file
    from forge.runspec import Expectation, spec_from_flags
    from forge.sim.replayfile import write_record
    import tempfile

    spec = spec_from_flags(str(EXAMPLES / "refused-write.md"), faults="store")
    expect = Expectation(result="2 2 2")
    found, to_find, shrunk, identical = 0, [], [], 0
    start = time.process_time()
    with tempfile.TemporaryDirectory() as folder:
        for campaign in range(count):
            outcome = explore_prompt(spec, expect=expect, strategy=strategy, runs=runs,
                                     start_seed=campaign * runs, shrink_budget=3000)
            if outcome.failure is None:
                continue
            found += 1
            to_find.append(outcome.report.runs)
            shrunk.append(outcome.report.findings[0].deviations)
            path = pathlib.Path(folder) / f"{campaign}.json"
            path.write_text(write_record(outcome.failure.record))
            again = replay_file(str(path))
            identical += bool(again.identical and again.problems and again.drift is None)
    return {"campaigns": count, "found": found, "rate": found / count,
            "median_runs_to_find": statistics.median(to_find) if to_find else None,
            "shrunk_deviations": _count(shrunk),
            "replayed_identical": identical,
            "cpu_s": round(time.process_time() - start, 2)}


def oracle_kills(seeds: int) -> dict:
    """The schedule invariants alone against the engine's mutants, on the
    example prompts `forge mutants` explores (canonical plus `seeds` random
    schedules each, ceiling 2): kills by the end-of-run checks, and by those
    plus the watchers that check during the run, with the watchers that
    fired on each mutant the end-of-run checks miss."""
    from forge.conformance import mutants

    standard = [(p, Harness(ceiling=2)) for _name, p in mutants.explore_prompts()]
    return {"standard": _kills(standard, seeds),
            "with_watch_prompts": _kills(standard + watch_prompts(), seeds),
            "cost": watch_cost()}


def watch_cost(seconds: float = 4.0) -> dict:
    """CPU per run of `store-race.md` (writes=1, a random schedule) watched
    and unwatched, interleaved in this run: the watchers' price."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from timing import interleaved
    from forge.conformance import oracles
    from forge.engine.run import Run

    prompt = load_prompt(str(EXAMPLES / "store-race.md"))

    def one(watch: bool):
        def run():
            r = Run(prompt, Harness(), Chooser(RandomProvider(7)), RunConfig(args="1"))
            if watch:
                r.trace.observe(oracles.watchers(r))
            r.execute()
        return run

    t = interleaved({"unwatched": one(False), "watched": one(True)}, seconds)
    return {"unwatched_ms": round(t["unwatched"]["median"] * 1e3, 3),
            "watched_ms": round(t["watched"]["median"] * 1e3, 3),
            "ratio_median": round(t["watched"]["median"] / t["unwatched"]["median"], 3),
            "ratio_min": round(t["watched"]["min"] / t["unwatched"]["min"], 3)}


def watch_prompts() -> list:
    """`examples/explore/watch-*.md`, each under the harness it is written for."""
    from forge.harness import LatencyModel

    harness = {"watch-admission.md": Harness(ceiling=1),
               "watch-tie.md": Harness(latency_model=LatencyModel(base={"store": 1.0}, menu=(1.0,)))}
    return [(load_prompt(str(p)), harness.get(p.name, Harness(ceiling=2)))
            for p in sorted(EXAMPLES.glob("watch-*.md"))]


def _kills(prompts, seeds: int) -> dict:
    from forge.conformance import mutants, oracles
    from forge.engine.run import Run
    from forge.sim.chooser import Canonical

    def watched(prompt, harness, chooser):
        run = Run(prompt, harness, chooser, RunConfig())
        run.trace.observe(oracles.watchers(run))
        run.execute()
        return run.observation(), run.trace.violations

    rows = [m for m in mutants.CATALOGUE if m.category != "lifecycle"]
    before, after, only_watchers = [], [], {}
    start = time.process_time()
    for m in rows:
        end_kill, fired = False, set()
        with m.applied():
            for prompt, harness in prompts:
                try:
                    canonical, _ = watched(prompt, harness, Chooser(Canonical()))
                    checks = (*oracles.DEFAULT_CHECKS, oracles.same_ids(canonical))
                    for seed in [None, *range(seeds)]:
                        chooser = Chooser(Canonical() if seed is None else RandomProvider(seed))
                        obs, violations = watched(prompt, harness, chooser)
                        end_kill = end_kill or any(c(obs) for c in checks)
                        fired |= {v.by for v in violations}
                except Exception:  # noqa: BLE001 - a crash kills the mutant for both
                    end_kill = True
        if end_kill:
            before.append(m.id)
        if end_kill or fired:
            after.append(m.id)
        if fired and not end_kill:
            only_watchers[m.id] = sorted(fired)
    per_watcher = _count(w for ws in only_watchers.values() for w in ws)
    return {"mutants": len(rows), "end_of_run_kills": len(before),
            "with_watchers_kills": len(after), "killed_only_by_watchers": only_watchers,
            "watcher_sole_kills": per_watcher, "seeds": seeds,
            "cpu_s": round(time.process_time() - start, 1)}


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--campaigns", type=int, default=100)
    parser.add_argument("--runs", type=int, default=100, help="runs per campaign")
    parser.add_argument("--shrink-cases", type=int, default=10)
    parser.add_argument("--full", action="store_true", help="also the 93,750-schedule tree")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", choices=["faults", "oracles", "exhaustive", "pct"], default=None,
                        help="run only this section")
    parser.add_argument("--oracle-seeds", type=int, default=5,
                        help="random schedules per prompt and mutant in the oracles section")
    opts = parser.parse_args()
    if opts.only == "exhaustive":
        e = [exhaustive_counts(1)] + ([exhaustive_counts(2)] if opts.full else [])
        print(json.dumps(e, sort_keys=True) if opts.json else _exhaustive_text(e))
        return
    if opts.only == "oracles":
        o = oracle_kills(opts.oracle_seeds)
        print(json.dumps(o, sort_keys=True) if opts.json else _oracles_text(o))
        return
    if opts.only == "pct":
        p = pct_section(opts.campaigns, opts.runs)
        print(json.dumps(p, sort_keys=True) if opts.json else _pct_text(p, opts.runs))
        return
    faults = {s: fault_campaigns(s, opts.campaigns, opts.runs) for s in ("random", "pct")}
    if opts.only == "faults":
        print(json.dumps(faults, sort_keys=True) if opts.json else _faults_text(faults, opts.runs))
        return

    results = {
        "pct_vs_random": pct_section(opts.campaigns, opts.runs),
        "shrink": shrink_cases(opts.shrink_cases),
        "exhaustive": [exhaustive_counts(1)] + ([exhaustive_counts(2)] if opts.full else []),
        "faults": faults,
        "oracles": oracle_kills(opts.oracle_seeds),
    }
    if opts.json:
        print(json.dumps(results, sort_keys=True))
        return
    print(_pct_text(results["pct_vs_random"], opts.runs))
    s = results["shrink"]
    print(f"shrink  legacy deviations {s['legacy_deviations']}; now {s['shrunk_deviations']} "
          f"(from pct finds {s['pct_shrunk_deviations']}); "
          f"proven minimum {s['proven_minimum']} ({s['minimum_proof_runs']} runs); "
          f"CPU median ratio new/legacy {s['cpu_ratio_new_to_legacy_median']}")
    print(_exhaustive_text(results["exhaustive"]))
    print(_faults_text(faults, opts.runs))
    print(_oracles_text(results["oracles"]))


def pct_section(count: int, runs: int) -> dict:
    return {"campaigns": {bug: {s: campaigns(s, count, runs, bug) for s in ("pct", "random")}
                          for bug in BUGS},
            "per_run": per_run_rate(2000)}


def _pct_text(p: dict, runs: int) -> str:
    lines = []
    for bug, by in p["campaigns"].items():
        for strategy, r in by.items():
            lines.append(f"{strategy:7} found {bug} in {r['found']}/{r['campaigns']} campaigns "
                         f"of {runs} runs; median runs to find {r['median_runs_to_find']} "
                         f"({r['cpu_s']} s CPU)")
    r = p["per_run"]
    lines.append(f"per run on between-writes (orders mode, n={r['chains']}, k={r['steps']}): "
                 f"pct depth 2 {r['pct']:.1%}, bound 1/(n k) {r['bound']:.1%}, "
                 f"random {r['random']:.1%} ({r['runs']} runs)")
    return "\n".join(lines)


def _exhaustive_text(rows: list) -> str:
    lines = []
    for e in rows:
        n, u, r, b, d = (e[k] for k in ("naive", "orders_unreduced", "reduced",
                                         "reduced_bound_1", "random"))
        lines.append(
            f"exhaustive writes={e['writes_per_task']}: naive {n['runs']} runs, "
            f"{n['distinct_outcomes']} outcomes ({n['cpu_s']} s); orders unreduced {u['runs']} "
            f"({u['share_of_naive']:.1%}); reduced {r['runs']} runs ({r['share_of_naive']:.1%} "
            f"of naive, {r['pruned']} pruned, {r['redundant']} redundant, {r['cpu_s']} s), "
            f"{r['distinct_outcomes']} outcomes, covers naive: {r['covers_every_outcome']}, "
            f"covers {d['runs']} random ({d['distinct_outcomes']} outcomes): "
            f"{r['covers_every_random_outcome']}, same as unreduced: "
            f"{r['same_outcomes_as_unreduced']}; bound 1 {b['runs']} "
            f"({b['share_of_naive']:.1%}, covers naive: {b['covers_every_outcome']})")
    return "\n".join(lines)


def _oracles_text(both: dict) -> str:
    lines = []
    for label, o in (("examples/*.md", both["standard"]),
                     ("those + examples/explore/watch-*.md", both["with_watch_prompts"])):
        lines.append(f"oracles on {label}: the invariants alone kill {o['end_of_run_kills']}/"
                     f"{o['mutants']} engine mutants at the end of the run, "
                     f"{o['with_watchers_kills']}/{o['mutants']} with the watchers "
                     f"({o['seeds']} random schedules a prompt; {o['cpu_s']} s CPU)")
        lines += [f"        {m}: {', '.join(ws)}" for m, ws in o["killed_only_by_watchers"].items()]
    c = both["cost"]
    lines.append(f"oracles a watched run costs {c['ratio_median']}x an unwatched one (median; min "
                 f"{c['ratio_min']}x; {c['watched_ms']} ms vs {c['unwatched_ms']} ms CPU)")
    return "\n".join(lines)


def _faults_text(faults: dict, runs: int) -> str:
    return "\n".join(
        f"faults  {s:6} found the refused-write bug in {r['found']}/{r['campaigns']} campaigns "
        f"of {runs} runs; median runs to find {r['median_runs_to_find']}; shrunk deviations "
        f"{r['shrunk_deviations']}; {r['replayed_identical']}/{r['found']} replay files "
        f"reproduce byte for byte ({r['cpu_s']} s CPU)" for s, r in faults.items())


if __name__ == "__main__":
    main()
