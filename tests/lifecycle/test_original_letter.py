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
