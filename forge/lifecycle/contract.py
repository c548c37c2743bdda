"""The store contract: checks any task-store author runs against their store.

Lives here: ``CHECKS`` (name -> check), each a function of a store factory
(a zero-argument callable answering a fresh, empty store) that raises
``AssertionError`` naming what broke; ``run_contract`` (every check, the
failures as text); ``DEBT_CHECKS``, run only for a store that keeps owed
wake-ups (has ``owed``/``settle``). With pytest:

    import pytest
    from forge.lifecycle.contract import CHECKS

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_my_store(check):
        CHECKS[check](MyStore)

The threaded checks hammer one store from several threads; a store whose
transitions are not atomic loses them (two winners) within their rounds.
Every threaded check also records its history (``history.Recorder``) and
requires it to be linearizable against the memory store's semantics
(``linearizability.check``); two of them run random mixed operations, one
through one store, one through several connections to the same data (for a
store whose ``reopen()`` answers another connection - ``SqliteStore`` on a
file - as separate processes would have).
Does not live here: any store (``store``, ``sqlite_store``); docs in
docs/lifecycle-store.md.

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from forge.deferred import deferred
from forge.lifecycle.history import Operation, Recorder
from forge.lifecycle.records import Task, TaskStatus
from forge.lifecycle.store import KEEP, ORPHAN_SUMMARY, CapReached, NotFound

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.lifecycle import linearizability
else:
    linearizability = deferred("forge.lifecycle.linearizability")

W, P, C, F, X = (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED, TaskStatus.COMPLETED,
                 TaskStatus.FAILED, TaskStatus.CANCELLED)
Factory = Callable[[], Any]
CHECKS: dict[str, Callable[[Factory], None]] = {}
DEBT_CHECKS: set[str] = set()
THREADED_ROUNDS = 60
THREADS = 6
MIXED_OPERATIONS = 80  # per thread, in the mixed-history checks


def _check(debts: bool = False) -> Callable:
    def register(fn: Callable[[Any], None]) -> Callable[[Factory], None]:
        def run(factory: Factory) -> None:
            store = factory()
            if debts and not hasattr(store, "owed"):
                return  # a store without owed wake-ups has nothing to check here
            fn(store)
        run.__name__, run.__doc__ = fn.__name__, fn.__doc__
        CHECKS[fn.__name__] = run
        if debts:
            DEBT_CHECKS.add(fn.__name__)
        return run
    return register


def _row(tid: str = "t1", run: str = "r1", parent: str = "p", child: str = "", **kw: Any) -> Task:
    kw.setdefault("label", f"label {tid}")
    return Task(id=tid, run_id=run, parent_session_id=parent,
                child_session_id=child or f"s-{tid}", **kw)


def _raises(exc: type, fn: Callable, *args: Any) -> None:
    try:
        fn(*args)
    except exc:
        return
    raise AssertionError(f"{getattr(fn, '__name__', fn)}{args} did not raise {exc.__name__}")


def _fail(store: Any, tid: str = "t1") -> Task:
    row = store.get(tid)
    snap = store.finalize(tid, row.run_id, F, "boom", "boom")
    assert snap is not None, "finalize of a working row on its own run must win"
    return snap


@_check()
def create_and_read_back(store: Any) -> None:
    """Create stores every field (State and Inherit as given); Get copies it back."""
    made = store.create(_row(kind="sequence", state={"step": 2, "names": ["a"]},
                             inherit={"model": "m"}, parent_run_id="pr", tool_call_id="c1",
                             depth=2, label="x"))
    got = store.get("t1")
    assert got == made, f"get answered {got!r}, create {made!r}"
    assert (got.kind, got.state, got.inherit, got.status, got.attempt, got.depth) == (
        "sequence", {"step": 2, "names": ["a"]}, {"model": "m"}, W, 1, 2)
    assert (got.parent_run_id, got.tool_call_id, got.label) == ("pr", "c1", "x")
    assert store.by_child_session("s-t1") == got
    assert store.by_child_session("nobody") is None
    _raises(NotFound, store.get, "nope")
    assert str(NotFound("nope")) == "tasks: not found"
    _raises(ValueError, store.create, _row())  # duplicate id
    _raises(ValueError, store.create, _row(tid=""))


@_check()
def finalize_is_a_run_bound_cas(store: Any) -> None:
    """Finalize lands status, summary, result and State together, once, on its run."""
    store.create(_row(state={"n": 1}))
    assert store.finalize("t1", "r0", C, "x", "x") is None, "a stale run must lose"
    snap = store.finalize("t1", "r1", C, "sum", "full", {"n": 9})
    assert snap is not None and (snap.status, snap.summary, snap.result, snap.state) == (
        C, "sum", "full", {"n": 9})
    assert store.get("t1") == snap, "the returned snapshot is the stored row"
    assert store.finalize("t1", "r1", F, "late", "late") is None, "a terminal row is final"
    assert store.get("t1").status is C
    _raises(NotFound, store.finalize, "nope", "r1", C, "", "")
    store.create(_row(tid="t2"))
    _raises(ValueError, store.finalize, "t2", "r1", W, "", "")
    kept = store.finalize("t2", "r1", X, "stopped", "stopped")
    assert kept is not None and kept.state is None, "KEEP leaves State as recorded"


@_check()
def finalize_claims_a_paused_row(store: Any) -> None:
    """input_required is not terminal: a stop's Finalize wins over it."""
    store.create(_row())
    assert store.mark_input_required("t1", "r1").status is P
    assert store.finalize("t1", "r1", X, "s", "s").status is X


