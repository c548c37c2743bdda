"""`mypy --strict` passes on the public modules: the API, the pytest plugin, the progress
hook, and the timeline they use."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PUBLIC = ["forge/__init__.py", "forge/api.py", "forge/pytest_plugin.py", "forge/progress.py",
          "forge/timeline.py"]


def test_mypy_strict_passes_on_the_public_modules(tmp_path):
    """The public modules type-check under --strict (mypy is in the test extra)."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", str(tmp_path / "cache"), *PUBLIC],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout
