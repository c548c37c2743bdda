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


def test_until_timer_is_the_next_live_timer_after_now():
    """Against a plain scan of what is scheduled, over random schedules,
    cancels and pops: completions are never timers; fired, cancelled and
    due-now timers are not the next one."""
    from forge.sim.chooser import SplitMix64
    from forge.sim.kernel import FAULT

    for seed in range(40):
        rng = SplitMix64(seed)
        k = Kernel()
        pending: dict[int, tuple[int, int]] = {}        # seq -> (time, priority)
        handles = []
        for _ in range(120):
            op = rng.below(4)
            if op < 2:
                priority = (COMPLETE, TIMEOUT, FAULT)[rng.below(3)]
                timer = k.schedule(rng.below(6), priority, "e")
                pending[timer.seq] = (timer.time, priority)
                handles.append(timer)
            elif op == 2 and handles:
                timer = handles[rng.below(len(handles))]
                k.cancel(timer)
                pending.pop(timer.seq, None)
            elif op == 3 and k.peek() is not None:
                seq, _ = k.pop()
                pending.pop(seq)
            later = [t for t, p in pending.values() if p != COMPLETE and t > k.now]
            assert k.until_timer() == (min(later) - k.now if later else None)
