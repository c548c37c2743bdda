"""`schedules()` lets Hypothesis own the interleaving, and what it finds
replays from the chooser's own record."""

from __future__ import annotations

from hypothesis import HealthCheck, find, settings

from forge.sim.chooser import Chooser, ReplayProvider
from forge.sim.hypothesis import schedules
from tests.sim.subjects import example


def test_hypothesis_finds_a_finishing_order_and_it_replays():
    subject = example("explore/store-race.md", "1")
    seen: dict = {}

    def gamma_first(chooser):
        obs, _ = subject(chooser)
        if obs["result"].startswith("gamma"):
            seen["values"] = chooser.values()
            return True
        return False

    find(schedules(), gamma_first,
         settings=settings(max_examples=300, database=None, derandomize=True,
                           suppress_health_check=list(HealthCheck)))
    obs, _ = subject(Chooser(ReplayProvider(seen["values"])))
    assert obs["result"].startswith("gamma")
