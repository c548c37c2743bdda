"""Ordering mutants through the pipe: killed there as they are in process?

    python3 benchmarks/pipe_kills.py [--seeds 3] [-k TEXT] [--json]

For each ordering mutant (categories delivery, races, timeouts and
concurrency: the rules an interleaving decides) it runs the whole suite twice:
in process with the mutant switched on, and through
`FORGE_MUTANT=ID forge impl-serve --level 2` (so any-schedule cases run on the
kit's random schedules, answered over the pipe).  It prints, per mutant, the
cases that failed each way and whether the two sets are the same.  Exit 1
when a mutant survives either way or the two ways disagree.  (It times
nothing: the in-process suite may run in pool workers this process does not
reap, so their CPU time would not show; `benchmarks/suite.py` times the
suite.)

What does not live here: the mutants (`forge.conformance.mutants`), the
served side (`forge.conformance.serve`).
"""

from __future__ import annotations

import argparse
import json
import sys

from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.conformance.mutants import CATALOGUE, with_fewer_schedules
from forge.conformance.runner import run_suite

ORDERING = ("delivery", "races", "timeouts", "concurrency")
SERVE2 = [sys.executable, "-m", "forge", "impl-serve", "--level", "2"]


def failing(report) -> list[str]:
    return sorted(r.case_id for r in report.results if r.status in ("failed", "errored"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3,
                        help="random schedules per any-schedule case")
    parser.add_argument("-k", dest="pattern", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cases = with_fewer_schedules(load_cases(DEFAULT_CASES_DIR), args.seeds)
    mutants = [m for m in CATALOGUE if m.category in ORDERING
               and (args.pattern is None or args.pattern in m.id)]
    rows, bad = [], False
    for m in mutants:
        with m.applied():
            here = failing(run_suite(cases, InProcessAdapter))
        argv_ = ["env", f"FORGE_MUTANT={m.id}", *SERVE2]
        piped = failing(run_suite(cases, lambda: SubprocessAdapter(argv_, timeout=120)))
        same = here == piped
        bad = bad or not here or not piped or not same
        rows.append({"mutant": m.id, "in_process": here, "through_pipe": piped, "same": same})
        if not args.json:
            print(f"{m.id:28} in process {len(here):3} failing, through the pipe {len(piped):3}"
                  f" failing, {'same cases' if same else 'DIFFERENT cases'}", flush=True)
            if not same:
                print("   only in process:", sorted(set(here) - set(piped)))
                print("   only through the pipe:", sorted(set(piped) - set(here)))
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{len(mutants)} ordering mutants; "
              f"{sum(1 for r in rows if r['in_process'] and r['through_pipe'])} killed both ways; "
              f"{sum(1 for r in rows if r['same'])} with the same failing cases")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
