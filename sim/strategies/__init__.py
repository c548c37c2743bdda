"""The strategy registry: how schedules are drawn, one module per strategy, looked up by name.

A strategy is one module of this package that declares a `Strategy`:
its name, its spelling for one run (`forge run --strategy NAME:...`)
and how the spelling's arguments give a provider, the parameters a search
under it reads, the state a search over seeds shares (its campaign), and
whether such a search may be spread over processes or cut into shards.
Every front end - the command line's `--strategy` flags, the Python API,
a campaign over processes, a replay - looks a strategy up here by name
(`lookup`), so a strategy's spelling is written in its own module only and
adding one is adding a module to `STRATEGIES`.

What does not live here: the providers and campaigns themselves
(`forge.sim.chooser`, `forge.sim.pct`), which each module points at; the
searches (`forge.sim.explore`, `forge.sim.exhaustive`); turning a refusal
into the kit's one-line error (`forge.assembly`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import re

from forge.sim.chooser import Provider
from forge.sim.strategies import (canonical, coverage, exhaustive, pct, portfolio, random, replay,
                                  ties)
from forge.sim.strategies.base import Campaign, Strategy

#: Every strategy, in the order usage lines name them.
STRATEGIES: tuple[Strategy, ...] = (canonical.STRATEGY, portfolio.STRATEGY, random.STRATEGY,
                                    pct.STRATEGY, ties.STRATEGY, coverage.STRATEGY,
                                    exhaustive.STRATEGY, replay.STRATEGY)
#: What every front end draws schedules with when given no strategy: `forge
#: explore` (`DEFAULT_SHARDED` when its seeds are cut into shards), the
#: Python API's `forge.explore` and the pytest plugin.
DEFAULT, DEFAULT_SHARDED = portfolio.STRATEGY.name, random.STRATEGY.name
_BY_NAME = {s.name: s for s in STRATEGIES}
#: What the library's searches (`forge.sim.explore.explore`,
#: `forge.repro.explore_prompt`, a lifecycle campaign, the mutants' oracle
#: column) draw with when called with none: one schedule per seed, sharing
#: nothing.  The front ends name `DEFAULT` instead.
SEARCH = random.STRATEGY.name
#: The strategies `forge explore` offers, by name.
EXPLORING = tuple(s.name for s in STRATEGIES if s.explores)
#: The strategies of one run, spelled as `forge run --strategy` takes them.
SPELLINGS = tuple(s.spelling for s in STRATEGIES if s.spelling is not None)
#: Every spelling of one run, as one regular expression.
SPELLING = re.compile("|".join(
    s.name + (f":{s.arguments}" if s.arguments is not None else "")
    for s in STRATEGIES if s.spelling is not None), re.ASCII | re.DOTALL)


def explaining() -> str:
    """What each strategy `forge explore` offers does, the default first and
    named so: one clause per strategy, from its `summary` (the help of
    `--strategy`)."""
    offered = sorted((s for s in STRATEGIES if s.explores), key=lambda s: s.name != DEFAULT)
    return "; ".join(f"{s.name}{' (the default)' if s.name == DEFAULT else ''} {s.summary}"
                     for s in offered)


def lookup(name: str) -> Strategy:
    """The strategy called `name` (a `KeyError` for none)."""
    return _BY_NAME[name]


def usage(spelling: str) -> str:
    """The refusal of a spelling no strategy has, naming those there are."""
    *rest, last = SPELLINGS
    return f"unknown strategy {spelling!r}: use {', '.join(rest)} or {last}"


def parse(spelling: str) -> tuple[Strategy, str]:
    """The strategy a spelling names and its arguments (after `NAME:`).

    Raises:
        ValueError: a spelling no strategy has (`usage`).
    """
    if not SPELLING.fullmatch(spelling):
        raise ValueError(usage(spelling))
    name, _, arguments = spelling.partition(":")
    return _BY_NAME[name], arguments


def make_provider(spelling: str) -> Provider:
    """The provider of one run from its spelling (`SPELLINGS`: each
    strategy's own).

    Raises:
        ValueError: an unknown spelling, or arguments its strategy refuses.
    """
    strategy, arguments = parse(spelling)
    assert strategy.provider is not None    # a strategy with a spelling has a provider
    return strategy.provider(arguments)


__all__ = ["Campaign", "DEFAULT", "DEFAULT_SHARDED", "EXPLORING", "SEARCH", "SPELLING",
           "SPELLINGS", "STRATEGIES", "Strategy", "explaining", "lookup", "make_provider", "parse",
           "usage"]
