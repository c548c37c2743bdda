"""Both task stores against the shipped store contract (forge.lifecycle.contract),
plus what only the SQLite store promises: several connections on one file,
the repository's one-transaction cascade, and debts that survive a reopen.

Clause ids: lifecycle.store.transactional / lifecycle.store.backends /
lifecycle.finalize.single-winner / lifecycle.retry.ceiling-in-store /
lifecycle.durable.* / lifecycle.delete.sql-repo.
"""

from __future__ import annotations

import contextlib
import threading

import pytest
from lifecycle_host import FakeHost

from forge import variation
from forge.lifecycle import store as store_module
from forge.lifecycle.contract import CHECKS, DEBT_CHECKS, _race, run_contract
from forge.lifecycle.records import RunOutcome, SpawnRequest, Task, TaskStatus
from forge.lifecycle.sessions import Session
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore

C, F, W = TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.WORKING


def _factories(tmp_path_factory):
    n = iter(range(10**6))
    return {
        "memory": MemoryStore,
        "sqlite-memory": lambda: SqliteStore(":memory:"),
        "sqlite-file": lambda: SqliteStore(str(tmp_path_factory.mktemp("db") / f"{next(n)}.db")),
    }


@pytest.mark.parametrize("kind", ["memory", "sqlite-memory", "sqlite-file"])
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_store_contract(kind, check, tmp_path_factory):
    CHECKS[check](_factories(tmp_path_factory)[kind])


def test_every_store_keeps_debts():
    # both stores here keep owed wake-ups, so no debt check is a silent no-op for them
    assert DEBT_CHECKS and all(hasattr(f(), "owed") for f in (MemoryStore, SqliteStore))


@pytest.mark.parametrize("check", ["concurrent_finalizes_have_one_winner",
                                   "concurrent_retry_claims_have_one_winner"])
def test_the_threaded_checks_catch_a_store_without_its_lock(check):
    """The contract can fail, every time: the memory store with its lock taken
    away loses each threaded check on each of ten tries (the racing threads
    are preempted at every call, so the window between a CAS's read and its
    write is hit in nearly every round; before, a try passed 6 times in 10)."""
    def unlocked():
        store = MemoryStore()
        store.lock = contextlib.nullcontext()
        return store
    for attempt in range(10):
        assert run_contract(unlocked, [check]), f"try {attempt}: an unlocked store passed {check}"


#: The rules the memory store decides, as its variation sites.
STORE_SITES = sorted(v.name for v in vars(store_module).values() if isinstance(v, variation.Site))


@pytest.mark.parametrize("site", STORE_SITES)
def test_the_contract_catches_each_store_rule_made_wrong(site):
    """Every rule the memory store decides, switched to its wrong variant, fails at
    least one of the contract's single-threaded checks: the contract a store author
    runs can fail for each store rule, not only for a missing lock."""
    assert len(STORE_SITES) >= 9
    single = [name for name in CHECKS if not name.startswith("concurrent_")]
    with variation.switched(site):
        assert run_contract(MemoryStore, single), \
            f"the contract passes a MemoryStore with {site} on"


def _row(tid="t1", parent="p", child=""):
    return Task(id=tid, run_id="r1", parent_session_id=parent,
                child_session_id=child or f"s-{tid}", label=tid)


def test_two_connections_on_one_file_have_one_winner(tmp_path):
    # lifecycle.retry.ceiling-in-store: "two processes asking at once cannot both get an attempt"
    path = str(tmp_path / "tasks.db")
    a, b = SqliteStore(path), SqliteStore(path)
    for n in range(30):
        tid = f"t{n}"
        a.create(_row(tid))
        a.finalize(tid, "r1", F, "x", "x")
        won = _race(a, [lambda: a.retry_claim(tid, "ra", 3), lambda: b.retry_claim(tid, "rb", 3),
                        lambda: b.retry_claim(tid, "rc", 3)])
        assert sum(w is not None for w in won) == 1
        fin = _race(a, [lambda: a.finalize(tid, a.get(tid).run_id, C, "a", "a"),
                        lambda: b.finalize(tid, b.get(tid).run_id, F, "b", "b")])
        assert sum(w is not None for w in fin) == 1


