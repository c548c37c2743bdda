"""Runs to first failure per strategy on the mutant catalogue: what coverage-guided search buys.

    python benchmarks/strategies.py [--campaigns N] [--budget B] [--only MUTANT] [--json]
                                    [--scan [--scan-budget B]]

For each target - a mutant of the catalogue (`forge mutants --list`) and an
example prompt over which the oracles alone find it only on some schedules
(the canonical one passes) - every strategy runs `--campaigns` campaigns,
campaign c over seeds `c * 10_000 ...` with at most `--budget` runs, each
stopping at its first failing schedule, exactly as `forge explore
--strategy NAME` does (`forge.sim.explore.explore`, PCT in orders mode).
The table gives, per target and strategy, the median runs to first failure
(a campaign that found nothing counts as `budget + 1`) and how many
campaigns found it; the last line is issue 33's must-hold: the median over
targets of coverage's median divided by random's (at most 0.5).

The targets are `TARGETS`, found by `--scan`: every engine mutant on every
example prompt the oracles explore (`forge.conformance.mutants.oracle_specs`),
kept when the canonical schedule passes and random finds it within
`--scan-budget` runs in one of three campaigns.  A target random finds at
its first run in most campaigns tells no strategy apart and is left out.

Runs are counted, not timed, so the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forge.conformance import mutants as catalogue  # noqa: E402
from forge.repro import prepare  # noqa: E402
from forge.runspec import Expectation, in_mode  # noqa: E402
from forge.sim.chooser import Canonical, Chooser, RandomProvider  # noqa: E402
from forge.sim.explore import check_all, explore  # noqa: E402
from forge.verdict import Verdict  # noqa: E402

#: The strategies compared, in table order (the portfolio is the default).
STRATEGIES = ("random", "pct", "portfolio", "coverage")
#: What the oracles alone check (as `forge mutants`' oracles column does).
EXPECT = Expectation(same_ids=True, ending=Verdict(allow_failed=True))
#: Seeds between two campaigns' first seeds.
SPACING = 10_000

#: (mutant, prompt) pairs found by `--scan` (budget 100): of the 48 engine
#: mutants on the 28 prompts, the only pairs where the canonical schedule
#: passes and random finds the mutant.  Every other engine mutant the oracles
#: find, they find on a canonical schedule, where no strategy is needed.
TARGETS: tuple[tuple[str, str], ...] = (
    ("double-delivery", "watch-liveness.md"),
    ("tie-goes-to-timeout", "watch-ids.md"),
    ("tie-goes-to-timeout", "watch-liveness.md"),
    ("tie-goes-to-timeout", "watch-tie.md"),
    ("timeout-cancels-members", "watch-tie.md"),
)


def _specs() -> dict:
    return dict(catalogue.oracle_specs())


def scan(budget: int) -> list[tuple[str, str, list]]:
    """Every (mutant, prompt) the oracles find on some schedules but not the
    canonical one, with random's runs to first failure in three campaigns."""
    specs = _specs()
    found = []
    for mutant in catalogue.by_id().values():
        if mutant.category == "lifecycle":
            continue
        with mutant.applied():
            for name, spec in specs.items():
                try:
                    runner, _, checks = prepare(spec, EXPECT)
                    if check_all(runner.subject(Chooser(Canonical()))[0], checks):
                        continue
                    firsts = [_random_first(runner, checks, c * SPACING, budget)
                              for c in range(3)]
                except Exception:  # noqa: BLE001 - a crash on canonical is no search target
                    continue
                if any(f is not None for f in firsts):
                    found.append((mutant.id, name, firsts))
                    print(mutant.id, name, firsts, file=sys.stderr, flush=True)
    return found


def _random_first(runner, checks, start: int, budget: int) -> int | None:
    for seed in range(start, start + budget):
        if check_all(runner.subject(Chooser(RandomProvider(seed), seed=seed))[0], checks):
            return seed - start + 1
    return None


def first_failure(spec, strategy: str, start: int, budget: int) -> int | None:
    """Runs a campaign of `strategy` from seed `start` makes up to and
    including its first failing one (None: none failed within `budget`)."""
    runner, _, checks = prepare(in_mode(spec, strategy), EXPECT)
    report = explore(runner.subject, range(start, start + budget), checks, strategy,
                     shrink_budget=0)
    return report.runs if report.findings else None


def measure(targets, campaigns: int, budget: int) -> list[dict]:
    specs = _specs()
    rows = []
    for mutant_id, prompt in targets:
        row: dict = {"mutant": mutant_id, "prompt": prompt}
        with catalogue.by_id()[mutant_id].applied():
            for strategy in STRATEGIES:
                firsts = [first_failure(specs[prompt], strategy, c * SPACING, budget)
                          for c in range(campaigns)]
                row[strategy] = {
                    "median": statistics.median(budget + 1 if f is None else f for f in firsts),
                    "found": sum(f is not None for f in firsts), "runs": firsts}
        rows.append(row)
        print(_line(row, campaigns), file=sys.stderr, flush=True)
    return rows


def _line(row: dict, campaigns: int) -> str:
    cells = "".join(f" {row[s]['median']:>7g} ({row[s]['found']:>2}/{campaigns})"
                    for s in STRATEGIES)
    return f"{row['mutant'] + ' / ' + row['prompt']:<58}{cells}"


def ratio(rows: list[dict]) -> float:
    """The must-hold figure: the median over targets of coverage's median
    runs to first failure over random's."""
    return statistics.median(r["coverage"]["median"] / r["random"]["median"] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--scan-budget", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.scan:
        json.dump(scan(args.scan_budget), sys.stdout)
        return
    targets = [t for t in TARGETS if not args.only or t[0] in args.only]
    rows = measure(targets, args.campaigns, args.budget)
    if args.json:
        json.dump({"rows": rows, "ratio": ratio(rows)}, sys.stdout, indent=1)
        return
    print(f"runs to first failure, median of {args.campaigns} campaigns "
          f"(found/campaigns), budget {args.budget}")
    print(f"{'mutant / prompt':<58}" + "".join(f"{s:>14}" for s in STRATEGIES))
    for row in rows:
        print(_line(row, args.campaigns))
    print(f"coverage / random, median over {len(rows)} targets of the per-target ratio of "
          f"medians: {ratio(rows):.2f}")
    total = {s: sum(r[s]["median"] for r in rows) for s in STRATEGIES}
    print("sum of the medians: " + ", ".join(f"{s} {total[s]:g}" for s in STRATEGIES)
          + f" (coverage / random {total['coverage'] / total['random']:.2f})")


if __name__ == "__main__":
    main()
