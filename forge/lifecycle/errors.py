"""Refusals of the lifecycle Manager, with the exact texts callers see.

Lives here: ``TaskError`` (a refused call, carrying the task as it stands when
the refusal is about one), ``LookupFailed`` and ``Refused`` (a store or
session repository refusing a write that is wrong in itself). ``NotFound``
lives with the store that raises it (``store``).
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


class Refused(ValueError):
    """A store or session repository refused a write that is wrong in itself (an
    empty or duplicate id, an ending that is not terminal); ``str`` is the
    one-line reason. A ``ValueError``, so a store author's own refusals of the
    same writes (plain ``ValueError``) pass the contract too."""
