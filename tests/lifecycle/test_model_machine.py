"""A model-based state machine: the Manager over each store, step by step,
against an abstract model written from the seed's rules alone.

The model knows only what the seed says: statuses, the attempt ceiling, the
per-parent cap, that a stale run writes nothing, that a stop ends a working
or paused task (unless a graceful stop is taken after the turn), that a
restart fails working tasks and keeps paused ones, which endings owe a
wake-up and which count as delivered. Races are rules of their own: a run
finishing inside a stop's Stopper call, a stop inside a retry's launch, a
second retry inside a retry's launch, an outcome arriving during the stop's
wait, a stop inside a spawn's launch.

Clause ids: lifecycle.finalize.single-winner / lifecycle.finalize.run-bound /
lifecycle.retry.attempt-limit / lifecycle.retry.concurrency-slot /
lifecycle.stop.* / lifecycle.restart.* / lifecycle.report.cancel-is-delivered /
lifecycle.durable.debt-atomic / lifecycle.durable.drop-in-retry-claim.
"""

from __future__ import annotations

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from lifecycle_host import FakeHost

from forge.lifecycle.clock import VirtualClock
from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import RunOutcome, SpawnRequest, StopOutcome, TaskStatus
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore
from forge.lifecycle.tools import retry_in_hand

W, P, C, F, X = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = (C, F, X)
ATTEMPTS, CAP = 2, 2
PARENTS = ("p", "q")


@attrs.define
class ModelTask:
    parent: str
    status: str = W
    attempt: int = 1
    runs: int = 1  # runs launched so far; the current one is the last
    finished: int = 0  # OnFinished reports expected
    delivered: int = 0  # OnResultDelivered reports expected (cancellations, model reads)
    owed: bool = False


class Model:
    """The seed's rules, with no reference to the implementation."""

    def __init__(self) -> None:
        self.tasks: dict[str, ModelTask] = {}

    def live(self, parent: str) -> int:
        return sum(1 for t in self.tasks.values() if t.parent == parent
                   and t.status not in TERMINAL)

    def end(self, t: ModelTask, status: str) -> None:
        t.status = status
        if status == X:
            t.delivered += 1  # a cancellation is reported as delivered
            t.owed = False
        else:
            t.finished += 1
            t.owed = True

    def retryable(self, t: ModelTask) -> bool:
        return t.status == F and t.attempt < ATTEMPTS and self.live(t.parent) < CAP


