"""Python's collector while a run executes (`forge.engine.collection`): full
passes wait for the run's end, and the process's thresholds come back
whatever way the run ends (kit: speed)."""

from __future__ import annotations

import gc
import threading

import pytest

from forge.engine import collection
from forge.engine.kernel import Scheduler
from forge.engine.run import run_prompt
from forge.prompt import parse_prompt
from tests.conftest import prompt_text, section

PROMPT = parse_prompt(prompt_text(section("Main", "local t = tasks.spawn('## W') "
                                                  "return tasks.join({t})[1].result"),
                                  section("W", "return 'w'")), "t.md")


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def _seen_during(monkeypatch, owner: type = Scheduler, name: str = "loop") -> list:
    """The thresholds each call of `owner.name` starts under."""
    seen = []
    method = getattr(owner, name)

    def watched(self):
        seen.append(gc.get_threshold())
        return method(self)

    monkeypatch.setattr(owner, name, watched)
    return seen


def test_full_passes_wait_while_a_run_executes(monkeypatch, thresholds):
    """Full passes wait and passes over new objects come less often while the loop
    runs; the thresholds come back after (kit: speed)."""
    seen = _seen_during(monkeypatch)
    assert run_prompt(PROMPT).result == "w"
    assert seen == [(collection.DEFERRED_YOUNGEST, 10, collection.DEFERRED_OLDEST)]
    assert gc.get_threshold() == (700, 10, 10)


def test_the_thresholds_come_back_when_the_engine_fails(monkeypatch, thresholds):
    """An engine failure still puts the thresholds back (kit: speed)."""
    def broken(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(Scheduler, "loop", broken)
    with pytest.raises(RuntimeError):
        run_prompt(PROMPT)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_collector_turned_off_stays_off(monkeypatch, thresholds):
    """A process that turned the collector off keeps it off (kit: speed)."""
    gc.set_threshold(0, 10, 10)
    seen = _seen_during(monkeypatch)
    run_prompt(PROMPT)
    assert seen == [(0, 10, 10)] and gc.get_threshold() == (0, 10, 10)


def test_runs_in_several_threads_put_the_thresholds_back_once(thresholds):
    """Overlapping runs in threads restore the thresholds once, at the last end (kit: speed)."""
    errors = []

    def work():
        try:
            for _ in range(20):
                assert run_prompt(PROMPT).result == "w"
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert gc.get_threshold() == (700, 10, 10)


def test_full_passes_wait_while_the_observation_is_built(monkeypatch, thresholds):
    """Building the observation defers full passes too (kit: speed)."""
    from forge.engine.models import ModelsAPI

    # Read while the observation is put together (`forge.engine.observation`).
    seen = _seen_during(monkeypatch, ModelsAPI, "messages_json")
    assert run_prompt(PROMPT).observation()["result"] == "w"
    assert seen == [(collection.DEFERRED_YOUNGEST, 10, collection.DEFERRED_OLDEST)]
    assert gc.get_threshold() == (700, 10, 10)


def _cyclic_garbage_of(make_run) -> int:
    """How many objects `make_run()`'s run leaves to the cyclic collector
    once its observation is read and the run dropped.  Its Lua runtime is
    held meanwhile: a runtime a run gives up is not the run's graph.  What
    lived before is frozen, so that each pass looks at the run alone, not
    at everything the test process holds."""
    gc.disable()
    gc.freeze()
    try:
        run = make_run()
        runtime = None if run is None else run.lua
        if run is not None:
            run.observation()
        del run
        return gc.collect()
    finally:
        del runtime
        gc.unfreeze()
        gc.enable()


def test_a_finished_run_is_freed_by_reference_counting():
    """A run's parts let go of it when it ends (`Run._let_go`): no example and no
    conformance case leaves one object for the cyclic collector, whose passes
    over every run's graph had cost a tenth of a small run (kit: speed)."""
    from forge.conformance.adapters import _reference_run
    from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
    from forge.prompt import load_prompt
    from tests.conftest import EXAMPLES

    examples = sorted(EXAMPLES.glob("*.md"))
    cases = [c for c in load_cases(DEFAULT_CASES_DIR) if c.prompt is not None]
    assert len(examples) > 10 and len(cases) > 100
    for case in cases:      # what a first run imports and caches is not the run's
        _reference_run(case.prompt, case.harness, None, case.path)
    left = {}
    for path in examples:
        prompt = load_prompt(path)
        left[path.name] = _cyclic_garbage_of(lambda: run_prompt(prompt))
    for case in cases:
        left[case.path] = _cyclic_garbage_of(
            lambda: _reference_run(case.prompt, case.harness, None, case.path)[1])
    assert {k: n for k, n in left.items() if n} == {}


def test_a_run_that_ends_in_a_failure_or_a_budget_is_freed_too():
    """The walk's failure paths (an error, the instruction budget, a leaked task) let go as well."""
    for text in (prompt_text(section("A", "error('boom')")),
                 prompt_text(section("A", "while true do end")),
                 prompt_text(section("A", "tasks.spawn('## B') return 'x'"),
                             section("B", "return 'b'"))):
        prompt = parse_prompt(text, "t.md")
        assert _cyclic_garbage_of(lambda: run_prompt(prompt)) == 0
