"""The large fuzz run: at least 100,000 inputs across every kind, counted.

Usage: `python3 benchmarks/fuzz_count.py [TOTAL] [--seed N]` (default
100,000).  It runs the fuzz suite (tests/fuzz) in one pytest process, in
process (the CLI through click's runner, so no interpreter start per input),
with `FORGE_FUZZ_EXAMPLES` set so the examples of all its tests add up to
TOTAL, and prints the suite's own summary: inputs per kind and their exit
codes.  Every contract breach - a traceback, an `Internal` error, an input
past 10 s, an exit code outside the documented ones, a refusal that is not
one line, a pattern port answer that differs from Lua's - fails its test
with the input shown, so the last lines give the count of each (all must
be 0).  It takes about 20 minutes; run it in the background.

What does not live here: the generators and the contract (tests/fuzz).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: Hypothesis tests in tests/fuzz (each gets TOTAL / TESTS examples).
TESTS = 11


def main(argv: list[str]) -> int:
    total = 100_000
    seed = None
    args = list(argv)
    if "--seed" in args:
        i = args.index("--seed")
        seed = args[i + 1]
        del args[i:i + 2]
    if args:
        total = int(args[0])
    env = dict(os.environ, FORGE_FUZZ_EXAMPLES=str(-(-total // TESTS)))
    if seed is not None:
        env["FORGE_FUZZ_SEED"] = seed
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz", "-rf"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    out = proc.stdout
    summary = out[out.find("fuzzed inputs:"):] if "fuzzed inputs:" in out else out[-4000:]
    print(summary.rstrip())
    failures = out.count("\nFAILED ")
    print(f"tracebacks: {len(re.findall('an exception escaped', out))}")
    print(f"Internal errors: {len(re.findall('Internal', out))}")
    print(f"hangs past 10 s: {len(re.findall(r'took [0-9.]+ s', out))}")
    print(f"exit-code mismatches: {len(re.findall('exit code [0-9]+:', out))}")
    print(f"failed tests: {failures}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
