"""Same prompt, arguments and seed: byte-identical output in separate processes.

The processes run with different PYTHONHASHSEED values, so anything that
iterated an unordered set or dict, read an address or the wall clock would
show up as a difference.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT


def forge(*args: str, hashseed: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )


@pytest.mark.parametrize("seed", ["3", "17"])
@pytest.mark.parametrize("name", ["freeform.md", "checked-join.md", "leaky-walk.md"])
def test_same_seed_same_bytes_across_processes(tmp_path, name, seed):
    outputs, traces = [], []
    for i, hashseed in enumerate(["0", "12345", "random"]):
        trace = tmp_path / f"trace{i}.jsonl"
        done = forge("run", str(EXAMPLES / name), "--seed", seed, "--json", "--trace", str(trace),
                     hashseed=hashseed)
        assert done.returncode in (0, 1), done.stderr
        outputs.append(done.stdout)
        traces.append(trace.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert traces[0] == traces[1] == traces[2]
    assert traces[0], "the trace is not empty"


def test_different_seeds_explore_different_schedules():
    """Random schedules really differ (the trace hash moves), results do not."""
    from tests.conftest import run_text

    text = (EXAMPLES / "freeform.md").read_text()
    hashes = {run_text(text, seed=s)["trace_sha256"] for s in range(20)}
    assert len(hashes) > 1
