"""PCT: probabilistic concurrency testing over the chooser's decisions.

Burckhardt et al. (ASPLOS 2010), in the variant Shuttle and Coyote run:
every chain gets a random priority when first seen (inserted at a random
rank, so a new chain can land anywhere, lowest included); the
highest-priority ready chain runs; at `depth - 1` change points the chain
about to act drops to the lowest priority.  A bug that needs `depth`
ordering constraints is hit with probability at least 1 / (n * k^(depth-1))
for n chains and k steps.

Three things make it earn its name here:

- Steps are *real* decisions only: a choice with one option moves nothing,
  so it neither counts towards the horizon nor hosts a change point.
- The horizon k is learned, as Shuttle does: `PCTCampaign` hands out one
  provider per run and keeps the largest number of real decisions seen so
  far; the first run has no change points and only measures.
- Priorities also order completions.  A duration choice (kind
  `latency:OP`, options labelled `x<multiplier>`, see `forge.sim.chooser`) is made
  by the chain that just ran; PCT maps that chain's rank onto the menu of
  durations, highest priority to the shortest.  Operations issued at one
  instant thus complete in priority order, and a demoted chain's next
  operation becomes the slowest.  A decision of another kind, or duration
  labels that do not parse, is drawn uniformly.

What does not live here: the chooser protocol and the other providers
(`forge.sim.chooser`), running many seeds (`forge.sim.explore`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sortedcontainers import SortedList

from forge.sim.chooser import LATENCY_PREFIX, Provider, SplitMix64, duration_multiplier


def duration_order(options: Sequence[str]) -> list[int] | None:
    """Option indexes from shortest to longest duration, or None if a label
    is not `x<number>`.  Equal durations keep index order."""
    values = [duration_multiplier(label) for label in options]
    if any(v is None for v in values):
        return None
    return sorted(range(len(options)), key=lambda i: (values[i], i))


#: The room left between two priorities when one is placed (renumbering
#: makes it again when a gap has none).
_GAP = 1 << 20


class PCTProvider(Provider):
    """One PCT run: random chain priorities plus `depth - 1` change points.

    `horizon` is the number of real decisions to place change points in;
    None (or 0) means "unknown yet": no change points, priorities only (the
    measuring run of a campaign, and a lone `pct:SEED` run).
    """

    name = "pct"

    def __init__(self, seed: int, depth: int = 3, horizon: int | None = None) -> None:
        self.seed, self.depth, self.horizon = seed, depth, horizon
        self.rng = SplitMix64(seed)
        #: Each known label's priority: higher runs first.
        self.priority: dict[str, int] = {}
        #: Every known label as (-priority, label): the ranking, highest
        #: priority first, where a label's rank is a bisection.
        self.known = SortedList()
        #: The labels offered at the last chain choice, ordered the same way,
        #: and as a set; and the journal of the options that keep one
        #: (`forge.engine.kernel.ReadyLabels.follow`) with how much of it is
        #: read.  A choice among n ready chains thus costs O(log n) a change
        #: of the ready set, not O(n).
        self.ready = SortedList()
        self.ready_set: set[str] = set()
        self._journal: list | None = None
        self._read = 0
        self.change_points = self._sample_change_points()
        #: Real decisions (more than one option) made so far.
        self.steps = 0
        self.current: str | None = None

    @property
    def ranking(self) -> list[str]:
        """Every known label, highest priority first."""
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
            self.known = SortedList((-priority[each], each) for each in labels)
            self.ready = SortedList((-priority[each], each) for each in self.ready_set)
            return
        priority[label] = value
        known.add((-value, label))

    def _demote(self, label: str) -> None:
        offered = label in self.ready_set
        if offered:
            self._leave(label)
        self.known.remove((-self.priority[label], label))
        lowest = -self.known[-1][0] if self.known else 0
        value = self.priority[label] = lowest - _GAP
        self.known.add((-value, label))
        if offered:
            self.ready_set.add(label)
            self.ready.add((-value, label))

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if kind == "chain":
            self._offered(options)
            if len(options) > 1:
                if self._change_point():
                    self._demote(self._best())
                label = self._best()
                pick = options.index(label)
            else:
                pick, label = 0, options[0]
            self.current = label
            return pick
        if len(options) <= 1:
            return 0
        order = duration_order(options) if kind.startswith(LATENCY_PREFIX) else None
        if order is None or self.current is None:
            self._change_point()
            return self.rng.below(len(options))
        if self._change_point():
            self._demote(self.current)
        rank = self.known.index((-self.priority[self.current], self.current))
        spread = max(len(self.known) - 1, 1)
        return order[rank * (len(order) - 1) // spread]

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
            self.ready_set.add(label)
            self.ready.add((-self.priority[label], label))

    def _leave(self, label: str) -> None:
        self.ready_set.discard(label)
        self.ready.remove((-self.priority[label], label))

    def _change_point(self) -> bool:
        """Count one real decision; True when it is a change point."""
        hit = self.steps in self.change_points
        self.steps += 1
        return hit

    def describe(self) -> dict:
        # Horizon 0 spells "no change points", as None does here.
        return {"strategy": self.name, "seed": self.seed, "depth": self.depth,
                "horizon": self.horizon or 0}


class PCTCampaign:
    """Many PCT runs that learn the horizon from the runs before them."""

    def __init__(self, depth: int = 3, horizon: int | None = None) -> None:
        self.depth = depth
        #: The most real decisions any run so far made (None before the first).
        self.horizon = horizon

    def provider(self, seed: int) -> PCTProvider:
        return PCTProvider(seed, self.depth, self.horizon)

    def learn(self, provider: PCTProvider) -> None:
        if self.horizon is None or provider.steps > self.horizon:
            self.horizon = provider.steps