@_check()
def retry_claim_reopens_exactly_one_failed_attempt(store: Any) -> None:
    store.create(_row(state={"k": 1}))
    assert store.retry_claim("t1", "r2", 3) is None, "a working task is not claimable"
    _fail(store)
    snap = store.retry_claim("t1", "r2", 3)
    assert snap is not None and (snap.status, snap.run_id, snap.attempt) == (W, "r2", 2)
    assert (snap.summary, snap.result, snap.state) == ("", "", {"k": 1})
    assert store.retry_claim("t1", "r3", 3) is None, "the claim is gone once won"
    _raises(NotFound, store.retry_claim, "nope", "r9", 3)
    store.create(_row(tid="done"))
    store.finalize("done", "r1", C, "ok", "ok")
    assert store.retry_claim("done", "r2", 3) is None, "only a failed task reopens"


@_check()
def retry_claim_enforces_the_ceiling_in_the_store(store: Any) -> None:
    store.create(_row())
    for attempt in (2, 3):
        run = store.get("t1").run_id
        store.finalize("t1", run, F, "x", "x")
        snap = store.retry_claim("t1", f"r{attempt}", 3)
        assert snap is not None and snap.attempt == attempt
    store.finalize("t1", "r3", F, "x", "x")
    assert store.retry_claim("t1", "r4", 3) is None, "attempt 3 of 3 is the last"
    assert store.get("t1").attempt == 3


@_check()
def create_and_claim_hold_the_per_parent_cap(store: Any) -> None:
    """With ``max_live``, create and retry_claim count the parent's live rows in
    their own step (the cap across processes); 0 means no cap."""
    store.create(_row("a"), max_live=2)
    store.create(_row("b"), max_live=2)
    _raises(CapReached, store.create, _row("c"), 2)
    assert [t.id for t in store.list_all()] == ["a", "b"], "a refused create writes nothing"
    store.create(_row("x", parent="q"), max_live=2)  # another parent has its own slots
    store.create(_row("c"), max_live=0)
    _fail(store, "a")
    assert store.retry_claim("a", "r2", 3, max_live=2) is None, "no slot is free for a"
    assert store.get("a").status is F
    _fail(store, "b")
    snap = store.retry_claim("a", "r2", 3, max_live=2)
    assert snap is not None and snap.attempt == 2


@_check()
def a_zero_attempt_reads_as_the_first(store: Any) -> None:
    store.create(_row(attempt=0))
    _fail(store)
    assert store.retry_claim("t1", "r2", 3).attempt == 2


@_check()
def advance_is_a_run_bound_cas_that_carries_state(store: Any) -> None:
    store.create(_row(state={"i": 0}))
    assert store.advance("t1", "r0", "r2", {"i": 1}) is None
    snap = store.advance("t1", "r1", "r2", {"i": 1})
    assert (snap.run_id, snap.state, snap.status, snap.attempt) == ("r2", {"i": 1}, W, 1)
    assert snap.continuations == 1
    same = store.advance("t1", "r2", "r2", {"i": 5})
    assert (same.run_id, same.state, same.continuations) == ("r2", {"i": 5}, 1)
    kept = store.advance("t1", "r2", "r3", KEEP)
    assert kept.state == {"i": 5}
    store.mark_input_required("t1", "r3")
    assert store.advance("t1", "r3", "r4") is None, "a paused row is not advanced"
    store.finalize("t1", "r3", C, "", "")
    assert store.advance("t1", "r3", "r4") is None, "a terminal row is not advanced"
    _raises(NotFound, store.advance, "nope", "r1", "r2")


