"""The whole conformance suite (and optionally `forge mutants`) against
another checkout, on one core, interleaved, CPU time of the child process.

    python3 benchmarks/suite.py --against /work/main [--rounds 2] [--cases DIR]
                                [--mutants [-k TEXT]] [--json]

Each round runs `taskset -c 0 python3 -m forge conformance` once with this
tree first on PYTHONPATH and once with the other (alternating which goes
first), and takes the child's user+system CPU time; the outputs (minus the
elapsed-time lines) must be identical, or the benchmark says so and exits 1.
The figure is the ratio other/this on the minimum and the median.

`--cases DIR` gives both trees the same case directory (for an older
checkout, whose suite had fewer cases: pass its own directory, so that both
run exactly its cases and their outputs can be compared).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def once(tree: str, command: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": tree}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "forge", *command],
                          env=env, capture_output=True, text=True, cwd=tree)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # Elapsed times differ run to run, and the clause tally is a line kits
    # before 0.2 did not print: neither is a result.
    out = "\n".join(line for line in done.stdout.splitlines()
                    if "elapsed" not in line and " clauses cited: " not in line)
    return spent, f"exit {done.returncode}\n{out}"


def compare(other: str, command: list[str], rounds: int) -> dict:
    times: dict = {"this": [], "other": []}
    outputs: dict = {}
    trees = {"this": str(ROOT), "other": other}
    for r in range(rounds):
        for name in (("this", "other") if r % 2 == 0 else ("other", "this")):
            spent, out = once(trees[name], command)
            times[name].append(spent)
            outputs.setdefault(name, out)
    return {"command": " ".join(command),
            "this_min_s": min(times["this"]), "this_median_s": statistics.median(times["this"]),
            "other_min_s": min(times["other"]), "other_median_s": statistics.median(times["other"]),
            "speedup_min": min(times["other"]) / min(times["this"]),
            "speedup_median": statistics.median(times["other"]) / statistics.median(times["this"]),
            "same_output": outputs["this"] == outputs["other"]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the other checkout (its root)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--mutants", action="store_true", help="also `forge mutants`")
    parser.add_argument("-k", default=None, help="only the mutants whose id contains this")
    parser.add_argument("--cases", default=None,
                        help="the case directory both trees run (default: each its own)")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args(argv)
    cases = ["--cases", str(pathlib.Path(opts.cases).resolve())] if opts.cases else []
    mutants = ["mutants", *cases, *(["-k", opts.k] if opts.k else [])]
    commands = [["conformance", *cases]] + ([mutants] if opts.mutants else [])
    results = [compare(opts.against, c, opts.rounds) for c in commands]
    if opts.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"{r['command']:12} this {r['this_min_s']:.2f}s (median {r['this_median_s']:.2f}s)  "
                  f"other {r['other_min_s']:.2f}s (median {r['other_median_s']:.2f}s)  "
                  f"speedup {r['speedup_min']:.2f}x min, {r['speedup_median']:.2f}x median"
                  f"{'' if r['same_output'] else '  OUTPUTS DIFFER'}")
    return 0 if all(r["same_output"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
