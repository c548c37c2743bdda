"""What a strategy declares (`Strategy`), and the campaign state a search over seeds shares.

Each strategy module of `forge.sim.strategies` declares one `Strategy`;
the package holds the registry that looks them up.  What does not live
here: the strategies themselves, the providers they point at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from forge.sim.chooser import Provider


class Campaign(Protocol):
    """The state a search over seeds shares between its runs."""

    #: What a PCT campaign learned (the most real decisions of a run so
    #: far); None for a strategy that learns nothing.
    horizon: int | None

    def provider(self, seed: int) -> Provider: ...

    def learn(self, run: Any, observation: dict | None = None) -> None:
        """Learn from a finished run: its provider and its observation, or a
        spread campaign's record of it (anything with its `steps`)."""


@attrs.frozen
class Strategy:
    """One strategy's declaration."""

    #: Its name, the head of its spelling.
    name: str
    #: Its spelling for one run (`forge run --strategy`), `NAME` or
    #: `NAME:ARGUMENTS`; None: not a strategy for one run.
    spelling: str | None = None
    #: The spelling's arguments after `NAME:`, as a regular expression
    #: (None: no arguments).
    arguments: str | None = None
    #: The provider of one run from the spelling's arguments (a `ValueError`
    #: with a one-line reason refuses them).
    provider: Callable[[str], Provider] | None = None
    #: Whether the run's provider comes from a replay file (the run domain
    #: checks such a file's record before trusting its choices).
    reads_file: bool = False
    #: The search keywords it reads besides the seeds and the budget.
    parameters: tuple[str, ...] = ()
    #: The campaign state of a search over seeds, `campaign(depth, horizon)`;
    #: None: not a search over seeds.
    campaign: Callable[..., Campaign] | None = None
    #: Whether it walks the choice tree (exhaustive search) instead of
    #: drawing a schedule per seed.
    walks: bool = False
    #: What it does, in a few words, for help text: a phrase that follows
    #: its name ("random draws ..."); every strategy `forge explore` offers
    #: has one (`forge.sim.strategies.explaining`).
    summary: str = ""
    #: Whether its runs are in orders mode (`forge.sim.orders`): durations
    #: stay canonical and which completion fires next is a decision.
    orders: bool = False
    #: Why its seeds cannot be cut into shards (None: they can).
    unshardable: str | None = None
    #: Seeds a worker of a spread search runs with one campaign of its own
    #: (None: any chunk; `forge.campaign.CHUNK`): a strategy whose campaign
    #: starts afresh every so many seeds says how many, so that a spread
    #: search's runs are the serial search's.
    chunk: int | None = None

    @property
    def explores(self) -> bool:
        """`forge explore` offers it: a search over seeds or a walk."""
        return self.campaign is not None or self.walks


def seed_of(text: str) -> int:
    """A spelling's seed argument.

    Raises:
        ValueError: a seed that does not fit in 64 bits (signed or not).
    """
    seed = int(text)
    if not -(2**63) <= seed < 2**64:
        raise ValueError("the seed must fit in 64 bits")
    return seed
