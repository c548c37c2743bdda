"""Wake-up text: the seed's notification format, rendered from task snapshots.

Lives here: ``NOTIFICATION_PREFIX``, the retry hint, the closing guidance and
``format_notification``. Does not live here: when to deliver (host policy).
"""

from __future__ import annotations

from collections.abc import Sequence

from forge.lifecycle.records import Task, TaskStatus

NOTIFICATION_PREFIX = "[task-notification] "
RETRY_HINT = "(task_retry can resume a failed task from where it stopped)"
GUIDANCE = ("(Tell the person what happened. The work above is done — do not repeat or "
            "re-check it unless they ask.)")


def task_line(task: Task) -> str:
    """lifecycle.notices.task-line / .truncated-marker: one parseable line per task."""
    line = f'Task "{task.label}" ({task.id}) {task.status.value}.'
    if task.summary:
        line += f" Result: {task.summary}"
    if len(task.result.encode()) > len(task.summary.encode()):
        line += f" [truncated — call task_status({task.id}) for the full result]"
    return line


def format_notification(tasks: Sequence[Task]) -> str:
    """One message for a batch (lifecycle.notices.summary-batched); hint and guidance
    each on their own line (lifecycle.notices.own-lines / .retry-hint / .guidance)."""
    if not tasks:
        raise ValueError("nothing to notify")
    lines = [task_line(t) for t in tasks]
    lines[0] = NOTIFICATION_PREFIX + lines[0]
    if any(t.status is TaskStatus.FAILED for t in tasks):
        lines.append(RETRY_HINT)
    lines.append(GUIDANCE)
    return "\n".join(lines)
