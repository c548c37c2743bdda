"""The trace: every scheduling step and harness exchange, as JSON lines.

The trace is what replay and the determinism check compare, so its bytes must
depend only on the run's inputs and choices: records are plain JSON with
sorted keys, times are integer nanoseconds, and nothing in them comes from an
address, a hash seed or the wall clock.

`emit` is the one place a record is made, so it is also where oracles that
check a run while it happens (`forge.conformance.oracles.watchers`) are fed:
`observe(watchers)` hands each later record to every watcher that reads
its kind (`Watcher.SEES`), and each problem a watcher returns becomes a
`Violation` pinned to that record.  A
trace nobody observes pays nothing: `observe` swaps in the feeding `emit`.
"""

from __future__ import annotations

import hashlib
import itertools
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


def _json_lines(records: list[dict]) -> str:
    """`records` (dicts) as canonical JSON lines: `canonical_json` of each
    and a newline, encoded without a Python call per record."""
    if _C_ENCODER is None:
        return "".join([canonical_json(r) + "\n" for r in records])
    if not records:
        return ""
    return "\n".join(map("".join, map(_C_ENCODER, records, itertools.repeat(0)))) + "\n"


#: Records hashed per update of a long trace's digest, which is not kept as one text.
_SLICE = 4096


class Watcher(Protocol):
    """An incremental oracle: sees each record as it is made.  A watcher
    whose class sets `SEES` to a set of record kinds (`what`) is fed only
    those; one without it (or None) sees every record.  A problem is a
    string, or `Hot(problem, since)` for a state that had to be left and
    never was (a liveness monitor's), naming the record it began at."""

    def see(self, record: dict) -> Iterable[str | Hot]: ...


@attrs.frozen
class Hot:
    """A liveness problem: a hot state entered at record `since` (instant
    `since_t`) and not left within its bound."""

    problem: str
    since: int
    since_t: int


def _routes(kinds: tuple[type, ...]) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
    """Which of watchers of these classes (by position) each record kind
    feeds, and which read every record: worked out once per set of classes
    (a campaign builds the same watchers for every run)."""
    found = _ROUTES.get(kinds)
    if found is None:
        sees = [getattr(kind, "SEES", None) for kind in kinds]
        every = tuple(n for n, s in enumerate(sees) if s is None)
        named = sorted({what for s in sees if s is not None for what in s})
        found = ({what: tuple(n for n, s in enumerate(sees) if s is None or what in s)
                  for what in named}, every)
        _ROUTES[kinds] = found
    return found


_ROUTES: dict[tuple[type, ...], tuple[dict[str, tuple[int, ...]], tuple[int, ...]]] = {}


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
        #: `lines()`'s text and the record count it was made from.
        self._lines: tuple[int, str] | None = None

    def emit(self, now: int, what: str, **fields: Any) -> None:
        self.records.append({"i": len(self.records), "t": now, "what": what, **fields})

    def read(self, key: str) -> None:
        """A step read what footprint `key` names (see `reads`)."""
        self.reads.append((len(self.records), key))

    def observe(self, watchers: Iterable[Watcher]) -> None:
        """Feed every record from now on to each of `watchers`."""
        self.watchers = tuple(watchers)
        if self.watchers:
            #: Record kind -> the positions of the watchers it feeds, in the
            #: order given (so violations are listed as if every watcher saw
            #: every record); a kind none names feeds those that read all.
            self._routes, self._every = _routes(tuple([type(w) for w in self.watchers]))
            self.emit = self._emit_watched      # type: ignore[method-assign]

    def unobserve(self) -> None:
        """Feed no watcher from now on.  The violations found stay; the
        watchers (which hold the run they watch) and the trace let go of
        each other, so a finished run is freed by reference counting rather
        than left for the cyclic collector to find."""
        self.watchers = ()
        self.__dict__.pop("emit", None)

    def _emit_watched(self, now: int, what: str, **fields: Any) -> None:
        record = {"i": len(self.records), "t": now, "what": what, **fields}
        self.records.append(record)
        watchers = self.watchers
        for n in self._routes.get(what, self._every):
            for problem in watchers[n].see(record):
                name = type(watchers[n]).__name__
                if isinstance(problem, Hot):
                    self.violations.append(Violation(record["i"], now, problem.problem, name,
                                                     problem.since, problem.since_t))
                else:
                    self.violations.append(Violation(record["i"], now, problem, name))

    def lines(self) -> str:
        """The records as JSON lines: the trace's bytes (decoded)."""
        n = len(self.records)
        if self._lines is not None and self._lines[0] == n:
            return self._lines[1]
        text = _json_lines(self.records)
        # Kept for the next call while no record is added (records are only
        # ever appended): a run's observation hashes the text, and the Python
        # API hands it out as well.
        self._lines = (n, text)
        return text

    def sha256(self) -> str:
        digest, records = hashlib.sha256(), self.records
        if len(records) <= _SLICE:
            return hashlib.sha256(self.lines().encode("utf-8")).hexdigest()
        for start in range(0, len(records), _SLICE):      # one update per slice, in bounded memory
            digest.update(_json_lines(records[start:start + _SLICE]).encode("utf-8"))
        return digest.hexdigest()
