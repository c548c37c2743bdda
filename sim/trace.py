"""The trace: every scheduling step and harness exchange, as JSON lines.

The trace is what replay and the determinism check compare, so its bytes must
depend only on the run's inputs and choices: records are plain JSON with
sorted keys, times are integer nanoseconds, and nothing in them comes from an
address, a hash seed or the wall clock.

`emit` is the one place a record is made, so it is also where oracles that
check a run while it happens (`forge.conformance.oracles.watchers`) are fed:
`observe(watchers)` hands each later record to every watcher, and each
problem a watcher returns becomes a `Violation` pinned to that record.  A
trace nobody observes pays nothing: `observe` swaps in the feeding `emit`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Protocol

import attrs


#: One encoder for every record: `json.dumps` with options builds a new one a call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
#: The C encoder `_ENCODER.encode` builds for each value, built once (the
#: same text: a test compares them); without the C accelerator, `encode`.
_C_ENCODER = (None if json.encoder.c_make_encoder is None else json.encoder.c_make_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", True, False, True))


def canonical_json(value: Any) -> str:
    if _C_ENCODER is None or not isinstance(value, dict):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODER(value, 0))


class Watcher(Protocol):
    """An incremental oracle: sees each record as it is made.  A problem is
    a string, or `Hot(problem, since)` for a state that had to be left and
    never was (a liveness monitor's), naming the record it began at."""

    def see(self, record: dict) -> Iterable[str | Hot]: ...


@attrs.frozen
class Hot:
    """A liveness problem: a hot state entered at record `since` (instant
    `since_t`) and not left within its bound."""

    problem: str
    since: int
    since_t: int


@attrs.frozen
class Violation:
    """A watcher's problem, at the record (index `i`, instant `t`) that showed it."""

    i: int
    t: int
    problem: str
    #: The watcher's class name, for tallies of which oracle fired.
    by: str = ""
    #: For a liveness problem: the record and instant its hot state began
    #: (the story and the timeline mark the suffix from there).
    hot_from: int | None = None
    hot_from_t: int | None = None

    def text(self) -> str:
        if self.hot_from is not None:
            return (f"{self.problem} (hot from trace record {self.hot_from}, "
                    f"t={(self.hot_from_t or 0) / 1e9:g}s, to record {self.i}, "
                    f"t={self.t / 1e9:g}s)")
        return f"{self.problem} (trace record {self.i}, t={self.t / 1e9:g}s)"


class Trace:
    def __init__(self) -> None:
        self.records: list[dict] = []
        self.watchers: tuple[Watcher, ...] = ()
        self.violations: list[Violation] = []
        #: What steps read that no record shows, as (records before it,
        #: footprint key): a status read of a task (`task:ID`).  Not part of
        #: the trace's bytes; orders mode's footprints read it
        #: (`forge.sim.orders`), so that partial-order reduction sees a step
        #: that observes another task's note or state as dependent on it.
        self.reads: list[tuple[int, str]] = []

    def emit(self, now: int, what: str, **fields: Any) -> None:
        record = {"i": len(self.records), "t": now, "what": what}
        record.update(fields)
        self.records.append(record)

    def read(self, key: str) -> None:
        """A step read what footprint `key` names (see `reads`)."""
        self.reads.append((len(self.records), key))

    def observe(self, watchers: Iterable[Watcher]) -> None:
        """Feed every record from now on to each of `watchers`."""
        self.watchers = tuple(watchers)
        if self.watchers:
            self.emit = self._emit_watched      # type: ignore[method-assign]

    def _emit_watched(self, now: int, what: str, **fields: Any) -> None:
        record = {"i": len(self.records), "t": now, "what": what}
        record.update(fields)
        self.records.append(record)
        for watcher in self.watchers:
            for problem in watcher.see(record):
                if isinstance(problem, Hot):
                    self.violations.append(Violation(record["i"], now, problem.problem,
                                                     type(watcher).__name__, problem.since,
                                                     problem.since_t))
                else:
                    self.violations.append(Violation(record["i"], now, problem,
                                                     type(watcher).__name__))

    def lines(self) -> str:
        return "".join(canonical_json(r) + "\n" for r in self.records)

    def sha256(self) -> str:
        digest, records = hashlib.sha256(), self.records
        for start in range(0, len(records), 4096):        # one update per slice, in bounded memory
            digest.update("".join(canonical_json(r) + "\n"
                                  for r in records[start:start + 4096]).encode("utf-8"))
        return digest.hexdigest()
