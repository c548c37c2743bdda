"""The strategy registry: each strategy one module, looked up by name, and every front end
reading what a strategy declares (kit: strategies.registry)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.run.options import RULES
from forge.sim.chooser import Canonical, RandomProvider
from forge.sim.pct import PCTProvider
from forge.sim.strategies import (DEFAULT, EXPLORING, SPELLINGS, STRATEGIES, explaining, lookup,
                                  make_provider, parse, usage)


def test_every_strategy_is_found_by_its_name_and_declares_what_it_is():
    """Each registered strategy is found by its name; one with a spelling has a
    provider; one `forge explore` offers is a search over seeds (a campaign)
    or a walk of the tree; explore's `--strategy` choices are the registry's."""
    for strategy in STRATEGIES:
        assert lookup(strategy.name) is strategy
        assert (strategy.spelling is None) == (strategy.provider is None)
        assert strategy.explores == (strategy.campaign is not None or strategy.walks)
    assert RULES["strategy"].choices == EXPLORING
    with pytest.raises(KeyError):
        lookup("nope")


@pytest.mark.parametrize("spelling, kind", [
    ("canonical", Canonical), ("random:7", RandomProvider), ("random:-3", RandomProvider),
    ("pct:5", PCTProvider), ("pct:5:2", PCTProvider), ("pct:5:2:40", PCTProvider),
])
def test_a_spelling_gives_its_strategys_provider(spelling, kind):
    """A spelling names its strategy and its arguments give the provider."""
    strategy, _ = parse(spelling)
    assert strategy.name == spelling.partition(":")[0]
    assert isinstance(make_provider(spelling), kind)


@pytest.mark.parametrize("spelling, message", [
    ("bogus:1", "unknown strategy 'bogus:1': use "), ("random:x", "unknown strategy"),
    ("exhaustive", "unknown strategy"), ("pct:1:0", "the PCT depth is from 1 to 1000"),
    ("random:99999999999999999999", "the seed must fit in 64 bits"),
])
def test_a_spelling_no_strategy_takes_is_refused_in_one_line(spelling, message):
    """An unknown spelling names every spelling there is (the usage line is
    built from the registry); a strategy refuses arguments it cannot use."""
    with pytest.raises(ValueError, match=message):
        make_provider(spelling)
    assert usage("x").endswith(f"{', '.join(SPELLINGS[:-1])} or {SPELLINGS[-1]}")


def test_a_random_search_shares_nothing_and_a_pct_search_learns_its_horizon():
    """The campaign state a strategy declares: random's learns nothing, PCT's
    learns the most real decisions of any run so far."""
    seeds, pct = lookup("random").campaign(3), lookup("pct").campaign(3)
    for campaign in (seeds, pct):
        provider = campaign.provider(1)
        provider.steps = 12
        campaign.learn(provider)
    assert seeds.horizon is None and pct.horizon == 12


def test_explore_s_help_says_what_every_strategy_it_offers_does():
    """`forge explore --help` names each strategy `--strategy` takes with
    what it does, from the registry's summaries, so a strategy added to the
    registry (coverage was missed once) is described where it is offered."""
    help_text = " ".join(CliRunner().invoke(main, ["explore", "--help"]).output.split())
    for name in EXPLORING:
        summary = lookup(name).summary
        assert summary, f"{name} has no summary"
        assert f"{name}{' (the default)' if name == DEFAULT else ''} {summary}" in explaining()
    assert f"How schedules are drawn: {explaining()}." in help_text
    assert "coverage extends a corpus of schedules" in help_text
