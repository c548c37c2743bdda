"""Tasks the model starts: the four task built-ins and the task notices.

What lives here: the built-ins a round offers after `tools.allow_tasks`
(`task`, `task_cancel`, `task_status`, `await_tasks`, in that order, with
their descriptions), every refusal text they answer with, status lines and
cancel confirmations, the model's wait (with and without a timeout), and the
task notice queue: one notice per ended model task, in one of four shapes,
queued for the owner section and taken exactly once, by a `models.loop`
round or by `await_tasks`.

What does not: starting, cancelling and ending tasks (`tasks`, which calls
`task_ended` here through `Task.model_owner`), running rounds and appending
records (`models`), abandoning a model task when its owner ends (the run's
chain end, which never counts model tasks toward `tasks_live`).

Ownership: a model task belongs to the section entry whose model started it
(`SectionState`); its chain is that entry's chain.  The H1 pass hands its
model tasks and undelivered notices to the walk's first section entry, as the
chapter says ("move to the walk together with the tasks").  A section that
falls through leaves its model tasks to the chain, which abandons them
quietly when it ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from forge.engine import envelope
from forge.engine.rules import ids
from forge.variation import declare
from forge.engine.tasks import Task, Wait, lua_number_text
from forge.engine.tools import AllowTasks, ToolSpec
from forge.engine.rules import timeouts

if TYPE_CHECKING:
    from forge.engine.chain import Chain
    from forge.engine.models import LoopOp, ModelsAPI, SectionState

ANY_TARGET = ("`target` must be any section of this prompt, named by its heading (for example "
              "`## Research`).")
BAD_TARGET = "task: `target` must be a string naming a section heading, such as `## Research`"
BAD_INPUT = "task: `input` must be a string when given"
BAD_TIMEOUT = "await_tasks: `timeout` must be a non-negative number of seconds when given"


CANCEL_SPELLING = declare("model.notice-cancel-spelling", "model",
                          "a cancelled model task's notice says `was cancelled`")
CANCEL_QUEUES_NOTICE = declare("model.cancel-queues-notice", "model",
                               "the model's own task_cancel also queues a notice")
NOTICES_DELIVERED_TWICE = declare("model.notices-delivered-twice", "model",
                                  "a notice taken by a round stays queued for the next")
HEAD_WITHOUT_MARKS = declare("model.notice-head-without-marks", "model",
                             "the notice head names the target without `## `")


def one_of_targets(targets: tuple[str, ...]) -> str:
    return "`target` must be one of: " + ", ".join(targets)


@attrs.define(eq=False)
class AwaitWait(Wait):
    """The model's `await_tasks` parked on the owner chain.

    A `Wait` so that stopping the chain (`TasksAPI.drop_wait`) also drops its
    timer; it is never registered on a task, so no task end delivers into it
    and no result is taken: the prompt can still collect every task later.
    """

    #: The loop whose tool call waits; it gets the wait's text.
    op: Any = None
    #: `slept {seconds} seconds`, when there was nothing to wait on.
    sleep_text: str | None = None


@attrs.frozen
class Notice:
    """A queued task notice: its sentence, and the task whose end it tells."""

    task: Task = attrs.field(eq=False)
    text: str


class ModelTasks:
    def __init__(self, models: ModelsAPI) -> None:
        self.models = models
        self.run = models.run

    # ------------------------------------------------------------ offered
    def specs(self, allow: AllowTasks) -> tuple[ToolSpec, ...]:
        sentence = ANY_TARGET if allow.targets is None else one_of_targets(allow.targets)
        id_param = {"type": "object", "properties": {"id": {
            "type": "string", "description": "The task id exactly as `task` returned it."}},
            "required": ["id"]}
        return (
            ToolSpec("task", "Start a task that runs one section of this prompt beside you; it "
                     "returns the task id at once, and the task's result reaches you later as a "
                     "task notice. " + sentence,
                     {"type": "object", "properties": {
                         "target": {"type": "string", "description": sentence},
                         "input": {"type": "string",
                                   "description": "Replaces the task's argument string."}},
                      "required": ["target"]}),
            ToolSpec("task_cancel", "Cancel one of the tasks you started.", id_param),
            ToolSpec("task_status", "Read the status line of one of the tasks you started.",
                     id_param),
            ToolSpec("await_tasks", "Wait until one of the tasks you started ends, then return "
                     "every task notice that has arrived, one per line; `timeout` bounds the "
                     "wait in seconds.",
                     {"type": "object", "properties": {"timeout": {"type": "number"}},
                      "required": []}),
        )

    # ------------------------------------------------------------ calls
    def call(self, chain: Chain, state: SectionState, op: LoopOp, name: str,
             arguments: dict) -> tuple[str, bool] | None:
        """Serve one built-in call: (text, served), or None when it parks."""
        if name == "task":
            return self._task(chain, state, arguments)
        if name == "await_tasks":
            return self._await(chain, state, op, arguments)
        task, refusal = self._model_task(state, name, arguments)
        if refusal:
            return refusal, False
        if name == "task_status":
            return status_line(task), True
        state.silenced.add(task.id)
        self.run.tasks_api.cancel(task)
        return f"Task id={task.id} cancelled", True

    def _task(self, chain: Chain, state: SectionState, arguments: dict) -> tuple[str, bool]:
        target = arguments.get("target")
        if not isinstance(target, str):
            return BAD_TARGET, False
        input_ = arguments.get("input")
        if input_ is not None and not isinstance(input_, str):
            return BAD_INPUT, False
        wanted = target.strip()
        allowed = state.allow.targets
        if allowed is not None and wanted not in allowed:
            return (f"task: target `{wanted}` is not allowed; allowed targets: "
                    f"{', '.join(allowed)}"), False
        # A start failure is the message tasks.spawn would raise, behind `task: `.
        index, error = self.run.host.check_worker(chain, target.encode("utf-8"))
        if error:
            return f"task: {_message(error[1])}", False
        refusal = ids.depth_refusal(chain, "call")
        if refusal:
            return f"task: {refusal}", False
        seeds = {} if input_ is None else {"input": input_.encode("utf-8")}
        task = self.run.tasks_api.start_task(chain, index, "model", seeds)
        if isinstance(task, tuple):
            return f"task: {_message(task[1])}", False
        task.model_owner = state
        state.model_tasks.append(task)
        return f"Task id={task.id} started", True

    def _model_task(self, state: SectionState, name: str,
                    arguments: dict) -> tuple[Task | None, str | None]:
        raw = arguments.get("id")
        if not isinstance(raw, str):
            return None, f"{name}: `id` must be a task id string, exactly as `task` returned it"
        if not ids.is_task_id(raw):
            return None, f"{name}: `{raw}` is not a task id; use the id `task` returned"
        for task in state.model_tasks:
            if task.id == raw:
                return task, None
        return None, f"{name}: no model task with id {raw}"

    # ------------------------------------------------------------ the wait
    def _await(self, chain: Chain, state: SectionState, op: LoopOp,
               arguments: dict) -> tuple[str, bool] | None:
        timeout = arguments.get("timeout")
        timeout_ns = None
        if timeout is not None:
            timeout_ns = timeouts.duration(timeout)
            if timeout_ns is None:
                return BAD_TIMEOUT, False
        if state.notices:
            return self.take_notices(state), True
        live = [t for t in state.model_tasks if t.live]
        if not live and timeout_ns is None:
            return "nothing to wait for", True
        run = self.run
        wait = AwaitWait(chain, "await_tasks", [], every=False, op=op)
        if not live:
            wait.sleep_text = f"slept {lua_number_text(timeout)} seconds"
        ids.wait_parks(chain, timed=timeout_ns is not None)
        if timeout_ns is not None:
            wait.timer = timeouts.schedule(run.kernel, timeout_ns, chain, wait,
                                           lambda: self._expired(state, wait))
        task = chain.task
        run.admission.waiting(task)
        state.awaiting = wait
        run.trace.emit(run.kernel.now, "wait", chain=chain.id, call="await_tasks",
                       members=[t.id for t in live], timeout=timeout_ns)
        run.park(chain, "tasks", wait)
        return None

    def _expired(self, state: SectionState, wait: AwaitWait) -> None:
        state.awaiting = None
        if wait.sleep_text is not None:
            text = wait.sleep_text
        else:
            running = ", ".join(t.id for t in state.model_tasks if t.live)
            text = "\n".join([*self._take(state), f"timed out; tasks {running} still running"])
        self._resume(wait, text)

    def _resume(self, wait: AwaitWait, text: str) -> None:
        wait.op.await_text = text
        self.run.admission.wake(wait.chain, (True, b"continue", None))

    # ------------------------------------------------------------ notices
    def task_ended(self, state: SectionState, task: Task) -> None:
        """A model task ended: queue its notice for the owner section."""
        if task.id in state.silenced and not CANCEL_QUEUES_NOTICE.on:
            return      # the model's own task_cancel: its confirmation was the word
        text = notice(task, self.run.nonce)
        state.notices.append(Notice(task, text))
        owner = state.chain
        self.run.emit(owner, "task_notice", section_override=state.name, turn=owner.task.turns,
                      task=task.id, text=text)
        wait = state.awaiting
        if (wait is not None and task.state == "done" and owner.live
                and owner.parked_on is wait):
            state.awaiting = None
            if wait.timer is not None:
                self.run.kernel.cancel(wait.timer)
            self._resume(wait, self.take_notices(state))

    def _take(self, state: SectionState) -> list[str]:
        """Take every waiting notice.  Delivering a notice to the model joins
        its task: the task's store work is ordered before the owner's next step."""
        taken = state.notices
        state.notices = list(taken) if NOTICES_DELIVERED_TWICE.on else []
        for item in taken:
            self.run.tasks_api.joined(item.task)
        return [item.text for item in taken]

    def take_notices(self, state: SectionState) -> str:
        """Every notice waiting for the section, one per line, taken."""
        return "\n".join(self._take(state))

    def waiting(self, state: SectionState) -> list[str]:
        """The notices a models.loop round would append now (not taken)."""
        return [item.text for item in state.notices]

    def gather(self, state: SectionState) -> None:
        """A round went out with the waiting notices: they are taken."""
        self._take(state)

    def hand_over(self, old: SectionState, new: SectionState) -> None:
        """The H1 pass's model tasks and notices move to the walk."""
        new.model_tasks.extend(old.model_tasks)
        new.notices.extend(old.notices)
        new.silenced |= old.silenced
        for task in old.model_tasks:
            task.model_owner = new
        old.model_tasks, old.notices = [], []


