"""`rules.timeouts` tested where it lives: reading a wait's timeout, and
where its timer sorts among the events of one instant - on the simulator's
event queue alone, without a run."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from forge.engine.rules import timeouts
from forge.sim.kernel import COMPLETE, FAULT, Kernel


def test_whole_fractional_and_zero_seconds_are_timeouts():
    """A timeout may be a whole number, a fraction such as 0.05, or 0
    (tasks.timeouts.option)."""
    assert timeouts.duration(2) == 2_000_000_000
    assert timeouts.duration(0.05) == 50_000_000
    assert timeouts.duration(0) == 0


@given(st.one_of(st.floats(max_value=-1e-9), st.integers(max_value=-1),
                 st.sampled_from([math.inf, -math.inf, math.nan, 1e12])))
def test_negative_infinite_and_oversized_timeouts_are_refused(seconds):
    """A timeout that is negative, not finite or beyond what a duration holds
    is refused (tasks.timeout-errors.range)."""
    assert timeouts.duration(seconds) is None


@given(st.floats(min_value=0, max_value=9e9, allow_nan=False))
def test_a_valid_timeout_is_whole_nanoseconds(seconds):
    """(tasks.timeouts.option)"""
    ns = timeouts.duration(seconds)
    assert isinstance(ns, int) and abs(ns - seconds * 1e9) <= max(1.0, seconds * 1e9 * 1e-12)


@given(st.integers(0, 5), st.lists(st.sampled_from([COMPLETE, FAULT]), min_size=1, max_size=5))
def test_a_timer_sorts_after_every_other_event_of_its_instant(delay_s, priorities):
    """A member ending at the instant the timeout expires wins: the timer is
    popped after every completion and fault due then, whatever the order they
    were scheduled in (tasks.timeouts.tie-member-wins)."""
    queue = Kernel()
    delay = delay_s * 1_000_000_000
    fired = []
    timeouts.schedule(queue, delay, "chain", "wait", lambda: fired.append("timeout"))
    for i, priority in enumerate(priorities):
        queue.schedule(delay, priority, ("complete", i))
    order = [queue.pop()[1][0] for _ in range(len(priorities) + 1)]
    assert order[-1] == "timeout" and order.count("timeout") == 1
    assert queue.now == delay
