"""PCT: probabilistic concurrency testing over the chooser's scheduling decisions.

Burckhardt et al. (ASPLOS 2010), in the variant Shuttle and Coyote run:
every chain gets a random priority when first seen (inserted at a random
rank, so a new chain can land anywhere, lowest included); the
highest-priority chain acts; at `depth - 1` change points the chain about
to act drops to the lowest priority.

*Scheduling decisions* are the steps PCT counts and places change points
on, and only those:

- `chain`: which ready chain runs (labels `KIND:ID`);
- `complete` (orders mode, `forge.sim.orders`): which pending completion
  fires next, which is which chain goes on next (labels `ID#N OP PATH`:
  the chain's id before `#`).  An entry with no chain (a wait's `timeout`,
  a host fault) is an actor of its own, named by its label.

A decision with one option moves nothing, so it neither counts nor hosts a
change point.  Every other draw - a duration (`latency:OP`), a fault, where
a host cancel falls - keeps the distribution random gives it (uniform over
its options), from a stream of its own, so how many of them a run makes
never shifts a priority or a change point.

The bound.  A bug of depth d - one that shows when d ordering constraints
between steps hold - in a run of n chains (actors) and k scheduling
decisions is found by one run of depth d with probability at least
1 / (n * k^(d-1)): the chain that must go first gets the top priority
(1/n), and each of the d-1 change points falls on the one step that must
hand over (1/k each).  It holds where the order of steps is what the
scheduling decisions decide: in orders mode, where durations do not exist,
which every PCT run of the reference engine takes (`PCTProvider.orders`).
Under a duration menu (a foreign engine's over the pipe, which draws its
own durations), durations are drawn as random draws them and PCT orders
only the chains ready at one instant.

The horizon k is learned, as Shuttle does: `PCTCampaign` hands out one
provider per run and keeps the largest number of scheduling decisions any
run made; the first run has no change points (a run of depth 1, which is a
sample of the depth-1 bound, not a wasted run) and measures.  Each run
places exactly `min(depth - 1, k - 1)` change points, uniformly among
steps 1 .. k-1 (step 0 is covered by the random initial priorities): fewer
would lower the bound for bugs of the full depth.

What does not live here: the chooser protocol and the other providers
(`forge.sim.chooser`), running many seeds (`forge.sim.explore`).
"""

from __future__ import annotations

from collections.abc import Sequence

from bisect import bisect_left, insort

from forge.sim.chooser import CHAIN_KIND, Provider, SplitMix64
from forge.sim.orders import COMPLETE_KIND

#: The kinds of the scheduling decisions PCT counts (see the module docstring):
#: `CHAIN_KIND` and `COMPLETE_KIND`.

#: Mixed into the seed for the stream the other draws come from.
_DATA_SALT = 0xD1B54A32D192ED03

#: The room left between two priorities when one is placed (renumbering
#: makes it again when a gap has none).
_GAP = 1 << 20


def completion_chain(label: str) -> str | None:
    """The chain id a `complete` option's label `ID#N OP PATH` names, or None
    for an entry of no chain (`timeout`, a host fault)."""
    head, sep, _ = label.partition("#")
    return head if sep and head and " " not in head else None


