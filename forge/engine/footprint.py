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

Quotas.  A run-wide quota a step can use up - the store's bytes, files,
operations and bytes moved, the section entries, the kept bytes (notes,
results, error texts, task data), the scheduler's steps, the Lua
instructions - makes two steps that touch nothing in common still not
commute: the one that comes second may be the one that passes it, which
ends the run on that step.  `Quotas` reads them at every decision, and a
segment that used a quota and left it past half its limit (the store's
bytes and files: whose peak so far is past half) is `GLOBAL`.  That is
sound, and far from a quota costs nothing: a step that is not global left
every quota it used at or under half, so while a pick sleeps, every quota
stays at or under half at the end of each step that is not global, and
the sleeping step, which used at most half (its own rise, read from its
run), cannot pass the limit when it runs later; nor could any of those
steps have passed it had it run first.  Keying every consumer by its quota
(`quota:store`) would be sound too, but every store operation and every
chain step uses some quota (operations, moved bytes, steps), so it would
make every step depend on every other and the reduction would prune
nothing.  The log's count and bytes need no reading: every log line
already touches `log`; the task count is used only by spawns, which are
global.  Lua's memory is not read: what it holds depends on when the
collector last ran, so a reading would make the search depend on the
runtime's history (a stated limit of the reduction, beside it).

What does not live here: the segments themselves, the reads no record
shows and the decisions' own keys (`forge.sim.orders`), and what
independence means (`forge.sim.reduction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from forge.sim.orders import GLOBAL
from forge.store import MAX_STORE_MOVED

#: Events of a chain entering its section and starting a block: they change
#: only what that task's own status shows (its section), so they are keyed
#: by the task.  Admission, ending and delivery events stay global.
_ENTRY_EVENTS = frozenset({"section_started", "lua_shared_load_started",
                           "lua_shared_load_succeeded", "lua_chunk_started"})
#: Trace records a segment may hold and still be described by keys.
_QUIET_RECORDS = frozenset({"step", "call", "harness", "event"})


class Quotas:
    """One run's quotas, read at each decision (`reading`); `touched` tells
    from two readings whether a segment used one past half its limit."""

    def __init__(self, store: Any, walk: Any, scheduler: Any, lua: Any,
                 max_instructions: int) -> None:
        self._store, self._walk, self._scheduler, self._lua = store, walk, scheduler, lua
        #: Per reading's position: its limit, and the position whose change
        #: says the segment used it (the store's peaks move only when they
        #: grow, so any store operation counts as using them).
        self.limits = (store.max_ops, MAX_STORE_MOVED, store.max_bytes, store.max_files,
                       walk.config.max_entries, walk.kept.limit, scheduler.step_limit,
                       max_instructions)
        self.used_by = (0, 1, 0, 0, 4, 5, 6, 7)
        self.final: tuple[int, ...] | None = None
        self._instructions = 0

    def reading(self) -> tuple[int, ...]:
        """What each quota has used so far; after `settle`, the final reading
        (the runtime has gone back and reads another run's count)."""
        if self.final is not None:
            return self.final
        store, walk = self._store, self._walk
        self._instructions = self._lua.fn.instructions_used()
        return (store.ops, store.moved, store.peak_bytes, store.peak_files, walk.entries,
                walk.kept.kept, self._scheduler.steps, self._instructions)

    def settle(self, readable: bool) -> None:
        """The run has ended: keep its last reading (with the instructions
        last read, when its runtime is not `readable`: the run crashed)."""
        if readable:
            self.final = self.reading()
        else:
            store, walk = self._store, self._walk
            self.final = (store.ops, store.moved, store.peak_bytes, store.peak_files,
                          walk.entries, walk.kept.kept, self._scheduler.steps,
                          self._instructions)

    def touched(self, records: Sequence[dict], events: Sequence[tuple],
                before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> set[str]:
        """`touched`, and `GLOBAL` when the segment between readings `before`
        and `after` used a quota and left it past half its limit."""
        keys = touched(records, events)
        if before is not None and after is not None and before != after:
            for n, limit in enumerate(self.limits):
                if 2 * after[n] > limit and after[self.used_by[n]] != before[self.used_by[n]]:
                    keys.add(GLOBAL)
                    break
        return keys


def touched(records: Sequence[dict], events: Sequence[tuple]) -> set[str]:
    """The keys a segment's trace `records` and `events` (the run's
    `(kind, ..., task, ...)` tuples) touched, `GLOBAL` among them when they
    did anything the keys cannot describe (its quotas: `Quotas.touched`)."""
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
