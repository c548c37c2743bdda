"""The benchmark scripts still run (kit: benchmarks).

They are not timed here (`benchmarks/` measures; tests do not): every script
answers `--help` without running, and the two the README's figures come
from run end to end at their smallest size and print JSON.  An engine
change that breaks a benchmark's use of it fails here, not in the next
session that measures.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name != "timing.py")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_benchmark_answers_help(script):
    done = _run(str(script), "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: "), done.stderr[-2000:]


def test_the_readme_figures_benchmarks_run_at_their_smallest():
    run = _run("benchmarks/run.py", "--quick", "--seconds", "0.2", "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(run.stdout)
    assert figures and all(isinstance(k, str) for k in figures)
    calls = figures["python_calls_per_run"]
    assert calls["two_tasks"] > 100 and calls["walk_call_store"] > 100
    phases = figures["phases"]
    assert set(phases) == {"creation", "execute", "observation_less_hash", "trace_hash"}
    assert abs(sum(phases.values()) - 1) < 1e-9 and phases["execute"] > 0.3
    scaling = _run("benchmarks/scaling.py", "--reps", "1", "--max", "10", "--json")
    assert scaling.returncode == 0, scaling.stderr[-2000:]
    assert json.loads(scaling.stdout)["joins"]["rows"]


def test_the_lua_kernel_bound_still_does_the_engines_work():
    # It measures only after checking that its observation of two-tasks,
    # trace hash included, equals the engine's (exit 1 otherwise).
    done = _run("benchmarks/lua_kernel_bound.py", "--seconds", "0.2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    ratios = json.loads(done.stdout)["vs_fresh_floor"]
    assert set(ratios) == {"lua_kernel", "engine"}
    assert all(r["min"] > 0 and r["median"] > 0 for r in ratios.values())


def test_the_python_kernel_bound_still_does_the_engines_work():
    # As the Lua bound: it checks its observation of two-tasks (and the Lua
    # kernel's) against the engine's before it measures.
    done = _run("benchmarks/python_kernel_bound.py", "--seconds", "0.2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    ratios = json.loads(done.stdout)["vs_fresh_floor"]
    assert set(ratios) == {"python_kernel", "lua_kernel", "engine", "api_run_prompt"}
    assert all(r["min"] > 0 and r["median"] > 0 for r in ratios.values())
