"""What a chain can park on: a closed set of frozen request values.

A chain that cannot go on at once parks on exactly one request, and the run
loop (`forge.engine.kernel`) resumes it when that request is answered.  The
set is closed: the loop's event handling and every status reading dispatch on
these classes, and anything else is an internal error that names itself.

| request            | what answers it                              | `blocked` |
|--------------------|----------------------------------------------|-----------|
| `StoreOp`          | the harness's store, after a drawn latency   | `store`   |
| `ModelRound`       | the scripted model, after a drawn latency    | `chat`    |
| `OperatorQuestion` | the operator script (or nobody, ever)        | `tool_call` |
| `ToolCall`         | the tool script, after a delay (or never)    | `tool_call` |
| `CalledChain`      | the called chain's end                       | `call`    |
| `Join`             | a member's end, or the timeout               | `tasks`   |
| `FanoutArms`       | the last arm's end, or the first failure     | `tasks`   |
| `AwaitTasks`       | a model task's end, or the timeout           | `tasks`   |
| `Slot`             | a free concurrency slot (the answer waits)   | `queued`  |

Requests compare by identity: a harness answer or a timer that arrives for
a request the chain no longer waits on (it was cancelled, or timed out) is
recognised by `chain.parked_on is request` and dropped.  Their fields name
mutable state objects (tasks, chains) but never change themselves.

What lives here: the request classes and `blocked_of`.  What does not: how a
request is issued or answered (the rule modules and the engine's handlers).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from forge.errors import ForgeInternalError


@attrs.frozen(eq=False)
class StoreOp:
    blocked: ClassVar[str] = "store"
    op: str
    path: str | None


@attrs.frozen(eq=False)
class ModelRound:
    blocked: ClassVar[str] = "chat"
    #: "infer" or "chat"; where the answering script entry is.
    call: str
    entry: str


@attrs.frozen(eq=False)
class OperatorQuestion:
    """`input.ask()`: answered by the operator script after a delay, or never."""

    blocked: ClassVar[str] = "tool_call"
    #: Which ask of the run this is (1-based).
    number: int
    #: Where the answering script entry is; None when nobody will answer.
    answer: str | None


@attrs.frozen(eq=False)
class ToolCall:
    """A call of a bound tool: answered by the tool script after a delay, or never."""

    blocked: ClassVar[str] = "tool_call"
    alias: str
    #: Where the answering reply is in the tool script.
    reply: str


@attrs.frozen(eq=False)
class CalledChain:
    blocked: ClassVar[str] = "call"
    callee: Any


@attrs.frozen(eq=False)
class Join:
    """`tasks.join` (every member) or `tasks.join_any` (the first to end)."""

    blocked: ClassVar[str] = "tasks"
    call: str
    #: The members in set order (a task may appear twice in a join set).
    members: tuple[Any, ...]
    every: bool
    timed: bool


@attrs.frozen(eq=False)
class FanoutArms:
    blocked: ClassVar[str] = "tasks"
    #: One task per collection member, in member order, and the members.
    arms: tuple[Any, ...]
    items: tuple[Any, ...]


@attrs.frozen(eq=False)
class AwaitTasks:
    """The model's `await_tasks`: woken by a model task's end or its timeout."""

    blocked: ClassVar[str] = "tasks"
    #: The tool loop operation that resumes with the await's text.
    op: Any
    #: With no live task and a timeout, the await only sleeps and says so.
    sleep_text: str | None
    timed: bool


@attrs.frozen(eq=False)
class Slot:
    """A wait is answered but the task must take a slot again before it resumes."""

    blocked: ClassVar[str] = "queued"
    #: The resume value the chain gets once admitted.
    resume: Any


REQUESTS = (StoreOp, ModelRound, OperatorQuestion, ToolCall, CalledChain, Join, FanoutArms, AwaitTasks,
            Slot)

Request = (StoreOp | ModelRound | OperatorQuestion | ToolCall | CalledChain | Join | FanoutArms
           | AwaitTasks | Slot)


def blocked_of(request: object) -> str:
    """The `blocked` status field of a chain parked on `request`."""
    if not isinstance(request, REQUESTS):
        raise ForgeInternalError(
            f"a chain parked on {type(request).__name__}, which is not a request "
            "(forge.engine.requests lists every request a chain may park on)")
    return request.blocked


__all__ = ["REQUESTS", "AwaitTasks", "CalledChain", "FanoutArms", "Join", "ModelRound",
           "OperatorQuestion", "Request", "Slot", "StoreOp", "blocked_of"]