@_check()
def release_retry_claim_rolls_the_attempt_back(store: Any) -> None:
    store.create(_row())
    _fail(store)
    store.retry_claim("t1", "r2", 3)
    assert store.release_retry_claim("t1", "r9", "x", "x") is None, "a foreign release loses"
    snap = store.release_retry_claim("t1", "r2", "could not", "could not start")
    assert (snap.status, snap.attempt, snap.summary, snap.result) == (
        F, 1, "could not", "could not start")
    assert store.release_retry_claim("t1", "r2", "x", "x") is None, "released once"
    _raises(NotFound, store.release_retry_claim, "nope", "r2", "", "")


@_check()
def pause_and_reclaim_are_attempt_bound(store: Any) -> None:
    store.create(_row())
    assert store.mark_input_required("t1", "r0") is None, "a stale pause moves nothing"
    assert store.get("t1").status is W
    assert store.mark_input_required("t1", "r1").status is P
    assert store.reclaim_working("t1", "r0") is None, "a stale reclaim moves nothing"
    assert store.reclaim_working("t1", "r1").status is W
    assert store.reclaim_working("t1", "r1") is None, "reclaimed once"
    store.mark_input_required("t1", "r1")
    store.finalize("t1", "r1", X, "stopped", "stopped")
    assert store.reclaim_working("t1", "r1") is None, "a stop beats a late approval"
    _raises(NotFound, store.reclaim_working, "nope", "r1")


@_check()
def fail_orphans_keeps_paused_tasks(store: Any) -> None:
    store.create(_row("a"))
    store.create(_row("b"))
    store.create(_row("c", state={"step": 2}))
    store.mark_input_required("b", "r1")
    store.create(_row("d"))
    store.finalize("d", "r1", C, "ok", "ok")
    failed = store.fail_orphans()
    assert [t.id for t in failed] == ["a", "c"], "only working rows, in creation order"
    assert all(t.status is F and t.summary == ORPHAN_SUMMARY for t in failed)
    assert store.get("c").state == {"step": 2}, "the row fails at the step it reached"
    assert store.get("b").status is P and store.get("d").status is C
    assert store.fail_orphans() == []


@_check()
def listings_and_delete(store: Any) -> None:
    for tid in ("a", "b", "c"):
        store.create(_row(tid))
    store.create(_row("z", parent="q"))
    store.finalize("b", "r1", C, "ok", "ok")
    assert [t.id for t in store.list_by_parent("p")] == ["c", "b", "a"], "newest first"
    assert [t.id for t in store.list_non_terminal("p")] == ["a", "c"], "live, oldest first"
    assert store.list_by_parent("nobody") == []
    store.delete("a")
    _raises(NotFound, store.get, "a")
    store.delete("a")  # deleting what is gone is not an error
    assert [t.id for t in store.list_all()] == ["b", "c", "z"]


@_check()
def the_tree_cascade_reaches_every_depth(store: Any) -> None:
    store.create(_row("a", parent="p", child="sa"))
    store.create(_row("b", parent="sa", child="sb"))
    store.create(_row("c", parent="sb", child="sc"))
    store.create(_row("q", parent="other", child="sq"))
    assert [t.id for t in store.session_tree("p")] == ["a", "b", "c"]
    assert store.delete_session_tree("p") == ["a", "b", "c"]
    assert [t.id for t in store.list_all()] == ["q"]
    # deleting a task's own session takes the row in its child role too
    assert store.delete_session_tree("sq") == ["q"] and store.list_all() == []


@_check(debts=True)
def an_ending_owes_a_wake_up_in_the_same_write(store: Any) -> None:
    store.create(_row("a"))
    store.create(_row("b"))
    store.create(_row("c"))
    store.finalize("a", "r1", C, "done", "done")
    store.finalize("b", "r1", X, "stopped", "stopped")  # a cancellation is delivered
    store.finalize("c", "r1", F, "boom", "boom")
    assert [(d.task_id, d.run_id, d.status) for d in store.owed()] == [
        ("a", "r1", C), ("c", "r1", F)]
    assert store.finalize("a", "r0", F, "late", "late") is None
    assert len(store.owed()) == 2, "a lost finalize owes nothing"


