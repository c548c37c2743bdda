"""The texts the model's tools answer with: a task card and the listing.

Lives here: ``ToolResult`` (the value every tool returns), ``tool_result``
(one task's card, the public ``tasks.ToolResult`` a host's own spawn tool
reuses), ``refusal`` (a refused call with the task as it stands) and
``listing`` (task_status without an id).
Does not live here: calling the Manager (``tools``), the wake-up text
(``notices``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from forge.lifecycle.notices import flatten
from forge.lifecycle.records import Info, Task

#: Beside every live task of a listing: the model must not redo what runs on.
STILL_WORKING = "(still working — do not redo its work; you will be told when it finishes)"
NO_TASKS = "no tasks in this conversation"
LISTING_HEAD = "{n} task(s), newest first (task_status with the id fetches a full result):"


@attrs.frozen
class ToolResult:
    """What a tool answers. ``is_error``: the model should read it as news that
    the call did not do what it asked (a refusal, bad arguments)."""

    text: str
    is_error: bool = False
    display: str = "task"
    details: Any = None

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls(text=text, is_error=True, display="error")


def describe(info: Info, progress: str = "") -> str:
    """The card's text: id and status, then what is known, one field a line."""
    lines = [f"task_id: {info.task_id}", f"status: {info.status.value}"]
    if info.attempt > 1:
        lines.append(f"attempt: {info.attempt}")
    for key, value in (("label", info.label), ("kind", info.kind), ("agent", info.agent),
                       ("progress", progress)):
        if value:
            lines.append(f"{key}: {value}")
    result = info.result or info.summary
    if result:
        lines.append(f"result: {result}")  # the FULL result (lifecycle.status.full-result)
    return "\n".join(lines)


def _details(info: Info) -> dict:
    return {"task_id": info.task_id, "task_label": info.label,
            "task_status": info.status.value, "task_agent": info.agent,
            "task_attempt": info.attempt, "task_result": info.result or info.summary}


def tool_result(info: Info, progress: str = "") -> ToolResult:
    """One task's card (the seed's ``tasks.ToolResult``)."""
    return ToolResult(text=describe(info, progress), details=_details(info))


def refusal(error: str, info: Info, progress: str = "", is_error: bool = True) -> ToolResult:
    """A refused call that still shows the task: the reason, then the card."""
    return ToolResult(text=f"{error}\n{describe(info, progress)}", is_error=is_error,
                      details=_details(info))


def listing(tasks: Sequence[Task], progress: Any) -> str:
    """task_status without an id: one line per task, newest first as given,
    each live one flagged (lifecycle.status.listing). ``progress(info)`` is the
    host's progress line for a task, or "" (lifecycle.status.progress)."""
    if not tasks:
        return NO_TASKS
    lines = [LISTING_HEAD.format(n=len(tasks))]
    for t in tasks:
        info = Info.of(t)
        line = f"- {t.id}: {t.status.value}"
        for part in (t.kind, flatten(t.label)):
            if part:
                line += f" · {part}"
        if info.attempt > 1:
            line += f" · attempt {info.attempt}"
        step = progress(info)
        if step:
            line += f" · {flatten(step)}"
        if t.summary:  # already cut to the summary limit when it was recorded
            line += f" — {flatten(t.summary)}"
        if not t.status.terminal:
            line += f" {STILL_WORKING}"
        lines.append(line)
    return "\n".join(lines)
