"""Every interleaving of each two-actor race of the notes (section 7), with
and without reduction; each race fails on a lifecycle mutant made for it.

Clause ids: lifecycle.race.stop-vs-completion / lifecycle.race.stop-vs-retry /
lifecycle.race.concurrent-retries / lifecycle.race.advance-vs-stop-sweep-retry /
lifecycle.race.restart-during-attempt / lifecycle.race.graceful-stop-vs-run-ending /
lifecycle.race.stop-in-launch-window / lifecycle.finalize.single-winner.
"""

from __future__ import annotations

import attrs
import pytest

from forge.lifecycle.explore import RACES, explore
from forge.lifecycle.manager import Manager
from forge.lifecycle.records import TaskStatus
from forge.lifecycle.store import MemoryStore


@pytest.mark.parametrize("race", sorted(RACES))
def test_every_interleaving_holds(race):
    full = explore(RACES[race], reduced=False)
    reduced = explore(RACES[race], reduced=True)
    assert full.failure is None, (full.failure, full.choices)
    assert reduced.failure is None, (reduced.failure, reduced.choices)
    assert 1 < reduced.interleavings <= full.interleavings


# -- mutants, one per race ---------------------------------------------------------

class OverwritingStore(MemoryStore):
    """Finalize forgets that a terminal row is final."""

    def finalize(self, task_id, run_id, status, summary, result, state=None):
        row = self.get(task_id)
        if row.run_id != run_id:
            return None
        return self._swap(row, status=TaskStatus(status), summary=summary, result=result)


class EagerClaimStore(MemoryStore):
    """RetryClaim forgets to check that the task is still failed."""

    def retry_claim(self, task_id, new_run_id, max_attempts):
        row = self.get(task_id)
        if row.attempt >= max_attempts:
            return None
        return self._swap(row, status=TaskStatus.WORKING, run_id=new_run_id,
                          attempt=row.attempt + 1, summary="", result="")


class LooseAdvanceStore(MemoryStore):
    """Advance forgets that only a working row moves on."""

    def advance(self, task_id, run_id, next_run_id, state=None):
        row = self.get(task_id)
        if row.run_id != run_id:
            return None
        return self._swap(row, run_id=next_run_id)


def test_completion_vs_stop_catches_an_overwritten_ending():
    got = explore(RACES["completion-vs-stop"], store_factory=OverwritingStore)
    assert got.failure and "overwritten" in got.failure


def test_two_retries_catch_a_claim_without_its_predicate():
    got = explore(RACES["two-retries"], store_factory=EagerClaimStore)
    assert got.failure and "retries won" in got.failure


def test_continuation_vs_stop_catches_an_advance_on_a_cancelled_row():
    got = explore(RACES["continuation-vs-stop"], store_factory=LooseAdvanceStore)
    assert got.failure and "overwritten by advance" in got.failure


def test_retry_vs_stop_catches_a_launch_that_never_looks_back(monkeypatch):
    def reconcile(self, task_id, run_id):  # the launch window left open on one side
        self._launching.pop(run_id, None)
        return self.store.get(task_id)
    monkeypatch.setattr(Manager, "_reconcile", reconcile)
    got = explore(RACES["retry-vs-stop"])
    assert got.failure and "never stopped" in got.failure


def test_sweep_vs_retry_catches_a_sweep_that_reports_nothing(monkeypatch):
    def recover(self):
        failed = self.store.fail_orphans()
        self.recovered = True
        return failed
    monkeypatch.setattr(Manager, "recover", recover)
    got = explore(RACES["sweep-vs-retry"])
    assert got.failure and "reported as" in got.failure


def test_graceful_stop_vs_failing_turn_catches_continue_being_asked(monkeypatch):
    real = Manager.on_run_finished

    def forgetful(self, session_id, out):  # the bug: the graceful flag ignored
        if out.status is TaskStatus.FAILED:
            out = attrs.evolve(out, graceful_stop=False)
        return real(self, session_id, out)
    monkeypatch.setattr(Manager, "on_run_finished", forgetful)
    got = explore(RACES["graceful-stop-vs-failing-turn"])
    # the hook moved the task on to a next run: it is still running, or ran again
    assert got.failure and ("left the task running" in got.failure
                            or "another run" in got.failure)
