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


#: Every character ``str.splitlines`` (and so a line-oriented consumer) treats
#: as a line boundary; none may survive inside a task line.
_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_FLATTEN = str.maketrans({c: " " for c in _LINE_BREAKS} | {'"': "'"})


def flatten(text: str) -> str:
    """One line, no double quote: line breaks become spaces, ``"`` becomes ``'``."""
    return text.translate(_FLATTEN)


def quote(text: str) -> str:
    """The label as a double-quoted literal: backslash, tab and every other
    unprintable character escaped, so the closing quote is the label's end."""
    out = []
    for ch in flatten(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def was_cut(task: Task) -> bool:
    """The summary is not the whole result: only then is there more to fetch.

    Compared as text, not by length: a summary keeps no surrounding
    whitespace, and a cut summary carries an ellipsis that can make it as
    long as the result it shortened."""
    return bool(task.summary) and bool(task.result.strip()) and (
        task.summary != task.result.strip())


def task_line(task: Task) -> str:
    """lifecycle.notices.task-line / .truncated-marker: one parseable line per task."""
    line = f"Task {quote(task.label)} ({task.id}) {task.status.value}."
    if task.summary:
        line += f" Result: {flatten(task.summary)}"
    if was_cut(task):
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
