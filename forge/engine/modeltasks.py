"""Tasks the model starts: the four task built-ins.

What lives here: the built-ins a round offers after `tools.allow_tasks`
(`task`, `task_cancel`, `task_status`, `await_tasks`, in that order, with
their descriptions), every refusal text they answer with, status lines and
cancel confirmations, and the model's wait (with and without a timeout),
which wakes when a notice is queued.  The notices themselves and their queue
are `rules.notices`.

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


from forge.engine.rules import ids, notices, waits
from forge.engine.requests import AwaitTasks
from forge.engine.state import Task
from forge.engine.tasks import lua_number_text
from forge.engine.modelside import AllowTasks
from forge.engine.tools import ToolSpec
from forge.engine.rules import timeouts

if TYPE_CHECKING:
    from forge.engine.state import Chain
    from forge.engine.modelside import LoopOp, ModelSide, SectionState

ANY_TARGET = ("`target` must be any section of this prompt, named by its heading (for example "
              "`## Research`).")
BAD_TARGET = "task: `target` must be a string naming a section heading, such as `## Research`"
BAD_INPUT = "task: `input` must be a string when given"
BAD_TIMEOUT = "await_tasks: `timeout` must be a non-negative number of seconds when given"


def one_of_targets(targets: tuple[str, ...]) -> str:
    return "`target` must be one of: " + ", ".join(targets)


class ModelTasks:
    def __init__(self, models: ModelSide) -> None:
        self.models = models
        self.ctx = models.ctx

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
        state.notices.silence(task.id)
        self.models.tasks_api.cancel(task)
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
        index, error = self.models.host.check_worker(chain, target.encode("utf-8"))
        if error:
            return f"task: {_message(error[1])}", False
        refusal = ids.depth_refusal(chain, "call")
        if refusal:
            return f"task: {refusal}", False
        seeds = {} if input_ is None else {"input": input_.encode("utf-8")}
        task = self.models.tasks_api.start_task(chain, index, "model", seeds)
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
        if state.notices.waiting:
            return self.take_notices(state), True
        live = [t for t in state.model_tasks if t.live]
        if not live and timeout_ns is None:
            return "nothing to wait for", True
        ctx = self.ctx
        # Never registered on a task: no task end delivers into it and no
        # result is taken, so the prompt can still collect every task later.
        sleep_text = None if live else f"slept {lua_number_text(timeout)} seconds"
        wait = AwaitTasks(op, sleep_text, timed=timeout_ns is not None)
        state.awaiting = wait
        waits.park(ctx.scheduler, ctx.admission, chain, wait, call="await_tasks",
                   shown=[t.id for t in live], timeout_ns=timeout_ns,
                   expire=lambda: self._expired(state, chain, wait))
        return None

    def _expired(self, state: SectionState, chain: Chain, wait: AwaitTasks) -> None:
        state.awaiting = None
        chain.timer = None              # it fired
        if wait.sleep_text is not None:
            text = wait.sleep_text
        else:
            running = ", ".join(t.id for t in state.model_tasks if t.live)
            text = "\n".join([*self._take(state), f"timed out; tasks {running} still running"])
        self._resume(chain, wait, text)

    def _resume(self, chain: Chain, wait: AwaitTasks, text: str) -> None:
        wait.op.await_text = text
        self.ctx.admission.wake(chain, (True, b"continue", None))

    # ------------------------------------------------------------ notices
    def task_ended(self, state: SectionState, task: Task) -> None:
        """A model task ended: queue its notice for the owner section."""
        queued = state.notices.offer(task, lambda: self.ctx.nonce())
        if queued is None:
            return      # the model's own task_cancel: its confirmation was the word
        owner = state.chain
        self.ctx.events.emit(owner, "task_notice", section_override=state.name, turn=owner.task.turns,
                      task=task.id, text=queued.text)
        wait = state.awaiting
        if (wait is not None and task.state == "done" and owner.live
                and owner.parked_on is wait):
            state.awaiting = None
            self.models.tasks_api.unregister(owner)
            self._resume(owner, wait, self.take_notices(state))

    def _take(self, state: SectionState) -> list[str]:
        """Take every waiting notice, joining their tasks."""
        return state.notices.take(self.models.tasks_api.joined)

    def take_notices(self, state: SectionState) -> str:
        """Every notice waiting for the section, one per line, taken."""
        return "\n".join(self._take(state))

    def waiting(self, state: SectionState) -> list[str]:
        """The notices a models.loop round would append now (not taken)."""
        return state.notices.texts()

    def gather(self, state: SectionState) -> None:
        """A round went out with the waiting notices: they are taken."""
        self._take(state)

    def hand_over(self, old: SectionState, new: SectionState) -> None:
        """The H1 pass's model tasks and notices move to the walk."""
        new.model_tasks.extend(old.model_tasks)
        old.notices.hand_over(new.notices)
        for task in old.model_tasks:
            task.model_owner = new
        old.model_tasks = []


def _message(value: Any) -> str:
    text = value[b"message"]  # lua: own table (a host error value)
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


def status_line(task: Task) -> str:
    """`Task id={task} (## {target}): {state}[, ok | , failed][, in ## {section}]
    [, waiting on {blocked}], turns {n}[, tasks {id, id}][, note: {note}]`"""
    status = task.status_json()
    parts = [f"{notices.head(task)}: {status['state']}"]
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
