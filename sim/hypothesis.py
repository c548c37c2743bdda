"""A chooser provider that draws every choice from Hypothesis.

Used inside a `@given` test, it lets Hypothesis own the schedule: a failing
interleaving is shrunk by Hypothesis's own shrinker to a minimal one, and
reproduced from its database or a `@reproduce_failure` blob.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from sim.chooser import Provider


class HypothesisProvider(Provider):
    name = "hypothesis"

    def __init__(self, data) -> None:
        self.data = data

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if len(options) == 1:
            return 0        # nothing to decide, nothing for the shrinker to shrink
        return self.data.draw(st.integers(0, len(options) - 1), label=kind)
