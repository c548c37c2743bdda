"""The README's test command on a machine without Chromium: the tests that
render the kit's pages skip, and the run ends with one line saying how to run
them; under CI (`FORGE_REQUIRE_CHROMIUM=1`, which `.ci/run` sets after
installing Chromium) the same tests fail instead of skipping
(kit: fresh-machine)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from tests.conftest import NO_CHROMIUM, REQUIRE_CHROMIUM

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _pytest_without_chromium(**env: str) -> subprocess.CompletedProcess:
    """The Chromium tests, with a PATH that holds only this Python."""
    clean = {k: v for k, v in os.environ.items() if k != REQUIRE_CHROMIUM}
    clean.update(PATH=str(pathlib.Path(sys.executable).parent), **env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/api/test_trace_timeline.py", "-k", "chromium"],
                          cwd=ROOT, env=clean, capture_output=True, text=True, timeout=600)


def test_without_chromium_its_tests_skip_with_one_line():
    done = _pytest_without_chromium()
    assert done.returncode == 0, done.stdout[-2000:]
    assert "2 skipped" in done.stdout
    assert done.stdout.count(NO_CHROMIUM) == 1


def test_ci_fails_when_the_chromium_tests_cannot_run():
    done = _pytest_without_chromium(**{REQUIRE_CHROMIUM: "1"})
    assert done.returncode == 1
    assert "2 errors" in done.stdout       # the fixture fails: an error at setup
    assert f"{REQUIRE_CHROMIUM}=1 but headless Chromium is not on PATH" in done.stdout


def test_ci_requires_chromium():
    """`.ci/run` installs Chromium and holds the suite to running its tests."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"export {REQUIRE_CHROMIUM}=1" in script
