"""`rules.admission` tested where it lives: a state machine spawns, parks,
wakes and ends tasks of two owners under a ceiling, with a scheduler that
only records what admission asks of it, and checks the concurrency rules
after every step."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition, rule,
                                 run_state_machine_as_test)

from forge import variation

from forge.engine.requests import Slot
from forge.engine.rules import ids
from forge.engine.rules.admission import Admission


@attrs.define(eq=False)
class Chain:
    id: str
    limit: int = 8
    holding: dict = attrs.field(factory=dict)
    child_counter: int = 0
    parked_on: Any = None
    ready: bool = False
    task: Any = None


@attrs.define(eq=False)
class Task:
    id: str
    owner: Chain
    chain: Chain
    live: bool = True
    admitted: bool = False
    is_main: bool = False
    waking: Chain | None = None
    #: Parked on a wait for other tasks (the machine's own record).
    waiting: bool = False


class Recorder:
    """The run loop as admission sees it: what becomes ready, what parks."""

    def __init__(self) -> None:
        self.first_runs: list[str] = []

    def make_ready(self, chain: Chain, value: Any) -> None:
        assert not chain.ready, f"chain {chain.id} made ready twice"
        if not chain.task.is_main and chain.task.id not in self.first_runs:
            self.first_runs.append(chain.task.id)
        chain.ready, chain.parked_on = True, None

    def park(self, chain: Chain, request: Any) -> Any:
        chain.ready, chain.parked_on = False, request

    def note(self, what: str, **fields: Any) -> None:
        pass


class Slots(RuleBasedStateMachine):
    """Whatever tasks two owners spawn, park on waits, wake and end: no more
    tasks hold a slot than the ceiling, nor more of an owner's than its limit;
    a task that cannot get a slot waits queued and first runs once admitted;
    each owner's tasks first run in spawn order; a waiting task holds no
    slot; the main walk never waits for one; lowering a limit preempts
    nobody; and the counts are the holders (tasks.concurrency.queued,
    tasks.concurrency.admit-spawn-order, tasks.concurrency.wait-releases-slot,
    tasks.concurrency.main-walk-no-slot, tasks.concurrency.no-preempt,
    tasks.concurrency.setter-getter)."""

    def __init__(self) -> None:
        super().__init__()
        self.recorder = Recorder()
        self.tasks: list[Task] = []

    @initialize(ceiling=st.integers(1, 4), limits=st.tuples(st.integers(1, 3), st.integers(1, 3)))
    def build(self, ceiling, limits):
        self.admission = Admission(self.recorder, ceiling)
        self.owners = [Chain("0", limit=limits[0]), Chain("0.9", limit=limits[1])]
        self.main = Task("0", owner=None, chain=self.owners[0], is_main=True, admitted=True)
        self.owners[0].task = self.main

    def _live(self, pred=lambda t: True) -> list[Task]:
        return [t for t in self.tasks if t.live and pred(t)]

    @rule(which=st.integers(0, 1))
    def spawn(self, which):
        owner = self.owners[which]
        task_id = ids.take(owner)
        task = Task(task_id, owner=owner, chain=None)
        task.chain = Chain(task_id)
        task.chain.task = task
        self.tasks.append(task)
        self.admission.enqueue(task)

    @precondition(lambda self: self._live(lambda t: t.chain.ready and not t.waiting))
    @rule(data=st.data())
    def park_on_a_wait(self, data):
        task = data.draw(st.sampled_from(self._live(lambda t: t.chain.ready and not t.waiting)))
        task.waiting = True
        self.recorder.park(task.chain, "join")
        self.admission.waiting(task)

    @precondition(lambda self: self._live(lambda t: t.waiting and t.waking is None))
    @rule(data=st.data())
    def wake(self, data):
        task = data.draw(st.sampled_from(self._live(lambda t: t.waiting and t.waking is None)))
        task.waiting = False
        self.admission.wake(task.chain, "answer")

    @precondition(lambda self: self._live(lambda t: t.chain.ready))
    @rule(data=st.data())
    def end(self, data):
        task = data.draw(st.sampled_from(self._live(lambda t: t.chain.ready)))
        task.live = False
        self.admission.ended(task)
        self.admission.admit()

    @rule(which=st.integers(0, 1), limit=st.integers(1, 4))
    def set_limit(self, which, limit):
        owner = self.owners[which]
        running = dict(owner.holding)
        owner.limit = self.admission.clamp(limit, 3)
        assert owner.limit == min(limit, 3)
        self.admission.admit()
        assert running.keys() <= owner.holding.keys(), "a lowered limit preempted a task"

    @rule()
    def main_walk_waits_and_wakes(self):
        if not hasattr(self, "admission"):
            return
        chain = self.main.chain
        self.admission.waiting(self.main)
        chain.ready = False
        self.admission.wake(chain, "answer")
        assert chain.ready, "the main walk waited for a slot"
        chain.ready = False

    @invariant()
    def counts_are_the_holders(self):
        if not hasattr(self, "admission"):
            return
        holders = [t for t in self.tasks if t.id in t.owner.holding]
        assert self.admission.running == len(holders) <= self.admission.ceiling
        for t in holders:
            assert t.live and t.admitted and not t.waiting and t.waking is None
        for owner in self.owners:
            assert len(owner.holding) == sum(1 for t in holders if t.owner is owner)

    @invariant()
    def queued_tasks_have_not_run_and_first_runs_keep_spawn_order(self):
        if not hasattr(self, "admission"):
            return
        for t in self._live(lambda t: not t.admitted):
            assert t.id not in self.recorder.first_runs and not t.chain.ready
        for owner in self.owners:
            firsts = [i for i in self.recorder.first_runs if i.rsplit(".", 1)[0] == owner.id]
            assert firsts == sorted(firsts, key=ids.id_key)

    @invariant()
    def a_woken_task_is_parked_on_a_slot_until_admitted(self):
        for t in self._live(lambda t: t.waking is not None):
            assert isinstance(t.chain.parked_on, Slot) and t.id not in t.owner.holding


test_slots = Slots.TestCase


@pytest.mark.parametrize("site", ["admission.waiting-keeps-slot", "admission.newest-first",
                                  "admission.no-limit"])
def test_the_machine_catches_each_wrong_admission(site):
    """Each of admission's variation sites switched on breaks a rule the
    machine checks (kit: mutants.rule-tests)."""
    with variation.switched(site):
        with pytest.raises(AssertionError):
            # Finding the break is the point: no shrinking.
            run_state_machine_as_test(Slots, settings=settings(
                max_examples=300, database=None, deadline=None, phases=[Phase.generate]))
