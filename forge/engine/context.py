"""What a part of a run may use: the narrow context the composition root
hands to the tasks namespace, the host globals, fanout and the model side.

A part never holds the run.  It gets a `Context`: the run's fixed inputs
(prompt, options, harness, Lua runtime), its shared records (clock, trace,
store claims, the task registry), the loop's two services (the scheduler,
admission), and five small services each written as a protocol here:

- `Errors`: the error values a failed call answers with;
- `Budget`: ending the run as Budget, and the quotas a part checks first;
- `Events`: the events and checkpoints the observation shows;
- `ChainEnds`: what the walk does to a chain from outside (enter a section,
  fail it, stop it) and the scalar return rule;
- `Effects`: harness operations (answered after a drawn latency, or never)
  and the store calls behind them.

Parts that call one another (the tasks namespace, fanout, the host, the
model side) are handed each other by the composition root (`forge.engine.run`),
each typed by what the caller needs of it.  When the run ends,
`let_go` empties the context, so nothing a part still holds reaches the run.

What lives here: the protocols and the context.  What does not: anything
that implements them (the run and its modules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from forge.engine.letgo import let_go

if TYPE_CHECKING:
    from forge.engine.claims import Claims
    from forge.engine.failures import Failure
    from forge.engine.kernel import Scheduler
    from forge.engine.requests import Request
    from forge.engine.rules.admission import Admission
    from forge.engine.state import Chain, Task
    from forge.harness import Harness
    from forge.lua.runtime import LuaRuntime
    from forge.prompt.model import Prompt
    from forge.sim.kernel import Kernel
    from forge.sim.trace import Trace


class Errors(Protocol):
    def error_value(self, kind: str, message: str, chain: Chain | None = None,
                    **fields: str) -> Any: ...

    def as_error_value(self, failure: Failure, receiver: Chain) -> Any: ...


class Budget(Protocol):
    def abort(self, kind: str, message: str) -> None: ...

    def keep(self, nbytes: int, what: str) -> bool: ...

    def room_for(self, nbytes: int, what: str) -> bool: ...


class Events(Protocol):
    def emit(self, chain: Chain, kind: str, section_override: str | None = None,
             **fields: Any) -> None: ...

    def log(self, chain: Chain, message: str, nbytes: int) -> bool: ...


class ChainEnds(Protocol):
    #: Set while the run's end strands what is still live.
    ending: bool

    def enter_section(self, chain: Chain, index: int | None) -> None: ...

    def fail_chain(self, chain: Chain, failure: Failure) -> None: ...

    def stop_chain(self, chain: Chain) -> None: ...

    def scalar(self, value: Any) -> str | None: ...


class Effects(Protocol):
    def harness_op(self, chain: Chain, kind: str, request: Request, finish: Callable[[], None],
                   pinned: float | None = None, detail: dict | None = None) -> Any: ...

    def never_answered_op(self, chain: Chain, kind: str, request: Request,
                          detail: dict | None = None) -> Any: ...

    def drop_op(self, request: Request) -> bool: ...

    def store_call(self, chain: Chain, op: str, path: str | None, run_op: Callable[[], Any],
                   direct: bool = False) -> Any: ...


@attrs.define(eq=False)
class Context:
    prompt: Prompt
    #: The run's frozen options (`forge.engine.run.RunConfig`).
    config: Any
    harness: Harness
    lua: LuaRuntime
    clock: Kernel
    trace: Trace
    claims: Claims
    scheduler: Scheduler
    admission: Admission
    #: Every task of the run by id, and the main pseudo-task.
    tasks: dict[str, Task]
    main_task: Task
    errors: Errors
    budget: Budget
    events: Events
    chains: ChainEnds
    effects: Effects
    #: The run's nonce (read lazily: reading it ties the run to its seed).
    nonce: Callable[[], str]

    def let_go(self) -> None:
        """The run has ended: the context lets go of everything it named."""
        let_go(self, *_CONTEXT_FIELDS)


_CONTEXT_FIELDS = tuple(f.name for f in attrs.fields(Context))


__all__ = ["Budget", "ChainEnds", "Context", "Effects", "Errors", "Events"]
