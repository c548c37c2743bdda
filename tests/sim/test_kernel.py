"""The event-queue kernel: time order, tie order, cancellation."""

from __future__ import annotations

import pytest

from forge.sim.kernel import COMPLETE, TIMEOUT, Kernel, seconds_to_ns


def test_events_leave_in_time_then_priority_then_schedule_order():
    k = Kernel()
    k.schedule(10, TIMEOUT, "timeout@10")
    k.schedule(10, COMPLETE, "complete@10-a")
    k.schedule(5, TIMEOUT, "timeout@5")
    k.schedule(10, COMPLETE, "complete@10-b")
    order = [k.pop()[1] for _ in range(4)]
    assert order == ["timeout@5", "complete@10-a", "complete@10-b", "timeout@10"]
    assert k.now == 10


def test_cancelled_entries_never_fire():
    k = Kernel()
    timer = k.schedule(3, TIMEOUT, "late")
    k.schedule(4, COMPLETE, "kept")
    k.cancel(timer)
    k.cancel(timer)
    assert k.peek() == 4
    assert k.pop()[1] == "kept"
    assert k.peek() is None


def test_negative_delays_are_refused():
    with pytest.raises(ValueError):
        Kernel().schedule(-1, COMPLETE, "x")


def test_seconds_convert_exactly_for_decimal_fractions():
    assert seconds_to_ns(0.1) + seconds_to_ns(0.2) == seconds_to_ns(0.3)
    assert seconds_to_ns(5) == 5_000_000_000
