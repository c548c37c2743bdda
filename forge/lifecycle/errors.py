"""Refusals of the lifecycle Manager, with the exact texts callers see.

Lives here: ``TaskError`` (a refused call, carrying the task as it stands when
the refusal is about one) and ``LookupFailed``. ``NotFound`` lives with the
store that raises it (``store``).
"""

from __future__ import annotations

from typing import Any


class TaskError(Exception):
    """A refused Manager operation; ``str`` is the exact user-facing text.

    ``task`` is the row as it stands when the refusal concerns an existing
    task (a retry refused or lost, a stop of a finished task), else None."""

    def __init__(self, text: str, task: Any = None) -> None:
        super().__init__(text)
        self.task = task


class LookupFailed(TaskError):
    """The store could not say whether a session is a task's: not "not a task"
    (lifecycle.depth.lookup-error-refuses)."""
