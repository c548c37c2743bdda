"""Notices to the model: one per ended model task, queued, taken exactly once.

When a task the model started ends, its owner section gets a notice in one
of four shapes: `Task id={id} (## {target}) completed: <envelope>`,
`... failed: {message}`, `... was canceled: the author cancelled it`, and
`... was abandoned: {phrase}` (the phrase of its reason, `rules.endings`).
A task the model cancelled itself gets no notice: `task_cancel`'s
confirmation already told it.  Notices queue in arrival order and are taken
all at once, exactly once, by the next `models.loop` round or by
`await_tasks`; taking a notice joins its task (its store work is ordered
before the owner's next step).  The H1 pass hands its queue to the walk.

What lives here: the notice sentences and the queue, whose state is this
module's own (`NoticeQueue`), not fields on a section record.  What does not:
when a round gathers notices or an await wakes (`models`, `modeltasks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from forge.engine import envelope
from forge.variation import declare

CANCEL_SPELLING = declare("model.notice-cancel-spelling", "model",
                          "a cancelled model task's notice says `was cancelled`")
CANCEL_QUEUES_NOTICE = declare("model.cancel-queues-notice", "model",
                               "the model's own task_cancel also queues a notice")
NOTICES_DELIVERED_TWICE = declare("model.notices-delivered-twice", "model",
                                  "a notice taken by a round stays queued for the next")
HEAD_WITHOUT_MARKS = declare("model.notice-head-without-marks", "model",
                             "the notice head names the target without `## `")


def head(task: Any) -> str:
    """`Task id={id} (## {target})`, the start of notices and status lines."""
    marks = "" if HEAD_WITHOUT_MARKS.on else "## "
    return f"Task id={task.id} ({marks}{task.target})"


def sentence(task: Any, nonce: Callable[[], str]) -> str:
    """The notice for an ended model task.  `nonce()` is the run's nonce,
    asked for only when the notice wraps a result, so a run whose notices
    wrap nothing never reads its seed (`Run.seed_independent`)."""
    if task.state == "done" and task.ok:
        return f"{head(task)} completed: {envelope.wrap(task.result or '', nonce())}"
    if task.state == "done":
        return f"{head(task)} failed: {task.failure.message}"
    if task.state == "cancelled":
        spelling = "cancelled" if CANCEL_SPELLING.on else "canceled"
        return f"{head(task)} was {spelling}: the author cancelled it"
    return f"{head(task)} was abandoned: {task.reason.phrase}"


@attrs.frozen
class Notice:
    """A queued notice: its sentence, and the task whose end it tells."""

    task: Any = attrs.field(eq=False)
    text: str


@attrs.define(eq=False)
class NoticeQueue:
    """The notices waiting for one section entry's model."""

    #: In arrival order.  Invariant: each notice is taken at most once.
    waiting: list[Notice] = attrs.field(factory=list)
    #: Ids of tasks the model cancelled itself: their end queues nothing.
    silenced: set[str] = attrs.field(factory=set)

    def silence(self, task_id: str) -> None:
        self.silenced.add(task_id)

    def offer(self, task: Any, nonce: Callable[[], str]) -> Notice | None:
        """A model task ended: queue its notice, unless the model cancelled it."""
        if task.id in self.silenced and not CANCEL_QUEUES_NOTICE.on:
            return None
        notice = Notice(task, sentence(task, nonce))
        self.waiting.append(notice)
        return notice

    def take(self, joined: Callable[[Any], None]) -> list[str]:
        """Take every waiting notice; `joined(task)` for each one taken."""
        taken = self.waiting
        self.waiting = list(taken) if NOTICES_DELIVERED_TWICE.on else []
        for notice in taken:
            joined(notice.task)
        return [notice.text for notice in taken]

    def texts(self) -> list[str]:
        """The notices a round would append now (nothing is taken)."""
        return [notice.text for notice in self.waiting]

    def hand_over(self, to: NoticeQueue) -> None:
        """The H1 pass's queue moves to the walk's first section entry."""
        to.waiting.extend(self.waiting)
        to.silenced |= self.silenced
        self.waiting = []
