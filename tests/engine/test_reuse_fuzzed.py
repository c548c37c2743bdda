"""Reused runtimes against fresh ones over fuzzed programs: the fuzzer's
task programs and model conversations (`forge.conformance.programs`), each
on a drawn schedule, run on whatever runtime the earlier examples left and
again on a fresh one, give the same observation and trace bytes
(kit: determinism.runtime-reuse)."""

from __future__ import annotations

import contextlib
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.conformance.adapters import _reference_run
from forge.conformance.case import HarnessSpec
from forge.conformance.programs import fuzz_inputs
from forge.lua import runtime as lua_runtime


def _observe(program: str, script: dict | None, seed: int):
    observation, run = _reference_run(program, HarnessSpec(model_script=script), seed, "fuzzed")
    return observation, (run.trace.lines() if run is not None else None)


@pytest.fixture
def monkeypatch_env():
    """A context manager setting one environment variable for its block
    (Hypothesis runs many examples in one test, so not `monkeypatch`)."""
    @contextlib.contextmanager
    def setting(name: str, value: str):
        old = os.environ.get(name)
        os.environ[name] = value
        try:
            yield
        finally:
            if old is None:
                del os.environ[name]
            else:
                os.environ[name] = old
    return setting


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(fuzz_inputs(), st.integers(0, 2**32 - 1))
def test_fuzzed_programs_run_alike_on_reused_and_fresh_runtimes(monkeypatch_env, drawn, seed):
    program, script = drawn
    reused = _observe(program, script, seed)
    with monkeypatch_env(lua_runtime.FRESH_ENV, "1"):
        fresh = _observe(program, script, seed)
    assert reused == fresh