def machine_for(make_store):
    class ModelMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.clock = VirtualClock()
            self.store = make_store()
            self.host = FakeHost(store=self.store, clock=self.clock,
                                 max_attempts_per_task=ATTEMPTS,
                                 max_concurrent_per_parent=CAP)
            self.mgr = self.host.mgr
            self.mgr.recover()
            self.model = Model()
            self.ids: list[str] = []
            self.finished: dict[str, int] = {}
            self.delivered: dict[str, int] = {}
            self.mgr.c.on_finished = lambda t: self._count(self.finished, t)
            self.mgr.c.on_result_delivered = lambda t: self._count(self.delivered, t)

        def _count(self, table, t):
            table[t.id] = table.get(t.id, 0) + 1

        def _pick(self, i):
            recent = self.ids[-3:]  # rules meet the same tasks often, so chains get long
            tid = recent[i % len(recent)]
            return tid, self.model.tasks[tid], self.store.get(tid)

        def _runs(self, tid):
            return [r.run_id for r in self.host.launches if r.task_id == tid]

        def _end(self, row, status, run_id, **kw):
            return self.mgr.on_run_finished(row.child_session_id,
                                            RunOutcome(status=status, run_id=run_id, **kw))

        # -- rules ---------------------------------------------------------
        @rule(parent=st.sampled_from(PARENTS + ("p",)),
              launch=st.sampled_from(["ok", "fail", "stop"]))
        def spawn(self, parent, launch):
            if launch == "fail":
                self.host.launch_error = "no worker"
            elif launch == "stop":  # lifecycle.race.stop-in-launch-window
                self.host.on_launch = lambda req: self.mgr.stop(req.task_id)
            full = self.model.live(parent) >= CAP
            try:
                row = self.mgr.spawn(SpawnRequest(parent_session_id=parent, agent_name="a",
                                                  input="go"))
            except TaskError as e:
                if str(e).startswith("tasks: starting task run: "):
                    assert launch == "fail" and not full
                    return
                assert full, "only a full parent refuses a spawn"
                return
            finally:
                self.host.launch_error = self.host.on_launch = None
            assert not full and launch != "fail"
            t = self.model.tasks[row.id] = ModelTask(parent=parent)
            self.ids.append(row.id)
            if launch == "stop":
                self.model.end(t, X)

        @precondition(lambda self: self.ids)
        @rule(i=st.integers(0, 20), status=st.sampled_from([C, F, F, X, P, P]))
        def run_reports(self, i, status):
            tid, t, row = self._pick(i)
            self._end(row, TaskStatus(status), self._runs(tid)[-1], text="out", err="bad")
            if t.status in TERMINAL:
                return  # a finished task: nothing is written
            if status == P:
                if t.status == W:
                    t.status = P
                return
            self.model.end(t, status)

        def _retried(self):
            return [tid for tid in self.ids[-2:] if len(self._runs(tid)) > 1]

        @precondition(lambda self: self._retried())
        @rule(i=st.integers(0, 20), status=st.sampled_from([C, F, X, P]))
        def stale_run_reports(self, i, status):
            """lifecycle.race.stale-outcome-after-retry: a replaced run writes nothing."""
            retried = self._retried()
            tid = retried[i % len(retried)]
            self._end(self.store.get(tid), TaskStatus(status), self._runs(tid)[0], text="old")

        @precondition(lambda self: self.ids)
        @rule(i=st.integers(0, 20))
        def approval_resumes(self, i):
            tid, t, _row = self._pick(i)
            snap = self.mgr.resume_after_approval(tid)
            assert (snap is not None) == (t.status == P)
            if t.status == P:
                t.status = W

        @precondition(lambda self: self.ids)
        @rule(i=st.integers(0, 20), graceful=st.booleans(),
              answer=st.sampled_from(["cancelled", "unknown_run", "after_turn",
                                      "already_finished", "late_outcome", "completes_now"]))
        def stop(self, i, graceful, answer):
            tid, t, row = self._pick(i)
            h = self.host
            # lifecycle.race.stop-already-finished-outcome-late-or-lost
            if answer == "late_outcome":
                h.stop_answer = StopOutcome.ALREADY_FINISHED
                self.clock.call_later(0.5, lambda: self._end(row, TaskStatus.FAILED, row.run_id,
                                                             err="crashed"))
            elif answer == "completes_now":  # lifecycle.race.stop-vs-completion
                h.stop_answer = StopOutcome.ALREADY_FINISHED
                h.on_stop = lambda _run: self._end(row, TaskStatus.COMPLETED, row.run_id,
                                                   text="won")
            else:
                h.stop_answer = StopOutcome(answer)
            try:
                self.mgr.stop(tid, graceful=graceful)
            except TaskError:
                assert t.status in TERMINAL, "only a finished task refuses a stop"
                return
            finally:
                h.stop_answer, h.on_stop = StopOutcome.CANCELLED, None
                self.clock.advance(5)  # nothing scheduled outlives the step
            assert t.status not in TERMINAL
            if t.status == P:
                self.model.end(t, X)  # claimed before the host is told
            elif answer == "after_turn" and graceful:
                pass  # the run will end itself
            elif answer == "late_outcome":
                self.model.end(t, F)  # the real ending arrived within the wait
            elif answer == "completes_now":
                self.model.end(t, C)
            else:
                self.model.end(t, X)

        @precondition(lambda self: self.ids)
        @rule(i=st.integers(0, 20), race=st.sampled_from([None, "fail", "stop", "second"]),
              via_tool=st.booleans())
        def retry(self, i, race, via_tool):
            tid, t, row = self._pick(i)
            h = self.host
            second = []
            if race == "fail":
                h.launch_error = "no capacity"
            elif race == "stop":  # lifecycle.race.stop-vs-retry (inside the launch window)
                h.on_launch = lambda req: self.mgr.stop(req.task_id)
            elif race == "second":  # lifecycle.race.concurrent-retries
                def again(req):
                    try:
                        self.mgr.retry(req.task_id)
                    except TaskError as e:
                        second.append(str(e))
                h.on_launch = again
            ok = self.model.retryable(t)
            try:
                if via_tool:  # the model's path: what it is handed is settled
                    retry_in_hand(self.mgr, tid)
                else:
                    self.mgr.retry(tid)
            except TaskError as e:
                if race == "fail" and ok:  # the launch failed: the claim is put back
                    assert str(e) == "tasks: restarting task run: no capacity"
                    t.finished += 1  # owed, with its debt row (notes 3.2 step 7)
                    t.owed = True  # (this host never drops a debt)
                    if via_tool:
                        t.delivered += 1  # ... and read by the model in the result
                    return
                assert not ok, "a retryable task was refused"
                if via_tool and t.status in TERMINAL:
                    t.delivered += 1  # the refusal card shows the finished task
                return
            finally:
                h.launch_error = h.on_launch = None
            assert ok, "a task the seed does not allow was retried"
            t.status, t.attempt, t.runs, t.owed = W, t.attempt + 1, t.runs + 1, False
            if race == "second":
                assert len(second) == 1, "the second retry must be refused"
            if race == "stop":
                self.model.end(t, X)
                if via_tool:
                    t.delivered += 1  # the tool hands the model the cancelled task

        def _live(self):
            return any(t.status in (W, P) for t in self.model.tasks.values())

        @precondition(lambda self: self._live())
        @rule()
        def restart_sweep(self):
            self.mgr.recover()
            for t in self.model.tasks.values():
                if t.status == W:
                    self.model.end(t, F)

        # -- invariants ------------------------------------------------------
        @invariant()
        def rows_match_the_model(self):
            for tid, t in self.model.tasks.items():
                row = self.store.get(tid)
                assert (row.status.value, row.attempt) == (t.status, t.attempt), (tid, row, t)
                assert len(self._runs(tid)) >= t.runs

        @invariant()
        def every_ending_is_reported_as_the_model_says(self):
            for tid, t in self.model.tasks.items():
                assert self.finished.get(tid, 0) == t.finished, (tid, t)
                assert self.delivered.get(tid, 0) == t.delivered, (tid, t)

        @invariant()
        def debts_match(self):
            owed = {d.task_id for d in self.store.owed()}
            assert owed == {tid for tid, t in self.model.tasks.items() if t.owed}

        @invariant()
        def the_cap_holds(self):
            for parent in PARENTS:
                assert len(self.store.list_non_terminal(parent)) <= CAP

    return ModelMachine


SETTINGS = settings(max_examples=200, stateful_step_count=30, deadline=None,
                    derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
TestAgainstModelMemory = machine_for(MemoryStore).TestCase
TestAgainstModelMemory.settings = SETTINGS
TestAgainstModelSqlite = machine_for(lambda: SqliteStore(":memory:")).TestCase
TestAgainstModelSqlite.settings = SETTINGS