@_check(debts=True)
def retry_claim_drops_the_debt_and_release_owes_again(store: Any) -> None:
    store.create(_row())
    _fail(store)
    store.retry_claim("t1", "r2", 3)
    assert store.owed() == [], "a reopened task owes no old ending"
    store.release_retry_claim("t1", "r2", "no start", "no start")
    assert [(d.run_id, d.status, d.summary) for d in store.owed()] == [("r2", F, "no start")]


@_check(debts=True)
def the_sweep_owes_each_orphan(store: Any) -> None:
    store.create(_row("a"))
    store.create(_row("b"))
    store.mark_input_required("b", "r1")
    store.fail_orphans()
    assert [(d.task_id, d.status) for d in store.owed()] == [("a", F)]


@_check(debts=True)
def settle_is_run_bound_and_delete_drops_debts(store: Any) -> None:
    store.create(_row("a"))
    store.create(_row("b"))
    store.finalize("a", "r1", C, "ok", "ok")
    store.finalize("b", "r1", C, "ok", "ok")
    assert store.settle("a", "r0") is False, "an older attempt's delivery settles nothing"
    assert store.settle("a", "r1") is True and store.settle("a", "r1") is False
    store.delete("b")
    assert store.owed() == []


def _preempt(frame: Any, event: str, arg: Any) -> None:
    """The racing threads' profile hook: at every call and return they make,
    Python's or C's, the thread gives the interpreter up.  A store that
    reads a row and writes it back without holding its lock is then
    interrupted between the two in nearly every round, instead of only when
    the switch interval happens to fall there (a Python store's window is a
    few bytecodes: without this, a store with no lock passed both threaded
    checks in about 6 of 10 tries)."""
    time.sleep(0)


def _race(store: Any, fns: list[Callable[[], Any]]) -> list[Any]:
    """Run ``fns`` at once (a barrier, each thread preempted at every call
    and return it makes: ``_preempt``); their answers."""
    out: list[Any] = [None] * len(fns)
    barrier = threading.Barrier(len(fns))

    def go(i: int) -> None:
        barrier.wait()
        sys.setprofile(_preempt)
        try:
            out[i] = fns[i]()
        finally:
            sys.setprofile(None)
    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(fns))]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return out


def _linearizable(history: list[Operation], what: str) -> None:
    verdict = linearizability.check(history)
    assert verdict.ok, f"{what}: the recorded history is {verdict.text()}"


def _finalize_rounds(stores: list[Any], rounds: int) -> list[tuple[Any, list]]:
    """Per round: a task created through the first store, then one finalize of
    its attempt per store at once; (the row as read after, the answers). The
    rounds stop after the first with other than one winner: the history so
    far already shows it."""
    out = []
    for n in range(rounds):
        tid = f"t{n}"
        stores[0].create(_row(tid))
        statuses = [C, F, X] * THREADS
        won = _race(stores[0], [
            lambda st=st, s=s, i=i: st.finalize(tid, "r1", s, f"w{i}", f"w{i}")
            for i, (st, s) in enumerate(zip(stores, statuses))])
        out.append((stores[0].get(tid), won))
        if sum(w is not None for w in won) != 1:
            break
    return out


def _claim_rounds(stores: list[Any], rounds: int) -> list[tuple[Any, list]]:
    """Per round: a failed task, then one retry claim per store at once (the
    rounds stop as ``_finalize_rounds`` do)."""
    out = []
    for n in range(rounds):
        tid = f"c{n}"
        stores[0].create(_row(tid))
        stores[0].finalize(tid, "r1", F, "x", "x")
        won = _race(stores[0], [lambda st=st, i=i: st.retry_claim(tid, f"r{i + 2}", 3)
                                for i, st in enumerate(stores)])
        out.append((stores[0].get(tid), won))
        if sum(w is not None for w in won) != 1:
            break
    return out


@_check()
def concurrent_finalizes_have_one_winner(store: Any) -> None:
    """Real threads: THREADS finalizes of one attempt, every round; the recorded
    history is linearizable, and exactly one finalize won each round."""
    rec = Recorder(store)
    rounds = _finalize_rounds([rec] * THREADS, THREADED_ROUNDS)
    _linearizable(rec.history, "concurrent finalizes")
    for n, row, winner in _one_winner(rounds, "finalizes"):
        assert row == winner, f"round {n}: the stored row is not the winner's"


