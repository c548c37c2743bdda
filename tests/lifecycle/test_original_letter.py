"""The original manager's letter where the seed is silent: each test names the
section of the notes on the original (``agents-go-tasks-notes``) it follows,
and the clause of spec/lifecycle.toml the behaviour belongs to. A test that
pins a difference the kit had failed on the kit before the change; the rest
pin texts the kit already kept. docs/lifecycle.md walks the notes section by
section and names the test for each recorded text and behaviour.
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


def _two_connections(tmp_path):
    """A Manager over one connection to a SQLite file, and a second store over
    the same file: another process's (or connection's) writes."""
    from forge.lifecycle.clock import VirtualClock
    from forge.lifecycle.sqlite_store import SqliteStore
    path = str(tmp_path / "tasks.db")
    mine, other = SqliteStore(path), SqliteStore(path)
    h = FakeHost(store=mine, sessions=mine.sessions(), clock=VirtualClock())
    h.mgr.recover()
    return h, other


def test_a_status_wait_polls_and_notices_another_connections_finalize(tmp_path):
    """Notes 3.6 and 2.10, TestStatus_WaitNoticesAFinalizeItDidNotMake: the wait
    re-reads the store every 250 ms, so a finalize another connection writes at
    5.1 s is noticed at the next poll (5.25 s) and delivered; the Manager never
    heard of it (lifecycle.status.wait-bounded)."""
    h, other = _two_connections(tmp_path)
    t = _spawn(h)
    clock = h.mgr.c.clock
    clock.call_at(5.1, lambda: other.finalize(t.id, t.run_id, C, "done elsewhere",
                                              "done elsewhere"))
    row = h.mgr.status(t.id, wait=30)
    assert (row.status, row.result, clock.now()) == (C, "done elsewhere", 5.25)
    assert [d.status for d in h.delivered] == [C] and h.finished == []


def test_a_status_wait_wakes_at_once_for_an_ending_its_manager_claims(tmp_path):
    """Notes 3.6, TestStatus_WaitsForCompletion: this Manager's own finalize
    signals the waiter at once (no poll to wait for)."""
    h, _other = _two_connections(tmp_path)
    t = _spawn(h)
    clock = h.mgr.c.clock
    clock.call_at(0.02, lambda: _end(h, t, C, text="quick"))
    assert h.mgr.status(t.id, wait=10).status is C and clock.now() == 0.02


def test_a_status_wait_polls_until_the_deadline(tmp_path):
    """Notes 3.6, TestStatus_WaitIsBounded: nothing ends the task - the wait
    reads the store every poll until the deadline, then answers working and
    delivers nothing."""
    h, _other = _two_connections(tmp_path)
    t = _spawn(h)
    reads = []
    real = h.store.get
    h.store.get = lambda tid: reads.append(h.mgr.c.clock.now()) or real(tid)
    assert h.mgr.status(t.id, wait=1).status is W
    assert reads == [0.0, 0.25, 0.5, 0.75, 1.0] and h.delivered == []


def test_a_retry_launch_failure_wakes_a_status_waiter():
    """TestRetry_LaunchFailureWakesWaiters: a waiter on a task whose retry is
    launching returns as soon as the launch fails and the claim is released
    (an ending this Manager wrote wakes it; the 5 s poll never comes)."""
    import threading
    import time

    from forge.lifecycle.clock import ThreadClock
    h = _host(clock=ThreadClock(poll=5.0), status_poll=5.0)
    t = _spawn(h)
    _end(h, t, F, err="x")
    waiting, answer = threading.Event(), {}

    def launch_fails(_req):
        def wait():
            waiting.set()
            answer["row"] = h.mgr.status(t.id, wait=10)
        answer["thread"] = threading.Thread(target=wait)
        answer["thread"].start()
        waiting.wait(5)
        time.sleep(0.2)  # the waiter is inside its wait
        raise RuntimeError("no capacity")
    h.on_launch = launch_fails
    start = time.monotonic()
    with pytest.raises(TaskError):
        h.mgr.retry(t.id)
    answer["thread"].join(10)
    assert answer["row"].status is F and time.monotonic() - start < 3


class _DebtLedger:
    """A durable host's view of its debt rows (notes 6): each OnFinished must
    find the row its transition wrote - same task, run, status and summary -
    already in the store, and each row the store holds must be one an
    OnFinished announced; OnResultDelivered drops it."""

    def __init__(self, h):
        self.h, self.announced = h, set()
        h.mgr.c.on_finished = self.finished
        h.mgr.c.on_result_delivered = self.delivered

    def finished(self, snap):
        from forge.lifecycle.records import Debt
        debt = Debt(snap.id, snap.run_id, snap.status, snap.summary)
        assert debt in self.h.store.owed(), f"OnFinished with no debt row: {debt}"
        self.announced.add(debt)
        self.h.finished.append(snap)

    def delivered(self, snap):
        self.h.store.settle(snap.id, snap.run_id)
        self.h.delivered.append(snap)

    def check(self):
        rows = set(self.h.store.owed())
        assert rows <= self.announced, f"debt rows nobody was told of: {rows - self.announced}"


@pytest.mark.parametrize("which", ["memory", "sqlite"])
def test_every_on_finished_matches_a_debt_row_and_back(which):
    """Notes 6 and TestRetry_LaunchFailureDebtFollowsTheCaller: every OnFinished
    matches the debt row written in its own transition, and every debt row was
    announced by an OnFinished - a retry whose launch fails included, on the
    tool path too, where the tool then settles it (lifecycle.durable.debt-atomic,
    lifecycle.retry.launch-failure-tool)."""
    from forge.lifecycle.tools import ToolContext, retry_in_hand, tools
    h = dict(_repos())[which]
    ledger = _DebtLedger(h)
    h.mgr.recover()
    a, b, c, d = (_spawn(h) for _ in range(4))
    _end(h, a, C, text="done")
    h.mgr.stop(b.id)
    _end(h, c, F, err="boom")
    ledger.check()
    assert {x.task_id for x in h.store.owed()} == {a.id, c.id}
    h.launch_error = "no capacity"  # host API: owed, nothing settles it
    with pytest.raises(TaskError, match="^tasks: restarting task run: no capacity$"):
        h.mgr.retry(c.id)
    ledger.check()
    [owed_c] = [x for x in h.store.owed() if x.task_id == c.id]
    assert owed_c.summary == "retry could not start: no capacity"
    h.launch_error = "still no capacity"  # the model's path: owed, then settled in hand
    with pytest.raises(TaskError):
        retry_in_hand(h.mgr, c.id)
    ledger.check()
    assert c.id not in {x.task_id for x in h.store.owed()}
    assert h.finished[-1].result == h.delivered[-1].result == (
        "retry could not start: still no capacity")
    h.mgr.recover()  # d is orphaned: owed through the sweep
    ledger.check()
    assert {x.task_id for x in h.store.owed()} == {a.id, d.id}
    r = tools(h.mgr)[1].call(ToolContext(session_id="p"), {"task_id": a.id})
    assert not r.is_error and {x.task_id for x in h.store.owed()} == {d.id}


@pytest.mark.parametrize("which", ["memory", "sqlite"])
def test_only_a_won_retry_claim_drops_the_debt(which):
    """Notes 6 rule 2: the debt is dropped inside RetryClaim's transition - only
    a claim that wins; a claim refused (the ceiling, the cap, not failed) or
    lost leaves the undelivered debt where it was
    (lifecycle.durable.drop-in-retry-claim)."""
    h = dict(_repos())[which]
    h.mgr.recover()
    t = _spawn(h)
    _end(h, t, F, err="boom")
    owed = h.store.owed()
    assert h.store.retry_claim(t.id, "x1", 1) is None  # at the ceiling
    other = _spawn(h)
    assert h.store.retry_claim(t.id, "x2", 3, max_live=1) is None  # the parent is full
    assert h.store.owed() == owed
    h.mgr.stop(other.id)
    assert h.store.retry_claim(t.id, "x3", 3) is not None  # won: the task is live again
    assert h.store.owed() == []
    assert h.store.retry_claim(t.id, "x4", 3) is None  # lost: nothing to drop anyway


def test_a_lost_outcome_is_asked_about_again_on_the_second_pass():
    """Notes 3.5, Stop's two passes: "already finished" on pass 1 writes nothing
    and waits; pass 2 reads the row again and asks the Stopper again; hearing
    the same, it claims (the outcome was lost) and tells the Stopper once more
    (lifecycle.stop.lost-outcome-recorded, lifecycle.stop.already-finished-waits)."""
    h = _host()
    t = _spawn(h)
    h.stop_answer = StopOutcome.ALREADY_FINISHED
    snap = h.mgr.stop(t.id)
    assert snap.status is X and h.mgr.c.clock.now() == 2.0
    assert h.stops == [(t.run_id, False)] * 3


def test_a_paused_stop_tells_the_stopper_even_when_its_claim_is_lost():
    """Notes 3.5: a paused row is claimed first and the Stopper told "regardless
    of win"; a claim lost to the run's own ending (approved, then finished just
    before the claim) still tells the host, and the second pass finds the
    ending, which stands. A won claim tells the Stopper before the delivery
    report (lifecycle.race.stop-vs-approval)."""
    from forge.lifecycle.store import MemoryStore

    class ApprovedAndDone(MemoryStore):
        """The approval and the run's completion land just before the claim."""
        race = False

        def finalize(self, task_id, run_id, *args, **kw):
            if self.race:
                self.race = False
                self.reclaim_working(task_id, run_id)
                super().finalize(task_id, run_id, C, "done", "done")
            return super().finalize(task_id, run_id, *args, **kw)
    store = ApprovedAndDone()
    h = FakeHost(store=store)
    h.mgr.recover()
    t = _spawn(h)
    _end(h, t, P)
    store.race = True
    assert h.mgr.stop(t.id, graceful=True).status is C  # the ending stands
    assert h.stops == [(t.run_id, True)] and h.delivered == []
    log = []
    paused = _spawn(h)
    _end(h, paused, P)
    h.on_stop = lambda run_id: log.append("stopper")
    h.mgr.c.on_result_delivered = lambda snap: log.append("delivered")
    assert h.mgr.stop(paused.id).status is X
    assert log == ["stopper", "delivered"]


