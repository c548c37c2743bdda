"""The portfolio strategy: each seed drawn by one of several strategies in turn (the default).

As Coyote's portfolio does, no single strategy is trusted to find every
kind of bug: seed N is drawn by member `N mod 5` of `MEMBERS` - random,
PCT at depths 1, 2 and 3, and the tie-seeking strategy
(`forge.sim.strategies.ties`) - so a campaign of a few hundred seeds gives
each about a fifth of its runs.  A failing run is described by its member
(`random:SEED`, `pct:SEED:DEPTH:HORIZON`, `ties:SEED`), so the report says
which strategy found it and the replay record draws it again alone.  Each
member's run is the one its spelling names: a PCT member's is in orders
mode, as `--strategy pct`'s (its provider asks for it,
`forge.sim.chooser.Provider.orders`), and the others draw durations.

The PCT members share one horizon, learned from the PCT runs before them
(`learn`), so a portfolio search, like PCT's, may be spread over processes
but not cut into shards; a search may start from a horizon given
(`forge explore --pct-horizon`, which a failure's one-line rerun names).
Spelled `portfolio:SEED` for one run (a PCT member then has no learned
horizon: no change points).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

from typing import Any

from forge.sim.chooser import Provider, RandomProvider
from forge.sim.pct import PCTProvider
from forge.sim.strategies.base import Strategy, seed_of
from forge.sim.strategies.ties import TieProvider

#: The members in turn: (strategy, PCT depth).
MEMBERS: tuple[tuple[str, int | None], ...] = (
    ("random", None), ("pct", 1), ("pct", 2), ("pct", 3), ("ties", None))


def member(seed: int) -> tuple[str, int | None]:
    """The member that draws seed `seed`."""
    return MEMBERS[seed % len(MEMBERS)]


def provider_of(seed: int, horizon: int | None) -> Provider:
    name, depth = member(seed)
    if name == "pct":
        assert depth is not None
        return PCTProvider(seed, depth, horizon)
    return TieProvider(seed) if name == "ties" else RandomProvider(seed)


class PortfolioCampaign:
    """A portfolio search's state: the horizon its PCT members learn."""

    def __init__(self, depth: int = 3, horizon: int | None = None) -> None:
        self.horizon = horizon      # the depth is each member's own

    def provider(self, seed: int) -> Provider:
        return provider_of(seed, self.horizon)

    def learn(self, run: Any, observation: dict | None = None) -> None:
        """Learn from a PCT member's run (its provider, or a campaign's
        record of it with `seed` and `steps`) what PCT learns."""
        if member(run.seed)[0] != "pct":
            return
        if self.horizon is None or run.steps > self.horizon:
            self.horizon = run.steps


def _provider(arguments: str) -> Provider:
    return provider_of(seed_of(arguments), None)


STRATEGY = Strategy("portfolio", spelling="portfolio:SEED", arguments=r"[0-9]{1,20}",
                    provider=_provider, campaign=PortfolioCampaign,
                    unshardable="learns its PCT members' horizon from every earlier seed",
                    summary="draws each seed with random, PCT at depths 1-3 or ties in "
                            "turn")
