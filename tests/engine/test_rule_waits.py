"""`rules.waits` tested where it lives: the one recipe every wait parks by
and its inverse, on plain records with a loop and admission that record
what the recipe asks of them - for a join (timed or not), await_tasks and a
fanout."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.engine.parking import PARK
from forge.engine.rules import waits


@attrs.define(eq=False)
class Task:
    id: str
    live: bool = True
    waiters: list = attrs.field(factory=list)


@attrs.define(eq=False)
class Chain:
    id: str = "0.4"
    kind: str = "task"
    depth: int = 1
    child_counter: int = 2
    entry_counter: int = 1
    task: Any = None
    join_left: int = 0
    timer: Any = None
    parked_on: Any = None


class Loop:
    """The scheduler, admission and timers as the recipe sees them, in one
    record of what was asked, in order."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def park(self, chain, request, timeout_ns=None, expire=None):
        chain.parked_on = request
        chain.timer = None if timeout_ns is None else ("timer", timeout_ns)
        self.asked.append(("park", request, timeout_ns, expire))
        return PARK

    def note(self, what, **fields):
        self.asked.append(("note", what, fields))

    def waiting(self, task):
        self.asked.append(("slot back", task))

    def cancel(self, timer):
        self.asked.append(("cancel", timer))


def _chain() -> Chain:
    chain = Chain()
    chain.task = Task("0.4")
    return chain


@pytest.mark.parametrize("timeout_ns", [None, 5_000])
def test_a_join_takes_its_index_registers_gives_its_slot_back_traces_and_parks(timeout_ns):
    """In that order; a timed wait takes one child index, an untimed one none
    (tasks.timeout-ids.timed-wait-takes-index, tasks.timeout-ids.no-index,
    tasks.concurrency.wait-releases-slot, tasks.wait.join-any-parks-or-returns)."""
    loop, chain = Loop(), _chain()
    members = [Task("0.4.0"), Task("0.4.1", live=False)]
    expire = object()
    assert waits.park(loop, loop, chain, "join", members, call="tasks.join",
                      shown=["0.4.0", "0.4.1"], timeout_ns=timeout_ns, expire=expire) is PARK
    assert chain.child_counter == (3 if timeout_ns is not None else 2)
    assert [t.waiters for t in members] == [[chain], []]
    assert chain.join_left == 1
    assert loop.asked == [
        ("slot back", chain.task),
        ("note", "wait", {"chain": "0.4", "call": "tasks.join", "members": ["0.4.0", "0.4.1"],
                          "timeout": timeout_ns}),
        ("park", "join", timeout_ns, expire)]


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=10))
def test_each_live_member_is_registered_once(named):
    """A task named twice in a join set is registered once, so one end counts
    it down once; ended members are not registered (tasks.wait.join-entries,
    tasks.consumed.duplicate-in-join)."""
    tasks = {}
    for index, live in named:
        tasks.setdefault(index, Task(f"0.4.{index}", live=live))
    members = [tasks[index] for index, _ in named]
    loop, chain = Loop(), _chain()
    waits.park(loop, loop, chain, "join", members, call="tasks.join_any", shown=[])
    live = [t for t in tasks.values() if t.live]
    assert chain.join_left == len(live)
    assert all(t.waiters == ([chain] if t.live else []) for t in tasks.values())


def test_await_tasks_registers_on_nothing_and_a_fanout_takes_no_index():
    """No task end delivers into await_tasks; a fanout's arms took their
    indexes when they started and its wait is not traced
    (tasks.model.await-timeout.index, tasks.ids.fanout-shares-counter)."""
    loop, chain = Loop(), _chain()
    arm = Task("0.4.2")
    waits.park(loop, loop, chain, "await", call="await_tasks", shown=["0.4.2"], timeout_ns=10)
    assert arm.waiters == [] and chain.child_counter == 3
    loop, chain = Loop(), _chain()
    waits.park(loop, loop, chain, "arms", [arm], counted=False)
    assert chain.child_counter == 2 and arm.waiters == [chain]
    assert [a[0] for a in loop.asked] == ["slot back", "park"]


def test_leaving_a_wait_cancels_its_timer_and_unregisters():
    """However a wait ends (answered, timed out, stopped) the chain leaves
    every member and its timer goes, so no later end or expiry reaches it
    (kit: waits.recipe)."""
    loop, chain = Loop(), _chain()
    members = [Task("0.4.0"), Task("0.4.1")]
    waits.park(loop, loop, chain, "join", members, call="tasks.join", shown=[], timeout_ns=7)
    timer = chain.timer
    waits.leave(chain, members, loop)
    assert chain.timer is None and loop.asked[-1] == ("cancel", timer)
    assert all(t.waiters == [] for t in members)
    waits.leave(chain, members, loop)       # leaving twice changes nothing
    assert loop.asked[-1] == ("cancel", timer)
