"""Partial-order reduction: sleep sets over chain picks and completion picks.

Exhaustive search need not run two schedules that differ only in the order
of independent steps.  In orders mode (`forge.sim.orders`) a run is a
sequence of decisions of two kinds, and each is a step:

- a *chain pick* (which ready chain runs next at this instant): that
  chain's step, up to the next decision of either kind;
- a *completion pick* (which pending completion fires next): the
  completion and everything the chains it woke do before the next
  completion pick (no other completion can fire while a chain is ready, so
  firing it and running them is one step, however many chain picks cut it).

Two steps are *independent* when their footprints - the engine's own facts
about what each touched: chains stepped, tasks whose events they wrote
(their log lines, store outcomes, section entry), tasks whose status they
read (`tasks.status` shows a task's note and what it is blocked on, which
change in that task's own steps), store paths (a path conflicts with
itself, its parents and its children; a glob with every path), log lines -
are disjoint and neither holds `GLOBAL`.  A step is `GLOBAL` when it did
anything those keys cannot describe: a task ended, spawned, was admitted or
delivered a result, a wait timed out, a call other than a store operation,
a fault, a host cancel, or, anywhere in the run, a draw from `math.random`
or a read of the nonce.  Chains share no Lua state (each runs in its own
section environment; `var` is copied into a task), so what a step does
inside Lua is seen by no other chain except through those keys.

Sleep sets (Godefroid): after the search has explored pick `a` at a node,
every later sibling `b` carries `a` asleep into its subtree, where `a` stays
asleep until a step dependent on it runs; an asleep pick is not taken, and a
node where every pick sleeps (a lone ready chain included) ends a redundant
run.  Each footprint is read from the run where that pick ran at that node,
which is what independence at that state needs: when `a` and `b` commute
there, `a` after `b` is the step `a` was.

Under a deviation bound (`max_deviations`), which does not count chain
picks, only completion picks are pruned: every order of chains must stay in
reach of the bounded tree, or the bound would fall on other schedules than
the unreduced walk's.  Fault decisions are never pruned.

What lives here: independence and the provider that keeps sleep sets along
one run.  What does not: the search (`forge.sim.exhaustive`), and how
footprints are read (`forge.sim.orders`).

What `tasks.ready` and `tasks.pending` show (whether a task is live) and
the rest of a status table (state, live children, turns) change only in
steps that are `GLOBAL` anyway: a task starts, ends, spawns, runs a model
round, calls or jumps.  `tests/sim/test_reduction_differential.py`
compares reduced and unreduced searches on generated prompts that race on
the store, note and read one another's status.

Quotas.  Two steps that use one run-wide quota (the store's bytes, files,
operations, bytes moved; section entries; kept bytes; steps; Lua
instructions) do not commute near it: the second may be the one that
passes it.  The engine reads its quotas at every decision, and a step that
used one and left it past half its limit is `GLOBAL`
(`forge.engine.footprint` says why that is sound and why keying each
quota was not chosen); far from every quota nothing changes.  Stated
limit: Lua's memory cap, which no footprint reads (what Lua holds depends
on when its collector last ran).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from forge.sim.chooser import CHAIN_KIND, Provider
from forge.sim.orders import COMPLETE_KIND, GLOBAL

#: The decisions that end a segment and may be pruned: a chain pick and a
#: completion pick.
PICKS = frozenset({CHAIN_KIND, COMPLETE_KIND})
#: What a walk under a deviation bound prunes: the bound does not count chain
#: picks, so every chain order must stay in reach of the bounded tree.
BOUNDED_PICKS = frozenset({COMPLETE_KIND})


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
    whose segments are all global); `reduces` names the kinds of decision
    pruned (every pick still ends a segment that wakes what it touched).  Reads the segments through the
    chooser's picker (`chooser.completions`), so set `chooser` before the run.
    """

    name = "exhaustive"

    def __init__(self, prefix: Sequence[int], asleep: Sequence[Asleep] = (),
                 sleepless: bool = False, reduces: frozenset[str] = PICKS) -> None:
        self.prefix = tuple(prefix)
        #: The kinds of decision whose asleep options are skipped.
        self.reduces = reduces
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
        order = self.chooser.completions if self.chooser is not None else None
        if order is None:
            # Not in orders mode: no segments to read, so nothing is pruned.
            self.pending_at[pos] = self.pending
            return 0
        if kind in PICKS and self.blocked_at is None:
            # The segment that just ended wakes what it depends on.
            segment = order.last_segment()
            if self.sleepless or segment is None:
                self.pending = ()
            else:
                self.pending = awake(self.pending, segment.keys)
        self.pending_at[pos] = self.pending
        if kind not in self.reduces or self.blocked_at is not None:
            return 0
        asleep = self.pending
        names = {s.label for s in asleep}
        picks = tuple(i for i, label in enumerate(options) if label not in names)
        if len(picks) < len(options):
            self.slept = True
        if not picks:
            self.blocked_at = pos
            return 0
        self.nodes.append(Node(pos, asleep, tuple(options), picks))
        return picks[0]
