"""The Manager: spawn, run endings, continuations, stop, retry, restart sweep.

Lives here: the policy that sequences store CASes and calls the injected host
functions (resolver, launcher, stopper, continue hook, report hooks). Racing
parties of the seed (a run ending while a stop is in flight, a stop reading a
row just before a retry, ...) are ordinary calls: a test orders them, e.g. by
calling back into the Manager from inside a launcher or stopper.
Does not live here: tools, task_status waiting, notification delivery (the
Manager REPORTS endings), deleting anything (lifecycle.delete.manager-deletes-nothing).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs

from forge.lifecycle.records import (
    Continuation,
    LaunchRequest,
    RunOutcome,
    SpawnRequest,
    Spec,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.clock import Clock, VirtualClock
from forge.lifecycle.store import KEEP, Store

SUMMARY_LIMIT = 300
STOPPED = "stopped"
STOPPED_AWAITING = "stopped while awaiting approval"
STOPPED_AFTER_TURN = "stopped after the current turn"


class TaskError(Exception):
    """A refused Manager operation; ``str`` is the exact user-facing text."""


def summarize(text: str, limit: int = SUMMARY_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


class CounterIds:
    """Deterministic id source: ``t1, r2, s3, ...`` from one counter."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}{next(self._n)}"


def _none(*_a: Any) -> None:
    return None


@attrs.define
class Config:
    store: Store
    launcher: Callable[[LaunchRequest], None]
    resolver: Callable[[str, str], Spec] = lambda parent, name: Spec(display_name=name)
    stopper: Callable[[str, bool], StopOutcome] | None = None
    on_finished: Callable[[Task], None] = _none
    on_result_delivered: Callable[[Task], None] = _none
    continue_hook: Callable[[Task, RunOutcome], Continuation | None] | None = None
    # Both bounded waits (the stop's look-again, task_status) run on this clock;
    # the default is virtual, so a wait costs no wall time and what arrives
    # "meanwhile" is whatever was scheduled on it.
    clock: Clock = attrs.field(factory=VirtualClock)
    # How long a stop that heard StopAlreadyFinished waits for the outcome
    # before looking again (lifecycle.stop.already-finished-waits).
    stop_settle_wait: float = 2.0
    # Observer called as that wait begins (a test places a racing party here).
    await_outcome: Callable[[Task], None] | None = None
    summary_limit: int = SUMMARY_LIMIT
    max_continuations: int = 50
    max_attempts_per_task: int = 3
    max_depth: int = 1
    max_concurrent_per_parent: int = 6
    new_id: Callable[[str], str] = attrs.field(factory=CounterIds)