def test_wal_mode_on_a_file(tmp_path):
    store = SqliteStore(str(tmp_path / "x.db"))
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_failed_transaction_leaves_nothing_half_written(tmp_path):
    store = SqliteStore(str(tmp_path / "x.db"))
    store.create(_row())
    with pytest.raises(RuntimeError), store.transaction() as db:
        db.execute("UPDATE tasks SET status = 'completed' WHERE id = 't1'")
        raise RuntimeError("crash inside the write")
    assert store.get("t1").status is W


def test_debts_survive_a_reopen(tmp_path):
    # lifecycle.durable.debt-atomic / lifecycle.race.crash-between-finalize-and-hook
    path = str(tmp_path / "x.db")
    store = SqliteStore(path)
    store.create(_row())
    store.finalize("t1", "r1", C, "done", "done")
    store.close()  # the process dies before OnFinished: the debt was already written
    again = SqliteStore(path)
    assert [(d.task_id, d.status) for d in again.owed()] == [("t1", C)]


def test_sqlite_repo_cascade_in_one_transaction(tmp_path):
    # lifecycle.delete.sql-repo / lifecycle.delete.repo-owns-cascade / lifecycle.race.delete-vs-live-tasks
    store = SqliteStore(str(tmp_path / "x.db"))
    sessions = store.sessions()
    h = FakeHost(store=store, sessions=sessions, max_depth=3)
    h.mgr.recover()
    sessions.create(Session(id="p"))
    sessions.create(Session(id="q"))
    spawn = lambda parent: h.mgr.spawn(SpawnRequest(parent_session_id=parent, agent_name="a",
                                                    input="go"))
    a = spawn("p")
    b = spawn(a.child_session_id)
    keep = spawn("q")
    h.mgr.on_run_finished(b.child_session_id, RunOutcome(status=C, run_id=b.run_id, text="ok"))
    assert [d.task_id for d in store.owed()] == [b.id]
    # a failure half way rolls the whole cascade back
    real = store.delete_session_tree

    def broken(sid):
        real(sid)
        raise RuntimeError("disk full")
    store.delete_session_tree = broken
    with pytest.raises(RuntimeError):
        sessions.delete("p")
    assert len(store.list_all()) == 3 and len(sessions.list(include_hidden=True)) == 5
    del store.delete_session_tree
    h.mgr.stop_tree("p")
    assert sessions.delete("p") == ["p", a.child_session_id, b.child_session_id]
    assert [t.id for t in store.list_all()] == [keep.id] and store.owed() == []
    assert [s.id for s in sessions.list(include_hidden=True)] == ["q", keep.child_session_id]


def test_manager_runs_on_the_sqlite_store(tmp_path):
    # lifecycle.store.backends: the same Manager over either store
    for store in (SqliteStore(":memory:"), SqliteStore(str(tmp_path / "m.db"))):
        h = FakeHost(store=store, sessions=store.sessions())
        h.mgr.recover()
        t = h.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go",
                                     state={"n": 1}))
        h.mgr.on_run_finished(t.child_session_id, RunOutcome(status=F, run_id=t.run_id,
                                                             err="boom"))
        r = h.mgr.retry(t.id)
        assert (r.status, r.attempt, r.state) == (W, 2, {"n": 1})
        assert [d.task_id for d in store.owed()] == []
        h.mgr.stop(t.id)
        assert store.get(t.id).status is TaskStatus.CANCELLED


def test_threads_share_one_sqlite_store():
    store = SqliteStore(":memory:")
    for n in range(20):
        store.create(_row(f"t{n}"))
    errors = []

    def worker(k):
        try:
            for n in range(20):
                store.finalize(f"t{n}", "r1", C, str(k), str(k))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and all(t.status is C for t in store.list_all())


@pytest.mark.parametrize("site", ["lifecycle.ids-from-process-counter",
                                  "lifecycle.sqlite-finalize-check-then-write",
                                  "lifecycle.sqlite-claim-reads-outside-lock"])
def test_the_history_check_kills_each_durability_mutant(site, tmp_path_factory):
    """(lifecycle.store.transactional, lifecycle.finalize.single-winner,
    lifecycle.retry.cas) With the site switched on, the history that threads on
    connections of their own to one SQLite file record has no legal order, and
    the contract's history check says so; with it off, the same check passes."""
    factory = _factories(tmp_path_factory)["sqlite-file"]
    check = CHECKS["connections_history_is_linearizable"]
    with variation.switched(site):
        with pytest.raises(AssertionError, match="the recorded history is not linearizable"):
            check(factory)
    check(factory)
