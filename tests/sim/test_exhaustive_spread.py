"""`spread`: the exhaustive walk cut into slices, walked in any order and
stitched back, gives the serial walk's report - runs, traces, outcomes,
pruning, the deviation bound, the budget's cut and findings alike
(kit: search; the walk itself is `test_exhaustive.py`'s).

The slices run here in one process on a pool that finishes them in an
order Hypothesis draws, so every interleaving of workers the real pool
could produce is a draw away.  `tests/campaigns/test_spread_explore.py`
runs the same through `forge explore --workers 2`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.sim.exhaustive import Walk, exhaustive, slice_of, spread
from tests.sim.subjects import example


class _Future:
    def __init__(self, fn):
        self.fn, self.value, self.ran = fn, None, False

    def result(self):
        if not self.ran:
            self.value, self.ran = self.fn(), True
        return self.value

    def cancel(self):
        return not self.ran


class DrawnPool:
    """Slices that finish in the order `pick` draws among those out."""

    def __init__(self, walk, stop_at_first, pick):
        self.walk, self.stop_at_first, self.pick = walk, stop_at_first, pick
        self.slices = 0

    def submit(self, entry, budget):
        self.slices += 1
        return _Future(lambda: slice_of(self.walk, entry, budget, self.stop_at_first))

    def first_done(self, futures):
        return futures[self.pick(len(futures))]


def rare(obs):
    # A check that fails on a few schedules of the race, spread over the tree.
    return ["rare"] if obs["trace_sha256"][-1] in "07" else []


SUBJECTS = {
    "store-race": lambda: example("explore/store-race.md", "2", orders=True),
    "two-tasks": lambda: example("two-tasks.md", orders=True),
}


def _same(a, b):
    assert a == b
    assert [f.observation for f in a.findings] == [f.observation for f in b.findings]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(sorted(SUBJECTS)), reduce=st.booleans(),
       limit=st.sampled_from([1, 7, 40, 10_000]), bound=st.sampled_from([None, 1, 2]),
       stop=st.booleans(), in_flight=st.integers(1, 4), budget=st.integers(1, 9),
       check=st.booleans())
def test_any_order_of_slices_gives_the_serial_report(data, name, reduce, limit, bound, stop,
                                                     in_flight, budget, check):
    subject = SUBJECTS[name]()
    checks = [rare] if check else []
    serial = exhaustive(subject, checks, limit=limit, reduce=reduce, max_deviations=bound,
                        stop_at_first=stop, shrink_budget=50)
    walk = Walk(subject, checks, reduce, bound)
    pool = DrawnPool(walk, stop, lambda n: data.draw(st.integers(0, n - 1)))
    spreaded = spread(walk, pool.submit, pool.first_done, in_flight, limit=limit,
                      stop_at_first=stop, shrink_budget=50, budget=budget)
    _same(spreaded, serial)


def test_a_whole_tree_is_cut_into_many_slices_and_stitched_back():
    subject = SUBJECTS["store-race"]()
    serial = exhaustive(subject, [rare], reduce=False)
    walk = Walk(subject, [rare], False)
    # Latest-first: the order furthest from the serial one.
    pool = DrawnPool(walk, False, lambda n: n - 1)
    spreaded = spread(walk, pool.submit, pool.first_done, 3, budget=4)
    assert serial.runs > 100 and len(serial.findings) > 1 and serial.complete
    assert pool.slices > serial.runs // 4
    _same(spreaded, serial)


@pytest.mark.parametrize("limit", [1, 13, 30])
def test_the_budget_cuts_where_the_serial_walk_cuts(limit):
    subject = SUBJECTS["store-race"]()
    serial = exhaustive(subject, [], limit=limit)
    walk = Walk(subject, [])
    pool = DrawnPool(walk, False, lambda n: n - 1)
    spreaded = spread(walk, pool.submit, pool.first_done, 2, limit=limit, budget=5)
    assert not serial.complete and serial.unfinished > 0
    _same(spreaded, serial)
