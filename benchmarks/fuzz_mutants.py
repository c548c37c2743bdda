"""Differential fuzzing against every Tasks mutant served over the pipe.

    python3 benchmarks/fuzz_mutants.py [--count 1000] [--seed 0] [-k TEXT] [--json]

For each mutant of the Tasks chapter (every category but `lifecycle`, whose
manager has no prompt to fuzz) it serves the reference with that mutant
switched on (`FORGE_MUTANT=ID forge impl-serve --level 2`) and runs
`fuzz` with the given budget and seed; then once more against the plain
reference, which must show no difference.  Per mutant it prints the number
of programs until the first difference (or `survived`), the shrinker's
runs, the CPU time of this process per fuzzed program (both engines' runs
counted: the reference in process, the served side in its child), and the
shrunk program's size.  Exit 1 when a mutant survives or the reference
differs.

What does not live here: the fuzzer (`forge.conformance.fuzz`), the
programs (`forge.conformance.programs`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

from forge.conformance.adapters import SubprocessAdapter
from forge.conformance.fuzz import fuzz
from forge.conformance.mutants import CATALOGUE

SERVE2 = [sys.executable, "-m", "forge", "impl-serve", "--level", "2"]


def cpu() -> float:
    """User+system CPU time of this process and its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one(mutant: str | None, count: int, seed: int) -> dict:
    argv = ["env", f"FORGE_MUTANT={mutant}", *SERVE2] if mutant else SERVE2
    started, wall = cpu(), time.perf_counter()
    with SubprocessAdapter(argv, timeout=120) as remote:
        report = fuzz(remote, count, seed)
    spent = cpu() - started  # the child is reaped when the adapter closes
    runs = report.programs + report.shrink_runs
    found = report.difference
    return {"mutant": mutant or "(reference)", "programs": report.programs,
            "found": found is not None, "shrink_runs": report.shrink_runs,
            "cpu_ms_per_program": round(1000 * spent / max(runs, 1), 2),
            "wall_s": round(time.perf_counter() - wall, 2),
            "shrunk_lines": found.program.count("\n") + 1 if found else None,
            "shrunk_answers": list(found.answers) if found else None,
            "first_field": found.fields[0] if found else None}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-k", dest="pattern", default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-reference", action="store_true",
                        help="skip the run against the plain reference")
    args = parser.parse_args(argv)
    mutants = [m.id for m in CATALOGUE if m.category != "lifecycle" and not m.equivalent
               and (args.pattern is None or args.pattern in m.id)]
    rows = []
    for mutant in mutants + ([] if args.no_reference else [None]):
        row = one(mutant, args.count, args.seed)
        rows.append(row)
        if not args.json:
            what = (f"found after {row['programs']:4} programs, {row['shrink_runs']:4} shrink runs, "
                    f"shrunk to {row['shrunk_lines']} lines" if row["found"]
                    else f"no difference in {row['programs']} programs")
            print(f"{row['mutant']:34} {what}; {row['cpu_ms_per_program']} ms CPU a program",
                  flush=True)
    per = [r["cpu_ms_per_program"] for r in rows]
    survivors = [r["mutant"] for r in rows if r["mutant"] != "(reference)" and not r["found"]]
    reference_differs = any(r["found"] for r in rows if r["mutant"] == "(reference)")
    summary = {"mutants": len(mutants), "survivors": survivors,
               "reference_differs": reference_differs,
               "cpu_ms_per_program": {"min": min(per), "median": statistics.median(per)}}
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
    else:
        print(f"{len(mutants) - len(survivors)} of {len(mutants)} mutants found; survivors: "
              f"{', '.join(survivors) or 'none'}; reference "
              f"{'DIFFERS' if reference_differs else 'never differs'}; CPU a program "
              f"min {summary['cpu_ms_per_program']['min']} ms, median "
              f"{summary['cpu_ms_per_program']['median']} ms")
    return 1 if survivors or reference_differs else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main(sys.argv[1:]))
