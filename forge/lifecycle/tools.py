"""The model's four tools: spawn_task, task_status, task_retry, task_stop.

Lives here: ``Tool`` (name, the seed's one-line summary, the description the
model reads, a strict JSON argument schema, and the call), ``ToolContext``
(what the host's run context supplies: the parent session, never the model),
argument checking (bad arguments answer one error line), and the factories
``spawn_tool``/``task_tools``/``tools`` (lifecycle.tools.order).
Does not live here: the Manager's behaviour behind each verb (``manager``) and
the card and listing texts (``cards``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from forge.lifecycle.cards import ToolResult, listing, refusal, tool_result
from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import Info, SpawnRequest
from forge.lifecycle.store import NotFound

if TYPE_CHECKING:
    from forge.lifecycle.store import Store


class Manager(Protocol):
    """What the tools ask of the manager (`forge.lifecycle.manager.Manager`),
    named here so that this module does not depend on the manager, which
    builds its tools from it."""

    store: Store

    def progress(self, info: Info) -> str: ...

    def spawn_resolved(self, req: SpawnRequest) -> tuple[Any, Any]: ...

    def model_has_result(self, info: Info) -> None: ...

    def list(self, parent_session_id: str) -> list[Any]: ...

    def status(self, task_id: str, wait: float = 0.0) -> Any: ...

    def retry(self, task_id: str) -> Any: ...

    def stop(self, task_id: str, graceful: bool = False) -> Any: ...

SPAWN_TASK, TASK_STATUS, TASK_RETRY, TASK_STOP = (
    "spawn_task", "task_status", "task_retry", "task_stop")


@attrs.frozen
class ToolContext:
    """The calling run, as the host knows it. ``session_id`` is the parent
    conversation; ``parent_run_id`` the host's id for the calling run (display
    only, lifecycle.spawn.parent-run-id); ``tool_call_id`` this call's id."""

    session_id: str = ""
    tool_call_id: str = ""
    parent_run_id: str = ""


@attrs.frozen
class Tool:
    name: str
    summary: str  # the seed's one-line account of the verb
    description: str  # what the model reads
    parameters: dict
    run: Callable[[ToolContext, dict], ToolResult] = attrs.field(repr=False)

    def call(self, ctx: ToolContext, args: Any) -> ToolResult:
        """Check ``args`` against the schema, then run; bad arguments (and a
        refused call) answer ``ToolResult.error`` with one line, never raise."""
        problem = check_args(self.parameters, args)
        if problem:
            return ToolResult.error(f"{self.name}: {problem}")
        return self.run(ctx, args)


def _schema(**props: tuple[str, str]) -> dict:
    """A strict object schema: every property listed and required, no others."""
    return {"type": "object",
            "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()},
            "required": list(props), "additionalProperties": False}


def check_args(schema: dict, args: Any) -> str:
    """The first thing wrong with ``args``, or "". A missing property reads as
    its zero value (models omit them), an unknown one or a wrong type is refused."""
    if not isinstance(args, dict):
        return "arguments are a JSON object"
    props = schema["properties"]
    for key in args:
        if key not in props:
            return f"unknown argument `{key}`; known: {', '.join(props)}"
    for key, value in args.items():
        kind = props[key]["type"]
        ok = {"string": isinstance(value, str),
              "boolean": isinstance(value, bool),
              "integer": isinstance(value, int) and not isinstance(value, bool)
              and value >= 0}[kind]
        if not ok:
            noun = {"string": "a string", "boolean": "true or false",
                    "integer": "a non-negative integer"}[kind]
            return f"`{key}` is {noun}"
    return ""


SPAWN_DESCRIPTION = (
    "Start a background task: another agent works on the input while you continue. Returns a "
    "task_id immediately. When the task finishes you are notified automatically in a later turn "
    "— after spawning, finish your reply and END YOUR TURN instead of polling. Only reach for "
    "task_status when the user explicitly asks for progress (use its wait_seconds rather than a "
    "polling loop); task_stop cancels.")
STATUS_DESCRIPTION = (
    "Check a background task started with spawn_task. Statuses: working, input_required "
    "(waiting for a human approval), completed, failed, cancelled. For finished tasks the "
    "result field carries the FULL final output — the wake-up notification only shows a "
    "truncated summary. Set wait_seconds for one bounded wait instead of calling this in a "
    "loop. With no task_id it lists this conversation's tasks — the way back to an id you no "
    "longer have.")
RETRY_DESCRIPTION = (
    "Resume a FAILED background task from where it stopped: same conversation, same progress, "
    "a new attempt. Prefer this over spawning a fresh task after a transient failure (a rate "
    "limit, a dropped connection) — a new task starts from nothing and pays again for "
    "everything this one already did. Only a failed task can be resumed, and only a limited "
    "number of times; when the failure is one a rerun cannot fix, spawn a new task instead.")
STOP_DESCRIPTION = "Stop a background task started with spawn_task."

SPAWN_PARAMS = _schema(
    agent_name=("string", "Agent to run the task with; empty uses the current agent"),
    input=("string", "The task prompt for the agent"),
    label=("string", "Short human-readable task label shown in the UI"))
STATUS_PARAMS = _schema(
    task_id=("string", "The id returned by spawn_task; empty lists every task of this "
                       "conversation instead (newest first, summaries only)"),
    wait_seconds=("integer", "Block up to this many seconds for the task to finish before "
                             "returning (0 = return immediately). Prefer one wait over "
                             "repeated polling"))
