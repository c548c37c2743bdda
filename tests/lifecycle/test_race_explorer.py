"""Every interleaving of each two-actor race of the notes (section 7), with
and without reduction; each race of section 7 fails on a lifecycle mutant
(a declared variation site) and passes on the reference.

Clause ids: lifecycle.race.concurrent-finalizers / lifecycle.race.stop-vs-completion /
lifecycle.race.stop-vs-approval / lifecycle.race.stop-vs-retry /
lifecycle.race.stop-already-finished-outcome-late-or-lost /
lifecycle.race.graceful-stop-vs-run-ending / lifecycle.race.stop-in-launch-window /
lifecycle.race.concurrent-retries / lifecycle.race.retry-launch-failure /
lifecycle.race.retry-vs-cap / lifecycle.race.restart-during-attempt /
lifecycle.spawn.concurrency-slot / lifecycle.retry.concurrency-slot /
lifecycle.race.advance-vs-stop-sweep-retry / lifecycle.race.pause-during-continue /
lifecycle.finalize.single-winner / lifecycle.stop.chases-current-run /
lifecycle.restart.keeps-paused.
"""

from __future__ import annotations

import pytest

from forge import variation
from forge.lifecycle.explore import explore
from forge.lifecycle.scenario import races

RACES = races()
#: The two-actor races the issue names: exhaustive both ways must finish.
TWO_ACTOR = ["completion-vs-stop", "retry-vs-stop", "two-retries", "continuation-vs-stop",
             "sweep-vs-retry", "graceful-stop-vs-failing-turn"]


@pytest.mark.parametrize("race", TWO_ACTOR)
def test_every_interleaving_holds_with_and_without_reduction(race):
    full = explore(RACES[race], reduced=False)
    reduced = explore(RACES[race], reduced=True)
    assert full.failure is None, (full.failure, full.choices)
    assert reduced.failure is None, (reduced.failure, reduced.choices)
    assert full.complete and reduced.complete
    assert 1 < reduced.interleavings <= full.interleavings


@pytest.mark.parametrize("race", sorted(set(RACES) - set(TWO_ACTOR)))
def test_every_reduced_interleaving_of_the_other_races_holds(race):
    got = explore(RACES[race], reduced=True)
    assert got.failure is None, (got.failure, got.choices)
    assert got.complete and got.interleavings > 1


# -- mutants: each race of section 7 catches one (a declared variation site) -------

MUTANT_FOR_RACE = [
    # 1. concurrent finalizers
    ("two-finishers", "lifecycle.finalize-overwrites-terminal", "overwritten by finalize"),
    # 2. stop vs completion
    ("completion-vs-stop", "lifecycle.finalize-overwrites-terminal", "overwritten"),
    # 3. stop vs approval: a resume after the stop's claim must lose
    ("stop-vs-approval", "lifecycle.reclaim-any-status", "overwritten by reclaim_working"),
    # 4. stop vs retry: the stop chases the retried attempt, its stale finalize loses
    ("stop-chases-retry", "lifecycle.stop-does-not-chase", "still working"),
    ("stop-chases-retry", "lifecycle.finalize-not-run-bound", "stale run"),
    # 5. stop vs an already-finished run: the real outcome stands
    ("stop-vs-finished-run", "lifecycle.finalize-overwrites-terminal", "overwritten"),
    ("stop-vs-lost-outcome", "lifecycle.stop-never-chases-run", "never ended"),
    # 6. graceful stop vs a failing last turn
    ("graceful-stop-vs-failing-turn", "lifecycle.graceful-ignored-on-failure", None),
    # 7. the claim-to-launch window (retry, spawn)
    ("retry-vs-stop", "lifecycle.launch-never-looks-back", "never stopped"),
    ("spawn-vs-stop-tree", "lifecycle.launch-never-looks-back", "never stopped"),
    # 8. concurrent retries, also at the ceiling
    ("two-retries", "lifecycle.retry-claim-any-status", "runs were launched"),
    ("retries-at-the-ceiling", "lifecycle.retry-ceiling-outside-store", "over the ceiling"),
    # 9. retry launch failure: the release rolls the attempt back
    ("retry-launch-failure", "lifecycle.release-keeps-attempt", "not 1"),
    # 10. the per-parent cap across two processes (their Managers share no lock)
    ("spawns-from-two-processes", "lifecycle.cap-not-in-store", "over the cap"),
    ("retry-vs-spawn-for-the-slot", "lifecycle.cap-not-in-store", "over the cap"),
    # 11. the sweep: every failed row reported, paused rows kept
    ("sweep-vs-retry", "lifecycle.sweep-reports-nothing", "reported as"),
    ("sweep-vs-approval", "lifecycle.sweep-fails-paused", "not working"),
    # 12. continuations
    ("continuation-vs-stop", "lifecycle.advance-any-status", "overwritten by advance"),
    ("continuation-vs-stale-pause", "lifecycle.advance-any-status", "advanced a row"),
    # 13. delivery accounting: a status read delivers only a finished task
    ("status-vs-completion", "lifecycle.status-delivers-working", "while working"),
]


@pytest.mark.parametrize("race, site, words", MUTANT_FOR_RACE)
def test_each_race_catches_a_mutant(race, site, words):
    with variation.switched(site):
        got = explore(RACES[race])
    assert got.failure, f"{race} passes with {site} switched on"
    if words is not None:
        assert words in got.failure, got.failure


# -- the same races on the SQLite store ------------------------------------------

ON_SQLITE = ["completion-vs-stop", "retry-vs-stop", "spawn-vs-stop-tree", "stop-vs-approval",
             "spawns-from-two-processes", "retry-vs-spawn-for-the-slot", "sweep-vs-approval",
             "two-finishers", "status-vs-completion", "stop-vs-finished-run"]


@pytest.mark.parametrize("race", ON_SQLITE)
def test_the_races_hold_on_the_sqlite_store(race):
    """The SQLite store states the compare-and-sets in SQL: the same races, the
    same classes of schedules, the same verdict."""
    import attrs

    on_sqlite = explore(attrs.evolve(RACES[race], store="sqlite"))
    assert on_sqlite.failure is None, (on_sqlite.failure, on_sqlite.choices)
    assert on_sqlite.complete
    assert on_sqlite.interleavings == explore(RACES[race]).interleavings
