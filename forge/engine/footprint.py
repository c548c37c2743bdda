"""A segment's footprint: what the engine's own records say a stretch of a run touched.

In orders mode (`forge.sim.orders`) each decision starts a segment, and the
partial-order reduction (`forge.sim.reduction`) tells two picks apart by
the keys their segments touched.  The simulator knows nothing of prompts,
so it asks the engine to read its own trace records and events: `touched`
gives the keys of a segment's records and events - `chain:ID` for a chain
that stepped, `path:P` (`path:*` for a glob) for a store operation,
`task:ID` for a task's log lines, store outcomes and section entry, `log`
for a log line - and `GLOBAL` for anything the keys cannot describe (a task
ended, spawned or was admitted, a wait timed out, a call that is not a
store operation, ...).

What does not live here: the segments themselves, the reads no record
shows and the decisions' own keys (`forge.sim.orders`), and what
independence means (`forge.sim.reduction`).
"""

from __future__ import annotations

from collections.abc import Sequence

from forge.sim.orders import GLOBAL

#: Events of a chain entering its section and starting a block: they change
#: only what that task's own status shows (its section), so they are keyed
#: by the task.  Admission, ending and delivery events stay global.
_ENTRY_EVENTS = frozenset({"section_started", "lua_shared_load_started",
                           "lua_shared_load_succeeded", "lua_chunk_started"})
#: Trace records a segment may hold and still be described by keys.
_QUIET_RECORDS = frozenset({"step", "call", "harness", "event"})


def touched(records: Sequence[dict], events: Sequence[tuple]) -> set[str]:
    """The keys a segment's trace `records` and `events` (the run's
    `(kind, ..., task, ...)` tuples) touched, `GLOBAL` among them when they
    did anything the keys cannot describe."""
    keys: set[str] = set()
    for record in records:
        what = record["what"]
        if what not in _QUIET_RECORDS:
            keys.add(GLOBAL)
        elif what == "step":
            keys.add(f"chain:{record['chain']}")
        elif what == "call" and not str(record.get("op", "")).startswith("store."):
            keys.add(GLOBAL)
        elif what == "harness":
            if record.get("op") != "store":
                keys.add(GLOBAL)
            else:
                path = record.get("path")
                keys.add(f"path:{path}" if path is not None
                         and record.get("store") != "glob" else "path:*")
    for kind, _, task, _, _ in events:
        if kind == "lua":
            keys.add("log")
            keys.add(f"task:{task}")
        elif kind.startswith("store_") or kind in _ENTRY_EVENTS:
            keys.add(f"task:{task}")
        else:
            keys.add(GLOBAL)
    return keys