def test_stop_tree_skips_what_finished_meanwhile_and_joins_the_rest():
    """Notes 2.8: StopTree stops every ListNonTerminal row, oldest first; a task
    already final is skipped, other refusals are joined; a failed listing reads
    ``tasks: listing live tasks: <err>`` (lifecycle.delete.stoptree-before-delete)."""
    from forge.lifecycle.store import MemoryStore
    h = _host()
    a, b = _spawn(h), _spawn(h)
    # a's stop finishes b meanwhile: b's own stop finds it final and is skipped
    h.on_stop = lambda run_id: _end(h, b, C, text="raced")
    stopped = h.mgr.stop_tree("p")
    assert [s.id for s in stopped] == [a.id]
    assert h.store.get(b.id).status is C

    class Broken(MemoryStore):
        def list_non_terminal(self, parent):
            raise OSError("disk gone")
    h = FakeHost(store=Broken())
    with pytest.raises(TaskError, match="^tasks: listing live tasks: disk gone$"):
        h.mgr.stop_tree("p")


def test_a_failing_sweep_is_one_wrapped_line():
    """Notes 2.8: ``tasks: failing orphaned tasks: <err>``."""
    from forge.lifecycle.store import MemoryStore

    class Broken(MemoryStore):
        def fail_orphans(self):
            raise OSError("disk gone")
    h = FakeHost(store=Broken())
    with pytest.raises(TaskError, match="^tasks: failing orphaned tasks: disk gone$"):
        h.mgr.recover()
    assert not h.mgr.recovered


