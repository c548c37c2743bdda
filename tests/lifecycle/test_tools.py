"""The model's four tools, task_status's wait and listing, ModelHasResult,
OnTaskUpdate, approvals, hidden sessions and the delete cascade.

Clause ids from spec/lifecycle.toml name the rule each test pins.
"""

from __future__ import annotations

import attrs
import pytest
from lifecycle_host import FakeHost

from forge.lifecycle.cards import STILL_WORKING, tool_result
from forge.lifecycle.clock import VirtualClock
from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import (
    Info,
    RunOutcome,
    SpawnRequest,
    Spec,
    StopOutcome,
    TaskStatus,
)
from forge.lifecycle.sessions import MemorySessions
from forge.lifecycle.store import MemoryStore, NotFound
from forge.lifecycle.tools import ToolContext

W, C, F, X, P = (TaskStatus.WORKING, TaskStatus.COMPLETED, TaskStatus.FAILED,
                 TaskStatus.CANCELLED, TaskStatus.INPUT_REQUIRED)
CTX = ToolContext(session_id="p", tool_call_id="call-1", parent_run_id="run-42")


def host(**kw):
    h = FakeHost(**kw)
    h.mgr.recover()
    return h


def tool(h, name):
    return {t.name: t for t in h.mgr.tools()}[name]


def spawn(h, parent="p", **kw):
    return h.mgr.spawn(SpawnRequest(parent_session_id=parent, agent_name="a", input="go", **kw))


def end(h, t, status, **kw):
    return h.mgr.on_run_finished(t.child_session_id,
                                 RunOutcome(status=status, run_id=t.run_id, **kw))


# -- names, schemas, descriptions ------------------------------------------------------

def test_four_tools_in_order_with_exact_names_and_summaries():
    # lifecycle.tools.four-verbs / lifecycle.tools.order / lifecycle.tools.attach
    # lifecycle.tools.spawn-task / lifecycle.status.tool / lifecycle.retry.tool / lifecycle.stop.tool
    h = host()
    assert [t.name for t in h.mgr.tools()] == ["spawn_task", "task_status", "task_retry",
                                               "task_stop"]
    assert h.mgr.spawn_tool().name == "spawn_task"
    assert [t.name for t in h.mgr.task_tools()] == ["task_status", "task_retry", "task_stop"]
    summaries = {t.name: t.summary for t in h.mgr.tools()}
    assert summaries == {
        "spawn_task": "Start a task; returns a task_id immediately",
        "task_status": ("Read one, optionally waiting for it to finish; with no id, list the "
                        "conversation’s tasks"),
        "task_retry": "Resume a FAILED one from where it stopped",
        "task_stop": "Cancel one"}


def test_argument_schemas_are_strict():
    # lifecycle.tools.four-verbs / lifecycle.tools.no-fifth-verb
    h = host()
    props = {t.name: (t.parameters["properties"], t.parameters["required"],
                      t.parameters["additionalProperties"]) for t in h.mgr.tools()}
    assert {k: {p: v["type"] for p, v in pr.items()} for k, (pr, _, _) in props.items()} == {
        "spawn_task": {"agent_name": "string", "input": "string", "label": "string"},
        "task_status": {"task_id": "string", "wait_seconds": "integer"},
        "task_retry": {"task_id": "string"},
        "task_stop": {"task_id": "string", "graceful": "boolean"}}
    for pr, req, extra in props.values():
        assert req == list(pr) and extra is False
    assert tool(h, "spawn_task").description.startswith(
        "Start a background task: another agent works on the input while you continue.")
    assert tool(h, "task_stop").description == "Stop a background task started with spawn_task."


@pytest.mark.parametrize("name,args,line", [
    ("task_status", {"wait_seconds": -1}, "task_status: `wait_seconds` is a non-negative integer"),
    ("task_status", {"wait_seconds": True},
     "task_status: `wait_seconds` is a non-negative integer"),
    ("task_stop", {"task_id": "x", "graceful": "yes"}, "task_stop: `graceful` is true or false"),
    ("spawn_task", {"input": 3}, "spawn_task: `input` is a string"),
    ("task_retry", {"id": "x"}, "task_retry: unknown argument `id`; known: task_id"),
    ("task_retry", ["x"], "task_retry: arguments are a JSON object"),
])
def test_bad_arguments_answer_one_line(name, args, line):
    h = host()
    r = tool(h, name).call(CTX, args)
    assert r.is_error and r.text == line


