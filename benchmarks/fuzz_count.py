"""The large fuzz run: fuzzed inputs of every kind, counted per kind.

Usage: `nice -n 10 python3 benchmarks/fuzz_count.py [TOTAL] [--seed N] [--jobs J]
[--minutes M] [--json]` (TOTAL defaults to 100,000).  Each fuzz test of
tests/fuzz gets a share of TOTAL after `WEIGHTS`: an input kind that costs
little (a prompt file, ~10 ms) gets more examples than one that runs a
conformance suite (a case file, ~300 ms), so each kind takes about as long.
A share runs in `CHUNKS` pytest processes of its own, each with
`FORGE_FUZZ_EXAMPLES` examples and its own `FORGE_FUZZ_SEED` (N, N+1, ...:
different inputs, each chunk reproducible), in process there (the CLI through
click's runner, so no interpreter start per input).  Chunks of all tests
interleave, J at once (default 1), and a line is printed as each ends; with
`--minutes M` no chunk starts after M minutes, so a run on a busy machine
still ends with every kind counted.

Every contract breach - a traceback, an `Internal` error, an input past 10 s,
an exit code outside the documented ones, a refusal that is not one line or
does not name its file - fails its test with the input shown; the summary
counts the inputs of each kind, by exit code, and the breaches (all must be
0).  The pattern tests compare the bounded matcher with Lua's on random
patterns; they are not CLI inputs and are counted apart.

What does not live here: the generators and the contract (tests/fuzz).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: Each fuzz test (file::name) and its weight: its share of TOTAL is
#: weight / sum(weights).  An input of weight 1 costs roughly 300 ms.
WEIGHTS = {
    "test_fuzz_inputs.py::test_prompt_files": 40,
    "test_fuzz_inputs.py::test_replay_files": 10,    # two inputs an example
    "test_fuzz_inputs.py::test_model_scripts": 10,
    "test_fuzz_inputs.py::test_operator_scripts": 8,
    "test_fuzz_inputs.py::test_scenario_files": 6,
    "test_fuzz_inputs.py::test_tool_scripts": 4,
    "test_fuzz_flags.py::test_flags": 4,
    "test_fuzz_protocol.py::test_protocol_streams": 4,
    "test_fuzz_inputs.py::test_expectations_files": 2,
    "test_fuzz_inputs.py::test_case_files": 1.5,
}
PATTERN_TESTS = "test_fuzz_patterns.py"
#: Pytest processes a test's share is split into.
CHUNKS = 10
_KIND_LINE = re.compile(r"^  (?P<kind>[a-z ]+): (?P<n>\d+) \((?P<codes>[^;]*); slowest (?P<slow>[0-9.]+) s\)$")


def _run(test: str, examples: int, seed: str | None) -> dict:
    env = dict(os.environ, FORGE_FUZZ_EXAMPLES=str(examples), PYTHONPATH=str(ROOT))
    if seed is not None:
        env["FORGE_FUZZ_SEED"] = seed
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"tests/fuzz/{test}", "-rf"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    out = proc.stdout
    # The whole pytest output, for the inputs a failure shows.
    log = pathlib.Path(tempfile.gettempdir()) / f"fuzz_count.{test.replace('::', '.')}.{seed}.log"
    log.write_text(out + proc.stderr, encoding="utf-8")
    kinds = {}
    for line in out.splitlines():
        m = _KIND_LINE.match(line)
        if m:
            codes = dict((int(c.split(":")[0].split()[1]), int(c.split(":")[1]))
                         for c in m.group("codes").split(", ") if c)
            kinds[m.group("kind")] = {"inputs": int(m.group("n")), "exit_codes": codes,
                                      "slowest_s": float(m.group("slow"))}
    return {
        "test": test, "seed": seed, "examples": examples, "seconds": round(time.monotonic() - started, 1),
        "passed": proc.returncode == 0, "kinds": kinds,
        "tracebacks": out.count("an exception escaped"),
        "internal": len(re.findall(r"'Internal' in the output", out)),
        "hangs": len(re.findall(r"took [0-9.]+ s:", out)),
        "exit_code_mismatches": len(re.findall(r"AssertionError: exit code [0-9-]+:", out)),
        "failures": [line for line in out.splitlines() if line.startswith("FAILED ")],
        "log": str(log),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("total", nargs="?", type=int, default=100_000,
                        help="fuzzed inputs in all (default 100,000)")
    parser.add_argument("--seed", type=int, default=0, help="the first chunk's seed")
    parser.add_argument("--jobs", type=int, default=1, help="chunks run at once")
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="start no chunk after this many minutes (0: no limit)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    opts = parser.parse_args(argv)
    as_json, seed, jobs, minutes, total = opts.json, opts.seed, opts.jobs, opts.minutes, opts.total
    weight_sum = sum(WEIGHTS.values())
    plan = {test: max(1, round(total * w / weight_sum)) for test, w in WEIGHTS.items()}
    plan[PATTERN_TESTS] = max(1, total // 100)
    # Round robin: the k-th chunk of every test before the (k+1)-th of any.
    chunks = [(test, -(-n // CHUNKS), seed + k) for k in range(CHUNKS) for test, n in plan.items()]
    deadline = time.monotonic() + minutes * 60 if minutes else None
    results = []

    def chunk(test: str, n: int, chunk_seed: int) -> dict | None:
        if deadline is not None and time.monotonic() > deadline:
            return None
        return _run(test, n, str(chunk_seed))

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(chunk, *c) for c in chunks]
        for future in concurrent.futures.as_completed(futures):
            r = future.result()
            if r is None:
                continue
            results.append(r)
            if not as_json:
                counted = sum(k["inputs"] for k in r["kinds"].values())
                print(f"{r['test']} (seed {r['seed']}): {r['examples']} examples, {counted} "
                      f"inputs, {r['seconds']} s, {'passed' if r['passed'] else 'FAILED'}",
                      flush=True)
    kinds: dict[str, dict] = {}
    for r in results:
        for kind, k in r["kinds"].items():
            into = kinds.setdefault(kind, {"inputs": 0, "exit_codes": {}, "slowest_s": 0.0})
            into["inputs"] += k["inputs"]
            into["slowest_s"] = max(into["slowest_s"], k["slowest_s"])
            for code, n in k["exit_codes"].items():
                into["exit_codes"][code] = into["exit_codes"].get(code, 0) + n
    summary = {
        "inputs": sum(k["inputs"] for k in kinds.values()),
        "kinds": dict(sorted(kinds.items())),
        "pattern_examples": sum(r["examples"] for r in results if r["test"] == PATTERN_TESTS) * 3,
        "chunks_run": f"{len(results)} of {len(chunks)}",
        **{key: sum(r[key] for r in results)
           for key in ("tracebacks", "internal", "hangs", "exit_code_mismatches")},
        "failed_tests": sorted(f for r in results for f in r["failures"]),
        "seconds": round(sum(r["seconds"] for r in results), 1),
    }
    if as_json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"fuzzed inputs: {summary['inputs']} ({summary['chunks_run']} chunks)")
        for kind, k in summary["kinds"].items():
            codes = ", ".join(f"exit {c}: {n}" for c, n in sorted(k["exit_codes"].items()))
            print(f"  {kind}: {k['inputs']} ({codes}; slowest {k['slowest_s']:.2f} s)")
        for key in ("tracebacks", "internal", "hangs", "exit_code_mismatches"):
            print(f"{key}: {summary[key]}")
        print(f"failed tests: {len(summary['failed_tests'])}")
        for line in summary["failed_tests"]:
            print(f"  {line}")
    return 0 if not summary["failed_tests"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
