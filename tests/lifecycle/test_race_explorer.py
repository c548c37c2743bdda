"""Every interleaving of each two-actor race of the notes (section 7), with
and without reduction; each race fails on a lifecycle mutant made for it.

Clause ids: lifecycle.race.stop-vs-completion / lifecycle.race.stop-vs-retry /
lifecycle.race.concurrent-retries / lifecycle.race.advance-vs-stop-sweep-retry /
lifecycle.race.restart-during-attempt / lifecycle.race.graceful-stop-vs-run-ending /
lifecycle.race.stop-in-launch-window / lifecycle.finalize.single-winner.
"""

from __future__ import annotations

import pytest

from forge import variation
from forge.lifecycle.explore import RACES, explore


@pytest.mark.parametrize("race", sorted(RACES))
def test_every_interleaving_holds(race):
    full = explore(RACES[race], reduced=False)
    reduced = explore(RACES[race], reduced=True)
    assert full.failure is None, (full.failure, full.choices)
    assert reduced.failure is None, (reduced.failure, reduced.choices)
    assert 1 < reduced.interleavings <= full.interleavings


# -- mutants, one per race: each switches one declared variation site -----------

MUTANT_FOR_RACE = [
    ("completion-vs-stop", "lifecycle.finalize-overwrites-terminal", "overwritten"),
    ("two-retries", "lifecycle.retry-claim-any-status", "retries won"),
    ("continuation-vs-stop", "lifecycle.advance-any-status", "overwritten by advance"),
    ("retry-vs-stop", "lifecycle.launch-never-looks-back", "never stopped"),
    ("sweep-vs-retry", "lifecycle.sweep-reports-nothing", "reported as"),
    ("graceful-stop-vs-failing-turn", "lifecycle.graceful-ignored-on-failure", None),
]


@pytest.mark.parametrize("race, site, words", MUTANT_FOR_RACE)
def test_each_race_catches_the_mutant_made_for_it(race, site, words):
    with variation.switched(site):
        got = explore(RACES[race])
    assert got.failure, f"{race} passes with {site} switched on"
    if words is not None:
        assert words in got.failure
    else:
        # the hook moved the task on to a next run: it is still running, or ran again
        assert "left the task running" in got.failure or "another run" in got.failure