# -- spawn_task ----------------------------------------------------------------------

def test_spawn_task_returns_working_card_and_stamps_the_call():
    # lifecycle.tools.spawn-task / lifecycle.spawn.returns-immediately / lifecycle.spawn.parent-run-id
    h = host(resolver=lambda parent, name: Spec(display_name="Worker"))
    r = tool(h, "spawn_task").call(CTX, {"input": "do it", "label": "job"})
    assert not r.is_error and r.display == "task"
    tid = r.details["task_id"]
    assert r.text == f"task_id: {tid}\nstatus: working\nlabel: job\nagent: Worker"
    row = h.store.get(tid)
    assert (row.tool_call_id, row.parent_run_id, row.parent_session_id) == (
        "call-1", "run-42", "p")
    assert h.delivered == []  # a working card settles nothing


def test_spawn_task_needs_a_session_and_reports_refusals():
    # lifecycle.depth.spawn-max-depth
    h = host()
    assert tool(h, "spawn_task").call(ToolContext(), {}).text == (
        "spawn_task: no session in the run context")
    t = spawn(h)
    r = tool(h, "spawn_task").call(ToolContext(session_id=t.child_session_id), {"input": "x"})
    assert r.is_error and r.text == "tasks: cannot spawn from a task at depth 1"


def test_spawn_task_fast_finish_counts_as_delivered():
    # lifecycle.tools.model-has-result / lifecycle.durable.delivered-drops-debt
    h = host()
    h.on_launch = lambda req: h.mgr.on_run_finished(
        req.session_id, RunOutcome(status=C, run_id=req.run_id, text="quick"))
    r = tool(h, "spawn_task").call(CTX, {"input": "x"})
    assert r.details["task_status"] == "completed" and "result: quick" in r.text
    assert [t.status for t in h.finished] == [C]
    assert [t.status for t in h.delivered] == [C]  # the model holds it: the debt is moot
    assert h.stops == []  # a run that finished in the launch window is never stopped


# -- task_status ----------------------------------------------------------------------

def test_status_returns_the_full_result_and_counts_as_delivered():
    # lifecycle.status.full-result / lifecycle.durable.delivered-drops-debt
    h = host(summary_limit=10)
    t = spawn(h)
    end(h, t, C, text="x" * 400)
    r = tool(h, "task_status").call(CTX, {"task_id": t.id})
    assert r.text.endswith("result: " + "x" * 400)
    assert h.store.get(t.id).summary == "x" * 10 + "…"
    assert [d.id for d in h.delivered] == [t.id]


def test_status_wait_ends_when_the_task_finishes_on_the_virtual_clock():
    # lifecycle.status.wait-bounded / lifecycle.overview.outlives-turn
    clock = VirtualClock()
    h = host(clock=clock)
    t = spawn(h)
    clock.call_later(7.0, lambda: end(h, t, C, text="done"))
    r = tool(h, "task_status").call(CTX, {"task_id": t.id, "wait_seconds": 60})
    assert r.details["task_status"] == "completed" and clock.now() == 7.0


def test_status_wait_is_capped_by_max_status_wait():
    # lifecycle.status.wait-bounded
    clock = VirtualClock()
    h = host(clock=clock)
    assert h.mgr.c.max_status_wait == 120.0
    t = spawn(h)
    r = tool(h, "task_status").call(CTX, {"task_id": t.id, "wait_seconds": 3600})
    assert r.details["task_status"] == "working" and clock.now() == 120.0
    h2 = host(clock=VirtualClock(), max_status_wait=30)
    t2 = spawn(h2)
    assert h2.mgr.status(t2.id, 3600).status is W and h2.mgr.c.clock.now() == 30.0
    assert h.delivered == [] and h2.delivered == []


def test_status_of_another_conversations_task_is_not_found():
    h = host()
    t = spawn(h, parent="other")
    r = tool(h, "task_status").call(CTX, {"task_id": t.id})
    assert r.is_error and r.text == "tasks: not found"
    assert tool(h, "task_status").call(ToolContext(), {"task_id": t.id}).text == (
        "task tools: no session in the run context")


