"""The canonical strategy: every decision takes its first option.

It is the schedule of a run given no seed and no strategy, and the one
exploring compares every other schedule with.  Spelled `canonical`.
"""

from __future__ import annotations

from forge.sim.chooser import Canonical
from forge.sim.strategies.base import Strategy


def _provider(arguments: str) -> Canonical:
    return Canonical()


STRATEGY = Strategy("canonical", spelling="canonical", provider=_provider)
