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
        #: Chain labels, highest priority first.
        self.ranking: list[str] = []
        #: Each known label's priority: higher runs first, ordered exactly as
        #: `ranking` is, so the best of n offered chains is found in O(n)
        #: without walking the ranking (`_priority_at`).
        self.priority: dict[str, int] = {}
        self.change_points = self._sample_change_points()
        #: Real decisions (more than one option) made so far.
        self.steps = 0
        self.current: str | None = None

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
            rank = self.rng.below(len(self.ranking) + 1)
            self.ranking.insert(rank, label)
            self.priority[label] = self._priority_at(rank)

    def _priority_at(self, rank: int) -> int:
        """A priority for the label just put at `rank`: between its
        neighbours' (all of them renumbered when no integer is left there)."""
        ranking, priority = self.ranking, self.priority
        above = priority[ranking[rank - 1]] if rank > 0 else None
        below = priority[ranking[rank + 1]] if rank + 1 < len(ranking) else None
        if above is None:
            return 0 if below is None else below + _GAP
        if below is None:
            return above - _GAP
        if above - below > 1:
            return (above + below) // 2
        for i, label in enumerate(ranking):             # renumber, highest first
            priority[label] = -i * _GAP
        return priority[ranking[rank]]

    def _demote(self, label: str) -> None:
        self.ranking.remove(label)
        lowest = self.priority[self.ranking[-1]] if self.ranking else 0
        self.ranking.append(label)
        self.priority[label] = lowest - _GAP

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if kind == "chain":
            labels = list(options)
            for label in labels:
                self._know(label)
            if len(labels) > 1:
                if self._change_point():
                    self._demote(self._best(labels))
                pick = labels.index(self._best(labels))
            else:
                pick = 0
            self.current = labels[pick]
            return pick
        if len(options) <= 1:
            return 0
        order = duration_order(options) if kind.startswith(LATENCY_PREFIX) else None
        if order is None or self.current is None:
            self._change_point()
            return self.rng.below(len(options))
        if self._change_point():
            self._demote(self.current)
        rank = self.ranking.index(self.current)
        spread = max(len(self.ranking) - 1, 1)
        return order[rank * (len(order) - 1) // spread]

    def _best(self, labels: list[str]) -> str:
        return max(labels, key=self.priority.__getitem__)

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
