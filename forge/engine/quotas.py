"""The run-wide quota on what a run keeps of the prompt's values.

A run keeps, outside Lua's capped heap, values the prompt hands it: each
task's result, the text of every error that ends a chain, each task's note,
and the data a `task_started` event records (the task's input, item and a
copy of the owner's `var`).  Lua's memory cap bounds none of them once they
are Python's, so thousands of tasks each returning (or failing with, or
spawning under a `var` of) tens of megabytes reached gigabytes.  This
quota bounds their sum over the run; past it the run ends as `Budget`.

What lives here: the quota, its message and how a value is sized.  What does
not: the other budgets (instructions and memory in `forge.lua.runtime`, logs,
steps in `kernel`, tasks in `tasks`, section entries in `walk`, their bounds
in `forge.engine.run.RunConfig`, the store in `forge.store`) and ending the
run (the context's `Budget.abort`, which the walk answers).
"""

from __future__ import annotations

from typing import Any

#: Bytes of results, error messages, notes and task data one run may keep.
DEFAULT_MAX_KEPT_BYTES = 128 * 1024 * 1024
#: What one list or object entry costs beyond its text: the conversion's
#: work and a Python reference, so a table of a million small numbers is not
#: free.
ENTRY_BYTES = 16


class KeptQuota:
    """The running sum of what a run keeps, against its limit."""

    def __init__(self, limit: int = DEFAULT_MAX_KEPT_BYTES) -> None:
        self.limit = limit
        self.kept = 0

    def take(self, nbytes: int, what: str) -> str | None:
        """Count `nbytes` more kept for `what`: None while within the quota,
        else the message the run ends with."""
        self.kept += nbytes
        if self.kept <= self.limit:
            return None
        return (f"result budget exhausted: the run's results, error messages, notes and task "
                f"data would take more than {self.limit:,} bytes ({what})")


def data_size(value: Any, entry: int = ENTRY_BYTES) -> int:
    """The bytes JSON-like data (str, bytes, numbers, lists, dicts) is counted
    as, each list or object entry costing `entry` beyond its text.  One loop
    over an explicit stack: a spawn sizes a small tuple on every call."""
    total, todo = 0, [value]
    while todo:
        value = todo.pop()
        if value is None:           # counts nothing: a spawn's absent input and item
            continue
        if isinstance(value, (str, bytes)):
            total += len(value)
        elif isinstance(value, dict):
            total += entry * len(value) + sum(map(len, value))
            todo += value.values()
        elif isinstance(value, (list, tuple)):
            total += entry * len(value)
            todo += value
        else:
            total += entry
    return total
