"""What a lifecycle actor can do: the Manager's concurrent callers, by name.

Each action is one call a real host makes into the Manager - a run ending
(``run_completes``, ``run_fails``, ``run_pauses``, ``run_cancelled``: the
names lifecycle cases use too, ``vocabulary``), a stop, a graceful stop, stop-tree, a retry
from the host API or from the model's tool, a spawn, an approval resuming,
the restart sweep, a task_status read - with the parameters a scenario may give it. ``perform``
runs one against a ``World``: unscheduled in a scenario's setup, as a step
sequence inside an actor when racing. A refusal (``TaskError``) is an
action's result, not a failure: losing a race is allowed.

Lives here: ``ACTIONS`` (name -> parameters and their defaults) and
``perform``. Does not live here: the schedule and the oracles (``explore``),
the file format that names actions (``scenario``).
"""

from __future__ import annotations

from typing import Any

from forge.lifecycle.errors import TaskError
from forge.lifecycle.explore import HostFailure, World
from forge.lifecycle.records import RunOutcome, SpawnRequest, TaskStatus
from forge.lifecycle.tools import retry_in_hand
from forge.lifecycle.vocabulary import RUN_ENDINGS

#: Parameters every action accepts, with their defaults.
COMMON = {"task": 1, "process": "main"}
#: name -> its own parameters and their defaults (a default's type is the rule).
ACTIONS: dict[str, dict[str, Any]] = {
    # what the run reports (``vocabulary``: the same names as lifecycle cases')
    "run_completes": {"run": "launched", "graceful_stop": False, "result": "done"},
    "run_fails": {"run": "launched", "graceful_stop": False, "error": "boom", "result": ""},
    "run_pauses": {"run": "launched"},
    "run_cancelled": {"run": "launched", "result": ""},
    "stop": {"graceful": False},
    "stop_tree": {"parent": "p"},
    "retry": {"via": "host"},
    "spawn": {"parent": "p", "label": ""},
    "resume": {},
    "status": {"wait": 0},
    "recover": {},
}
#: The actions that act on no task (their ``task`` parameter is unused).
TASKLESS = ("spawn", "recover", "stop_tree")
#: The allowed values of string parameters that are choices.
CHOICES = {"run": ("launched", "setup", "first"), "process": ("main", "other"),
           "via": ("host", "tool")}


def params_of(action: str, given: dict[str, Any]) -> dict[str, Any]:
    """The action's parameters: defaults, overridden by those given."""
    return {**COMMON, **ACTIONS[action], **given}


def _run_id(world: World, tid: str, which: str) -> str:
    """Which run an ending names: the run the host launched last for the task
    (what a real run knows of itself), the run current when setup ended, or
    the task's first run."""
    if which == "setup":
        return world.setup_runs[tid]
    launched = world.launched_runs(tid)
    if which == "first" or not launched:
        return launched[0] if launched else _peek(world, tid).run_id
    return launched[-1]


def _peek(world: World, tid: str):
    """Read a row outside the Manager (what the host knows, what the oracles
    compare with): a read of that row all the same."""
    world.touch("r", "row", tid)
    return world.inner.get(tid)


def perform(world: World, action: str, given: dict[str, Any], actor: str = "setup") -> Any:
    """Run one action; answers its result (a row, a list of rows, None, the
    TaskError it was refused with, or the host's failure to launch)."""
    p = params_of(action, given)
    mgr = world.manager(p["process"])
    needs_task = action not in TASKLESS
    # IndexError: not spawned (a scenario's load refuses it: ``scenario``)
    tid = world.task_id(p["task"]) if needs_task else None
    before = _peek(world, tid) if tid is not None else None
    if action == "stop" and not p["graceful"] and tid is not None:
        # what the liveness monitors hold it to (``liveness.StopNotEnded``)
        world.stop_requests.append((actor, tid, before.attempt))
    world.acting.action = action  # a report made now is a read's, not an ending's
    try:
        result = _call(world, mgr, action, p, tid)
    except (TaskError, HostFailure) as e:  # a refusal or a failed launch: its answer
        result = e
    finally:
        world.acting.action = None
    # a graceful stop leaves the row working by design: the oracles tell it apart
    label = "graceful_stop" if action == "stop" and p["graceful"] else action
    world.actions.append((actor, label, before, result))
    return result


def _in_hand(world: World, mgr: Any, info: Any) -> None:
    """The model's tool settles what it hands the model: a delivery made now is
    a read's, like task_status's, not an ending's report."""
    saved, world.acting.action = world.acting.action, "in_hand"
    try:
        mgr.model_has_result(info)
    finally:
        world.acting.action = saved


def _call(world: World, mgr: Any, action: str, p: dict[str, Any], tid: str | None) -> Any:
    if action in RUN_ENDINGS:
        row = _peek(world, tid)
        run_id = _run_id(world, tid, p["run"])
        if action != "run_pauses":  # a paused run lives on, to be resumed
            world.reported_runs.add(run_id)
        return mgr.on_run_finished(row.child_session_id, RunOutcome(
            status=TaskStatus(RUN_ENDINGS[action]), run_id=run_id,
            text=p.get("result", ""), err=p.get("error", ""),
            graceful_stop=p.get("graceful_stop", False)))
    if action == "stop":
        return mgr.stop(tid, graceful=p["graceful"])
    if action == "stop_tree":
        return mgr.stop_tree(p["parent"])
    if action == "retry":
        if p["via"] == "host":
            return mgr.retry(tid)
        return retry_in_hand(mgr, tid, lambda info: _in_hand(world, mgr, info))
    if action == "spawn":
        task = mgr.spawn(SpawnRequest(parent_session_id=p["parent"], agent_name="a",
                                      input="go", label=p["label"]))
        world.add_task(task.id)
        return task
    if action == "status":
        return mgr.status(tid, wait=p["wait"])
    if action == "resume":
        return mgr.resume_after_approval(tid)
    if action == "recover":
        return mgr.recover()
    raise AssertionError(f"unknown action {action}")  # the schema refuses it first