RETRY_PARAMS = _schema(task_id=("string", "The id of the failed task to resume"))
STOP_PARAMS = _schema(
    task_id=("string", "The id returned by spawn_task"),
    graceful=("boolean", "Finish the current turn before stopping instead of aborting "
                         "immediately"))

# The seed's table of the four verbs (lifecycle.tools.four-verbs).
SUMMARIES = {
    SPAWN_TASK: "Start a task; returns a task_id immediately",
    TASK_STATUS: "Read one, optionally waiting for it to finish; with no id, list the "
                 "conversation’s tasks",
    TASK_RETRY: "Resume a FAILED one from where it stopped",
    TASK_STOP: "Cancel one",
}


def _card(mgr: Manager, task: Any, agent: str = "") -> ToolResult:
    info = Info.of(task, agent)
    return tool_result(info, mgr.progress(info))


def _owned(mgr: Manager, ctx: ToolContext, task_id: str) -> Any:
    """The caller's own task, or NotFound: another conversation's ids do not
    resolve (nor leak) through a tool."""
    if not ctx.session_id:
        raise TaskError("task tools: no session in the run context")
    row = mgr.store.get(task_id)
    if row.parent_session_id != ctx.session_id:
        raise NotFound(task_id)
    return row


def spawn_tool(mgr: Manager) -> Tool:
    def run(ctx: ToolContext, args: dict) -> ToolResult:
        if not ctx.session_id:
            return ToolResult.error("spawn_task: no session in the run context")
        try:
            row, spec = mgr.spawn_resolved(SpawnRequest(
                parent_session_id=ctx.session_id, agent_name=args.get("agent_name", ""),
                input=args.get("input", ""), label=args.get("label", ""),
                parent_run_id=ctx.parent_run_id, tool_call_id=ctx.tool_call_id))
        except (TaskError, NotFound) as e:  # a failed launch too: the Manager wraps it
            return ToolResult.error(str(e))
        info = Info.of(row, spec.display_name)
        mgr.model_has_result(info)  # a fast finish is in the model's hands now
        return tool_result(info, mgr.progress(info))
    return Tool(SPAWN_TASK, SUMMARIES[SPAWN_TASK], SPAWN_DESCRIPTION, SPAWN_PARAMS, run)


def status_tool(mgr: Manager) -> Tool:
    def run(ctx: ToolContext, args: dict) -> ToolResult:
        task_id = args.get("task_id", "")
        if not task_id:
            if not ctx.session_id:
                return ToolResult.error("task_status: no session in the run context")
            return ToolResult(text=listing(mgr.list(ctx.session_id), mgr.progress),
                              display="tasks")
        try:
            _owned(mgr, ctx, task_id)
            row = mgr.status(task_id, args.get("wait_seconds", 0))
        except (TaskError, NotFound) as e:
            return ToolResult.error(str(e))
        return _card(mgr, row)
    return Tool(TASK_STATUS, SUMMARIES[TASK_STATUS], STATUS_DESCRIPTION, STATUS_PARAMS, run)


def retry_in_hand(mgr: Manager, task_id: str,
                  settle: Callable[[Info], None] | None = None) -> Any:
    """Retry on the model's path (task_retry, notes 4.4): whatever the model is
    handed - the retried task, or the task a refusal shows (a launch that
    failed included) - goes through ModelHasResult, so a fast finish or a
    failed restart the model reads in the result settles its debt
    (lifecycle.retry.launch-failure-tool). Raises what ``Manager.retry`` raises.
    ``settle`` replaces ModelHasResult for a caller that watches it."""
    settle = settle or mgr.model_has_result
    try:
        row = mgr.retry(task_id)
    except TaskError as e:
        if e.task is not None:
            settle(Info.of(e.task))
        raise
    settle(Info.of(row))
    return row


def retry_tool(mgr: Manager) -> Tool:
    def run(ctx: ToolContext, args: dict) -> ToolResult:
        try:
            row = _owned(mgr, ctx, args.get("task_id", ""))
            row = retry_in_hand(mgr, row.id)
        except NotFound as e:
            return ToolResult.error(str(e))
        except TaskError as e:
            if e.task is None:
                return ToolResult.error(str(e))
            info = Info.of(e.task)  # the refusal shows the task's state (settled above)
            return refusal(str(e), info, mgr.progress(info))
        return _card(mgr, row)
    return Tool(TASK_RETRY, SUMMARIES[TASK_RETRY], RETRY_DESCRIPTION, RETRY_PARAMS, run)


def stop_tool(mgr: Manager) -> Tool:
    def run(ctx: ToolContext, args: dict) -> ToolResult:
        try:
            _owned(mgr, ctx, args.get("task_id", ""))
            row = mgr.stop(args.get("task_id", ""), graceful=args.get("graceful", False))
        except NotFound as e:
            return ToolResult.error(str(e))
        except TaskError as e:
            if e.task is None:
                return ToolResult.error(str(e))
            # already finished: news, not a failure - the card, flagged
            card = _card(mgr, e.task)
            return attrs.evolve(card, is_error=True)
        return _card(mgr, row)
    return Tool(TASK_STOP, SUMMARIES[TASK_STOP], STOP_DESCRIPTION, STOP_PARAMS, run)


def task_tools(mgr: Manager) -> list[Tool]:
    """status, retry, stop: what a host with its own spawn tool attaches beside it."""
    return [status_tool(mgr), retry_tool(mgr), stop_tool(mgr)]


def tools(mgr: Manager) -> list[Tool]:
    """The whole surface: spawn_task followed by the task tools."""
    return [spawn_tool(mgr), *task_tools(mgr)]
