"""Frozen records of the task lifecycle: statuses, the task row, run outcomes.

Lives here: plain immutable values and the exact status strings of the seed.
Does not live here: any transition logic (``store``) or policy (``manager``).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs


class TaskStatus(str, enum.Enum):
    """Statuses exactly as the seed names them (lifecycle.state.statuses)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        # lifecycle.state.input-required-not-terminal
        return self in TERMINAL


TERMINAL = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})


class StopOutcome(str, enum.Enum):
    """What a Stopper did (lifecycle.stop.reports-what-it-did)."""

    CANCELLED = "cancelled"
    AFTER_TURN = "after_turn"
    ALREADY_FINISHED = "already_finished"
    UNKNOWN_RUN = "unknown_run"


@attrs.frozen
class Task:
    """One task row. ``id`` is the durable task, ``run_id`` its current attempt
    (lifecycle.identity.task-vs-run). ``kind``/``state`` are the host's, opaque."""

    id: str
    run_id: str
    parent_session_id: str
    child_session_id: str
    label: str
    status: TaskStatus = TaskStatus.WORKING
    attempt: int = 1
    summary: str = ""
    result: str = ""
    kind: str = ""
    state: Any = None
    parent_run_id: str = ""
    tool_call_id: str = ""  # the spawn_task call, key of the UI card
    depth: int = 1
    inherit: Any = None
    continuations: int = 0  # runs chained by Continue since spawn or last retry
    seq: int = 0  # creation order, the deterministic "newest first" key


@attrs.frozen
class RunOutcome:
    """How one run ended, as the host reports it to ``Manager.on_run_finished``."""

    status: TaskStatus
    run_id: str = ""
    text: str = ""
    err: str = ""
    graceful_stop: bool = False


@attrs.frozen
class Continuation:
    """Answer of the Continue hook: with ``input`` a next run, without it an ending."""

    input: str = ""
    state: Any = None
    err: str = ""


@attrs.frozen
class Spec:
    """What the resolver answers for an agent name."""

    display_name: str
    inherit: Any = None


@attrs.frozen
class LaunchRequest:
    """Everything the Launcher needs to start one run (lifecycle.spawn.kind-state)."""

    task_id: str
    run_id: str
    session_id: str
    input: str
    kind: str = ""
    state: Any = None
    inherit: Any = None
    retry: bool = False


@attrs.frozen
class SpawnRequest:
    """A request to start a task under a parent session."""

    parent_session_id: str
    agent_name: str
    input: str
    label: str = ""
    parent_run_id: str = ""
    kind: str = ""
    state: Any = None
    tool_call_id: str = ""


@attrs.frozen
class Info:
    """The public view of a task the Manager's callers and tools get.

    ``agent`` is the resolver's display name, known only to the spawn that
    resolved it; every other view leaves it empty."""

    task_id: str
    status: TaskStatus
    attempt: int = 1
    label: str = ""
    kind: str = ""
    agent: str = ""
    summary: str = ""
    result: str = ""
    state: Any = None

    @classmethod
    def of(cls, task: Task, agent: str = "") -> Info:
        return cls(task_id=task.id, status=task.status, attempt=max(task.attempt, 1),
                   label=task.label, kind=task.kind, agent=agent, summary=task.summary,
                   result=task.result, state=task.state)


@attrs.frozen
class Debt:
    """A wake-up the parent is owed: written by the store in the same step as the
    ending that creates it (lifecycle.durable.debt-atomic), bound to that run."""

    task_id: str
    run_id: str
    status: TaskStatus
    summary: str = ""
