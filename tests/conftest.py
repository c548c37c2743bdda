"""Shared fixtures: running a prompt text on the reference engine, and the
headless Chromium the tests that render the kit's pages need (`chromium`).

A machine without Chromium skips those tests, and the run ends with one line
saying how to run them.  CI must run them: `.ci/run` installs Chromium and
sets `FORGE_REQUIRE_CHROMIUM=1`, under which a missing Chromium fails the
test instead.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import parse_prompt
from forge.sim.chooser import Canonical, Chooser, RandomProvider

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

HEADER = "---\nname: t\ndescription: t\npromptforge: 0\n---\n\n# T\n\n"


def section(name: str, code: str, level: int = 2) -> str:
    return f"{'#' * level} {name}\n\n```lua\n{code.strip()}\n```\n\n"


def prompt_text(*sections: str, h1: str = "") -> str:
    body = f"```lua\n{h1.strip()}\n```\n\n" if h1 else ""
    return HEADER + body + "".join(sections)


def run_text(text: str, seed: int | None = None, args: str = "", harness: Harness | None = None,
             **config) -> dict:
    prompt = parse_prompt(text, "t.md")
    chooser = Chooser(RandomProvider(seed) if seed is not None else Canonical())
    run = run_prompt(prompt, harness or Harness(), chooser, RunConfig(args=args, **config))
    return run.observation()


@pytest.fixture
def run():
    return run_text


@pytest.fixture
def calls_of(monkeypatch):
    """`calls_of(module, name)`: `module.name` wrapped for the test to count
    its calls; returns the list that grows by one a call."""
    def count(module, name: str) -> list[int]:
        made: list[int] = []
        real = getattr(module, name)

        def counted(*args, **kwargs):
            made.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
        return made
    return count


#: Set by `.ci/run`: a test that needs Chromium fails where it would skip.
REQUIRE_CHROMIUM = "FORGE_REQUIRE_CHROMIUM"
#: The one line a run without Chromium ends with.
NO_CHROMIUM = ("headless Chromium not found: the tests that render pages were skipped; "
               "install it (apt-get install chromium) or run .ci/run, which does")
#: The reason each such test skips with.
_CHROMIUM_SKIP = "headless Chromium not found (apt-get install chromium; .ci/run does)"


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def chromium() -> str:
    """The headless Chromium to run: skipped without one, failed under CI."""
    found = find_chromium()
    if found is None:
        if os.environ.get(REQUIRE_CHROMIUM) == "1":
            pytest.fail(f"{REQUIRE_CHROMIUM}=1 but headless Chromium is not on PATH",
                        pytrace=False)
        pytest.skip(_CHROMIUM_SKIP)
    return found


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # Read off the skip reports, which reach the process that prints the
    # summary from every worker (under pytest-xdist the tests run elsewhere).
    skipped = terminalreporter.stats.get("skipped", [])
    if any(_CHROMIUM_SKIP in str(report.longrepr) for report in skipped):
        terminalreporter.write_line(NO_CHROMIUM)


# The suite's campaigns are reproducible: the start seed a campaign given no
# --start-seed would draw is pinned to 0, and no failure database is kept
# (the CI profile `forge.failuredb` reads; tests/verdict/test_failuredb.py
# sets its own).
os.environ.setdefault("FORGE_START_SEED", "0")
os.environ.setdefault("FORGE_DATABASE", "none")
