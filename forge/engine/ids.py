"""Task id paths: `0`, `0.2`, `0.2.1`.

An id is one or more plain decimal components, each 0..4294967295, joined by
single dots.  Spawn order is the order of ids compared component by
component as numbers, so `0.9` sorts before `0.10`.
"""

from __future__ import annotations

import re

MAX_COMPONENT = 4294967295
_ID = re.compile(r"(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*")


def is_task_id(text: str) -> bool:
    if not _ID.fullmatch(text):
        return False
    return all(int(part) <= MAX_COMPONENT for part in text.split("."))


def id_key(task_id: str) -> tuple[int, ...]:
    """Sort key giving spawn order."""
    return tuple(int(p) for p in task_id.split("."))


def child(parent: str, index: int) -> str:
    return f"{parent}.{index}"


def not_an_id_message(text: str) -> str:
    return f"`{text}` is not a task id: required a dot-separated path such as `0.1`"