def test_listing_newest_first_flags_live_tasks_and_settles_nothing():
    # lifecycle.status.listing / lifecycle.status.listing-no-debt / lifecycle.race.listing-vs-delivery
    h = host()
    a = spawn(h, label="first")
    b = spawn(h, label="second")
    end(h, a, C, text="all done")
    r = tool(h, "task_status").call(CTX, {})
    lines = r.text.splitlines()
    assert lines[0] == "2 task(s), newest first (task_status with the id fetches a full result):"
    assert lines[1] == f"- {b.id}: working · second {STILL_WORKING}"
    assert lines[2] == f"- {a.id}: completed · first — all done"
    assert "still working — do not redo its work" in lines[1]
    assert h.delivered == []  # the finish seen here is still owed
    assert tool(h, "task_status").call(ToolContext(session_id="q"), {}).text == (
        "no tasks in this conversation")
    assert tool(h, "task_status").call(ToolContext(), {}).text == (
        "task_status: no session in the run context")


def test_progress_from_describe_state_on_card_and_listing():
    # lifecycle.status.progress / lifecycle.status.kind-on-info / lifecycle.continuation.kind-state-opaque
    seen = []

    def describe(kind, state):
        seen.append((kind, state))
        return f"step {state['n']}/3 (verify)"
    h = host(describe_state=describe)
    t = spawn(h, kind="sequence", state={"n": 2})
    plain = spawn(h)
    card = tool(h, "task_status").call(CTX, {"task_id": t.id}).text
    assert "kind: sequence" in card and "progress: step 2/3 (verify)" in card
    listing = tool(h, "task_status").call(CTX, {}).text
    assert f"- {t.id}: working · sequence · " in listing
    assert "· step 2/3 (verify)" in listing
    assert "progress" not in tool(h, "task_status").call(CTX, {"task_id": plain.id}).text
    assert all(kind == "sequence" for kind, _ in seen)  # never asked about a kindless task


# -- task_retry -------------------------------------------------------------------------

def test_retry_tool_reports_the_attempt():
    # lifecycle.retry.tool / lifecycle.retry.same-session
    h = host()
    t = spawn(h)
    first = tool(h, "task_status").call(CTX, {"task_id": t.id})
    assert "attempt:" not in first.text
    end(h, t, F, err="rate limited")
    r = tool(h, "task_retry").call(CTX, {"task_id": t.id})
    assert not r.is_error and r.details["task_attempt"] == 2 and "attempt: 2" in r.text
    assert h.launches[-1].retry and "rate limited" in h.launches[-1].input


def test_retry_tool_refusal_is_a_result_with_the_task():
    # lifecycle.retry.only-failed / lifecycle.retry.tool
    h = host()
    t = spawn(h)
    end(h, t, C, text="ok")
    r = tool(h, "task_retry").call(CTX, {"task_id": t.id})
    assert r.is_error and r.text.startswith(
        "tasks: cannot retry a task that is completed; only a failed task can be retried\n")
    assert "status: completed" in r.text
    assert [d.id for d in h.delivered] == [t.id]  # it was shown the finished state


def test_retry_tool_refuses_a_foreign_task():
    h = host()
    t = spawn(h, parent="other")
    end(h, t, F, err="x")
    r = tool(h, "task_retry").call(CTX, {"task_id": t.id})
    assert r.text == "tasks: not found" and h.store.get(t.id).status is F


def test_retry_tool_launch_failure_is_an_error_result_and_delivered():
    # lifecycle.retry.launch-failure-tool
    h = host()
    t = spawn(h)
    end(h, t, F, err="x")
    h.launch_error = "no capacity"
    r = tool(h, "task_retry").call(CTX, {"task_id": t.id})
    assert r.is_error and r.text.startswith("tasks: restarting task run: no capacity\n")
    assert "result: retry could not start: no capacity" in r.text
    # notes 3.2 step 7 and 4.4: the Manager owes it (OnFinished, with its debt
    # row), the tool hands it to the model and settles it (OnResultDelivered)
    assert [f.result for f in h.finished] == ["x", "retry could not start: no capacity"]
    assert h.delivered == [h.finished[-1]]


# -- task_stop --------------------------------------------------------------------------

def test_stop_tool_cancels_and_a_finished_task_is_news():
    # lifecycle.stop.tool / lifecycle.report.cancel-is-delivered
    h = host()
    t = spawn(h)
    r = tool(h, "task_stop").call(CTX, {"task_id": t.id})
    assert not r.is_error and r.details["task_status"] == "cancelled"
    again = tool(h, "task_stop").call(CTX, {"task_id": t.id})
    assert again.is_error and "status: cancelled" in again.text


