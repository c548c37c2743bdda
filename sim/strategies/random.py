"""The random strategy: each seed draws a whole schedule, independent of the others.

Spelled `random:SEED` for one run (`forge run --seed N` is `random:N`);
a search runs one schedule per seed (`Seeds`, which shares nothing), so
its seeds may be spread over processes and cut into shards.
"""

from __future__ import annotations

from typing import Any

from forge.sim.chooser import RandomProvider
from forge.sim.strategies.base import Strategy, seed_of


class Seeds:
    """A random search's campaign state: none, each seed is its own schedule."""

    horizon: int | None = None

    def __init__(self, depth: int = 0, horizon: int | None = None) -> None:
        pass    # the signature every campaign has; a random search reads neither

    def provider(self, seed: int) -> RandomProvider:
        return RandomProvider(seed)

    def learn(self, run: Any, observation: dict | None = None) -> None:
        pass    # nothing to learn: the next seed's schedule does not depend on this one


def _provider(arguments: str) -> RandomProvider:
    return RandomProvider(seed_of(arguments))


STRATEGY = Strategy("random", spelling="random:SEED", arguments=r"-?[0-9]{1,20}",
                    provider=_provider, campaign=Seeds,
                    summary="draws every choice uniformly from the seed, sharing nothing between "
                            "seeds")
