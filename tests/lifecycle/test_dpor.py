"""Partial-order reduction of the lifecycle races: the reduced search reaches
every end state the unreduced one does (the rows, each row's history of
writes and the cap's counts, the reports, what each actor got, the order of
launches and stops), on every shipped race but the largest, with fewer
schedules; and a reduction that drops a dependence is caught by the
comparison (kit: lifecycle-dpor; lifecycle.finalize.single-winner,
lifecycle.race.concurrent-retries, lifecycle.race.stop-in-launch-window)."""

from __future__ import annotations

import pytest

from forge.lifecycle import dpor as dpor_module
from forge.lifecycle.dpor import dependent, dpor
from forge.lifecycle.explore import subject
from forge.lifecycle.scenario import races
from forge.sim.chooser import Chooser
from forge.sim.exhaustive import exhaustive

RACES = races()
#: Races whose unreduced tree is small enough to enumerate in a test.
SMALL = sorted(name for name in RACES if name != "retries-at-the-ceiling")


def _ends(scenario):
    subj = subject(scenario, reduced=True)
    seen = set()

    def record(obs):
        seen.add(obs["end"])
        return []

    full = exhaustive(subj, [record], limit=50_000, reduce=False)
    assert full.complete
    search = dpor(lambda provider: subj(Chooser(provider))[0], 50_000,
                  end_of=lambda obs: obs["end"])
    assert search.complete and search.failure is None
    return full.runs, seen, search


@pytest.mark.parametrize("race", SMALL)
def test_the_reduced_search_reaches_every_end_state(race):
    runs, ends, search = _ends(RACES[race])
    assert search.ends == ends
    assert search.runs <= runs


def test_the_reduction_prunes_real_work():
    runs, _ends_seen, search = _ends(RACES["two-retries"])
    assert search.runs * 10 < runs


def test_a_reduction_that_forgets_a_dependence_loses_end_states(monkeypatch):
    """The comparison above is not vacuous: ignore the host's run registry (a
    launch and a stop then 'commute') and end states go missing."""
    real = dependent

    def forgetful(a, b):
        return real([f for f in a if f[1] != "host"], [f for f in b if f[1] != "host"])

    monkeypatch.setattr(dpor_module, "dependent", forgetful)
    _runs, ends, search = _ends(RACES["spawn-vs-stop-tree"])
    assert search.ends < ends


def test_dependence_is_a_shared_area_with_a_write():
    row = lambda mode, key: (mode, "row", key)  # noqa: E731
    assert dependent([row("w", "t1")], [row("r", "t1")])
    assert not dependent([row("r", "t1")], [row("r", "t1")])
    assert not dependent([row("w", "t1")], [row("w", "t2")])
    assert dependent([row("w", "t1")], [row("r", "*")])
    assert not dependent([("w", "host", "")], [row("w", "*")])
