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
    from forge.engine.run import Run

    seen = _seen_during(monkeypatch, Run, "_observation")
    assert run_prompt(PROMPT).observation()["result"] == "w"
    assert seen == [(collection.DEFERRED_YOUNGEST, 10, collection.DEFERRED_OLDEST)]
    assert gc.get_threshold() == (700, 10, 10)