class PCTProvider(Provider):
    """One PCT run: random chain priorities plus `depth - 1` change points.

    `horizon` is the number of scheduling decisions to place change points
    in; None (or 0) means "unknown yet": no change points, priorities only
    (the measuring run of a campaign, and a lone `pct:SEED` run).
    """

    name = "pct"
    #: Its bound holds where scheduling decisions order every step (see above).
    orders = True
    #: Its twin ranks the chains a decision offers by their labels.
    twin_reads_labels = True

    def __init__(self, seed: int, depth: int = 3, horizon: int | None = None) -> None:
        self.seed, self.depth, self.horizon = seed, depth, horizon
        self.rng = SplitMix64(seed)
        #: Durations, faults and every other draw that is not a scheduling
        #: decision: uniform, from a stream of their own.
        self.data = SplitMix64(seed ^ _DATA_SALT)
        #: Each known actor's priority: higher acts first.  Actors are chain
        #: labels (`KIND:ID`), or the label of a completion of no chain.
        self.priority: dict[str, int] = {}
        #: Every known actor as (-priority, actor), kept sorted: the ranking,
        #: highest priority first, where an actor's rank is a bisection.  A
        #: plain list: bisection and insertion are C calls, and moving its
        #: entries up or down costs less than a tree's Python bookkeeping
        #: up to the 10,000 chains `benchmarks/scaling.py` ranks.
        self.known: list[tuple[int, str]] = []
        #: Each chain label known, by chain id (what a completion names).
        self._chain_of: dict[str, str] = {}
        #: The labels offered at the last chain choice, ordered the same way,
        #: and as a set; and the journal of the options that keep one
        #: (`forge.engine.kernel.ReadyLabels.follow`) with how much of it is
        #: read.  A choice among n ready chains thus costs a bisection a change
        #: of the ready set, not a pass over them all.
        self.ready: list[tuple[int, str]] = []
        self.ready_set: set[str] = set()
        self._journal: list | None = None
        self._read = 0
        self.change_points = self._sample_change_points()
        #: Scheduling decisions (more than one option) made so far.
        self.steps = 0

    @property
    def ranking(self) -> list[str]:
        """Every known actor, highest priority first."""
        return [label for _, label in self.known]

    def _sample_change_points(self) -> frozenset[int]:
        """`depth - 1` distinct steps in [1, horizon): step 0 is covered by
        the random initial priorities, as in Shuttle."""
        if not self.horizon or self.horizon < 2:
            return frozenset()
        want = min(self.depth - 1, self.horizon - 1)
        pool = list(range(1, self.horizon))
        picked = []
        for _ in range(want):      # a partial Fisher-Yates: distinct, seeded
            i = self.rng.below(len(pool))
            picked.append(pool.pop(i))
        return frozenset(picked)

    def _know(self, label: str) -> None:
        if label not in self.priority:
            self._place(label, self.rng.below(len(self.known) + 1))

    def _place(self, label: str, rank: int) -> None:
        """Give `label` a priority that ranks it `rank`-th: between its
        neighbours' (every label renumbered when no integer is left there)."""
        known, priority = self.known, self.priority
        above = -known[rank - 1][0] if rank > 0 else None
        below = -known[rank][0] if rank < len(known) else None
        if above is None:
            value = 0 if below is None else below + _GAP
        elif below is None:
            value = above - _GAP
        elif above - below > 1:
            value = (above + below) // 2
        else:
            labels = self.ranking
            labels.insert(rank, label)
            for i, each in enumerate(labels):           # renumber, highest first
                priority[each] = -i * _GAP
            self.known = [(-priority[each], each) for each in labels]
            self.ready = sorted((-priority[each], each) for each in self.ready_set)
            return
        priority[label] = value
        insort(known, (-value, label))

    def _demote(self, label: str) -> None:
        offered = label in self.ready_set
        if offered:
            self._leave(label)
        _remove(self.known, (-self.priority[label], label))
        lowest = -self.known[-1][0] if self.known else 0
        value = self.priority[label] = lowest - _GAP
        self.known.append((-value, label))         # the lowest: last
        if offered:
            self.ready_set.add(label)
            insort(self.ready, (-value, label))

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if kind == CHAIN_KIND:
            self._offered(options)
            if len(options) <= 1:
                return 0
            if self._change_point():
                self._demote(self._best())
            return options.index(self._best())
        if len(options) <= 1:
            return 0
        if kind == COMPLETE_KIND:
            return self._complete(options)
        return self.data.below(len(options))

    def _complete(self, options: Sequence[str]) -> int:
        """The completion of the highest-priority actor (the first in queue
        order among one actor's)."""
        actors = []
        for label in options:
            chain = completion_chain(label)
            actor = self._chain_of.get(chain, label) if chain is not None else label
            self._know(actor)
            actors.append(actor)

        def best() -> int:
            return max(range(len(actors)), key=lambda i: (self.priority[actors[i]], -i))

        if self._change_point():
            self._demote(actors[best()])
        return best()

    def _best(self) -> str:
        return self.ready[0][1]

    def _offered(self, options: Sequence[str]) -> None:
        """Bring `ready` to the labels offered now, knowing each new one in
        the order the options list it (what draws its random rank)."""
        follow = getattr(options, "follow", None)
        journal = follow() if follow is not None else None
        if journal is not None and journal is self._journal:
            changes = journal[self._read:]
        else:
            # Options without a journal (or a new one): the changes are the
            # difference from what was offered last.
            now = list(options)
            kept = set(now)
            changes = [(label, False) for label in self.ready_set if label not in kept]
            changes += [(label, True) for label in now]
        if journal is not None:
            self._journal, self._read = journal, len(journal)
        # Net effect: labels offered now that were not, in the order of
        # their last arrival (their order in the options), and labels gone.
        arrived: dict[str, None] = {}
        for label, present in changes:
            arrived.pop(label, None)
            if present:
                arrived[label] = None
            elif label in self.ready_set:
                self._leave(label)
        for label in arrived:
            if label in self.ready_set:
                continue
            self._know(label)
            self._chain_of.setdefault(label.partition(":")[2], label)
            self.ready_set.add(label)
            insort(self.ready, (-self.priority[label], label))

    def _leave(self, label: str) -> None:
        self.ready_set.discard(label)
        _remove(self.ready, (-self.priority[label], label))

    def _change_point(self) -> bool:
        """Count one scheduling decision; True when it is a change point."""
        hit = self.steps in self.change_points
        self.steps += 1
        return hit

    def twin(self) -> PCTProvider:
        """A copy that answers as this one would from here on, given each
        decision's labels whole: options without a journal are matched
        against the ready set kept (`_offered`), which brings it where the
        journal would (the labels that arrived, in the order the options
        list them, which is the order they arrived in)."""
        twin = PCTProvider(self.seed, self.depth, self.horizon)
        twin.rng.state, twin.data.state = self.rng.state, self.data.state
        twin.priority = dict(self.priority)
        twin.known = list(self.known)
        twin._chain_of = dict(self._chain_of)
        twin.ready = list(self.ready)
        twin.ready_set = set(self.ready_set)
        twin.change_points, twin.steps = self.change_points, self.steps
        return twin

    def describe(self) -> dict:
        # Horizon 0 spells "no change points", as None does here.
        return {"strategy": self.name, "seed": self.seed, "depth": self.depth,
                "horizon": self.horizon or 0}


def _remove(entries: list[tuple[int, str]], entry: tuple[int, str]) -> None:
    """Take `entry` out of the sorted list `entries` (it is there)."""
    del entries[bisect_left(entries, entry)]


class PCTCampaign:
    """Many PCT runs that learn the horizon from the runs before them."""

    def __init__(self, depth: int = 3, horizon: int | None = None) -> None:
        self.depth = depth
        #: The most scheduling decisions any run so far made (None before the first).
        self.horizon = horizon

    def provider(self, seed: int) -> PCTProvider:
        return PCTProvider(seed, self.depth, self.horizon)

    def learn(self, provider: PCTProvider, observation: dict | None = None) -> None:
        if self.horizon is None or provider.steps > self.horizon:
            self.horizon = provider.steps
