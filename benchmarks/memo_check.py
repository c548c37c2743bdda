"""The in-process adapter's reuse of observations changes nothing: every
conformance case on every schedule the suite runs it on, through the
adapter (which reuses an earlier schedule's observation when the run could
not tell the two apart) and afresh (`reference_observation`), compared.

    python3 benchmarks/memo_check.py      # exit 0: identical; 1: the cases that differ
"""

from __future__ import annotations

import argparse
import sys

from forge.conformance.adapters import InProcessAdapter, reference_observation
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog=__doc__.split("\n", 1)[1]).parse_args()
    adapter = InProcessAdapter()
    runs = differ = 0
    for case in load_cases(DEFAULT_CASES_DIR):
        if case.prompt is None:
            continue
        for seed in case.seeds:
            runs += 1
            if adapter.run(case, seed) != reference_observation(case.prompt, case.harness,
                                                                seed, case.path):
                differ += 1
                print(f"{case.id} seed={seed}: the reused observation differs")
    print(f"{runs} runs, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
