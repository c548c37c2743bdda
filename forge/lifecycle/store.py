"""Task store: the ``Store`` protocol and the in-memory ``MemoryStore``.

Lives here: every row transition as one compare-and-set (create, finalize,
retry claim and its release, advance, pause and its reclaim, the restart
sweep), reads, deleting a row, and the task-tree cascade a session repository
owes. ``MemoryStore`` holds one re-entrant lock over every method, so each
transition is atomic under real threads as well as under interleaved calls.
Ids: a store mints them (``next_id``), so two Managers over one store never
mint the same one.
Does not live here: when to call them (``manager``), hooks,
the SQLite store (``sqlite_store``), the contract both pass (``contract``).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import attrs

from forge.lifecycle.errors import Refused
from forge.lifecycle.records import Debt, Task, TaskStatus
from forge.variation import declare

KEEP = object()  # sentinel: "leave State as recorded"

# Variation sites of the store's compare-and-set rules (forge.variation).  The
# reference store reads them; the SQLite store states the same predicates in
# SQL and has no sites, since the mutants run against the reference.
FINALIZE_NOT_RUN_BOUND = declare("lifecycle.finalize-not-run-bound", "lifecycle",
                                 "a finalize naming a stale run still wins")
FINALIZE_OVERWRITES_TERMINAL = declare("lifecycle.finalize-overwrites-terminal", "lifecycle",
                                       "a finalize overwrites a row that already ended")
CEILING_OUTSIDE_STORE = declare("lifecycle.retry-ceiling-outside-store", "lifecycle",
                                "the retry ceiling is checked only by the manager, not in "
                                "the store's claim")
CLAIM_ANY_STATUS = declare("lifecycle.retry-claim-any-status", "lifecycle",
                           "a retry claim does not check that the task is still failed")
ADVANCE_ANY_STATUS = declare("lifecycle.advance-any-status", "lifecycle",
                             "a continuation advances a row that is no longer working")
RECLAIM_ANY_STATUS = declare("lifecycle.reclaim-any-status", "lifecycle",
                             "an approval's resume reclaims a row that is no longer paused")
RELEASE_KEEPS_ATTEMPT = declare("lifecycle.release-keeps-attempt", "lifecycle",
                                "releasing a retry claim whose run never started keeps the "
                                "attempt it claimed")
SWEEP_FAILS_PAUSED = declare("lifecycle.sweep-fails-paused", "lifecycle",
                             "the restart sweep also fails rows paused on an approval")
CAP_NOT_IN_STORE = declare("lifecycle.cap-not-in-store", "lifecycle",
                           "the store's create and retry claim ignore the per-parent cap, "
                           "leaving it to each Manager's own lock")
ORPHAN_SUMMARY = "the process restarted while the task was running"


class NotFound(KeyError):
    """Unknown task id; every CAS answers it this way, never as "not won"."""

    def __str__(self) -> str:
        return "tasks: not found"


class CapReached(Exception):
    """A create refused because the parent already has ``max_live`` live tasks."""


class Store(Protocol):
    def create(self, task: Task, max_live: int = 0) -> Task: ...
    def get(self, task_id: str) -> Task: ...
    def by_child_session(self, session_id: str) -> Task | None: ...
    def list_by_parent(self, parent_session_id: str) -> list[Task]: ...
    def list_all(self) -> list[Task]: ...
    def finalize(self, task_id: str, run_id: str, status: TaskStatus, summary: str,
                 result: str, state: Any = KEEP) -> Task | None: ...
    def retry_claim(self, task_id: str, new_run_id: str, max_attempts: int,
                    max_live: int = 0) -> Task | None: ...
    def release_retry_claim(self, task_id: str, run_id: str, summary: str,
                            result: str) -> Task | None: ...
    def advance(self, task_id: str, run_id: str, next_run_id: str,
                state: Any = KEEP) -> Task | None: ...
    def mark_input_required(self, task_id: str, run_id: str) -> Task | None: ...
    def reclaim_working(self, task_id: str, run_id: str) -> Task | None: ...
    def fail_orphans(self) -> list[Task]: ...
    def list_non_terminal(self, parent_session_id: str) -> list[Task]: ...
    def delete(self, task_id: str) -> None: ...
    def session_tree(self, session_id: str) -> list[Task]: ...
    def delete_session_tree(self, session_id: str) -> list[str]: ...
    def owed(self) -> list[Debt]: ...
    def settle(self, task_id: str, run_id: str) -> bool: ...
    # Optional: ``next_id(prefix) -> str``, ids no other caller of the store gets
    # (without it a Manager counts in its own process).


def owes(status: TaskStatus) -> bool:
    """Which endings leave a wake-up owed: every terminal one but a cancellation,
    which is reported as delivered (lifecycle.report.cancel-is-delivered)."""
    return status.terminal and status is not TaskStatus.CANCELLED


def check_create(task: Task) -> None:
    if not task.id:
        raise Refused("tasks: Create requires an ID")


def duplicate(task_id: str) -> Refused:
    """The refusal of a create whose id is taken (the original's text)."""
    return Refused(f"tasks: duplicate task id {task_id}")


def check_final(status: Any) -> TaskStatus:
    try:
        status = TaskStatus(status)
    except ValueError:
        raise Refused(f"tasks: finalize needs a terminal status, got {status!r}") from None
    if not status.terminal:
        raise Refused(f"tasks: finalize needs a terminal status, got {status.value}")
    return status


def under_ceiling(attempt: int, max_attempts: int) -> bool:
    """The retry ceiling as a store predicate; attempt 0 reads as the first, and a
    ceiling of 0 or less means none."""
    return max_attempts <= 0 or max(attempt, 1) < max_attempts


def tree_of(rows: list[Task], session_id: str) -> list[Task]:
    """The rows a deleted session takes with it, in both roles, at any depth:
    rows whose parent or child session it is, then the rows under each of
    their child sessions, breadth first in creation order."""
    doomed: list[Task] = []
    seen: set[str] = set()
    frontier = [session_id]
    while frontier:
        sid = frontier.pop(0)
        for row in rows:
            if row.id in seen:
                continue
            if row.parent_session_id == sid or row.child_session_id == sid:
                seen.add(row.id)
                doomed.append(row)
                if row.child_session_id != sid:
                    frontier.append(row.child_session_id)
    return doomed


def _atomic(cls: type) -> type:
    """Wrap every public method of ``cls`` in ``self.lock`` (one rule, one place)."""
    for name, fn in list(vars(cls).items()):
        if name.startswith("_") or not callable(fn):
            continue

        def locked(self: Any, *args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
            with self.lock:
                return _fn(self, *args, **kwargs)
        locked.__name__, locked.__doc__ = fn.__name__, fn.__doc__
        locked.__wrapped__ = fn  # inspect.signature reads the method's own
        setattr(cls, name, locked)
    return cls


@_atomic
class MemoryStore:
    """Rows in a dict plus a creation counter; listings are ordered by ``seq``.

    A CAS returns the new snapshot when won and ``None`` when lost.
    """

    def __init__(self) -> None:
        # Insertion-ordered, and a transition replaces a row in place, so the
        # dict's order is creation order (the listings' order) without a sort.
        self._rows: dict[str, Task] = {}
        self._by_child: dict[str, list[str]] = {}  # child session -> task ids
        self._by_parent: dict[str, list[str]] = {}  # parent session -> task ids
        self._live: dict[str, dict[str, None]] = {}  # parent session -> live task ids
        self._debts: dict[str, Debt] = {}  # task id -> owed wake-up, in owing order
        self._seq = 0
        self._ids = 0  # next_id's counter
        # Re-entrant: a session repository holds it across a whole cascade.
        self.lock = threading.RLock()

    # -- reads -----------------------------------------------------------
    def get(self, task_id: str) -> Task:
        try:
            return self._rows[task_id]
        except KeyError:
            raise NotFound(task_id) from None

    def by_child_session(self, session_id: str) -> Task | None:
        ids = self._by_child.get(session_id)
        return self._rows[ids[0]] if ids else None

    def list_all(self) -> list[Task]:
        return list(self._rows.values())

    def list_by_parent(self, parent_session_id: str) -> list[Task]:
        """Newest first (lifecycle.status.listing)."""
        return [self._rows[i] for i in reversed(self._by_parent.get(parent_session_id, []))]

    def snapshot(self) -> tuple[tuple[Task, ...], tuple[Debt, ...], int]:
        """Everything the store holds: rows in creation order, debts in owing
        order, the id counter (``restore`` builds an equal store from it)."""
        return tuple(self._rows.values()), tuple(self._debts.values()), self._ids

    def next_id(self, prefix: str) -> str:
        """A fresh id, ``prefix`` then a count never repeated by this store (task,
        run and session ids share it: ``s1, t2, r3`` for a first spawn)."""
        self._ids += 1
        return f"{prefix}{self._ids}"

    # -- writes ----------------------------------------------------------
    def create(self, task: Task, max_live: int = 0) -> Task:
        """Insert a row; with ``max_live`` > 0, only while its parent has fewer live
        rows (the per-parent cap as one step, so it holds across processes too)."""
        check_create(task)
        if task.id in self._rows:
            raise duplicate(task.id)
        if self._full(task.parent_session_id, max_live):
            raise CapReached(task.parent_session_id)
        self._seq += 1
        row = attrs.evolve(task, seq=self._seq)
        self._rows[row.id] = row
        self._by_child.setdefault(row.child_session_id, []).append(row.id)
        self._by_parent.setdefault(row.parent_session_id, []).append(row.id)
        self._track(row)
        return row

    def _full(self, parent_session_id: str, max_live: int) -> bool:
        """The per-parent cap as a store predicate (0: no cap)."""
        return (max_live > 0 and not CAP_NOT_IN_STORE.on
                and len(self._live.get(parent_session_id, {})) >= max_live)

    def _track(self, row: Task) -> None:
        """Keep the per-parent set of live rows (the cap's count) up to date."""
        live = self._live.setdefault(row.parent_session_id, {})
        if row.status.terminal:
            live.pop(row.id, None)
        else:
            live[row.id] = None

    def _forget(self, task_id: str) -> None:
        row = self._rows.pop(task_id, None)
        self._debts.pop(task_id, None)
        if row is None:
            return
        self._live.get(row.parent_session_id, {}).pop(task_id, None)
        for index, key in ((self._by_child, row.child_session_id),
                           (self._by_parent, row.parent_session_id)):
            index[key].remove(task_id)
            if not index[key]:
                del index[key]

    def _swap(self, row: Task, **changes: Any) -> Task:
        new = attrs.evolve(row, **changes)
        self._rows[row.id] = new
        self._track(new)
        return new

    def finalize(self, task_id, run_id, status, summary, result, state=KEEP):
        """lifecycle.finalize.cas / .run-bound / lifecycle.store.finalize-takes-state:
        status, result (and State) in one write, only while non-terminal on ``run_id``."""
        status = check_final(status)
        row = self.get(task_id)
        if ((row.status.terminal and not FINALIZE_OVERWRITES_TERMINAL.on)
                or (row.run_id != run_id and not FINALIZE_NOT_RUN_BOUND.on)):
            return None
        changes: dict[str, Any] = {"status": status, "summary": summary, "result": result}
        if state is not KEEP:
            changes["state"] = state
        return self._owe(self._swap(row, **changes))

    def _owe(self, snap: Task) -> Task:
        if owes(snap.status):
            self._debts.pop(snap.id, None)
            self._debts[snap.id] = Debt(snap.id, snap.run_id, snap.status, snap.summary)
        return snap

    def retry_claim(self, task_id, new_run_id, max_attempts, max_live=0):
        """lifecycle.retry.cas / .ceiling-in-store: failed -> working, under the
        attempt ceiling and (``max_live`` > 0) while the parent has a free slot."""
        row = self.get(task_id)
        if ((row.status is not TaskStatus.FAILED and not CLAIM_ANY_STATUS.on)
                or not (under_ceiling(row.attempt, max_attempts) or CEILING_OUTSIDE_STORE.on)):
            return None
        if self._full(row.parent_session_id, max_live):
            return None
        self._debts.pop(task_id, None)  # lifecycle.durable.drop-in-retry-claim
        return self._swap(row, status=TaskStatus.WORKING, run_id=new_run_id,
                          attempt=max(row.attempt, 1) + 1, summary="", result="",
                          continuations=0)

    def release_retry_claim(self, task_id, run_id, summary, result):
        """Undo a won claim whose run never started: back to failed, attempt rolled down."""
        row = self.get(task_id)
        if row.status is not TaskStatus.WORKING or row.run_id != run_id:
            return None
        attempt = row.attempt if RELEASE_KEEPS_ATTEMPT.on else max(1, row.attempt - 1)
        return self._owe(self._swap(row, status=TaskStatus.FAILED,
                                    attempt=attempt, summary=summary,
                                    result=result))

    def advance(self, task_id, run_id, next_run_id, state=KEEP):
        """lifecycle.continuation.advance-cas / .same-run-rewrites-state / .attempt-untouched."""
        row = self.get(task_id)
        if (row.status is not TaskStatus.WORKING and not ADVANCE_ANY_STATUS.on) or row.run_id != run_id:
            return None
        changes: dict[str, Any] = {"run_id": next_run_id}
        if state is not KEEP:
            changes["state"] = state
        if next_run_id != run_id:
            changes["continuations"] = row.continuations + 1
        return self._swap(row, **changes)

    def mark_input_required(self, task_id, run_id):
        """Pause (run-bound): working on ``run_id`` -> input_required."""
        row = self.get(task_id)
        if row.status is not TaskStatus.WORKING or row.run_id != run_id:
            return None
        return self._swap(row, status=TaskStatus.INPUT_REQUIRED)

    def reclaim_working(self, task_id, run_id):
        """An approval resumes the paused run: input_required -> working, only while
        the row still names ``run_id`` (a stop that claimed first wins)."""
        row = self.get(task_id)
        if ((row.status is not TaskStatus.INPUT_REQUIRED and not RECLAIM_ANY_STATUS.on)
                or row.run_id != run_id):
            return None
        return self._swap(row, status=TaskStatus.WORKING)

    def list_non_terminal(self, parent_session_id):
        """The parent's live rows (working or paused), oldest first."""
        rows = [self._rows[i] for i in self._live.get(parent_session_id, {})]
        return sorted(rows, key=lambda t: t.seq)

    def delete(self, task_id):
        """Remove one row (and what it owes); an unknown id is not an error."""
        self._forget(task_id)

    def owed(self):
        """Every wake-up still owed, oldest first."""
        return list(self._debts.values())

    def settle(self, task_id, run_id):
        """The model has the result of ``run_id``: drop that debt (only that one -
        a delivery of an older attempt settles nothing newer)."""
        debt = self._debts.get(task_id)
        if debt is None or debt.run_id != run_id:
            return False
        del self._debts[task_id]
        return True

    def session_tree(self, session_id):
        return tree_of(self.list_all(), session_id)

    def fail_orphans(self):
        """lifecycle.restart.fails-working / .keeps-paused / .fails-at-step."""
        out = []
        for row in self.list_all():
            if row.status is TaskStatus.WORKING or (
                    SWEEP_FAILS_PAUSED.on and row.status is TaskStatus.INPUT_REQUIRED):
                out.append(self._owe(self._swap(row, status=TaskStatus.FAILED,
                                                summary=ORPHAN_SUMMARY,
                                                result=ORPHAN_SUMMARY)))
        return out

    def delete_session_tree(self, session_id):
        """The cascade a repository owes on deleting a parent (lifecycle.delete.tree-must-go):
        its rows in both roles and every task row below them at any depth."""
        doomed = [t.id for t in tree_of(self.list_all(), session_id)]
        for tid in doomed:
            self._forget(tid)
        return doomed


def restore(rows: tuple[Task, ...] = (), debts: tuple[Debt, ...] = (), ids: int = 0) -> MemoryStore:
    """A ``MemoryStore`` holding ``rows`` (in this creation order, as they are),
    ``debts`` (in this owing order) and the id counter at ``ids``: what the
    history checker steps the sequential specification from."""
    store = MemoryStore()
    for row in rows:
        store.create(row)
    for debt in debts:
        store._debts[debt.task_id] = debt
    store._ids = ids
    return store
