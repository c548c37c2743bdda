"""`rules.notices` tested where it lives: the four notice shapes, and a
state machine over one section's notice queue - model tasks end (some
cancelled by the model itself), rounds and `await_tasks` take what waits,
the H1 pass hands its queue over - against a model of what must be told."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from forge.engine.rules import notices
from forge.engine.rules.endings import AbandonReason
from forge.engine.rules.notices import NoticeQueue


@attrs.define
class Failure:
    message: str


@attrs.define(eq=False)
class Task:
    id: str
    target: str = "Child"
    state: str = "done"
    ok: bool | None = True
    result: str | None = "fine"
    failure: Any = None
    reason: Any = None


def _nonce() -> str:
    return "n" * 32


def test_a_notice_takes_one_of_four_shapes():
    """Completed (its result wrapped), failed, canceled by the author, and
    abandoned with its reason's phrase (tasks.model.notices.four-shapes,
    tasks.model.notices.example-failed, tasks.model.notices.example-cancelled,
    tasks.model.notices.example-abandoned)."""
    done = notices.sentence(Task("0.0"), _nonce)
    assert done.startswith("Task id=0.0 (## Child) completed: ") and "fine" in done
    failed = Task("0.1", ok=False, result=None, failure=Failure("boom"))
    assert notices.sentence(failed, _nonce) == "Task id=0.1 (## Child) failed: boom"
    cancelled = Task("0.2", state="cancelled", ok=False, result=None)
    assert notices.sentence(cancelled, _nonce) == \
        "Task id=0.2 (## Child) was canceled: the author cancelled it"
    abandoned = Task("0.0", state="abandoned", ok=False, result=None,
                     reason=AbandonReason.OWNER_RETURNED)
    assert notices.sentence(abandoned, _nonce) == \
        "Task id=0.0 (## Child) was abandoned: the section ended"


def test_only_a_completed_notice_reads_the_nonce():
    """A notice that wraps nothing never asks for the run's nonce, so the run
    stays independent of its seed (kit: determinism.seed)."""
    asked = []

    def nonce() -> str:
        asked.append(1)
        return _nonce()

    notices.sentence(Task("0.1", state="cancelled", ok=False, result=None), nonce)
    assert asked == []
    notices.sentence(Task("0.0"), nonce)
    assert asked == [1]


class Queue(RuleBasedStateMachine):
    """Each ended model task queues exactly one notice for its owner unless
    the model cancelled it itself; notices are taken all at once, exactly
    once, in arrival order, whether by a round or by await_tasks; taking one
    joins its task; a round's look at the queue takes nothing; the H1 pass's
    queue moves to the walk (tasks.model.notices.queued-for-owner,
    tasks.model.cancel-confirm.no-notice,
    tasks.model.await.exactly-once-arrival-order, tasks.wait.notice-joins,
    tasks.model.round.h1-notices-move)."""

    def __init__(self) -> None:
        super().__init__()
        self.queue = NoticeQueue()
        self.serial = 0
        self.expected: list[str] = []
        self.told: list[str] = []
        self.joined: list[str] = []

    @rule(shape=st.sampled_from(["ok", "failed", "cancelled", "abandoned"]),
          by_model=st.booleans())
    def a_task_ends(self, shape, by_model):
        task = Task(f"0.{self.serial}")
        self.serial += 1
        if shape == "failed":
            task.ok, task.result, task.failure = False, None, Failure("bad")
        elif shape == "cancelled":
            task.state, task.ok, task.result = "cancelled", False, None
        elif shape == "abandoned":
            task.state, task.ok, task.result = "abandoned", False, None
            task.reason = AbandonReason.OWNER_FAILED
        if by_model:
            self.queue.silence(task.id)
        queued = self.queue.offer(task, _nonce)
        assert (queued is None) == by_model
        if not by_model:
            self.expected.append(task.id)

    @rule()
    def a_round_looks(self):
        before = list(self.queue.waiting)
        assert len(self.queue.texts()) == len(before)
        assert self.queue.waiting == before

    @rule()
    def take(self):
        texts = self.queue.take(lambda task: self.joined.append(task.id))
        self.told += [t.split()[1].removeprefix("id=") for t in texts]

    @rule()
    def the_h1_pass_hands_over(self):
        walk = NoticeQueue()
        self.queue.hand_over(walk)
        assert self.queue.waiting == []
        self.queue = walk

    @invariant()
    def told_once_in_arrival_order(self):
        waiting = [n.task.id for n in self.queue.waiting]
        assert self.told + waiting == self.expected
        assert self.joined == self.told


test_queue = Queue.TestCase
