"""Stateful exploration of the Manager: racing parties as explicitly ordered calls.

Invariants after every step (clause ids from spec/lifecycle.toml):
- a terminal row only changes through a retry of it (lifecycle.state.retry-leaves-terminal);
- attempts never exceed the cap (lifecycle.retry.attempt-limit / .ceiling-in-store);
- every terminal row was reported exactly once, with its claimed snapshot, through
  on_result_delivered when cancelled and on_finished otherwise
  (lifecycle.report.claimed-snapshot / .cancel-is-delivered / lifecycle.hooks.on-finished);
- racing finalizers on one attempt yield one winner (lifecycle.race.concurrent-finalizers);
- recover turns every working row into failed and touches nothing else
  (lifecycle.restart.fails-working / .keeps-paused).
"""

from __future__ import annotations

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from lifecycle_host import FakeHost

from forge.lifecycle.manager import TaskError
from forge.lifecycle.records import (
    Continuation,
    RunOutcome,
    SpawnRequest,
    StopOutcome,
    TaskStatus,
)

W, C, F, X, P = (TaskStatus.WORKING, TaskStatus.COMPLETED, TaskStatus.FAILED,
                 TaskStatus.CANCELLED, TaskStatus.INPUT_REQUIRED)
CAP = 2  # low, so the ceiling is reached often
ENDINGS = st.sampled_from([C, F, F, X, P])


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.hook_race = None
        self.hook_ran = False
        self.violations = []
        self.host = FakeHost(continue_hook=self._hook, max_attempts_per_task=CAP,
                             max_concurrent_per_parent=4, max_continuations=3)
        self.mgr = self.host.mgr
        self.store = self.host.store
        self.mgr.recover()
        self.ids: list[str] = []
        self.runs: dict[str, list[str]] = {}
        self.reports: list[tuple[str, object]] = []
        self.mgr.c.on_finished = lambda t: self.reports.append(("finished", t))
        self.mgr.c.on_result_delivered = lambda t: self.reports.append(("delivered", t))

    # -- host side --------------------------------------------------------
    def _hook(self, task, out):
        self.hook_ran = True
        # lifecycle.continuation.when-asked: only about the run the row is working on.
        # Recorded, not asserted: the Manager turns a hook exception into a failure.
        if not (out.run_id == task.run_id and task.status is W and out.status in (C, F)
                and not (out.graceful_stop and out.status is C)):
            self.violations.append((task, out))
        race, self.hook_race = self.hook_race, None
        if race == "stop":
            self.mgr.stop(task.id)
        elif race == "pause":
            self.mgr.on_run_finished(task.child_session_id, RunOutcome(status=P,
                                                                       run_id=task.run_id))
        elif race == "raise":
            raise RuntimeError("hook failed")
        if task.kind != "sequence" or task.state >= 2:
            return None
        return Continuation(input="next", state=task.state + 1)

    def _snapshot(self):
        return {t.id: t for t in self.store.list_all()}

    def _pick(self, i):
        recent = self.ids[-3:]  # rules meet the same few tasks often
        return self.store.get(recent[i % len(recent)])

    def _note_runs(self):
        for req in self.host.launches:
            runs = self.runs.setdefault(req.task_id, [])
            if req.run_id not in runs:
                runs.append(req.run_id)

    def _check_step(self, before, retried=None):
        """lifecycle.state.retry-leaves-terminal: terminal rows change only by retry."""
        self._note_runs()
        after = self._snapshot()
        for tid, old in before.items():
            new = after.get(tid)
            assert new is not None, "the Manager deletes nothing"
            if old.status.terminal and new != old:
                assert tid == retried and old.status is F, (old, new)
                assert new.status in (W, F) and new.run_id != old.run_id

    # -- rules ------------------------------------------------------------
    @rule(kind=st.sampled_from(["", "sequence"]), launch=st.sampled_from(
        ["ok", "fail", "stop-in-window", "fast-finish"]))
    def spawn(self, kind, launch):
        before = self._snapshot()
        h = self.host
        n_stops = len(h.stops)
        if launch == "fail":
            h.launch_error = "no worker"
        elif launch == "stop-in-window":
            h.stop_answer = StopOutcome.UNKNOWN_RUN
            h.on_launch = lambda req: self.mgr.stop(req.task_id)
        elif launch == "fast-finish":
            h.on_launch = lambda req: self.mgr.on_run_finished(
                req.session_id, RunOutcome(status=C, run_id=req.run_id, text="quick"))
        try:
            t = self.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a",
                                            input="go", kind=kind, state=0))
        except TaskError as e:
            if launch == "fail" and str(e).startswith("tasks: starting task run: "):
                assert self._snapshot() == before
                return
            assert str(e).startswith("tasks: this conversation already has 4 tasks running")
            assert len(before) == len(self._snapshot())
        else:
            self.ids.append(t.id)
            if launch == "stop-in-window":
                assert t.status is X  # lifecycle.race.stop-in-launch-window
                # the stop told the host, claimed and told it again (it had answered
                # unknown_run), then the spawn stopped the run it had started
                assert h.stops[n_stops:] == [(t.run_id, False)] * 3
            if launch == "fast-finish":
                assert t.status is not X  # lifecycle.race.fast-finish-in-launch-window
        finally:
            h.launch_error, h.on_launch, h.stop_answer = None, None, StopOutcome.CANCELLED
        self._check_step(before)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50), status=ENDINGS, which=st.sampled_from(["current", "stale",
                                                                        "none"]),
          graceful=st.booleans(), race=st.sampled_from([None, "stop", "pause", "raise"]))
    def run_ends(self, i, status, which, graceful, race):
        t = self._pick(i)
        runs = self.runs.get(t.id, [t.run_id])
        run_id = {"current": t.run_id, "stale": runs[-2] if len(runs) > 1 else runs[0], "none": ""}[which]
        before = self._snapshot()
        self.hook_race, self.hook_ran = race, False
        self.mgr.on_run_finished(t.child_session_id, RunOutcome(
            status=status, run_id=run_id, text="out", err="bad", graceful_stop=graceful))
        self.hook_race = None
        self._check_step(before)
        cur = self.store.get(t.id)
        if self.hook_ran and race in ("stop", "pause"):
            # lifecycle.race.advance-vs-stop-sweep-retry / .pause-during-continue:
            # the row moved first, Advance loses, no next run on this task
            assert cur.run_id == t.run_id and cur.status.terminal, cur
            if race == "stop":
                assert cur.status is X
        if self.hook_ran:
            # lifecycle.continuation.when-asked: only for a current, working, named run
            assert run_id == t.run_id and t.status is W
        if which == "stale" and run_id != t.run_id:
            # lifecycle.race.stale-outcome-after-retry: a superseded run writes nothing
            assert self.store.get(t.id) == before[t.id]

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50), answer=st.sampled_from(list(StopOutcome)),
          graceful=st.booleans(), during=st.sampled_from([None, "complete", "fail", "retry"]))
    def stop(self, i, answer, graceful, during):
        t = self._pick(i)
        before = self._snapshot()
        h = self.host
        h.stop_answer = answer

        def party(_arg):
            cur = self.store.get(t.id)
            if during == "retry":
                if cur.status is W:
                    self.mgr.on_run_finished(t.child_session_id,
                                             RunOutcome(status=F, run_id=cur.run_id, err="e"))
                try:
                    self.mgr.retry(t.id)
                except TaskError:
                    pass
            elif during:
                self.mgr.on_run_finished(t.child_session_id, RunOutcome(
                    status=C if during == "complete" else F, run_id=cur.run_id, text="r"))
        if during:
            (setattr(h, "on_await", party) if answer is StopOutcome.ALREADY_FINISHED
             else setattr(h, "on_stop", party))
        try:
            snap = self.mgr.stop(t.id, graceful=graceful)
        except TaskError as e:
            assert before[t.id].status.terminal
            assert str(e) == f"tasks: task already {before[t.id].status.value}"
        else:
            cur = self.store.get(t.id)
            assert snap == cur
            if not (graceful and answer is StopOutcome.AFTER_TURN):
                # lifecycle.stop.chases-current-run: whatever raced, the task is not
                # left running behind a stop that was not answered StopAfterTurn
                assert cur.status.terminal, cur
                if not during:
                    assert cur.status is X  # lifecycle.stop.lost-outcome-recorded / .unknown-run
        finally:
            h.on_stop = h.on_await = None
            h.stop_answer = StopOutcome.CANCELLED
        # a stop of this task may have raced a retry of this same task
        self._check_step(before, retried=t.id if during == "retry" else None)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50), launch_fail=st.booleans())
    def retry(self, i, launch_fail):
        failed = [t for t in self.store.list_all() if t.status is F]
        t = failed[i % len(failed)] if failed and i % 4 else self._pick(i)
        before = self._snapshot()
        self.host.launch_error = "no capacity" if launch_fail else None
        try:
            r = self.mgr.retry(t.id)
        except TaskError as e:
            msg = str(e)
            if msg == "tasks: restarting task run: no capacity":
                # lifecycle.retry.launch-failure-reverts: back to failed, same attempt
                assert launch_fail and t.status is F and t.attempt < CAP
                assert (e.task.status, e.task.attempt) == (F, t.attempt)
                self._check_step(before, retried=t.id)
                return
            assert self._snapshot() == before
            if t.status is not F:
                assert "only a failed task can be retried" in msg
            elif t.attempt >= CAP:
                assert msg == (f"tasks: this task has already used its {CAP} attempts; "
                               "start a new task instead")
        else:
            assert t.status is F and t.attempt < CAP and not launch_fail
            assert r.status is W and r.attempt == t.attempt + 1 and r.continuations == 0
        finally:
            self.host.launch_error = None
        self._check_step(before, retried=t.id)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50), n=st.integers(2, 4))
    def concurrent_retry_claims(self, i, n):
        """lifecycle.race.concurrent-retries: n processes claim at once; store holds the cap."""
        t = self._pick(i)
        before = self._snapshot()
        wins = [self.store.retry_claim(t.id, f"x{k}-{t.run_id}", CAP) for k in range(n)]
        won = [w for w in wins if w is not None]
        assert len(won) == (1 if t.status is F and t.attempt < CAP else 0)
        if won:
            assert won[0].attempt == t.attempt + 1 and self.store.get(t.id) == won[0]
            self.runs.setdefault(t.id, []).append(won[0].run_id)
        self._check_step(before, retried=t.id)

    @rule()
    def recover(self):
        before = self._snapshot()
        n = len(self.reports)
        out = self.mgr.recover()
        after = self._snapshot()
        assert [t.id for t in out] == [t.id for t in before.values() if t.status is W]
        for tid, old in before.items():
            if old.status is W:
                assert after[tid].status is F and after[tid].run_id == old.run_id
                assert after[tid].state == old.state and after[tid].attempt == old.attempt
            else:
                assert after[tid] == old
        assert [r for _, r in self.reports[n:]] == out
        self._check_step(before)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50), order=st.permutations([C, F, X]))
    def racing_finalizers(self, i, order):
        """lifecycle.race.concurrent-finalizers: three outcomes for one attempt."""
        t = self._pick(i)
        before = self._snapshot()
        n = len(self.reports)
        for status in order:
            self.mgr.on_run_finished(t.child_session_id,
                                     RunOutcome(status=status, run_id=t.run_id, text="x"))
        mine = [r for _, r in self.reports[n:] if r.id == t.id and r.run_id == t.run_id]
        cur = self.store.get(t.id)
        if t.status.terminal:
            assert mine == [] and cur == t
        elif cur.run_id == t.run_id:
            assert len(mine) == 1 and mine[0] == cur
        self._check_step(before)

    @precondition(lambda self: self.ids)
    @rule(i=st.integers(0, 50))
    def launcher_rewrites_state(self, i):
        """lifecycle.continuation.same-run-rewrites-state: Advance(run, run, state)."""
        t = self._pick(i)
        before = self._snapshot()
        snap = self.store.advance(t.id, t.run_id, t.run_id, t.state)
        assert (snap is not None) == (t.status is W)
        if snap is not None:
            assert attrs.evolve(snap) == t
        self._check_step(before)

    # -- invariants -------------------------------------------------------
    @invariant()
    def hook_only_asked_about_current_run(self):
        assert self.violations == []

    @invariant()
    def attempts_within_cap(self):
        for t in self.store.list_all():
            assert 1 <= t.attempt <= CAP
            assert t.continuations <= 3

    @invariant()
    def every_terminal_reported_once_by_the_right_hook(self):
        keys = [(r.id, r.run_id) for _, r in self.reports]
        assert len(keys) == len(set(keys)), "an ending reported twice"
        for hook, r in self.reports:
            assert r.status.terminal
            assert hook == ("delivered" if r.status is X else "finished")
        by_key = {(r.id, r.run_id): r for _, r in self.reports}
        for t in self.store.list_all():
            if t.status.terminal:
                assert by_key.get((t.id, t.run_id)) == t, "claimed snapshot not reported"
            else:
                assert (t.id, t.run_id) not in by_key


TestLifecycle = LifecycleMachine.TestCase
TestLifecycle.settings = settings(max_examples=400, stateful_step_count=30, deadline=None,
                                  derandomize=True, database=None,
                                  suppress_health_check=[HealthCheck.too_slow])