def test_stop_tool_graceful_defers_to_the_run():
    # lifecycle.stop.after-turn-finishes-call
    h = host()
    t = spawn(h)
    h.stop_answer = StopOutcome.AFTER_TURN
    r = tool(h, "task_stop").call(CTX, {"task_id": t.id, "graceful": True})
    assert r.details["task_status"] == "working" and h.stops == [(t.run_id, True)]


# -- ModelHasResult ----------------------------------------------------------------------

def test_model_has_result_settles_only_what_the_model_was_handed():
    # lifecycle.tools.model-has-result / lifecycle.tools.own-spawn-tool
    h = host()
    t = spawn(h)
    h.mgr.model_has_result(Info.of(t))  # working: nothing to settle
    assert h.delivered == []
    done = end(h, t, F, err="boom")
    stale = Info.of(done)
    h.mgr.retry(t.id)
    h.mgr.model_has_result(stale)  # the row is working again
    assert h.delivered == []
    second = end(h, h.store.get(t.id), F, err="again")
    h.mgr.model_has_result(stale)  # attempt 1's view never settles attempt 2's debt
    assert h.delivered == []
    h.mgr.model_has_result(Info.of(second))
    assert [d.attempt for d in h.delivered] == [2]
    card = tool_result(Info.of(second), "")  # the public card a host's own spawn tool uses
    assert card.details["task_attempt"] == 2 and card.display == "task"


# -- OnTaskUpdate ------------------------------------------------------------------------

def test_on_task_update_reports_every_change():
    # lifecycle.update.on-task-update / lifecycle.update.entry-shape
    updates = []
    h = host(on_task_update=updates.append)
    t = spawn(h)
    end(h, t, P)
    h.mgr.resume_after_approval(t.id)
    end(h, t, F, err="x")
    h.mgr.retry(t.id)
    h.mgr.stop(t.id)
    assert [(u.id, u.status) for u in updates] == [(t.id, s) for s in (W, P, W, F, W, X)]
    last = updates[-1]
    entry = {"Title": last.label, "Summary": last.summary,
             "Extra": {"task_id": last.id, "task_status": last.status.value}}
    assert entry["Extra"] == {"task_id": t.id, "task_status": "cancelled"}


def test_update_for_a_fast_finish_arrives_before_the_spawn_returns():
    # lifecycle.update.before-target / lifecycle.race.update-before-target
    updates = []
    h = host(on_task_update=updates.append)
    h.on_launch = lambda req: h.mgr.on_run_finished(
        req.session_id, RunOutcome(status=C, run_id=req.run_id, text="quick"))
    t = spawn(h)
    # the completed update was reported while the spawn was still in flight; both
    # name the task by id, which is all a projection needs to associate them
    assert [u.status for u in updates] == [C, C] and {u.id for u in updates} == {t.id}


# -- approvals ---------------------------------------------------------------------------

def test_approval_resumes_the_paused_run():
    # lifecycle.state.input-required-not-terminal / lifecycle.restart.keeps-paused
    h = host()
    t = spawn(h)
    assert end(h, t, P).status is P and h.finished == []
    snap = h.mgr.resume_after_approval(t.id)
    assert snap.status is W and snap.run_id == t.run_id
    assert end(h, t, C, text="ok").status is C


def test_a_stop_claims_before_a_late_approval():
    # lifecycle.race.stop-vs-approval
    h = host()
    t = spawn(h)
    end(h, t, P)
    assert h.mgr.stop(t.id).status is X
    assert h.mgr.resume_after_approval(t.id) is None and h.store.get(t.id).status is X


def test_approval_for_a_stale_run_is_refused():
    h = host()
    t = spawn(h)
    end(h, t, P)
    assert h.mgr.resume_after_approval(t.id, "not-this-run") is None
    with pytest.raises(NotFound):
        h.mgr.resume_after_approval("nope")


# -- sessions and the delete cascade -------------------------------------------------------

def test_child_session_is_hidden_and_titled():
    # lifecycle.overview.child-run-own-session / lifecycle.config.sessions-repo
    sessions = MemorySessions()
    h = host(sessions=sessions)
    t = spawn(h, label="index")
    assert sessions.list() == []
    (s,) = sessions.list(include_hidden=True)
    assert (s.id, s.hidden, s.parent_id, s.title) == (t.child_session_id, True, "p",
                                                      "task: index")
    k = spawn(h, label="loop", kind="sequence")
    assert sessions.get(k.child_session_id).title == "sequence: loop"


