"""Partial-order reduction: sleep sets over the order of completions.

Exhaustive search need not run two schedules that differ only in the order
of independent steps.  The steps reduced here are the picks of orders mode
(`forge.sim.orders`): which pending completion fires next, together with
everything the run does until the next such pick (its *segment*).  Two picks
are *independent* when their segments' footprints - the engine's own facts
about what each touched: chains stepped, tasks whose events they wrote,
tasks whose status they read (`tasks.status` shows a task's note and what
it is blocked on, which change in that task's own steps), store paths (a
path conflicts with itself, its parents and its children; a glob with
every path), log lines - are disjoint and neither holds `GLOBAL`.
A segment is `GLOBAL` when it did anything those keys cannot describe: a
task started, ended, spawned, was admitted or delivered a result, a wait
timed out, a call other than a store operation, a fault, a host cancel, or,
anywhere in the run, a draw from `math.random` or a read of the nonce.

Chain picks (which ready chain runs first at one instant) are never
reduced: every order is explored, so whatever a step does before its
harness call - a log line, a status read, a table write - is seen in every
order.  Fault decisions are not reduced either.

Sleep sets (Godefroid): after the search has explored pick `a` at a node,
every later sibling `b` carries `a` asleep into its subtree, where `a` stays
asleep until a pick dependent on it runs; an asleep pick is not taken, and a
node where every pick sleeps ends a redundant run.  Each footprint is read
from the run where that pick ran at that node, which is what independence
at that state needs: when `a` and `b` commute there, `a` after `b` is the
step `a` was.

What lives here: independence and the provider that keeps sleep sets along
one run.  What does not: the search (`forge.sim.exhaustive`), and how
footprints are read (`forge.sim.orders`).

What `tasks.ready` and `tasks.pending` show (whether a task is live) and
the rest of a status table (state, live children, turns, section) change
only in segments that are `GLOBAL` anyway: a task starts, ends, spawns,
runs a model round, calls or jumps.  `tests/sim/test_reduction_differential.py`
compares reduced and unreduced searches on generated prompts that race on
the store, note and read one another's status.

Stated limit: the reduction trusts that a store write never crosses the
store's quota in one order and not in the other (the quota is a count over
every path).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from forge.sim.chooser import Provider
from forge.sim.orders import COMPLETE_KIND, GLOBAL


@attrs.frozen
class Asleep:
    """A pick explored elsewhere: its label and its segment's footprint."""

    label: str
    keys: frozenset[str]


def independent(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two footprints commute."""
    if GLOBAL in a or GLOBAL in b or not a.isdisjoint(b):
        return False
    paths_a = [k[5:] for k in a if k.startswith("path:")]
    paths_b = [k[5:] for k in b if k.startswith("path:")]
    for x in paths_a:
        for y in paths_b:
            if "*" in (x, y) or x.startswith(y + "/") or y.startswith(x + "/"):
                return False
    return True


def awake(asleep: Sequence[Asleep], keys: frozenset[str]) -> tuple[Asleep, ...]:
    """What stays asleep after a segment with footprint `keys`."""
    return tuple(s for s in asleep if independent(s.keys, keys))


@attrs.frozen
class Node:
    """A `complete` decision past the prefix: who slept there, the labels,
    and the picks not asleep (the first is the one the run took)."""

    at: int
    asleep: tuple[Asleep, ...]
    labels: tuple[str, ...]
    picks: tuple[int, ...]


class SleepProvider(Provider):
    """Replays `prefix`, with `asleep` the sleep set carried past its last
    choice; past it, every decision takes the first option not asleep
    (option 0 for every other kind).

    `sleepless` ignores sleep past the prefix (a run that reached its seed,
    whose segments are all global).  Reads the segments through the
    chooser's picker (`chooser.completions`), so set `chooser` before the run.
    """

    name = "exhaustive"

    def __init__(self, prefix: Sequence[int], asleep: Sequence[Asleep] = (),
                 sleepless: bool = False) -> None:
        self.prefix = tuple(prefix)
        self.carried = tuple(asleep)
        self.sleepless = sleepless
        self.chooser = None
        self.pos = 0
        self.pending: tuple[Asleep, ...] = ()
        #: The sleep set carried into each decision past the prefix, by position.
        self.pending_at: dict[int, tuple[Asleep, ...]] = {}
        self.nodes: list[Node] = []
        #: Where every pick slept (the run is redundant from there), or None.
        self.blocked_at: int | None = None
        #: Whether sleep ever skipped an option past the prefix.
        self.slept = False
        self.misaligned_at: int | None = None

    def draw(self, kind: str, options: Sequence[str]) -> int:
        pos = self.pos
        self.pos += 1
        if pos < len(self.prefix):
            value = self.prefix[pos]
            if not 0 <= value < len(options):
                if self.misaligned_at is None:
                    self.misaligned_at = pos
                value = 0
            if pos == len(self.prefix) - 1:
                self.pending = self.carried
            return value
        self.pending_at[pos] = self.pending
        if kind != COMPLETE_KIND or self.blocked_at is not None:
            return 0
        segment = self.chooser.completions.last_segment() if self.chooser else None
        asleep = () if self.sleepless or segment is None else awake(self.pending, segment.keys)
        names = {s.label for s in asleep}
        picks = tuple(i for i, label in enumerate(options) if label not in names)
        if len(picks) < len(options):
            self.slept = True
        if not picks:
            self.blocked_at = pos
            return 0
        self.nodes.append(Node(pos, asleep, tuple(options), picks))
        self.pending = asleep
        return picks[0]