def _message(value: Any) -> str:
    text = value[b"message"]
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


def _head(task: Task) -> str:
    marks = "" if HEAD_WITHOUT_MARKS.on else "## "
    return f"Task id={task.id} ({marks}{task.target})"


def notice(task: Task, nonce: str) -> str:
    """The task notice sentence for an ended model task."""
    if task.state == "done" and task.ok:
        return f"{_head(task)} completed: {envelope.wrap(task.result or '', nonce)}"
    if task.state == "done":
        return f"{_head(task)} failed: {task.failure.message}"
    if task.state == "cancelled":
        spelling = "cancelled" if CANCEL_SPELLING.on else "canceled"
        return f"{_head(task)} was {spelling}: the author cancelled it"
    return f"{_head(task)} was abandoned: {task.reason.phrase}"


def status_line(task: Task) -> str:
    """`Task id={task} (## {target}): {state}[, ok | , failed][, in ## {section}]
    [, waiting on {blocked}], turns {n}[, tasks {id, id}][, note: {note}]`"""
    status = task.status_json()
    parts = [f"{_head(task)}: {status['state']}"]
    if status["state"] == "done":
        parts.append("ok" if status.get("ok") else "failed")
    if status.get("section") is not None:
        parts.append(f"in ## {status['section']}")
    if status.get("blocked") is not None:
        parts.append(f"waiting on {status['blocked']}")
    parts.append(f"turns {status['turns']}")
    if status["tasks"]:
        parts.append("tasks " + ", ".join(status["tasks"]))
    if status.get("note") is not None:
        parts.append(f"note: {status['note']}")
    return ", ".join(parts)
