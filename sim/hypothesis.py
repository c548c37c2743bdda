"""Schedules as a Hypothesis strategy: `@given(schedules())` over any subject.

`schedules()` draws a `Chooser` whose real decisions (more than one
option) answer from a list of integers Hypothesis draws, one per decision:
an answer `v` picks option `v mod n` of the `n` offered.  The integers are
drawn below `ANSWER_SPAN`, a multiple of every option count up to
`EVEN_UP_TO`, so every option of such a decision is reached by as many
integers as every other (clamping with `min(v, n - 1)` gave the last option
of a two-way decision seven answers in eight).  Past the list's end it
answers canonically.  Hypothesis shrinks lists towards short and small,
which here is towards the canonical schedule (an answer of 0 is option 0), so a failing schedule is shrunk by Hypothesis's own
shrinker and reproduced from its database or a `@reproduce_failure` blob.
Inside a test body, `HypothesisProvider(data)` on `st.data()` draws each
decision lazily instead.  The chooser records what it
answered, like any other, so a failure of a prompt run can also be
saved as a self-contained file for `forge replay`
(`forge.repro.replay_text(spec, chooser, obs, ...)`) or shrunk
again by `forge.sim.shrink`.

    from hypothesis import given

    from forge.runspec import Runner, spec_from_flags
    from forge.sim.hypothesis import schedules

    runner = Runner(spec_from_flags("examples/two-tasks.md"))

    @given(schedules())
    def test_the_result_is_schedule_independent(chooser):
        obs = runner.run(chooser).observation()
        assert obs["result"] == "alpha text + beta text", chooser.values()

Hypothesis is an install extra (`pip install 'forge-kit[test]'`); importing
this module without it raises an ImportError that says so.  What does not
live here: the other providers (`forge.sim.chooser`, `forge.sim.pct`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

try:
    from hypothesis import strategies as st
except ModuleNotFoundError:  # pragma: no cover - depends on the install
    raise ImportError(
        "forge.sim.hypothesis needs the Hypothesis package, an optional extra of the forge kit: "
        "pip install 'forge-kit[test]' (or pip install hypothesis)"
    ) from None

from forge.sim.chooser import Chooser, Provider


class HypothesisProvider(Provider):
    name = "hypothesis"

    def __init__(self, data) -> None:
        self.data = data

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if len(options) == 1:
            return 0        # nothing to decide, nothing for the shrinker to shrink
        return self.data.draw(st.integers(0, len(options) - 1), label=kind)


#: Every option count up to this one divides `ANSWER_SPAN`.
EVEN_UP_TO = 16
#: The least common multiple of 1..EVEN_UP_TO: answers are drawn in [0, ANSWER_SPAN).
ANSWER_SPAN = math.lcm(*range(1, EVEN_UP_TO + 1))


def option_of(answer: int, n: int) -> int:
    """The option an answer picks among `n`: every option alike for `n` up
    to `EVEN_UP_TO` when answers are uniform below `ANSWER_SPAN` (above it,
    no option gets more than one answer in `ANSWER_SPAN // n` extra)."""
    return answer % n


class ListProvider(Provider):
    """Answers real decisions from a drawn list (`option_of`); canonical after it."""

    name = "hypothesis-list"

    def __init__(self, answers: Sequence[int]) -> None:
        self.answers = list(answers)
        self.pos = 0

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if len(options) == 1 or self.pos >= len(self.answers):
            return 0
        value = self.answers[self.pos]
        self.pos += 1
        return option_of(value, len(options))

    def describe(self) -> dict:
        return {"strategy": self.name, "answers": list(self.answers)}


def schedules(max_decisions: int = 200) -> st.SearchStrategy[Chooser]:
    """A strategy of choosers whose real decisions Hypothesis makes (and shrinks).

    Use each drawn chooser for one run; `chooser.values()` afterwards is the
    schedule, replayable with `ReplayProvider` or `forge replay`.
    """
    answers = st.lists(st.integers(0, ANSWER_SPAN - 1), max_size=max_decisions)
    return answers.map(lambda a: Chooser(ListProvider(a)))
