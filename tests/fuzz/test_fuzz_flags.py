"""Fuzzed flags on every command, through the CLI in process.

Each example is one command line: a command, its positional arguments, and
a random subset of its flags with hostile values (integers past 64 bits,
`inf`, invalid regexes, unwritable or absurd output paths, strategy
spellings).  Flags that would legitimately make a command run long (many
schedules, the whole suite, every mutant) get only small or invalid values,
and the suite runs on a one-case directory.

Output paths are written inside a fresh temporary directory (the working
directory of the run), so nothing lands in the project.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import EXAMPLES as EXAMPLE_DIR
from tests.fuzz import generators as gen
from tests.fuzz.cli import FUZZ, check

CASES = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "cases"
PROMPTS = st.sampled_from([str(EXAMPLE_DIR / "two-tasks.md"), str(EXAMPLE_DIR / "race.md"),
                           "nope.md", "/", "", "x" * 5000, "a\x00b"])
SMALL = st.one_of(st.integers(1, 3).map(str), gen.INT_FLAG_VALUES.filter(
    lambda v: not v.strip().lstrip("+").isdigit() or int(v) <= 3))
MODEL_SCRIPT = str(EXAMPLE_DIR / "race.model.json")
TEXT = st.one_of(gen.TEXTS, st.just("-x"))

RUN = {
    "--args": TEXT, "--seed": gen.INT_FLAG_VALUES, "--strategy": gen.STRATEGIES,
    "--store": gen.PATHS, "--concurrency": gen.INT_FLAG_VALUES,
    "--model-script": st.sampled_from([MODEL_SCRIPT, "/", "nope.json", "/dev/null"]),
    "--operator-script": st.sampled_from([MODEL_SCRIPT, "/", "nope.json", "/dev/null"]),
    "--cancel-at": gen.SECONDS_VALUES, "--trace": gen.PATHS, "--replay-out": gen.PATHS,
    "--max-instructions": gen.INT_FLAG_VALUES, "--json": None,
}
EXPLORE = {
    "--runs": SMALL, "--start-seed": gen.INT_FLAG_VALUES,
    "--strategy": st.sampled_from(["random", "pct", "exhaustive", "x", ""]),
    "--pct-depth": gen.INT_FLAG_VALUES, "--args": TEXT, "--concurrency": gen.INT_FLAG_VALUES,
    "--model-script": st.sampled_from([MODEL_SCRIPT, "/", "nope.json"]),
    "--expect-result": TEXT, "--no-same-ids": None, "--replay-out": gen.PATHS, "--json": None,
}
CONFORMANCE = {
    "--impl": st.sampled_from(["", "'", "no-such-engine", "true", "false"]),
    "-k": gen.PATTERNS, "--features": st.sampled_from(["tasks", "", ",,", "x"]),
    "--expectations": st.sampled_from(["nope.toml", "/", "/dev/null", "x.json"]),
    "--workers": gen.INT_FLAG_VALUES, "--json": gen.PATHS, "--junit": gen.PATHS,
    "--timeout": gen.SECONDS_VALUES, "--catalogue": st.sampled_from(["/", "nope", "."]),
    "--dump-cases": None, "-v": None,
}
SPEC = {"--feature": st.sampled_from(["tasks", "x", ""]), "-k": gen.PATTERNS, "--json": None}
MUTANTS = {"--seeds": gen.INT_FLAG_VALUES, "--case-seeds": gen.INT_FLAG_VALUES,
           "--json": gen.PATHS}


@st.composite
def flags(draw, table: dict) -> list[str]:
    out = []
    for name in draw(st.lists(st.sampled_from(sorted(table)), max_size=5)):
        out.append(name)
        if table[name] is not None:
            out.append(draw(table[name]))
    return out


@st.composite
def command_lines(draw) -> list[str]:
    command = draw(st.sampled_from(["run", "run", "explore", "replay", "conformance", "spec",
                                    "spec render", "spec coverage", "mutants"]))
    if command == "run":
        return ["run", draw(PROMPTS), *draw(flags(RUN))]
    if command == "explore":
        # At most a few schedules: --runs is always given, last (click keeps the last).
        return ["explore", draw(PROMPTS), *draw(flags(EXPLORE)), "--runs",
                draw(st.sampled_from(["1", "2", "0", "-1", "x", "99999999999999999999"]))]
    if command == "replay":
        return ["replay", draw(PROMPTS), draw(st.sampled_from(["/dev/null", "/", "nope.json",
                                                                MODEL_SCRIPT]))]
    if command == "conformance":
        return ["conformance", "--cases", "CASES", *draw(flags(CONFORMANCE))]
    if command == "spec":
        return ["spec", *draw(flags(SPEC))]
    if command == "spec render":
        return ["spec", "render", draw(gen.PATHS)]
    if command == "spec coverage":
        # /proc/self: entries vanish during the walk (a walk of / met that).
        folders = st.sampled_from(["CASES", "/proc/self", "/etc", "nope"])
        return ["spec", "coverage", "--cases", draw(folders)]
    # Never a real mutant: each one runs the whole suite.
    return ["mutants", "--cases", "CASES", "-k", "no-such-mutant", *draw(flags(MUTANTS))]


@FUZZ
@given(command_lines())
def test_flags(argv):
    work = pathlib.Path(tempfile.mkdtemp())
    cases = work / "cases" / "examples"
    cases.mkdir(parents=True)
    shutil.copy(CASES / "examples" / "two-tasks.toml", cases / "two-tasks.toml")
    argv = [str(work / "cases") if a == "CASES" else a for a in argv]
    argv = [str(work / a) if a in ("OUT", "sub/deeper/out") else a for a in argv]
    cwd = os.getcwd()
    os.chdir(work)
    try:
        check("flags", argv)
    finally:
        os.chdir(cwd)
        shutil.rmtree(work)


def test_a_start_seed_whose_runs_pass_64_bits_is_refused():
    """Found by the large run: `--start-seed 2^63-1 --runs 2` reached the engine with a seed past
    64 bits and ended as a kit bug; the last seed must fit too (kit: limits.flags)."""
    example = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "two-tasks.md")
    result = check("flags", ["explore", example, "--start-seed", str(2**63 - 1), "--runs", "2"])
    assert result.exit_code == 2
    assert "--start-seed: the last seed" in result.stderr and "past 64 bits" in result.stderr
    assert check("flags", ["explore", example, "--start-seed", str(2**63 - 2), "--runs", "2"]
                 ).exit_code == 0
