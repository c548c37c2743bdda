"""Unit tests, one or more per seed rule; clause ids from spec/lifecycle.toml."""

from __future__ import annotations

import pytest
from lifecycle_host import FakeHost

from forge.lifecycle.manager import LookupFailed, TaskError
from forge.lifecycle.notices import format_notification
from forge.lifecycle.records import (
    Continuation,
    RunOutcome,
    SpawnRequest,
    Spec,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.store import ORPHAN_SUMMARY, MemoryStore, NotFound
from forge.lifecycle.tools import retry_in_hand

W, C, F, X, P = (TaskStatus.WORKING, TaskStatus.COMPLETED, TaskStatus.FAILED,
                 TaskStatus.CANCELLED, TaskStatus.INPUT_REQUIRED)


def spawn(h, parent="p", **kw):
    return h.mgr.spawn(SpawnRequest(parent_session_id=parent, agent_name="a", input="go", **kw))


def end(h, t, status, run_id=None, **kw):
    rid = t.run_id if run_id is None else run_id
    return h.mgr.on_run_finished(t.child_session_id, RunOutcome(status=status, run_id=rid, **kw))


@pytest.fixture
def h():
    host = FakeHost()
    host.mgr.recover()
    return host


def test_statuses_exact():
    # lifecycle.state.statuses / lifecycle.state.input-required-not-terminal
    assert [s.value for s in TaskStatus] == [
        "working", "input_required", "completed", "failed", "cancelled"]
    assert {s for s in TaskStatus if s.terminal} == {C, F, X}


def test_spawn_returns_working_row_with_distinct_ids(h):
    # lifecycle.spawn.returns-immediately / lifecycle.identity.task-vs-run
    # lifecycle.spawn.kind-state / lifecycle.spawn.parent-run-id
    t = spawn(h, label="index", kind="seq", state={"i": 0}, parent_run_id="pr1")
    assert t.status is W and t.attempt == 1 and t.id != t.run_id
    assert (t.label, t.kind, t.state, t.parent_run_id) == ("index", "seq", {"i": 0}, "pr1")
    req = h.launches[0]
    assert (req.task_id, req.run_id, req.session_id, req.kind, req.state, req.retry) == (
        t.id, t.run_id, t.child_session_id, "seq", {"i": 0}, False)
    assert t.child_session_id != "p"  # lifecycle.overview.child-run-own-session


def test_spawn_inherit_snapshot():
    # lifecycle.spawn.inherit-snapshot
    h = FakeHost(resolver=lambda parent, name: Spec(display_name="Agent " + name,
                                                    inherit={"model": "m"}))
    t = spawn(h)
    assert t.label == "go" and t.inherit == {"model": "m"}  # the input's, not the agent's
    assert h.launches[0].inherit == {"model": "m"}


def test_spawn_launch_failure_rolls_back(h):
    # lifecycle.spawn.rollback-detached
    h.launch_error = "boom"
    with pytest.raises(TaskError, match="^tasks: starting task run: boom$"):
        spawn(h)
    assert h.store.list_all() == []


def test_spawn_depth_and_cap(h):
    # lifecycle.depth.spawn-max-depth / lifecycle.spawn.concurrency-slot
    t = spawn(h)
    with pytest.raises(TaskError, match="^tasks: cannot spawn from a task at depth 1$"):
        spawn(h, parent=t.child_session_id)
    h2 = FakeHost(max_concurrent_per_parent=2)
    spawn(h2), spawn(h2)
    with pytest.raises(TaskError) as e:
        spawn(h2)
    assert str(e.value) == ("tasks: this conversation already has 2 tasks running; "
                            "wait for one to finish")


def test_meta_for_lookup_error_propagates():
    # lifecycle.depth.lookup-error-refuses / lifecycle.depth.spawn-lookup-error
    h = FakeHost()

    def broken(_sid):
        raise OSError("db down")
    h.store.by_child_session = broken
    # an error, never "not a task", and one that names the session and the cause
    with pytest.raises(LookupFailed, match='^tasks: looking up session "x": db down$'):
        h.mgr.meta_for("x")
    with pytest.raises(LookupFailed):
        spawn(h)
    assert h.launches == []


def test_completion_reports_claimed_snapshot_once(h):
    # lifecycle.hooks.on-finished / lifecycle.report.claimed-snapshot / lifecycle.finalize.cas
    t = spawn(h)
    snap = end(h, t, C, text="done")
    assert snap.status is C and snap.result == "done" and snap.summary == "done"
    assert h.finished == [snap] and h.delivered == []
    assert end(h, t, F, err="late") is None  # lifecycle.finalize.single-winner
    assert h.store.get(t.id) == snap and h.finished == [snap]


def test_store_finalize_single_winner_and_run_bound():
    # lifecycle.finalize.single-winner / lifecycle.finalize.run-bound
    s = MemoryStore()
    s.create(Task(id="t", run_id="r1", parent_session_id="p", child_session_id="s", label="l"))
    assert s.finalize("t", "r0", C, "x", "x") is None
    won = [s.finalize("t", "r1", st, st.value, st.value) for st in (C, X, F)]
    assert [w is not None for w in won] == [True, False, False]
    assert s.get("t").status is C and s.get("t").result == "completed"
    with pytest.raises(NotFound) as e:
        s.finalize("nope", "r1", C, "", "")
    assert str(e.value) == "tasks: not found"


def test_cancelled_outcome_is_delivered_not_finished(h):
    # lifecycle.report.cancel-is-delivered / lifecycle.hooks.on-result-delivered
    t = spawn(h)
    snap = end(h, t, X)
    assert snap.status is X and h.delivered == [snap] and h.finished == []


def test_graceful_stop_after_turn_then_run_ends(h):
    # lifecycle.stop.after-turn-graceful-only / .after-turn-finishes-call
    # lifecycle.race.graceful-stop-vs-run-ending
    asked = []
    h2 = FakeHost(continue_hook=lambda t, o: asked.append(o))
    h2.mgr.recover()
    t = spawn(h2)
    h2.stop_answer = StopOutcome.AFTER_TURN
    assert h2.mgr.stop(t.id, graceful=True).status is W
    snap = end(h2, t, C, text="partial", graceful_stop=True)
    assert snap.status is X and h2.delivered == [snap] and asked == []


def test_non_graceful_after_turn_still_claims(h):
    # lifecycle.stop.after-turn-graceful-only
    t = spawn(h)
    h.stop_answer = StopOutcome.AFTER_TURN
    snap = h.mgr.stop(t.id)
    assert snap.status is X and snap.summary == "stopped"


def test_stop_unknown_run_claims(h):
    # lifecycle.stop.unknown-run
    t = spawn(h)
    h.stop_answer = StopOutcome.UNKNOWN_RUN
    snap = h.mgr.stop(t.id)
    assert snap.status is X and h.delivered == [snap]
    # asked, claimed, asked again: a run still being launched is reachable now
    assert h.stops == [(t.run_id, False), (t.run_id, False)]


def test_stop_that_was_told_cancelled_asks_again_after_its_claim(h):
    # lifecycle.stop.reports-what-it-did (notes 3.5: the Stopper is called twice)
    t = spawn(h)
    assert h.mgr.stop(t.id).status is X
    assert h.stops == [(t.run_id, False), (t.run_id, False)]


def test_stop_already_finished_late_outcome_kept(h):
    # lifecycle.stop.already-finished-waits / lifecycle.race.stop-already-finished-outcome-late-or-lost
    t = spawn(h)
    h.stop_answer = StopOutcome.ALREADY_FINISHED
    h.on_await = lambda row: end(h, t, F, err="crashed")
    snap = h.mgr.stop(t.id)
    assert snap.status is F and snap.result == "crashed"
    assert h.finished == [snap] and h.delivered == []


def test_stop_already_finished_lost_outcome_recorded(h):
    # lifecycle.stop.lost-outcome-recorded
    t = spawn(h)
    h.stop_answer = StopOutcome.ALREADY_FINISHED
    snap = h.mgr.stop(t.id)
    assert snap.status is X and h.delivered == [snap]


def test_stop_already_terminal_refused(h):
    t = spawn(h)
    end(h, t, C, text="ok")
    with pytest.raises(TaskError, match="^tasks: task already completed$"):
        h.mgr.stop(t.id)


def test_stop_vs_completion_one_winner(h):
    # lifecycle.race.stop-vs-completion
    t = spawn(h)
    h.stop_answer = StopOutcome.UNKNOWN_RUN
    h.on_stop = lambda run_id: end(h, t, C, text="made it")
    snap = h.mgr.stop(t.id)
    assert snap.status is C and h.finished == [snap] and h.delivered == []


def test_stop_vs_retry_chases_new_attempt(h):
    # lifecycle.race.stop-vs-retry / lifecycle.stop.chases-current-run / lifecycle.finalize.run-bound
    t = spawn(h)
    end(h, t, F, err="e1")
    t2 = h.mgr.retry(t.id)
    h.stop_answer = StopOutcome.ALREADY_FINISHED
    # while the stop waits, nothing arrives; the row names the new attempt -> recorded
    snap = h.mgr.stop(t.id)
    assert snap.status is X and snap.run_id == t2.run_id and snap.attempt == 2


def test_stop_lost_claim_gets_one_more_pass(h):
    # lifecycle.race.stop-vs-retry: the claim on the old run loses, the next pass wins
    t = spawn(h)

    def retry_now(run_id):
        end(h, t, F, err="e")
        h.mgr.retry(t.id)
    h.stop_answer = StopOutcome.UNKNOWN_RUN
    h.on_stop = retry_now
    snap = h.mgr.stop(t.id)
    cur = h.store.get(t.id)
    assert snap == cur and cur.status is X and cur.attempt == 2
    assert [r for r, _ in h.stops] == [t.run_id, cur.run_id, cur.run_id]


def test_stop_paused_claims_first(h):
    # lifecycle.race.stop-vs-approval / lifecycle.state.input-required-not-terminal
    t = spawn(h)
    assert end(h, t, P).status is P and h.finished == []
    seen = []
    h.on_stop = lambda run_id: seen.append(h.store.get(t.id).status)
    snap = h.mgr.stop(t.id)
    assert snap.status is X and snap.summary == "stopped while awaiting approval"
    assert seen == [X] and h.delivered == [snap]


def test_stop_in_launch_window_stops_started_run(h):
    # lifecycle.race.stop-in-launch-window
    h.stop_answer = StopOutcome.UNKNOWN_RUN
    h.on_launch = lambda req: h.mgr.stop(req.task_id)
    t = spawn(h)
    assert t.status is X and len(h.delivered) == 1
    # the stop asks, claims and asks again; the spawn stops the run it started
    assert h.stops == [(t.run_id, False)] * 3


def test_fast_finish_in_launch_window_not_cancelled(h):
    # lifecycle.race.fast-finish-in-launch-window
    h.on_launch = lambda req: h.mgr.on_run_finished(
        req.session_id, RunOutcome(status=C, run_id=req.run_id, text="quick"))
    t = spawn(h)
    assert t.status is C and h.stops == []


def test_stop_tree_stops_live_and_deletes_nothing(h):
    # lifecycle.delete.manager-deletes-nothing / lifecycle.delete.stoptree-before-delete
    a, b = spawn(h), spawn(h)
    end(h, a, C, text="ok")
    stopped = h.mgr.stop_tree("p")
    assert [s.id for s in stopped] == [b.id] and len(h.store.list_all()) == 2


def test_delete_cascade_removes_tree():
    # lifecycle.delete.tree-must-go / lifecycle.delete.repo-owns-cascade
    h = FakeHost(max_depth=3)
    a = spawn(h)
    b = spawn(h, parent=a.child_session_id)
    c = spawn(h, parent=b.child_session_id)
    other = spawn(h, parent="q")
    assert h.store.delete_session_tree("p") == [a.id, b.id, c.id]
    assert h.store.list_all() == [other]


def test_retry_only_failed_same_session_new_run(h):
    # lifecycle.retry.only-failed / .same-session / .cas / .relaunch-state
    t = spawn(h, kind="seq", state=7)
    end(h, t, C, text="ok")
    with pytest.raises(TaskError) as e:
        h.mgr.retry(t.id)
    assert str(e.value) == ("tasks: cannot retry a task that is completed; "
                            "only a failed task can be retried")
    u = spawn(h, kind="seq", state=7)
    end(h, u, F, err="timeout")
    r = h.mgr.retry(u.id)
    assert (r.status, r.attempt, r.summary, r.result) == (W, 2, "", "")
    assert r.run_id != u.run_id and r.child_session_id == u.child_session_id
    req = h.launches[-1]
    assert req.retry and req.state == 7 and req.session_id == u.child_session_id
    assert req.input.startswith("A previous attempt at this task failed: timeout.")


def test_retry_attempt_limit(h):
    # lifecycle.retry.attempt-limit / lifecycle.state.retry-leaves-terminal
    t = spawn(h)
    for _ in range(2):
        end(h, h.store.get(t.id), F, err="x")
        h.mgr.retry(t.id)
    end(h, h.store.get(t.id), F, err="x")
    with pytest.raises(TaskError) as e:
        h.mgr.retry(t.id)
    assert str(e.value) == ("tasks: this task has already used its 3 attempts; "
                            "start a new task instead")


def test_retry_ceiling_in_store_one_claim_wins():
    # lifecycle.retry.ceiling-in-store / lifecycle.race.concurrent-retries
    s = MemoryStore()
    s.create(Task(id="t", run_id="r1", parent_session_id="p", child_session_id="s", label="l",
                  status=F, attempt=2))
    assert s.retry_claim("t", "r2", 3).attempt == 3
    assert s.retry_claim("t", "r3", 3) is None
    s.finalize("t", "r2", F, "x", "x")
    assert s.retry_claim("t", "r4", 3) is None


def test_retry_launch_failure_tool_and_host_paths(h):
    # lifecycle.retry.launch-failure-reverts / -tool / -host-api
    t = spawn(h)
    end(h, t, F, err="e")
    h.finished.clear()
    h.launch_error = "no capacity"
    with pytest.raises(TaskError, match="^tasks: restarting task run: no capacity$") as e:
        retry_in_hand(h.mgr, t.id)  # the model's path (task_retry)
    snap = e.value.task
    assert (snap.status, snap.attempt) == (F, 1)
    assert snap.result == "retry could not start: no capacity"
    # owed with its debt, then settled: the model reads it in the tool's result
    assert h.finished == [snap] and h.delivered == [snap]
    h.launch_error = "again"
    with pytest.raises(TaskError, match="^tasks: restarting task run: again$") as e:
        h.mgr.retry(t.id)  # a host API: only a person heard
    snap2 = e.value.task
    assert h.finished == [snap, snap2] and h.delivered == [snap] and snap2.attempt == 1


def test_retry_takes_a_slot():
    # lifecycle.retry.concurrency-slot
    h = FakeHost(max_concurrent_per_parent=1)
    h.mgr.recover()
    t = spawn(h)
    end(h, t, F, err="e")
    spawn(h)
    with pytest.raises(TaskError, match="already has 1 tasks running"):
        h.mgr.retry(t.id)


def test_retry_refused_before_recover():
    # lifecycle.restart.before-retry / lifecycle.race.retry-before-recover
    h = FakeHost()
    t = spawn(h)
    end(h, t, F, err="e")
    with pytest.raises(TaskError):
        h.mgr.retry(t.id)


def test_stale_outcome_after_retry_loses(h):
    # lifecycle.race.stale-outcome-after-retry / lifecycle.outcome.run-id
    t = spawn(h)
    end(h, t, F, err="e")
    r = h.mgr.retry(t.id)
    assert end(h, t, C, run_id=t.run_id, text="old") is None
    assert h.store.get(t.id) == r
    snap = end(h, t, C, run_id="", text="new")  # no run id: the row's attempt
    assert snap.status is C and snap.run_id == r.run_id


def test_recover_fails_working_keeps_paused_and_terminal():
    # lifecycle.restart.fails-working / .keeps-paused / .fails-at-step / .recover-at-startup
    h = FakeHost()
    a, b, c = spawn(h, state="step2"), spawn(h), spawn(h)
    end(h, b, P)
    end(h, c, C, text="ok")
    h.finished.clear()
    out = h.mgr.recover()
    assert [t.id for t in out] == [a.id] and h.finished == out
    assert (out[0].status, out[0].summary, out[0].state) == (F, ORPHAN_SUMMARY, "step2")
    assert h.store.get(b.id).status is P and h.store.get(c.id).status is C


def seq_host(limit=3, **kw):
    """A "sequence" job: each run moves the State counter on until ``limit``."""
    def hook(task, out):
        if task.kind != "sequence":
            return None
        if task.state >= limit:
            return Continuation(state=task.state)  # ending, State written
        return Continuation(input=f"step {task.state + 1}", state=task.state + 1)
    h = FakeHost(continue_hook=hook, **kw)
    h.mgr.recover()
    return h


def test_continuation_chains_runs_then_ends():
    # lifecycle.continuation.advance-cas / .attempt-untouched / .no-input-ends / lifecycle.overview.one-shape
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    for i in range(3):
        cur = h.store.get(t.id)
        nxt = end(h, cur, C, text=f"r{i}")
        assert nxt.status is W and nxt.state == i + 1 and nxt.attempt == 1
        assert h.launches[-1].input == f"step {i + 1}" and h.launches[-1].run_id == nxt.run_id
    final = end(h, h.store.get(t.id), C, text="done")
    assert final.status is C and final.state == 3 and h.finished == [final]


def test_continuation_not_asked_for_ordinary_or_without_run_id():
    # lifecycle.continuation.nil-ends / .needs-run-id
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    snap = end(h, t, C, run_id="", text="x")
    assert snap.status is C and snap.state == 0
    u = spawn(h)
    assert end(h, u, F, err="e").status is F


def test_continuation_error_and_err_end_failed():
    # lifecycle.continuation.error-fails / .no-input-ends
    def hook(task, out):
        if task.kind == "boom":
            raise RuntimeError("looping")
        return Continuation(state="final", err="check failed")
    h = FakeHost(continue_hook=hook)
    a = spawn(h, kind="boom")
    assert (s := end(h, a, C, text="x")).status is F and s.result == "looping"
    b = spawn(h, kind="x", state="s0")
    s = end(h, b, C, text="x")
    assert (s.status, s.result, s.state) == (F, "check failed", "final")


def test_continuation_ceiling_keeps_old_state():
    # lifecycle.continuation.ceiling / .ceiling-keeps-state
    h = seq_host(limit=100, max_continuations=2)
    t = spawn(h, kind="sequence", state=0)
    end(h, h.store.get(t.id), C)
    end(h, h.store.get(t.id), C)
    snap = end(h, h.store.get(t.id), C)
    assert snap.status is F and snap.state == 2
    assert snap.result == ("stopped after 3 runs: the task's continuation ceiling (2) "
                           "was reached")


def test_retry_resets_continuations():
    # lifecycle.retry.resets-continuations
    h = seq_host(limit=100, max_continuations=1)
    t = spawn(h, kind="sequence", state=0)
    end(h, h.store.get(t.id), C)
    assert end(h, h.store.get(t.id), C).status is F
    r = h.mgr.retry(t.id)
    assert r.continuations == 0 and end(h, r, C).status is W


def test_continuation_never_on_cancel():
    # lifecycle.continuation.only-completed-failed / lifecycle.stop.ends-task-over-continue
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    assert end(h, t, X).status is X and len(h.launches) == 1


def test_paused_row_finalized_not_advanced():
    # lifecycle.continuation.paused-finalized
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    end(h, t, P)
    snap = end(h, t, C, text="x")
    assert snap.status is C and len(h.launches) == 1


def test_pause_during_continue_advance_lost():
    # lifecycle.race.pause-during-continue / lifecycle.continuation.advance-lost-fails
    holder = {}

    def hook(task, out):
        holder["h"].mgr.on_run_finished(task.child_session_id, RunOutcome(status=P,
                                                                          run_id=task.run_id))
        return Continuation(input="next", state=1)
    h = FakeHost(continue_hook=hook)
    holder["h"] = h
    t = spawn(h, state=0)
    snap = end(h, t, C)
    assert snap.status is F and snap.result == (
        "could not advance to the next run: the task was moved before the next run could start")
    assert snap.state == 0 and len(h.launches) == 1


def test_stop_during_continue_wins():
    # lifecycle.race.advance-vs-stop-sweep-retry
    holder = {}

    def hook(task, out):
        holder["h"].mgr.stop(task.id)
        return Continuation(input="next")
    h = FakeHost(continue_hook=hook)
    holder["h"] = h
    t = spawn(h)
    assert end(h, t, C) is None
    assert h.store.get(t.id).status is X and len(h.delivered) == 1 and h.finished == []


def test_continuation_launch_failure_fails():
    # lifecycle.continuation.launch-failure-fails
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    h.launch_error = "no worker"
    snap = end(h, t, C)
    assert snap.status is F and snap.result == "could not start the next run: no worker"
    assert snap.state == 1 and h.finished == [snap]


def test_continuation_launch_window_stop():
    # lifecycle.continuation.launch-then-reconcile
    h = seq_host()
    t = spawn(h, kind="sequence", state=0)
    h.stop_answer = StopOutcome.UNKNOWN_RUN
    h.on_launch = lambda req: h.mgr.stop(req.task_id)
    snap = end(h, t, C)
    assert snap.status is X and h.stops[-1] == (snap.run_id, False)


def test_advance_same_run_rewrites_state():
    # lifecycle.continuation.same-run-rewrites-state / .run-bound-cas
    s = MemoryStore()
    s.create(Task(id="t", run_id="r1", parent_session_id="p", child_session_id="s", label="l"))
    snap = s.advance("t", "r1", "r1", {"launched": "r1"})
    assert (snap.run_id, snap.state, snap.continuations) == ("r1", {"launched": "r1"}, 0)
    assert s.advance("t", "r0", "r2") is None
    assert s.advance("t", "r1", "r2").state == {"launched": "r1"}  # KEEP by default


SEED_NOTICE = (
    '[task-notification] Task "index the docs" (a1b2) completed. Result: indexed 412 files… '
    "[truncated — call task_status(a1b2) for the full result]\n"
    'Task "check links" (c3d4) failed. Result: 3 dead links\n'
    "(task_retry can resume a failed task from where it stopped)\n"
    "(Tell the person what happened. The work above is done — do not repeat or re-check it "
    "unless they ask.)")


def _t(tid, label, status, summary, result):
    return Task(id=tid, run_id="r", parent_session_id="p", child_session_id="s", label=label,
                status=status, summary=summary, result=result)


def test_notification_matches_seed_exactly():
    # lifecycle.notices.prefix / .task-line / .truncated-marker / .retry-hint / .guidance / .own-lines
    text = format_notification([
        _t("a1b2", "index the docs", C, "indexed 412 files…", "indexed 412 files and more"),
        _t("c3d4", "check links", F, "3 dead links", "3 dead links")])
    assert text == SEED_NOTICE


def test_notification_without_failure_has_no_hint():
    # lifecycle.notices.retry-hint / .guidance
    text = format_notification([_t("x", "l", C, "", "")])
    assert text.splitlines() == [
        '[task-notification] Task "l" (x) completed.',
        ("(Tell the person what happened. The work above is done — do not repeat or re-check "
         "it unless they ask.)")]
