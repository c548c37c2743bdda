"""The SQLite task store and the session repository that shares its database.

Lives here: ``SqliteStore`` (standard-library ``sqlite3``; every transition is
one ``BEGIN IMMEDIATE`` transaction whose UPDATE carries the compare-and-set
predicate, so two connections - threads or processes - cannot both win) and
``SqliteSessions`` (sessions in the same database; its ``delete`` removes the
session, its task rows in both roles, every hidden session of the task tree
and what those rows owed, in one transaction). An owed wake-up (the ``debts``
table) is written inside the same transaction as the Finalize,
ReleaseRetryClaim or restart sweep that creates it, and dropped inside the
RetryClaim that reopens the task (lifecycle.durable.*).
Ids come from the database (``next_id``), so they never repeat across
connections, processes or restarts. A busy database is waited for (SQLite's
busy timeout, and ``patiently`` where SQLite answers busy without waiting).
Does not live here: the rules shared with the memory store (``store``: which
endings owe, the ceiling predicate, the tree walk), the contract both pass
(``contract``).

State and Inherit are stored as JSON: they round-trip as JSON values.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from forge.lifecycle.errors import Refused
from forge.lifecycle.records import Debt, Task, TaskStatus
from forge.lifecycle.sessions import Session, SessionNotFound
from forge.lifecycle.store import (
    CapReached,
    KEEP,
    ORPHAN_SUMMARY,
    NotFound,
    check_create,
    check_final,
    duplicate,
    owes,
    tree_of,
    under_ceiling,
)
from forge.variation import declare

# Variation site of the durable store (forge.variation): ids that repeat across
# processes and restarts, as a per-connection counter would make them.
IDS_FROM_PROCESS = declare("lifecycle.ids-from-process-counter", "lifecycle",
                           "ids come from a counter of this connection, not the database")
# ... and two ways of stepping outside the one-transaction compare-and-set.
FINALIZE_CHECK_THEN_WRITE = declare(
    "lifecycle.sqlite-finalize-check-then-write", "lifecycle",
    "finalize reads the row, decides in Python, then writes it unguarded in a transaction "
    "of its own")
CLAIM_READS_OUTSIDE = declare(
    "lifecycle.sqlite-claim-reads-outside-lock", "lifecycle",
    "a retry claim reads the row before taking the write lock, then writes it unguarded")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, run_id TEXT NOT NULL,
    parent_session_id TEXT NOT NULL, child_session_id TEXT NOT NULL, label TEXT NOT NULL,
    status TEXT NOT NULL, attempt INTEGER NOT NULL, summary TEXT NOT NULL,
    result TEXT NOT NULL, kind TEXT NOT NULL, state TEXT, parent_run_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL, depth INTEGER NOT NULL, inherit TEXT,
    continuations INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_parent ON tasks(parent_session_id, seq);
CREATE INDEX IF NOT EXISTS tasks_child ON tasks(child_session_id, seq);
CREATE TABLE IF NOT EXISTS debts (
    task_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, status TEXT NOT NULL,
    summary TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ids (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO ids (name, value) VALUES ('next', 0);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL, title TEXT NOT NULL,
    hidden INTEGER NOT NULL, parent_id TEXT NOT NULL);
"""
_COLUMNS = ("id", "seq", "run_id", "parent_session_id", "child_session_id", "label", "status",
            "attempt", "summary", "result", "kind", "state", "parent_run_id", "tool_call_id",
            "depth", "inherit", "continuations")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM tasks"
_LIVE = "('working', 'input_required')"


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def patiently(deadline_s: float, step: Any) -> Any:
    """Run ``step`` until it stops answering "database is locked"/"busy", for up
    to ``deadline_s`` seconds. SQLite's own busy timeout covers most waits, but
    not all (opening a database another connection is switching to WAL, a
    reader meeting a WAL being recovered after a killed writer): those answer
    busy at once, and a lifecycle call waits here instead of failing."""
    end = time.monotonic() + deadline_s
    pause = 0.001
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= end:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _task(row: tuple) -> Task:
    d = dict(zip(_COLUMNS, row, strict=True))
    d["status"] = TaskStatus(d["status"])
    d["state"], d["inherit"] = _load(d["state"]), _load(d["inherit"])
    return Task(**d)