class Manager:
    def __init__(self, config: Config) -> None:
        self.c = config
        self.store = config.store
        self.recovered = False

    # -- reports -----------------------------------------------------------
    def _report(self, snap: Task) -> None:
        """lifecycle.report.cancel-is-delivered / lifecycle.report.claimed-snapshot."""
        if snap.status is TaskStatus.CANCELLED:
            self.c.on_result_delivered(snap)
        else:
            self.c.on_finished(snap)

    def _finish(self, task_id: str, run_id: str, status: TaskStatus, summary: str,
                result: str, state: Any = KEEP) -> Task | None:
        snap = self.store.finalize(task_id, run_id, status, summary, result, state)
        if snap is not None:
            self.c.clock.notify()
            self._report(snap)
        return snap

    # -- lookups -----------------------------------------------------------
    def meta_for(self, session_id: str) -> tuple[Task | None, bool]:
        """(row, is_task). Store errors propagate: an error is not "not a task"
        (lifecycle.depth.lookup-error-refuses)."""
        row = self.store.by_child_session(session_id)
        return row, row is not None

    def _live(self, parent_session_id: str) -> int:
        return sum(1 for t in self.store.list_by_parent(parent_session_id)
                   if not t.status.terminal)

    def _check_slot(self, parent_session_id: str) -> None:
        """lifecycle.spawn.concurrency-slot / lifecycle.retry.concurrency-slot."""
        n = self.c.max_concurrent_per_parent
        if self._live(parent_session_id) >= n:
            raise TaskError(f"tasks: this conversation already has {n} tasks running; "
                            "wait for one to finish")

    # -- spawn -------------------------------------------------------------
    def spawn(self, req: SpawnRequest) -> Task:
        parent, is_task = self.meta_for(req.parent_session_id)
        depth = parent.depth + 1 if is_task else 1
        if depth > self.c.max_depth:  # lifecycle.depth.spawn-max-depth
            raise TaskError(f"tasks: cannot spawn from a task at depth {depth - 1}")
        self._check_slot(req.parent_session_id)
        spec = self.c.resolver(req.parent_session_id, req.agent_name)
        row = self.store.create(Task(
            id=self.c.new_id("t"), run_id=self.c.new_id("r"),
            parent_session_id=req.parent_session_id, child_session_id=self.c.new_id("s"),
            label=req.label or spec.display_name, kind=req.kind, state=req.state,
            parent_run_id=req.parent_run_id, depth=depth, inherit=spec.inherit))
        try:
            self.c.launcher(LaunchRequest(task_id=row.id, run_id=row.run_id,
                                          session_id=row.child_session_id, input=req.input,
                                          kind=row.kind, state=row.state,
                                          inherit=row.inherit))
        except Exception:
            # lifecycle.spawn.rollback-detached: the row goes with the failed spawn.
            self.store.delete_session_tree(row.child_session_id)
            raise
        return self._reconcile(row.id, row.run_id)

    def _reconcile(self, task_id: str, run_id: str) -> Task:
        """After a launch: a stop that landed in the claim->launch window cancelled
        the row; stop the run just started. A fast finish is left alone."""
        row = self.store.get(task_id)
        if row.status is TaskStatus.CANCELLED and row.run_id == run_id and self.c.stopper:
            self._ask_stopper(run_id, False)
        return row

    def _ask_stopper(self, run_id: str, graceful: bool) -> StopOutcome:
        if self.c.stopper is None:
            return StopOutcome.CANCELLED
        try:
            return self.c.stopper(run_id, graceful)
        except Exception:  # noqa: BLE001 - a failing stopper still lets the stop claim
            return StopOutcome.CANCELLED

    # -- run endings -------------------------------------------------------
    def on_run_finished(self, session_id: str, out: RunOutcome) -> Task | None:
        """lifecycle.outcome.entry-point: the single entry for run endings."""
        row = self.store.by_child_session(session_id)
        if row is None:
            return None
        run_id = out.run_id or row.run_id  # lifecycle.outcome.run-id
        status = TaskStatus(out.status)
        if status is TaskStatus.INPUT_REQUIRED:
            return self.store.mark_input_required(row.id, run_id)
        if status is TaskStatus.WORKING:
            raise ValueError("a run outcome must be an ending or a pause")
        if status is TaskStatus.COMPLETED and out.graceful_stop:
            status = TaskStatus.CANCELLED
        summary, result = self._texts(status, out)
        asks = (self.c.continue_hook is not None
                and status in (TaskStatus.COMPLETED, TaskStatus.FAILED)
                and not out.graceful_stop  # lifecycle.stop.ends-task-over-continue
                and bool(out.run_id) and row.status is TaskStatus.WORKING
                and row.run_id == out.run_id)  # lifecycle.continuation.when-asked
        if not asks:
            return self._finish(row.id, run_id, status, summary, result)
        return self._continue(row, out, status, summary, result)

    def _sum(self, text: str) -> str:
        return summarize(text, self.c.summary_limit)

    def _texts(self, status: TaskStatus, out: RunOutcome) -> tuple[str, str]:
        if status is TaskStatus.CANCELLED:
            text = out.text or STOPPED_AFTER_TURN
        elif status is TaskStatus.FAILED:
            text = out.err or out.text or "the run failed"
        else:
            text = out.text
        return self._sum(text), text

    def _continue(self, row: Task, out: RunOutcome, status: TaskStatus, summary: str,
                  result: str) -> Task | None:
        fail = TaskStatus.FAILED
        try:
            cont = self.c.continue_hook(row, out)
        except Exception as exc:  # noqa: BLE001 - lifecycle.continuation.error-fails
            return self._finish(row.id, out.run_id, fail, self._sum(str(exc)), str(exc))
        if cont is None:  # lifecycle.continuation.nil-ends
            return self._finish(row.id, out.run_id, status, summary, result)
        if not cont.input:  # lifecycle.continuation.no-input-ends
            if cont.err:
                return self._finish(row.id, out.run_id, fail, self._sum(cont.err), cont.err,
                                    cont.state)
            return self._finish(row.id, out.run_id, status, summary, result, cont.state)
        if row.continuations >= self.c.max_continuations:  # .ceiling / .ceiling-keeps-state
            msg = (f"stopped after {row.continuations + 1} runs: the task's continuation "
                   f"ceiling ({self.c.max_continuations}) was reached")
            return self._finish(row.id, out.run_id, fail, msg, msg)
        next_run = self.c.new_id("r")
        state = KEEP if cont.state is None else cont.state
        try:
            moved = self.store.advance(row.id, out.run_id, next_run, state)
        except Exception as exc:  # noqa: BLE001 - a store failure ends the task failed
            msg = f"could not advance to the next run: {exc}"
            return self._finish(row.id, out.run_id, fail, msg, msg)
        if moved is None:  # lifecycle.continuation.advance-lost-fails
            msg = "the task was moved before the next run could start"
            return self._finish(row.id, out.run_id, fail, msg, msg)
        try:
            self.c.launcher(LaunchRequest(task_id=moved.id, run_id=next_run,
                                          session_id=moved.child_session_id, input=cont.input,
                                          kind=moved.kind, state=moved.state,
                                          inherit=moved.inherit))
        except Exception as exc:  # noqa: BLE001 - lifecycle.continuation.launch-failure-fails
            msg = f"could not start the next run: {exc}"
            return self._finish(moved.id, next_run, fail, msg, msg)
        return self._reconcile(moved.id, next_run)

    # -- stop --------------------------------------------------------------
    def stop(self, task_id: str, graceful: bool = False) -> Task:
        """Chase the current run (lifecycle.stop.chases-current-run)."""
        row = self.store.get(task_id)
        if row.status.terminal:
            raise TaskError(f"tasks: task already {row.status.value}")
        for _pass in range(2):  # a lost claim earns one more pass on the new attempt
            if row.status is TaskStatus.INPUT_REQUIRED:
                # claim first, then tell the host (lifecycle.race.stop-vs-approval)
                snap = self._finish(row.id, row.run_id, TaskStatus.CANCELLED,
                                    STOPPED_AWAITING, STOPPED_AWAITING)
                if snap is not None:
                    self._ask_stopper(row.run_id, graceful)
                    return snap
            else:
                answer = self._ask_stopper(row.run_id, graceful)
                if answer is StopOutcome.AFTER_TURN and graceful:
                    return self.store.get(task_id)  # lifecycle.stop.after-turn-finishes-call
                if answer is StopOutcome.ALREADY_FINISHED:
                    self._settle(row)  # lifecycle.stop.already-finished-waits
                    now = self.store.get(task_id)
                    if now.run_id != row.run_id or now.status is not TaskStatus.WORKING:
                        if now.status.terminal:
                            return now  # the real ending arrived and stands
                        row = now
                        continue
                    # still this attempt, still running: the outcome was lost
                snap = self._finish(row.id, row.run_id, TaskStatus.CANCELLED, STOPPED, STOPPED)
                if snap is not None:
                    return snap
            row = self.store.get(task_id)
            if row.status.terminal:
                return row
        return row

    def _settle(self, row: Task) -> None:
        """Give a run that "already finished" its moment: wait until the row leaves
        this attempt (an ending, a retry) or the settle wait passes."""
        if self.c.await_outcome is not None:
            self.c.await_outcome(row)

        def moved() -> bool:
            now = self.store.get(row.id)
            return now.run_id != row.run_id or now.status is not TaskStatus.WORKING

        self.c.clock.wait_for(moved, self.c.stop_settle_wait)

    def stop_tree(self, session_id: str) -> list[Task]:
        """Stop every live task of a session; deletes nothing."""
        return [self.stop(t.id) for t in self.store.list_by_parent(session_id)[::-1]
                if not t.status.terminal]

    # -- retry -------------------------------------------------------------
    def retry(self, task_id: str, via_tool: bool = False) -> Task:
        """failed -> working on the same session with a new run (lifecycle.retry.*)."""
        if not self.recovered:  # lifecycle.restart.before-retry
            raise TaskError("tasks: recovery has not run; retries are not accepted yet")
        row = self.store.get(task_id)
        if row.status is not TaskStatus.FAILED:
            raise TaskError(f"tasks: cannot retry a task that is {row.status.value}; "
                            "only a failed task can be retried")
        cap = self.c.max_attempts_per_task
        if row.attempt >= cap:
            raise TaskError(f"tasks: this task has already used its {cap} attempts; "
                            "start a new task instead")
        self._check_slot(row.parent_session_id)
        new_run = self.c.new_id("r")
        claimed = self.store.retry_claim(task_id, new_run, cap)
        if claimed is None:
            raise TaskError("tasks: another writer claimed this task first; try again")
        prompt = (f"A previous attempt at this task failed: {row.summary or 'unknown reason'}. "
                  "Resume from the progress already made in this session.")
        try:
            self.c.launcher(LaunchRequest(task_id=claimed.id, run_id=new_run,
                                          session_id=claimed.child_session_id, input=prompt,
                                          kind=claimed.kind, state=claimed.state,
                                          inherit=claimed.inherit, retry=True))
        except Exception as exc:  # noqa: BLE001 - lifecycle.retry.launch-failure-reverts
            msg = f"retry could not start: {exc}"
            snap = self.store.release_retry_claim(task_id, new_run, self._sum(msg), msg)
            if snap is None:
                return self.store.get(task_id)
            if via_tool:  # lifecycle.retry.launch-failure-tool
                self.c.on_result_delivered(snap)
            else:  # lifecycle.retry.launch-failure-host-api
                self.c.on_finished(snap)
            return snap
        return self._reconcile(task_id, new_run)

    # -- restart -----------------------------------------------------------
    def recover(self) -> list[Task]:
        """lifecycle.restart.recover-at-startup: fail every working row, report each."""
        failed = self.store.fail_orphans()
        for snap in failed:
            self.c.on_finished(snap)
        self.recovered = True
        return failed