def test_half_finished_spawn_rolls_back_even_when_the_caller_is_cancelled():
    # lifecycle.spawn.rollback-detached / lifecycle.race.spawn-rollback-vs-parent-cancel
    class Cancelled(BaseException):
        pass

    sessions = MemorySessions()
    h = host(sessions=sessions)

    def cancel(_req):
        raise Cancelled()
    h.on_launch = cancel
    with pytest.raises(Cancelled):
        spawn(h)
    assert sessions.list(include_hidden=True) == [] and h.store.list_all() == []
    h.launch_error = "boom"
    with pytest.raises(TaskError, match="^tasks: starting task run: boom$"):
        spawn(h)
    assert sessions.list(include_hidden=True) == [] and h.store.list_all() == []
    assert h.mgr._parents == {}  # the per-parent lock table drained


def test_cascading_repo_deletes_the_tree_at_any_depth():
    # lifecycle.delete.tree-must-go / lifecycle.delete.repo-owns-cascade / lifecycle.delete.sql-repo
    store = MemoryStore()
    sessions = MemorySessions(store)
    h = host(store=store, max_depth=3, sessions=sessions)
    from forge.lifecycle.sessions import Session
    sessions.create(Session(id="p"))
    sessions.create(Session(id="q"))
    a = spawn(h)
    b = spawn(h, parent=a.child_session_id)
    c = spawn(h, parent=b.child_session_id)
    other = spawn(h, parent="q")
    h.mgr.stop_tree("p")  # lifecycle.delete.stoptree-before-delete
    removed = sessions.delete("p")
    assert removed == ["p", a.child_session_id, b.child_session_id, c.child_session_id]
    assert [t.id for t in store.list_all()] == [other.id]
    assert [s.id for s in sessions.list(include_hidden=True)] == ["q", other.child_session_id]


def test_plain_repo_removes_only_the_session_and_the_host_does_the_rest():
    # lifecycle.delete.file-repo / lifecycle.delete.memory-repo / lifecycle.delete.manager-deletes-nothing
    sessions = MemorySessions()
    h = host(sessions=sessions)
    from forge.lifecycle.sessions import Session
    sessions.create(Session(id="p"))
    t = spawn(h)
    h.mgr.stop_tree("p")
    assert h.store.get(t.id).status is X  # stop_tree deleted nothing
    assert sessions.delete("p") == ["p"]
    assert h.store.get(t.id)  # the row survives a plain repository's delete
    for row in h.mgr.list("p"):  # the host's own cascade: children, then rows
        sessions.delete(row.child_session_id)
        h.store.delete(row.id)
    assert h.store.list_all() == [] and sessions.list(include_hidden=True) == []
    h.store.delete("never-there")  # deleting an unknown row is not an error


def test_stop_tree_stops_every_live_task():
    h = host()
    a, b = spawn(h), spawn(h)
    end(h, a, C, text="ok")
    stopped = h.mgr.stop_tree("p")
    assert [t.id for t in stopped] == [b.id] and h.store.get(a.id).status is C


def test_retry_refusals_carry_the_row():
    h = host(max_attempts_per_task=2)
    t = spawn(h)
    with pytest.raises(TaskError) as e:
        h.mgr.retry(t.id)
    assert e.value.task.status is W
    end(h, t, F, err="x")
    h.mgr.retry(t.id)
    end(h, h.store.get(t.id), F, err="y")
    with pytest.raises(TaskError) as e:
        h.mgr.retry(t.id)
    assert str(e.value) == ("tasks: this task has already used its 2 attempts; "
                            "start a new task instead") and e.value.task.attempt == 2


def test_retry_prompt_names_the_failure_or_says_none_was_recorded():
    # lifecycle.retry.parent-decides / lifecycle.retry.relaunch-state / lifecycle.retry.stage-instruction
    h = host()
    t = spawn(h, kind="sequence", state={"stage": "verify"})
    end(h, t, F, err="rate limited")
    h.mgr.retry(t.id)
    req = h.launches[-1]
    assert req.input.startswith("A previous attempt at this task failed: rate limited. ")
    assert (req.retry, req.kind, req.state, req.session_id) == (
        True, "sequence", {"stage": "verify"}, t.child_session_id)
    row = h.store.get(t.id)
    blank = attrs.evolve(row, summary="", result="")
    assert h.mgr.retry_prompt(blank).startswith(
        "A previous attempt at this task failed: no reason was recorded.")
