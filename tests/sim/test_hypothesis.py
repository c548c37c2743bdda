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


def test_every_option_of_a_wide_decision_is_reachable():
    """Clamping answers drawn up to 7 with min(v, n - 1) never reached options
    8 and up of a wider decision, and gave its option 7 every answer above."""
    labels = tuple(f"task:0.{i}" for i in range(16))
    for want in (7, 12, 15):
        found = find(schedules(), lambda chooser: chooser.choose("chain", labels) == want,
                     settings=settings(max_examples=2000, database=None, derandomize=True,
                                       suppress_health_check=list(HealthCheck)))
        assert found.values() == [want]


def test_uniform_answers_pick_options_alike():
    from collections import Counter

    from forge.sim.chooser import SplitMix64
    from forge.sim.hypothesis import ANSWER_SPAN, ListProvider

    rng = SplitMix64(5)
    answers = [rng.below(ANSWER_SPAN) for _ in range(6000)]
    for n in (2, 3, 5):
        provider = ListProvider(answers)
        picks = Counter(provider.draw("chain", tuple("abcde"[:n])) for _ in answers)
        assert set(picks) == set(range(n))
        assert max(picks.values()) < 1.15 * min(picks.values()), (n, picks)


def test_an_answer_reaches_every_option_equally_often():
    from collections import Counter

    from forge.sim.hypothesis import ANSWER_SPAN, EVEN_UP_TO, ListProvider

    for n in range(2, EVEN_UP_TO + 1):
        # Answers are drawn below ANSWER_SPAN, a whole number of runs of n
        # consecutive answers, and each run reaches each option once.
        assert ANSWER_SPAN % n == 0
        options = tuple(str(i) for i in range(n))
        picks = Counter(ListProvider([v]).draw("chain", options)
                        for v in range(ANSWER_SPAN - 3 * n, ANSWER_SPAN))
        assert picks == {i: 3 for i in range(n)}, (n, picks)