@_check()
def concurrent_retry_claims_have_one_winner(store: Any) -> None:
    """Real threads: THREADS claims on one failed attempt, every round; the
    recorded history is linearizable, and exactly one claim won each round."""
    rec = Recorder(store)
    rounds = _claim_rounds([rec] * THREADS, THREADED_ROUNDS)
    _linearizable(rec.history, "concurrent retry claims")
    for _, row, winner in _one_winner(rounds, "retry claims"):
        assert (row.attempt, row.run_id) == (2, winner.run_id)


def _one_winner(rounds: Any, what: str) -> Iterator[tuple[int, Any, Any]]:
    """Each round's number, stored row and winner, once the round is seen to
    have exactly one winner among its racing `what`."""
    for n, (row, won) in enumerate(rounds):
        winners = [w for w in won if w is not None]
        assert len(winners) == 1, f"round {n}: {len(winners)} {what} won"
        yield n, row, winners[0]


def _mixed(store: Any, seed: int, thread: int) -> Callable[[], None]:
    """One racing thread's random operations on four tasks of one parent."""
    import random

    rng = random.Random(seed * 1000 + thread)
    ops: list[Callable[[], Any]] = []
    for k in range(MIXED_OPERATIONS):
        tid = f"t{rng.randrange(4)}"
        run = rng.choice(["r1", f"r-{thread}-{k - 1}", f"r-{(thread + 1) % THREADS}-{k - 1}"])
        roll = rng.random()
        if roll < 0.15:
            call = (store.create, _row(tid), 3)
        elif roll < 0.35:
            call = (store.finalize, tid, run, rng.choice([C, F, X]), f"e{k}", f"e{k}")
        elif roll < 0.55:
            call = (store.retry_claim, tid, f"r-{thread}-{k}", 3, 3)
        elif roll < 0.6:
            call = (store.release_retry_claim, tid, run, "no start", "no start")
        elif roll < 0.65:
            call = (store.advance, tid, run, f"r-{thread}-{k}")
        elif roll < 0.7:
            call = (store.mark_input_required, tid, run)
        elif roll < 0.75:
            call = (store.reclaim_working, tid, run)
        elif roll < 0.85:
            call = (store.get, tid)
        elif roll < 0.9:
            call = (store.list_by_parent, "p")
        elif roll < 0.95 and hasattr(store.store, "settle"):
            call = (store.settle, tid, run)
        elif hasattr(store.store, "next_id"):
            call = (store.next_id, "t")
        else:
            call = (store.get, tid)
        ops.append(lambda call=call: call[0](*call[1:]))

    def go() -> None:
        for op in ops:
            try:
                op()
            except (KeyError, ValueError, CapReached):
                pass  # a refusal is an answer; the history holds it
    return go


@_check()
def concurrent_mixed_history_is_linearizable(store: Any) -> None:
    """Real threads run random operations (creates under a cap, endings on
    current and stale runs, claims, releases, pauses, reads, ids) on four
    tasks through one store; the recorded history is linearizable."""
    for seed in range(3):
        recorder = Recorder(store)
        _race(store, [_mixed(recorder, seed, i) for i in range(THREADS)])
        _linearizable(recorder.history, f"mixed operations, seed {seed}")
        for row in store.list_all():
            store.delete(row.id)
        if hasattr(store, "owed"):
            assert store.owed() == [], "a deleted row's debts go with it"


@_check()
def connections_history_is_linearizable(store: Any) -> None:
    """For a store whose ``reopen()`` answers another connection to the same data
    (None: it has none): threads each on a connection of its own (what separate
    processes do) race finalizes of one attempt, retry claims of one failed
    attempt, ids, and random mixed operations; the history they record
    together is linearizable."""
    if getattr(store, "reopen", lambda: None)() is None:
        return
    recorders = [Recorder(store.reopen(), process=i) for i in range(THREADS)]
    _finalize_rounds(recorders, THREADED_ROUNDS // 3)
    _claim_rounds(recorders, THREADED_ROUNDS // 3)
    for _round in range(THREADED_ROUNDS // 6):
        _race(store, [lambda rec=rec: rec.next_id("t") for rec in recorders])
    _race(store, [_mixed(rec, 0, i) for i, rec in enumerate(recorders)])
    history = sorted((op for rec in recorders for op in rec.history), key=lambda op: op.call)
    for rec in recorders:
        getattr(rec.store, "close", lambda: None)()
    _linearizable(history, f"{THREADS} connections")


def run_contract(factory: Factory, names: list[str] | None = None) -> list[str]:
    """Every check (or those named) against ``factory``; one line per failure."""
    failures = []
    for name in names or list(CHECKS):
        try:
            CHECKS[name](factory)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    return failures
