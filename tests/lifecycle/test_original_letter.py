"""The original manager's letter where the seed is silent: each test names the
section of the notes on the original (``agents-go-tasks-notes``) it follows,
and the clause of spec/lifecycle.toml the behaviour belongs to. Each one
failed on the kit before issue 30.
"""

from __future__ import annotations

import pytest
from lifecycle_host import FakeHost

from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import Continuation, RunOutcome, SpawnRequest, StopOutcome, TaskStatus

W, C, F, X, P = (TaskStatus.WORKING, TaskStatus.COMPLETED, TaskStatus.FAILED,
                 TaskStatus.CANCELLED, TaskStatus.INPUT_REQUIRED)


def _host(**config) -> FakeHost:
    h = FakeHost(**config)
    h.mgr.recover()
    return h


def _spawn(h, text="go", **kw):
    return h.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input=text, **kw))


def _end(h, t, status, **kw):
    return h.mgr.on_run_finished(t.child_session_id, RunOutcome(status=status, run_id=t.run_id,
                                                                **kw))


def test_a_lost_advance_reads_could_not_advance():
    """Notes 3.3 step 7 and 3.4: a lost Advance ends the task failed with
    ``could not advance to the next run: <err>`` (lifecycle.continuation.advance-lost-fails)."""
    holder = {}

    def hook(task, out):
        holder["h"].mgr.on_run_finished(task.child_session_id,
                                        RunOutcome(status=P, run_id=task.run_id))
        return Continuation(input="next")
    h = _host(continue_hook=hook)
    holder["h"] = h
    snap = _end(h, _spawn(h), C)
    assert snap.status is F
    assert snap.result == ("could not advance to the next run: "
                           "the task was moved before the next run could start")


def test_a_failure_without_text_or_error_leaves_no_reason():
    """Notes 3.2 step 4 and 3.3 step 3: a failed outcome with no text and no error
    records nothing, and the retry prompt falls back to ``no reason was recorded``
    (lifecycle.retry.same-session)."""
    h = _host()
    t = _spawn(h)
    snap = _end(h, t, F)
    assert (snap.summary, snap.result) == ("", "")
    h.mgr.retry(t.id)
    assert h.launches[-1].input.startswith(
        "A previous attempt at this task failed: no reason was recorded. ")


def test_a_failure_keeps_its_text_before_its_error():
    """Notes 3.3 step 3: the result is the trimmed text; the error only when the
    text is empty (lifecycle.outcome.entry-point)."""
    h = _host()
    snap = _end(h, _spawn(h), F, text="  partial output \n", err="rate limited")
    assert snap.result == "partial output"


def test_a_spawn_without_label_takes_60_characters_of_its_input():
    """Notes 2.10: the default label is the first 60 runes of the input, not the
    agent's name (lifecycle.spawn.returns-immediately)."""
    h = _host()
    text = "é" * 59 + "xyz and more"
    t = _spawn(h, text=text)
    assert t.label == text[:60] and len(t.label) == 60
    assert h.mgr.sessions.get(t.child_session_id).title == f"task: {text[:60]}"


def test_a_runs_text_is_stored_trimmed():
    """Notes 3.3 step 3: full = trimmed Text, for a completion too
    (lifecycle.outcome.entry-point)."""
    h = _host()
    snap = _end(h, _spawn(h), C, text="\n  the answer  \n")
    assert (snap.summary, snap.result) == ("the answer", "the answer")


def test_a_graceful_stop_without_text_keeps_an_empty_result():
    """Notes 3.3 step 4: completed + GracefulStop is cancelled with the summary
    ``stopped after the current turn`` when empty; the result stays the run's
    own (empty) text (lifecycle.stop.ends-task-over-continue)."""
    h = _host()
    snap = _end(h, _spawn(h), C, graceful_stop=True)
    assert (snap.status, snap.summary, snap.result) == (X, "stopped after the current turn", "")


def test_stopping_a_working_task_asks_the_stopper_twice():
    """Notes 3.5: the Stopper is told first, the claim is made, and a won claim
    tells the Stopper again - whatever it answered the first time - so a run
    that was still launching is reachable (lifecycle.stop.unknown-run)."""
    h = _host()
    t = _spawn(h)
    h.stop_answer = StopOutcome.CANCELLED
    assert h.mgr.stop(t.id).status is X
    assert h.stops == [(t.run_id, False), (t.run_id, False)]


def test_a_working_outcome_is_ignored():
    """Notes 3.3 step 5: any non-terminal status but input_required is ignored,
    not an exception (lifecycle.outcome.entry-point)."""
    h = _host()
    t = _spawn(h)
    assert _end(h, t, W) is None
    assert h.store.get(t.id).status is W


