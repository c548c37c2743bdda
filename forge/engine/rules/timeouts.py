"""Timeouts on waits: the option, the timer, and the tie with a member's end.

One mechanism serves every timed wait: `tasks.join` and `tasks.join_any`
with `{ timeout = s }` and the model's `await_tasks` with `timeout`.  A
timeout is a count of seconds read as whole nanoseconds on the virtual clock
(`duration`), and its timer is scheduled by `schedule`, which alone decides
where a timeout sorts among the events of one instant.

The tie rule: a member that ends at the same instant the timeout expires
wins.  Timers sort after every other event of their instant, and the run
loop runs every ready chain before it pops the next event, so the member's
end (and the wake-up it causes) is always seen first.

What lives here: reading a timeout, scheduling its timer, and the sites of
what an expiry does.  What does not: the waits themselves (`tasks`,
`modeltasks`), which say what a timed-out wait returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forge.variation import declare
from forge.sim.kernel import TIMEOUT, Kernel, Timer, duration_ns

TIE_GOES_TO_TIMEOUT = declare("timeouts.tie-goes-to-timeout", "timeouts",
                              "a timeout expiring at the same instant a task ends wins the tie")
IN_MILLISECONDS = declare("timeouts.in-milliseconds", "timeouts", "timeouts are read as milliseconds")
NEGATIVE_ACCEPTED = declare("timeouts.negative-accepted", "timeouts",
                            "a negative timeout is treated as zero")
EXPIRY_CANCELS_MEMBERS = declare("timeouts.expiry-cancels-members", "timeouts",
                                 "an expired timeout cancels the members")
TIMED_JOIN_DROPS_FINISHED = declare("timeouts.timed-join-drops-finished", "timeouts",
                                    "a timed-out join returns no entries at all, even for "
                                    "finished members")


def duration(seconds: Any) -> int | None:
    """A timeout in nanoseconds, or None when `seconds` is not a valid one
    (not a number, negative, not finite, or past the largest duration)."""
    if (NEGATIVE_ACCEPTED.on and isinstance(seconds, (int, float))
            and not isinstance(seconds, bool) and seconds < 0):
        seconds = 0
    ns = duration_ns(seconds)
    if ns is not None and IN_MILLISECONDS.on:
        ns //= 1000
    return ns


def schedule(kernel: Kernel, delay_ns: int, chain: Any, wait: Any,
             expire: Callable[[], None]) -> Timer:
    """Schedule a wait's timer so that it loses the tie with a member's end.

    The run loop calls `expire()` when the timer fires while `chain` is still
    parked on `wait`.
    """
    priority = -TIMEOUT if TIE_GOES_TO_TIMEOUT.on else TIMEOUT
    return kernel.schedule(delay_ns, priority, ("timeout", chain, wait, expire))