def test_a_store_failing_under_a_run_ending_records_nothing(caplog):
    """Notes 3.3 steps 1 and 8: a lookup or a finalize that fails is logged and
    the ending is dropped - nothing recorded, nothing reported, no exception
    into the host's run loop (lifecycle.outcome.entry-point)."""
    from forge.lifecycle.store import MemoryStore

    class Flaky(MemoryStore):
        broken = ""

        def by_child_session(self, session_id):
            if self.broken == "lookup":
                raise OSError("lookup failed")
            return super().by_child_session(session_id)

        def finalize(self, *args, **kw):
            if self.broken == "finalize":
                raise OSError("write failed")
            return super().finalize(*args, **kw)
    store = Flaky()
    h = FakeHost(store=store)
    h.mgr.recover()
    t = _spawn(h)
    for what in ("lookup", "finalize"):
        store.broken = what
        with caplog.at_level("WARNING", logger="forge.lifecycle"):
            assert _end(h, t, C, text="done") is None
        assert h.store.get(t.id).status is W and h.finished == [] and h.delivered == []
        assert f"{'lookup' if what == 'lookup' else 'write'} failed" in caplog.text
    store.broken = ""
    assert _end(h, t, C, text="done").status is C


@pytest.mark.parametrize("which", ["memory", "sqlite"])
def test_the_stores_texts(which):
    """Notes 2.4: the store's own refusals, word for word."""
    from forge.lifecycle.records import Task
    from forge.lifecycle.store import NotFound
    store = dict(_repos())[which].store

    def row(tid):
        return Task(id=tid, run_id="r1", parent_session_id="p", child_session_id="s-" + tid,
                    label="job")
    with pytest.raises(ValueError) as e:
        store.create(row(""))
    assert str(e.value) == "tasks: Create requires an ID"
    store.create(row("t1"))
    with pytest.raises(ValueError) as e:
        store.create(row("t1"))
    assert str(e.value) == "tasks: duplicate task id t1"
    with pytest.raises(NotFound) as e:
        store.get("nope")
    assert str(e.value) == "tasks: not found"


