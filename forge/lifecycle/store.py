"""Task store: the ``Store`` protocol and a deterministic in-memory ``MemoryStore``.

Lives here: every row transition as one compare-and-set (create, finalize,
retry claim and its release, advance, pause, the restart sweep) plus reads and
the delete cascade a session repository owes. Each method mutates at most one
snapshot swap, so a caller that interleaves calls sees atomic transitions.
Does not live here: when to call them (``manager``), hooks, id generation.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from forge.lifecycle.records import Task, TaskStatus

KEEP = object()  # sentinel: "leave State as recorded"
ORPHAN_SUMMARY = "the process restarted while the task was running"


class NotFound(KeyError):
    """Unknown task id; every CAS answers it this way, never as "not won"."""

    def __str__(self) -> str:
        return "tasks: not found"


class Store(Protocol):
    def create(self, task: Task) -> Task: ...
    def get(self, task_id: str) -> Task: ...
    def by_child_session(self, session_id: str) -> Task | None: ...
    def list_by_parent(self, parent_session_id: str) -> list[Task]: ...
    def list_all(self) -> list[Task]: ...
    def finalize(self, task_id: str, run_id: str, status: TaskStatus, summary: str,
                 result: str, state: Any = KEEP) -> Task | None: ...
    def retry_claim(self, task_id: str, new_run_id: str, max_attempts: int) -> Task | None: ...
    def release_retry_claim(self, task_id: str, run_id: str, summary: str,
                            result: str) -> Task | None: ...
    def advance(self, task_id: str, run_id: str, next_run_id: str,
                state: Any = KEEP) -> Task | None: ...
    def mark_input_required(self, task_id: str, run_id: str) -> Task | None: ...
    def fail_orphans(self) -> list[Task]: ...
    def delete_session_tree(self, session_id: str) -> list[str]: ...


class MemoryStore:
    """Rows in a dict plus a creation counter; listings are ordered by ``seq``.

    A CAS returns the new snapshot when won and ``None`` when lost.
    """

    def __init__(self) -> None:
        self._rows: dict[str, Task] = {}
        self._seq = 0

    # -- reads -----------------------------------------------------------
    def get(self, task_id: str) -> Task:
        try:
            return self._rows[task_id]
        except KeyError:
            raise NotFound(task_id) from None

    def by_child_session(self, session_id: str) -> Task | None:
        for row in self.list_all():
            if row.child_session_id == session_id:
                return row
        return None

    def list_all(self) -> list[Task]:
        return sorted(self._rows.values(), key=lambda t: t.seq)

    def list_by_parent(self, parent_session_id: str) -> list[Task]:
        """Newest first (lifecycle.status.listing)."""
        rows = [t for t in self.list_all() if t.parent_session_id == parent_session_id]
        return rows[::-1]

    # -- writes ----------------------------------------------------------
    def create(self, task: Task) -> Task:
        if task.id in self._rows:
            raise ValueError(f"tasks: duplicate id {task.id}")
        self._seq += 1
        row = attrs.evolve(task, seq=self._seq)
        self._rows[row.id] = row
        return row

    def _swap(self, row: Task, **changes: Any) -> Task:
        new = attrs.evolve(row, **changes)
        self._rows[row.id] = new
        return new

    def finalize(self, task_id, run_id, status, summary, result, state=KEEP):
        """lifecycle.finalize.cas / .run-bound / lifecycle.store.finalize-takes-state:
        status, result (and State) in one write, only while non-terminal on ``run_id``."""
        if not TaskStatus(status).terminal:
            raise ValueError(f"finalize needs a terminal status, got {status}")
        row = self.get(task_id)
        if row.status.terminal or row.run_id != run_id:
            return None
        changes: dict[str, Any] = {"status": TaskStatus(status), "summary": summary,
                                   "result": result}
        if state is not KEEP:
            changes["state"] = state
        return self._swap(row, **changes)

    def retry_claim(self, task_id, new_run_id, max_attempts):
        """lifecycle.retry.cas / .ceiling-in-store: failed -> working, under the cap."""
        row = self.get(task_id)
        if row.status is not TaskStatus.FAILED or row.attempt >= max_attempts:
            return None
        return self._swap(row, status=TaskStatus.WORKING, run_id=new_run_id,
                          attempt=row.attempt + 1, summary="", result="", continuations=0)

    def release_retry_claim(self, task_id, run_id, summary, result):
        """Undo a won claim whose run never started: back to failed, attempt rolled down."""
        row = self.get(task_id)
        if row.status is not TaskStatus.WORKING or row.run_id != run_id:
            return None
        return self._swap(row, status=TaskStatus.FAILED, attempt=max(1, row.attempt - 1),
                          summary=summary, result=result)

    def advance(self, task_id, run_id, next_run_id, state=KEEP):
        """lifecycle.continuation.advance-cas / .same-run-rewrites-state / .attempt-untouched."""
        row = self.get(task_id)
        if row.status is not TaskStatus.WORKING or row.run_id != run_id:
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

    def fail_orphans(self):
        """lifecycle.restart.fails-working / .keeps-paused / .fails-at-step."""
        out = []
        for row in self.list_all():
            if row.status is TaskStatus.WORKING:
                out.append(self._swap(row, status=TaskStatus.FAILED, summary=ORPHAN_SUMMARY,
                                      result=ORPHAN_SUMMARY))
        return out

    def delete_session_tree(self, session_id):
        """The cascade a repository owes on deleting a parent (lifecycle.delete.tree-must-go):
        its rows in both roles and every task row below them at any depth."""
        doomed: list[str] = []
        frontier = [session_id]
        while frontier:
            sid = frontier.pop(0)
            for row in self.list_all():
                if row.id in doomed:
                    continue
                if row.parent_session_id == sid or row.child_session_id == sid:
                    doomed.append(row.id)
                    if row.child_session_id != sid:
                        frontier.append(row.child_session_id)
        for tid in doomed:
            del self._rows[tid]
        return doomed
