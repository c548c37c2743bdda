"""The tie-seeking strategy: random schedules that land durations on the next timer's instant.

While a timer is pending, a duration choice also offers to end exactly at
the timer's instant, or a nanosecond before or after it (options whose
labels start `tie`, `forge.harness.TIE_LABELS`).  Random takes them as
often as any other option; this strategy takes one of them half the time
they are offered, so same-instant ties - a member ending as its timeout
expires - are reached in a few runs.  Every other choice is random's.

Spelled `ties:SEED` for one run; a search runs one schedule per seed and
shares nothing, so its seeds may be spread and sharded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from forge.sim.chooser import Provider, SplitMix64
from forge.sim.strategies.base import Strategy, seed_of

#: How a tie option's label starts.
TIE = "tie"
#: Mixed into the seed, so that seed N is not random's seed N.
_SALT = 0x7F4A7C159E3779B9


class TieProvider(Provider):
    """Uniform choices, but a tie option half the time one is offered."""

    name = "ties"
    #: Its twin looks for tie options by their labels.
    twin_reads_labels = True

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = SplitMix64(seed ^ _SALT)

    def draw(self, kind: str, options: Sequence[str]) -> int:
        ties = [i for i, label in enumerate(options) if label.startswith(TIE)]
        if ties and self.rng.below(2) == 0:
            return ties[self.rng.below(len(ties))]
        return self.rng.below(len(options))

    def describe(self) -> dict:
        return {"strategy": self.name, "seed": self.seed}

    def twin(self) -> TieProvider:
        twin = TieProvider(self.seed)
        twin.rng.state = self.rng.state
        return twin


class Seeds:
    """A tie-seeking search's campaign state: none, each seed is its own schedule."""

    horizon: int | None = None

    def __init__(self, depth: int = 0, horizon: int | None = None) -> None:
        pass    # the signature every campaign has

    def provider(self, seed: int) -> TieProvider:
        return TieProvider(seed)

    def learn(self, run: Any, observation: dict | None = None) -> None:
        pass


def _provider(arguments: str) -> TieProvider:
    return TieProvider(seed_of(arguments))


STRATEGY = Strategy("ties", spelling="ties:SEED", arguments=r"-?[0-9]{1,20}",
                    provider=_provider, campaign=Seeds,
                    summary="draws as random does, but while a timer is pending ends half the "
                            "operations on its instant or a nanosecond beside it")