def test_every_test_the_notes_table_names_exists():
    """docs/lifecycle.md walks the notes section by section; every test and
    lifecycle case its table names must exist, so the walk stays true."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    table = doc.split("| Notes | The original's text or behaviour | Pinned by |")[1]
    table = table.split("\n\n")[0]
    sources = "\n".join(p.read_text(encoding="utf-8")
                        for p in (root / "tests" / "lifecycle").glob("test_*.py"))
    cases = {p.stem for p in (root / "conformance" / "cases" / "lifecycle").glob("*.toml")}
    sections = set()
    for line in table.splitlines()[2:]:
        notes, _what, pinned = line.strip("|").split("|")
        sections.add(notes.strip())
        for name in re.findall(r"`([a-z0-9_\-.]+)`", pinned):
            if name.startswith("test_") and not name.endswith(".py"):
                assert f"def {name}(" in sources, name
            elif not name.endswith(".py"):
                assert name in cases, name
    assert {"2.4", "2.6", "2.9", "2.10", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7",
            "3.8", "4.1", "4.4", "6", "7"} <= sections


def test_a_store_answering_not_found_for_a_session_means_not_a_task(caplog):
    """Notes 2.8 (MetaFor) and 3.3 step 1: ErrNotFound from the session lookup,
    like no row, means "not a task's session" - not a failed lookup: a spawn
    from it is at depth 1, and a run ending there is ignored without a warning
    (lifecycle.depth.lookup-error-refuses only for real failures)."""
    from forge.lifecycle.store import MemoryStore, NotFound

    class SaysNotFound(MemoryStore):
        def by_child_session(self, session_id):
            row = super().by_child_session(session_id)
            if row is None:
                raise NotFound(session_id)
            return row
    h = FakeHost(store=SaysNotFound())
    h.mgr.recover()
    assert h.mgr.meta_for("p") == (None, False)
    t = _spawn(h)
    assert t.depth == 1
    with caplog.at_level("WARNING", logger="forge.lifecycle"):
        assert h.mgr.on_run_finished("elsewhere", RunOutcome(status=C)) is None
    assert caplog.text == ""


def test_a_fast_finish_is_delivered_only_on_the_models_path():
    """TestTools_FastFinishReportsDeliveryOnlyForTheModel (notes 3.8, 4.4): a run
    that ends inside its launch is owed (OnFinished) either way; only the
    tools, which hand the finished task to the model, settle it through
    ModelHasResult - spawn_task and task_retry, not Manager.spawn/retry
    (lifecycle.tools.model-has-result)."""
    from forge.lifecycle.tools import ToolContext, tools

    def quick(h):
        h.on_launch = lambda req: h.mgr.on_run_finished(
            req.session_id, RunOutcome(status=F, run_id=req.run_id, err="fast"))
    for via in ("tool", "api"):
        h = _host()
        spawn_task, _status, task_retry, _stop = tools(h.mgr)
        quick(h)
        if via == "tool":
            card = spawn_task.call(ToolContext(session_id="p"), {"input": "x"})
            tid = card.details["task_id"]
        else:
            tid = _spawn(h).id
        assert [f.status for f in h.finished] == [F]
        assert len(h.delivered) == (1 if via == "tool" else 0)
        quick(h)
        if via == "tool":
            card = task_retry.call(ToolContext(session_id="p"), {"task_id": tid})
            assert card.details["task_status"] == "failed" and card.details["task_attempt"] == 2
        else:
            assert h.mgr.retry(tid).status is F
        assert len(h.finished) == 2 and len(h.delivered) == (2 if via == "tool" else 0)