class SqliteStore:
    """A task store in one SQLite database (a file, or ``":memory:"``).

    One connection, used by one thread at a time (a lock); other processes
    open their own ``SqliteStore`` on the same file and are serialised by
    SQLite's own locking (``BEGIN IMMEDIATE``, a busy timeout). A file
    database runs in WAL mode; ``synchronous`` is SQLite's setting of that
    name: FULL (the default) survives a power loss, NORMAL survives a killed
    process but may lose the last commits to a power loss, and is much faster.
    """

    def __init__(self, path: str = ":memory:", busy_timeout: float = 30.0,
                 synchronous: str = "FULL") -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous is FULL or NORMAL, not {synchronous!r}")
        self.path = path
        self.busy_timeout = busy_timeout
        self.synchronous = synchronous
        self.lock = threading.RLock()
        self.db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None,
                                  check_same_thread=False)
        if path != ":memory:":
            patiently(busy_timeout, lambda: self.db.execute("PRAGMA journal_mode=WAL"))
            self.db.execute(f"PRAGMA synchronous={synchronous}")
        patiently(busy_timeout, lambda: self.db.executescript(_SCHEMA))
        self._depth = 0  # nesting of ``transaction`` on this connection
        self._process_ids = 0  # only under IDS_FROM_PROCESS

    def reopen(self) -> SqliteStore | None:
        """Another connection to this database, as another process would open
        it; None for ``":memory:"``, a database no other connection sees."""
        if self.path == ":memory:":
            return None
        return SqliteStore(self.path, self.busy_timeout, self.synchronous)

    def close(self) -> None:
        with self.lock:
            self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (nested calls join the outer one)."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            patiently(self.busy_timeout, lambda: self.db.execute("BEGIN IMMEDIATE"))
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            else:
                patiently(self.busy_timeout, lambda: self.db.execute("COMMIT"))
            finally:
                self._depth = 0

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.lock:
            return patiently(self.busy_timeout,
                             lambda: self.db.execute(sql, args).fetchall())

    # -- ids ---------------------------------------------------------------
    def next_id(self, prefix: str) -> str:
        """A fresh id from the database's own counter, bumped in its own
        transaction: never repeated by another connection, process or restart
        over the same file (task, run and session ids share it)."""
        if IDS_FROM_PROCESS.on:
            self._process_ids += 1
            return f"{prefix}{self._process_ids}"
        with self.transaction() as db:
            db.execute("UPDATE ids SET value = value + 1 WHERE name = 'next'")
            (n,) = db.execute("SELECT value FROM ids WHERE name = 'next'").fetchone()
        return f"{prefix}{n}"

    # -- reads -------------------------------------------------------------
    def get(self, task_id: str) -> Task:
        rows = self._read(f"{_SELECT} WHERE id = ?", (task_id,))
        if not rows:
            raise NotFound(task_id)
        return _task(rows[0])

    def by_child_session(self, session_id: str) -> Task | None:
        rows = self._read(f"{_SELECT} WHERE child_session_id = ? ORDER BY seq LIMIT 1",
                          (session_id,))
        return _task(rows[0]) if rows else None

    def list_all(self) -> list[Task]:
        return [_task(r) for r in self._read(f"{_SELECT} ORDER BY seq")]

    def list_by_parent(self, parent_session_id: str) -> list[Task]:
        return [_task(r) for r in self._read(
            f"{_SELECT} WHERE parent_session_id = ? ORDER BY seq DESC", (parent_session_id,))]

    def list_non_terminal(self, parent_session_id: str) -> list[Task]:
        return [_task(r) for r in self._read(
            f"{_SELECT} WHERE parent_session_id = ? AND status IN {_LIVE} ORDER BY seq",
            (parent_session_id,))]

    def session_tree(self, session_id: str) -> list[Task]:
        return tree_of(self.list_all(), session_id)

    def owed(self) -> list[Debt]:
        return [Debt(tid, run, TaskStatus(st), summ) for tid, run, st, summ in self._read(
            "SELECT task_id, run_id, status, summary FROM debts ORDER BY seq")]

    # -- writes ------------------------------------------------------------
    def create(self, task: Task, max_live: int = 0) -> Task:
        check_create(task)
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM tasks WHERE id = ?", (task.id,)).fetchone():
                raise duplicate(task.id)
            if max_live > 0:
                (live,) = db.execute(f"SELECT COUNT(*) FROM tasks WHERE parent_session_id = ? "
                                     f"AND status IN {_LIVE}",
                                     (task.parent_session_id,)).fetchone()
                if live >= max_live:
                    raise CapReached(task.parent_session_id)
            (seq,) = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks").fetchone()
            values = {c: getattr(task, c) for c in _COLUMNS}
            values.update(seq=seq, status=TaskStatus(task.status).value,
                          state=_dump(task.state), inherit=_dump(task.inherit))
            db.execute(f"INSERT INTO tasks ({', '.join(_COLUMNS)}) VALUES "
                       f"({', '.join('?' for _ in _COLUMNS)})",
                       tuple(values[c] for c in _COLUMNS))
            return self.get(task.id)

    def _cas(self, db: sqlite3.Connection, task_id: str, sets: str, where: str,
             args: tuple) -> Task | None:
        """One predicate-guarded UPDATE: the new row when it matched, None when
        the predicate refused, NotFound for an unknown id."""
        cur = db.execute(f"UPDATE tasks SET {sets} WHERE id = ? AND {where}", args)
        if cur.rowcount == 0:
            if not db.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone():
                raise NotFound(task_id)
            return None
        return self.get(task_id)

    def _owe(self, db: sqlite3.Connection, snap: Task | None) -> Task | None:
        if snap is not None and owes(snap.status):
            (seq,) = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM debts").fetchone()
            db.execute("INSERT OR REPLACE INTO debts (task_id, run_id, status, summary, seq) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (snap.id, snap.run_id, snap.status.value, snap.summary, seq))
        return snap

    def finalize(self, task_id: str, run_id: str, status: Any, summary: str, result: str,
                 state: Any = KEEP) -> Task | None:
        status = check_final(status)
        sets, args = "status = ?, summary = ?, result = ?", [status.value, summary, result]
        if state is not KEEP:
            sets += ", state = ?"
            args.append(_dump(state))
        where, params = f"run_id = ? AND status IN {_LIVE}", (*args, task_id, run_id)
        if FINALIZE_CHECK_THEN_WRITE.on:
            row = self.get(task_id)
            if row.run_id != run_id or row.status.terminal:
                return None
            where, params = "1 = 1", (*args, task_id)  # the check is gone from the write
        with self.transaction() as db:
            snap = self._cas(db, task_id, sets, where, params)
            return self._owe(db, snap)

    def retry_claim(self, task_id: str, new_run_id: str, max_attempts: int,
                    max_live: int = 0) -> Task | None:
        if CLAIM_READS_OUTSIDE.on:
            return self._claim_read_outside(task_id, new_run_id, max_attempts)
        with self.transaction() as db:
            snap = self._cas(
                db, task_id,
                "status = 'working', run_id = ?, attempt = MAX(attempt, 1) + 1, summary = '', "
                "result = '', continuations = 0",
                "status = 'failed' AND (? <= 0 OR MAX(attempt, 1) < ?) AND (? <= 0 OR "
                "(SELECT COUNT(*) FROM tasks AS t WHERE t.parent_session_id = "
                f"tasks.parent_session_id AND t.status IN {_LIVE}) < ?)",
                (new_run_id, task_id, max_attempts, max_attempts, max_live, max_live))
            if snap is not None:
                db.execute("DELETE FROM debts WHERE task_id = ?", (task_id,))
            return snap

    def _claim_read_outside(self, task_id: str, new_run_id: str,
                            max_attempts: int) -> Task | None:
        """The mutant claim: the decision is made on a read taken before the lock."""
        row = self.get(task_id)
        if row.status is not TaskStatus.FAILED or not under_ceiling(row.attempt, max_attempts):
            return None
        with self.transaction() as db:
            db.execute("UPDATE tasks SET status = 'working', run_id = ?, attempt = ?, "
                       "summary = '', result = '', continuations = 0 WHERE id = ?",
                       (new_run_id, max(row.attempt, 1) + 1, task_id))
            db.execute("DELETE FROM debts WHERE task_id = ?", (task_id,))
            return self.get(task_id)

    def release_retry_claim(self, task_id: str, run_id: str, summary: str,
                            result: str) -> Task | None:
        with self.transaction() as db:
            snap = self._cas(db, task_id,
                             "status = 'failed', attempt = MAX(MAX(attempt, 1) - 1, 1), "
                             "summary = ?, result = ?",
                             "status = 'working' AND run_id = ?",
                             (summary, result, task_id, run_id))
            return self._owe(db, snap)

    def advance(self, task_id: str, run_id: str, next_run_id: str,
                state: Any = KEEP) -> Task | None:
        sets = ("run_id = ?, continuations = continuations + "
                "(CASE WHEN run_id = ? THEN 0 ELSE 1 END)")
        args: list = [next_run_id, next_run_id]
        if state is not KEEP:
            sets += ", state = ?"
            args.append(_dump(state))
        with self.transaction() as db:
            return self._cas(db, task_id, sets, "status = 'working' AND run_id = ?",
                             (*args, task_id, run_id))

    def mark_input_required(self, task_id: str, run_id: str) -> Task | None:
        with self.transaction() as db:
            return self._cas(db, task_id, "status = 'input_required'",
                             "status = 'working' AND run_id = ?", (task_id, run_id))

    def reclaim_working(self, task_id: str, run_id: str) -> Task | None:
        with self.transaction() as db:
            return self._cas(db, task_id, "status = 'working'",
                             "status = 'input_required' AND run_id = ?", (task_id, run_id))

    def fail_orphans(self) -> list[Task]:
        with self.transaction() as db:
            ids = [r[0] for r in db.execute(
                "SELECT id FROM tasks WHERE status = 'working' ORDER BY seq").fetchall()]
            out = []
            for tid in ids:
                snap = self._cas(db, tid, "status = 'failed', summary = ?, result = ?",
                                 "status = 'working'", (ORPHAN_SUMMARY, ORPHAN_SUMMARY, tid))
                if snap is not None:
                    out.append(self._owe(db, snap))
            return out

    def settle(self, task_id: str, run_id: str) -> bool:
        with self.transaction() as db:
            cur = db.execute("DELETE FROM debts WHERE task_id = ? AND run_id = ?",
                             (task_id, run_id))
            return cur.rowcount > 0

    def delete(self, task_id: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
            db.execute("DELETE FROM debts WHERE task_id = ?", (task_id,))

    def delete_session_tree(self, session_id: str) -> list[str]:
        with self.transaction() as db:
            doomed = [t.id for t in self.session_tree(session_id)]
            for tid in doomed:
                db.execute("DELETE FROM tasks WHERE id = ?", (tid,))
                db.execute("DELETE FROM debts WHERE task_id = ?", (tid,))
            return doomed

    def sessions(self) -> SqliteSessions:
        """The session repository over this database (it cascades on delete)."""
        return SqliteSessions(self)


class SqliteSessions:
    """Sessions beside the task table; ``delete`` is the whole-tree cascade in
    one transaction (lifecycle.delete.sql-repo)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def create(self, session: Session) -> Session:
        with self.store.transaction() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session.id,)).fetchone():
                raise Refused(f"sessions: duplicate session id {session.id}")
            (seq,) = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions").fetchone()
            db.execute("INSERT INTO sessions (id, seq, title, hidden, parent_id) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (session.id, seq, session.title, int(session.hidden), session.parent_id))
        return session

    def get(self, session_id: str) -> Session:
        rows = self.store._read("SELECT id, title, hidden, parent_id FROM sessions WHERE id = ?",
                                (session_id,))
        if not rows:
            raise SessionNotFound(session_id)
        sid, title, hidden, parent = rows[0]
        return Session(id=sid, title=title, hidden=bool(hidden), parent_id=parent)

    def list(self, include_hidden: bool = False) -> list[Session]:
        rows = self.store._read("SELECT id, title, hidden, parent_id FROM sessions ORDER BY seq")
        return [Session(id=i, title=t, hidden=bool(h), parent_id=p) for i, t, h, p in rows
                if include_hidden or not h]

    def delete(self, session_id: str) -> list[str]:
        with self.store.transaction() as db:
            rows = self.store.session_tree(session_id)
            self.store.delete_session_tree(session_id)
            gone = [session_id] + [r.child_session_id for r in rows
                                   if r.child_session_id != session_id]
            removed = []
            for sid in gone:
                if db.execute("DELETE FROM sessions WHERE id = ?", (sid,)).rowcount:
                    removed.append(sid)
            return removed
