"""What differential exploration costs: `forge explore --impl` with the
reference run beside every schedule, against plain `--impl` exploration.

    python3 benchmarks/differential.py [--engine served|sketch] [--runs 100] [--rounds 5] [--json]

Both explore `examples/two-tasks.md` and `tests/conformance/differential/
first-in-set-order.md` through a level-2 engine that passes them - `forge
impl-serve --level 2` (the reference served over the pipe), or the tests'
sketch engine (`tests/conformance/sketch_engine.py`, another engine
altogether; it runs the second prompt only) - so no schedule fails and both
explore every seed, in rounds that interleave the two modes.  Each measure is CPU time: this
process's (`time.process_time`) plus the served engine's, which the kit
reaps through the shepherd (`RUSAGE_CHILDREN`); wall time is shown beside
it.  The ratio is differential over plain, min and median over the rounds;
the target is at most 2.

What does not live here: the exploration (`forge.conformance.impl_explore`).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forge.conformance.adapters import SubprocessAdapter  # noqa: E402
from forge.conformance.impl_explore import explore_impl  # noqa: E402
from forge.runspec import Expectation, spec_from_values  # noqa: E402

ENGINES = {
    "served": ([sys.executable, "-m", "forge", "impl-serve", "--level", "2"],
               (ROOT / "examples" / "two-tasks.md",
                ROOT / "tests" / "conformance" / "differential" / "first-in-set-order.md")),
    "sketch": ([sys.executable, str(ROOT / "tests" / "conformance" / "sketch_engine.py")],
               (ROOT / "tests" / "conformance" / "differential" / "first-in-set-order.md",)),
}


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def one(argv: list[str], prompt: pathlib.Path, runs: int,
        differential: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of exploring `prompt` for `runs` schedules."""
    spec = spec_from_values(str(prompt), prompt.read_text())
    cpu, kids, wall = time.process_time(), children_cpu(), time.perf_counter()
    with SubprocessAdapter(argv) as adapter:
        outcome = explore_impl(adapter, spec, expect=Expectation(), runs=runs,
                               differential=differential)
    assert not outcome.report.findings, outcome.problems
    assert outcome.report.runs == runs
    return (time.process_time() - cpu + children_cpu() - kids, time.perf_counter() - wall)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=sorted(ENGINES), default="served",
                        help="the level-2 engine explored")
    parser.add_argument("--runs", type=int, default=100, help="schedules per exploration")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    out = {}
    argv, prompts = ENGINES[args.engine]
    for prompt in prompts:
        cpu = {True: [], False: []}
        wall = {True: [], False: []}
        for _ in range(args.rounds):
            for mode in (False, True):
                c, w = one(argv, prompt, args.runs, mode)
                cpu[mode].append(c)
                wall[mode].append(w)
        ratios = [d / p for d, p in zip(cpu[True], cpu[False])]
        out[prompt.name] = {
            "plain_cpu_s": {"min": min(cpu[False]), "median": statistics.median(cpu[False])},
            "differential_cpu_s": {"min": min(cpu[True]), "median": statistics.median(cpu[True])},
            "ratio_cpu": {"min": min(ratios), "median": statistics.median(ratios)},
            "ratio_wall_median": statistics.median(wall[True]) / statistics.median(wall[False]),
            "schedules_per_s_plain": args.runs / statistics.median(wall[False]),
            "schedules_per_s_differential": args.runs / statistics.median(wall[True]),
        }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name, row in out.items():
            print(f"{name}: differential/plain CPU ratio min {row['ratio_cpu']['min']:.2f}, "
                  f"median {row['ratio_cpu']['median']:.2f}; wall ratio "
                  f"{row['ratio_wall_median']:.2f}; schedules/s "
                  f"{row['schedules_per_s_plain']:.0f} plain, "
                  f"{row['schedules_per_s_differential']:.0f} differential")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
