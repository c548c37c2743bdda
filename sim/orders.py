"""Completion orders: durations abstracted into which completion fires next.

In the default duration model every harness operation draws a multiplier of
its base duration (`latency:OP`), so one ordering of completions is reached
through many vectors of durations, each its own schedule.  Exhaustive search
wants the orderings, not the durations.  In *orders mode* (a mode of the
harness's duration model, `LatencyModel.orders`) every operation takes its
canonical duration, and whenever more than one pending completion could fire
next, the chooser decides which: a decision `complete` whose options are the
completions, labelled by the engine (`CHAIN#N OP PATH`: the chain, its
suspension count, the operation), in the order the event queue would pop
them, so option 0 is the canonical schedule.

Fixed timers keep their instants: a wait's timeout, a duration a script pins,
a host cancel.  Only the earliest fixed entry can fire next, and a free
completion may fire before it only at an instant that still sorts before it
on the queue's (time, priority, seq) order; so a member's completion at the
timeout's instant wins the tie exactly when the queue's priorities say it
does.  A completion picked ahead of its canonical instant fires at that
instant or, if a fixed entry comes first, at the fixed entry's instant (one
nanosecond earlier when its priority sorts first); one picked while an
earlier one waits lets the clock reach its own instant, and the earlier one
fires late: at the current instant, or one nanosecond later when at this
instant it would sort before the entry popped last (a completion a timer
overtook ends after the timer, not in a tie it would win).  A completion
picked right after a timer that the engine sorts ahead of it at the
timer's instant fires on that instant, even when due later: the tie the
engine gives the timer, which a duration landing on the timer reaches (the
reference sorts timers last, so it never does).  The clock never runs
backwards.

Each pick also starts a *segment*: everything the run does until the next
`complete` decision.  `CompletionOrder` gathers what each segment touched -
what the engine's own trace records and events say (which chains stepped,
which calls they made, which operations they issued, logs, store outcomes,
and whether it used a quota near its limit, from the engine's readings of
its quotas taken at each decision; read by the engine, which hands over a
`Footprint` and a `reading`, since the simulator knows nothing of prompts),
the reads no trace record shows (a status read
of a task, `forge.sim.trace.Trace.reads`), the completions' own keys, and
the choices drawn - for the reduction (`forge.sim.reduction`) to tell
independent picks apart.

What does not live here: the event queue (`forge.sim.kernel`, which calls
`pick`), the duration menu (`forge.harness`), the reading of the engine's
records (`forge.engine.footprint`), and the meaning of independence
(`forge.sim.reduction`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from forge.sim.chooser import CHAIN_KIND

#: The kind of the decision that picks the next completion.
COMPLETE_KIND = "complete"
#: A footprint key that conflicts with every other one.
GLOBAL = "*"

#: The keys a segment's trace records and events touched, `GLOBAL` among
#: them for what the keys cannot describe, given also the engine's readings
#: of its quotas when the segment began and when it ended (opaque here; None
#: when the engine reads none): the engine's reading of its own records
#: (`forge.engine.footprint.Quotas.touched`).
Footprint = Callable[[Sequence[dict], Sequence[tuple], Any, Any], set[str]]


@attrs.frozen
class Segment:
    """What one pick led to: `keys` it touched (chain:ID, task:ID, path:P,
    path:* for a glob, log), or `GLOBAL` among them when it did anything the
    keys cannot describe (a task ended, spawned or was admitted, a wait timed
    out, a fault fired, a call that is not a store operation, ...)."""

    #: The position of the decision in the choice record.
    at: int
    label: str
    keys: frozenset[str]
    #: The decision's kind: `COMPLETE_KIND`, or `CHAIN_KIND` for a chain pick.
    kind: str = COMPLETE_KIND


class CompletionOrder:
    """One run's completion picker and the record of its segments."""

    def __init__(self, chooser: Any, records: list, events: list, footprint: Footprint,
                 seed_reached: Callable[[], bool], reads: list | None = None,
                 reading: Callable[[], Any] = lambda: None) -> None:
        self.chooser = chooser
        self.records, self.events = records, events
        self._footprint = footprint
        #: The engine's reading of its quotas now, taken at every decision.
        self._reading = reading
        #: (records before it, key) of each read no record shows (`Trace.reads`).
        self.reads = reads if reads is not None else []
        self._seed_reached = seed_reached
        #: Per decision: (choice position, label, trace length, event count,
        #: keys of the forced pops and picks since the segment began, kind,
        #: the quotas' reading).
        self._marks: list[list] = []
        self._pending: set[str] = set()      # keys of pops before the first decision
        #: Whether the run reached its seed: known once `segments()` ran.
        self.reached: bool | None = None
        chooser.completions = self

    def pick(self, labels: Sequence[str], keys: Sequence[frozenset[str]]) -> int:
        """Which of the eligible entries fires next (option 0: the queue's own)."""
        if len(labels) == 1:
            self._note(keys[0])
            return 0
        at = len(self.chooser.choices)
        value = self.chooser.choose(COMPLETE_KIND, tuple(labels))
        self._marks.append([at, labels[value], len(self.records), len(self.events),
                            set(keys[value]), COMPLETE_KIND, self._reading()])
        return value

    def chained(self, at: int, label: str) -> None:
        """A chain pick was made (the chooser tells, forced ones too): its
        segment is that chain's step and what follows it up to the next
        decision of either kind."""
        self._marks.append([at, label, len(self.records), len(self.events), set(), CHAIN_KIND,
                            self._reading()])

    def _note(self, keys: frozenset[str]) -> None:
        (self._marks[-1][4] if self._marks else self._pending).update(keys)

    def last_segment(self) -> Segment | None:
        """The segment of the latest decision, up to now (None before the
        first): what a provider asked for the next decision reads, since that
        segment has just ended."""
        if not self._marks:
            return None
        return self._segment(len(self._marks) - 1, len(self.records), len(self.events),
                             len(self.chooser.choices), self._reading())

    def segments(self) -> list[Segment]:
        """Every decision's segment; call after the run.  All are global when
        the run reached its seed (`math.random` or the nonce), which no
        record attributes to a segment."""
        if self.reached is None:
            self.reached = bool(self._seed_reached())
        reached = self.reached
        out = []
        for i in range(len(self._marks)):
            if i + 1 < len(self._marks):
                nxt = self._marks[i + 1]
                end = (nxt[2], nxt[3], nxt[0], nxt[6])
            else:
                end = (len(self.records), len(self.events), len(self.chooser.choices),
                       self._reading())
            seg = self._segment(i, *end)
            out.append(attrs.evolve(seg, keys=frozenset({GLOBAL})) if reached else seg)
        return out

    def _segment(self, i: int, trace_end: int, event_end: int, choice_end: int,
                 reading_end: Any) -> Segment:
        at, label, trace_at, event_at, keys, pick, reading_at = self._marks[i]
        keys = set(keys)
        keys |= self._footprint(self.records[trace_at:trace_end], self.events[event_at:event_end],
                                reading_at, reading_end)
        # Reads the trace does not show (a status read of a task), by the
        # number of records before each: those made inside this segment.
        reads = self.reads
        for n in range(bisect.bisect_left(reads, (trace_at, "")), len(reads)):
            if reads[n][0] >= trace_end:
                break
            keys.add(reads[n][1])
        for choice in self.chooser.choices[at + 1:choice_end]:
            if choice.kind != CHAIN_KIND:
                keys.add(GLOBAL)
        return Segment(at, label, frozenset(keys), pick)


def footprints(segments: Sequence[Segment]) -> dict[int, frozenset[str]]:
    """What each decision's step touched, by the decision's position.

    A chain pick's step is its own segment.  A completion's is everything up
    to the next completion pick: the chains it woke run before any other
    completion can fire, so firing it and running them is one step, however
    many chain picks cut it into segments."""
    out: dict[int, frozenset[str]] = {}
    open_at: int | None = None
    keys: set[str] = set()
    for seg in segments:
        if seg.kind == COMPLETE_KIND:
            if open_at is not None:
                out[open_at] = frozenset(keys)
            open_at, keys = seg.at, set(seg.keys)
        else:
            out[seg.at] = seg.keys
            keys |= seg.keys
    if open_at is not None:
        out[open_at] = frozenset(keys)
    return out
