"""Session repositories: where a task's hidden child session lives, and who
deletes the task tree with a parent.

Lives here: the ``Session`` record, the ``SessionRepo`` protocol and
``MemorySessions``. Built without a store it removes only the session it is
asked to delete (like the original's in-memory and file repositories, whose
host must remove task rows and child sessions itself); built over a
``MemoryStore`` it holds both tables and its ``delete`` removes the whole tree
- the session, its task rows in both roles and every hidden session below
them, at any depth - under the store's lock, as one step
(lifecycle.delete.repo-owns-cascade). The SQLite repository is in
``sqlite_store``.
Does not live here: stopping the tree before a delete (``Manager.stop_tree``).
"""

from __future__ import annotations

from typing import Protocol

import attrs

from forge.lifecycle.errors import Refused
from forge.lifecycle.store import MemoryStore


class SessionNotFound(KeyError):
    def __str__(self) -> str:
        return "sessions: not found"


@attrs.frozen
class Session:
    """A conversation. A task's child session is ``hidden``: it appears in no
    default listing, only under its parent (``parent_id``)."""

    id: str
    title: str = ""
    hidden: bool = False
    parent_id: str = ""


class SessionRepo(Protocol):
    def create(self, session: Session) -> Session: ...
    def get(self, session_id: str) -> Session: ...
    def list(self, include_hidden: bool = False) -> list[Session]: ...
    def delete(self, session_id: str) -> list[str]:
        """Remove the session (and what this repository owns with it); the ids of
        every session removed, the asked one first."""
        ...


class MemorySessions:
    """Sessions in creation order; a cascading repository when given the store."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self._sessions: dict[str, Session] = {}
        self.store = store

    def create(self, session: Session) -> Session:
        if session.id in self._sessions:
            raise Refused(f"sessions: duplicate session id {session.id}")
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None

    def list(self, include_hidden: bool = False) -> list[Session]:
        return [s for s in self._sessions.values() if include_hidden or not s.hidden]

    def delete(self, session_id: str) -> list[str]:
        if self.store is None:
            return [session_id] if self._sessions.pop(session_id, None) else []
        with self.store.lock:  # lifecycle.delete.sql-repo's "one step", in memory
            rows = self.store.session_tree(session_id)
            self.store.delete_session_tree(session_id)
            gone = [session_id] + [r.child_session_id for r in rows
                                   if r.child_session_id != session_id]
            removed = [sid for sid in gone if self._sessions.pop(sid, None) is not None]
            return removed
