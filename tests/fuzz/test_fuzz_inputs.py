"""Fuzzed input files through the CLI: prompt files (the examples, broken as
files: truncated, nested, huge lines, bytes), model and operator scripts,
replay files, case files, expectations files, tool scripts and lifecycle scenario
files (generators in `generators`).

Every input must end in one of the documented exit codes with no traceback
and no `Internal` error (`cli.check`).  Writing each input to a file is
part of the test: the CLI reads files, and that is the path an attacker has.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import EXAMPLES as EXAMPLE_DIR
from tests.fuzz import generators as gen
from tests.fuzz.cli import FUZZ, check

HERE = pathlib.Path(__file__).resolve().parent
CASES = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "cases"


def _file(text: str, suffix: str = ".json") -> str:
    # Hypothesis reruns the test body many times, so no pytest tmp_path here.
    handle = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False, encoding="utf-8",
                                         errors="surrogatepass")
    with handle:
        handle.write(text)
    return handle.name


PROMPT_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLE_DIR.glob("*.md"))]


@FUZZ
@given(st.sampled_from(PROMPT_TEXTS).flatmap(gen.mutate_text))
def test_prompt_files(text):
    path = _file(text, ".md")
    try:
        check("prompt file", ["run", path], names=path)
    finally:
        pathlib.Path(path).unlink()


@FUZZ
@given(gen.model_scripts())
def test_model_scripts(text):
    path = _file(text)
    try:
        check("model script", ["run", str(EXAMPLE_DIR / "delegator.md"), "--model-script", path], names=path)
    finally:
        pathlib.Path(path).unlink()


@FUZZ
@given(gen.operator_scripts())
def test_operator_scripts(text):
    path = _file(text)
    try:
        check("operator script", ["run", str(HERE / "asks.md"), "--operator-script", path], names=path)
    finally:
        pathlib.Path(path).unlink()


@FUZZ
@given(gen.replay_files())
def test_replay_files(text):
    path = _file(text)
    try:
        check("replay file", ["replay", str(EXAMPLE_DIR / "two-tasks.md"), path], names=path)
        check("replay file", ["run", str(EXAMPLE_DIR / "two-tasks.md"), "--strategy",
                              f"replay:{path}"], names=path)
    finally:
        pathlib.Path(path).unlink()


@FUZZ
@given(gen.case_files())
def test_case_files(text):
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        (root / "fuzz").mkdir()
        (root / "fuzz" / "case.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        check("case file", ["conformance", "--cases", str(root)], names="case.toml")
    finally:
        shutil.rmtree(root)


@FUZZ
@given(gen.expectations_files())
def test_expectations_files(file):
    suffix, text = file
    path = _file(text, suffix)
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        (root / "examples").mkdir()
        shutil.copy(CASES / "examples" / "two-tasks.toml", root / "examples" / "two-tasks.toml")
        check("expectations file", ["conformance", "--cases", str(root), "--expectations", path], names=path)
    finally:
        pathlib.Path(path).unlink()
        shutil.rmtree(root)


@FUZZ
@given(gen.tool_scripts())
def test_tool_scripts(text):
    path = _file(text)
    try:
        check("tool script", ["run", str(EXAMPLE_DIR / "page-fetcher.md"), "--model-script",
                              str(EXAMPLE_DIR / "page-fetcher.model.json"), "--tool-script", path],
              names=path)
    finally:
        pathlib.Path(path).unlink()


SCENARIO_TEXTS = [p.read_text(encoding="utf-8")
                  for p in sorted((EXAMPLE_DIR / "lifecycle").glob("*.scenario.toml"))]


@FUZZ
@given(gen.scenario_files(SCENARIO_TEXTS))
def test_scenario_files(file):
    suffix, text = file
    path = _file(text, ".scenario" + suffix)
    try:
        check("scenario file", ["explore", path, "--runs", "5"], names=path)
    finally:
        pathlib.Path(path).unlink()


def test_scenario_numbers_past_the_limits_are_refused_naming_the_file():
    """Found by the fuzzer: a scenario's 5000-digit integer passed Python's digit limit and
    was refused without naming the file; a scenario is held to the limits of every input
    file (kit: limits.scenario-files)."""
    for text, rule in [('store = ' + '9' * 5000 + '\n', "an integer past 64 bits"),
                       ('[config]\nmax_depth = 9223372036854775808\n',
                        "config.max_depth: an integer past 64 bits"),
                       ('{"store": ' + '9' * 5000 + '}', "an integer past 64 bits"),
                       ('{"config": {"stop_settle_wait": 1e999}}',
                        "config.stop_settle_wait: a number that is not finite")]:
        path = _file(text, ".scenario.json" if text.startswith("{") else ".scenario.toml")
        try:
            result = check("scenario file", ["explore", path, "--runs", "5"], names=path)
            assert result.exit_code == 2 and rule in result.stderr, result.stderr
        finally:
            pathlib.Path(path).unlink()