def test_a_cap_of_zero_or_less_means_six():
    """Notes 2.6: MaxConcurrentPerParent of 0 or less (or a function answering
    so) means the default 6 - not "refuse every spawn"; a function is asked at
    every spawn and retry (lifecycle.spawn.concurrency-slot)."""
    for cap in (0, -3, lambda: 0):
        h = _host(max_concurrent_per_parent=cap)
        for _ in range(6):
            _spawn(h)
        with pytest.raises(TaskError, match="^tasks: this conversation already has 6 tasks "
                                            "running; wait for one to finish$"):
            _spawn(h)
    asked = iter([2, 2, 2, 3])
    h = _host(max_concurrent_per_parent=lambda: next(asked))
    _spawn(h), _spawn(h)
    with pytest.raises(TaskError, match="already has 2 tasks running"):
        _spawn(h)
    assert _spawn(h).status is W  # asked again: the cap is 3 now


def test_every_limit_of_zero_or_less_means_its_default():
    """Notes 2.6: each limit's default applies "when <= 0": summary 300,
    status wait 120 s, depth 1, attempts 3, continuations 50."""
    h = _host(summary_limit=0, max_status_wait=-1, max_depth=0, max_attempts_per_task=0,
              max_continuations=0)
    c = h.mgr.c
    assert (c.summary_limit, c.max_status_wait, c.max_depth, c.max_attempts_per_task,
            c.max_continuations) == (300, 120.0, 1, 3, 50)
    snap = _end(h, _spawn(h), C, text="x" * 400)
    assert snap.summary == "x" * 300 + "…"


def _repos():
    """The session repositories a spawn rolls back through: the plain in-memory
    one beside a memory store, and the SQLite store's own (one transaction)."""
    from forge.lifecycle.sessions import MemorySessions
    from forge.lifecycle.sqlite_store import SqliteStore
    yield "memory", FakeHost(sessions=MemorySessions())
    store = SqliteStore()
    yield "sqlite", FakeHost(store=store, sessions=store.sessions())


@pytest.mark.parametrize("which", ["memory", "sqlite"])
def test_a_failed_launch_rolls_back_through_the_session_repository(which):
    """Notes 3.1 step 8 and TestSpawn_RollsBackAGhostSession: a launch failure
    deletes the row and the hidden child session (the repository lists neither,
    hidden included) and answers ``tasks: starting task run: <err>``
    (lifecycle.spawn.rollback-detached)."""
    h = dict(_repos())[which]
    h.mgr.recover()
    h.launch_error = "no worker"
    with pytest.raises(TaskError, match="^tasks: starting task run: no worker$"):
        _spawn(h)
    assert h.store.list_all() == []
    assert h.mgr.sessions.list(include_hidden=True) == []
    assert h.mgr._parents == {}


@pytest.mark.parametrize("which", ["memory", "sqlite"])
def test_a_cancelled_spawn_still_rolls_back_and_stays_a_cancellation(which):
    """TestSpawn_RollbackSurvivesAParentCancellation: the caller cancelled during
    the launch - the rollback still deletes row and session, and the
    cancellation itself goes on unwrapped (lifecycle.race.spawn-rollback-vs-parent-cancel)."""
    class Cancelled(BaseException):
        pass

    def cancel(_req):
        raise Cancelled()
    h = dict(_repos())[which]
    h.mgr.recover()
    h.on_launch = cancel
    with pytest.raises(Cancelled):
        _spawn(h)
    assert h.store.list_all() == [] and h.mgr.sessions.list(include_hidden=True) == []


def test_a_failed_create_deletes_the_session_it_made():
    """Notes 3.1 step 7: Store.Create failing deletes the child session and
    answers ``tasks: creating task: <err>``."""
    from forge.lifecycle.sessions import MemorySessions
    from forge.lifecycle.store import MemoryStore

    class Full(MemoryStore):
        def create(self, task, max_live=0):
            raise RuntimeError("disk full")
    h = FakeHost(store=Full(), sessions=MemorySessions())
    with pytest.raises(TaskError, match="^tasks: creating task: disk full$"):
        _spawn(h)
    assert h.mgr.sessions.list(include_hidden=True) == [] and h.launches == []


def test_a_failing_resolver_or_count_is_one_wrapped_line():
    """Notes 2.9: ``tasks: resolving agent "<name>": <err>`` and
    ``tasks: counting live tasks: <err>``; nothing is created."""
    from forge.lifecycle.store import MemoryStore

    def resolver(parent, name):
        raise LookupError("no such agent")
    h = _host(resolver=resolver)
    with pytest.raises(TaskError, match='^tasks: resolving agent "a": no such agent$'):
        _spawn(h)
    assert h.store.list_all() == [] and h.mgr.sessions.list(include_hidden=True) == []

    class Broken(MemoryStore):
        def list_non_terminal(self, parent):
            raise OSError("disk gone")
    h = FakeHost(store=Broken())
    with pytest.raises(TaskError, match="^tasks: counting live tasks: disk gone$"):
        _spawn(h)
