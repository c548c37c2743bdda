"""Running a fuzzed input through the real `forge` entry point, in process,
and the one assertion every input must pass.

`check(argv)` invokes `forge.cli.main` as the console script would (click's
CliRunner, which catches the `SystemExit`) and asserts: the exit code is in
the documented set {0, 1, 2, 3}; nothing escaped as an exception; the output
has no Python traceback, no `Internal` run error, no kit-bug report and no
engine exception reported as an errored case; and it ended within
`MAX_SECONDS`.  Each input is counted under its kind for the summary.

The budget: `FORGE_FUZZ_EXAMPLES` examples per test (default `DEFAULT_EXAMPLES`,
sized so the whole fuzz suite takes about half a minute: 40 had missed a
crash that 400 found).  The draws are
derandomized (the same inputs every run, so CI cannot flake on a new one);
`FORGE_FUZZ_SEED=N` draws a different, reproducible set.
"""

from __future__ import annotations

import collections
import os
import time

from click.testing import CliRunner
from hypothesis import HealthCheck, seed, settings

from forge.cli import main

DEFAULT_EXAMPLES = 200
EXAMPLES = int(os.environ.get("FORGE_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
#: No single input may take longer than this, in wall seconds.
MAX_SECONDS = 10.0
#: The documented exit codes (docs/limits.md): 3 is an exhaustive exploration stopped at --runs.
EXIT_CODES = {0, 1, 2, 3}
FORBIDDEN = ("Traceback (most recent call last)", "Internal", "a bug in the kit",
             "the reference engine raised", "the lifecycle adapter raised", "RecursionError",
             "MemoryError")

#: Inputs run per kind, and per (kind, exit code), for the summary lines
#: (`conftest.pytest_terminal_summary`).
COUNTS: collections.Counter[str] = collections.Counter()
CODES: collections.Counter[tuple[str, int]] = collections.Counter()
#: The longest wall time one input of each kind took, in seconds.
SLOWEST: dict[str, float] = {}

#: Hypothesis settings for every fuzz test: deterministic (derandomized, so a
#: run is reproducible and CI never flakes on a new draw), no deadline (the
#: MAX_SECONDS check is ours), no database.
SEED = os.environ.get("FORGE_FUZZ_SEED")
_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None,
                     database=None, suppress_health_check=list(HealthCheck), print_blob=True)


def FUZZ(test):  # noqa: N802 - used as a decorator, like hypothesis.settings
    """The fuzz suite's Hypothesis settings (and seed, if FORGE_FUZZ_SEED is set)."""
    test = _SETTINGS(test)
    return seed(int(SEED))(test) if SEED is not None else test


def check(kind: str, argv: list[str], stdin: bytes | None = None, names: str | None = None):
    """Run `forge ARGV`; assert the hardening contract; the click Result.

    `names`: the file (or flag) a refusal must name, when the input is one file.
    """
    started = time.monotonic()
    result = CliRunner().invoke(main, argv, input=stdin)
    elapsed = time.monotonic() - started
    COUNTS[kind] += 1
    CODES[kind, result.exit_code] += 1
    SLOWEST[kind] = max(SLOWEST.get(kind, 0.0), elapsed)
    shown = f"forge {argv!r}\n--- output:\n{result.output[-3000:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(result.exception))
        raise AssertionError(f"an exception escaped: {shown}\n{tb}")
    assert result.exit_code in EXIT_CODES, f"exit code {result.exit_code}: {shown}"
    for word in FORBIDDEN:
        assert word not in result.output, f"{word!r} in the output: {shown}"
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.startswith("forge: ")]
        assert len(lines) == 1, f"a refusal is one line: {shown}"
        assert names is None or names in lines[0], f"a refusal names {names}: {shown}"
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s: {shown}"
    return result
