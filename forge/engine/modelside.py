"""The model side's records: what one section entry owns, what one tool loop
keeps, and the small values they hold - and what the parts serving the
model side (`roles`, `tools`, `modeltasks`) need of it.

The model side is one `ModelsAPI` per run (`models`) with three helpers it
builds: roles, tools and model tasks.  They share these records, and name
the model side only through `ModelSide`, so none of them depends on
`models`, which depends on them.

What lives here: `SectionState`, `LoopOp`, `RoundCall`, `ScriptCallOp`,
`Selection`, `LocalTool`, `AllowTasks` and the `ModelSide` protocol.  What
does not: anything that changes them (`models`, `roles`, `tools`,
`modeltasks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import attrs

from forge.engine.rules.notices import NoticeQueue

if TYPE_CHECKING:
    from forge.engine.context import Context
    from forge.engine.host import Host
    from forge.engine.state import Chain, Task
    from forge.engine.tasks import TasksAPI
    from forge.lua.runtime import LuaRuntime
    from forge.scripts import ScriptEntry


class ModelTaskBuiltins(Protocol):
    """The model's task built-ins (`modeltasks`): what a round offers, and
    model tasks' ends told to the section whose model started them."""

    def specs(self, allow: AllowTasks) -> tuple[Any, ...]: ...

    def task_ended(self, state: SectionState, task: Task) -> None: ...


class ModelSide(Protocol):
    """What roles, tools and model tasks use of the model side (`ModelsAPI`)."""

    # Read-only members: the parts read them, the model side sets them.
    @property
    def ctx(self) -> Context: ...

    @property
    def lua(self) -> LuaRuntime: ...

    @property
    def L(self) -> Any:
        """The runtime's Lua side of the models (`models.LuaSide`)."""

    @property
    def script(self) -> Any: ...

    @property
    def known_tools(self) -> set[str]: ...

    @property
    def tasks(self) -> ModelTaskBuiltins: ...

    @property
    def tasks_api(self) -> TasksAPI: ...

    @property
    def host(self) -> Host: ...

    def err(self, message: str, kind: str = "lua", **fields: str) -> Any: ...

    def error_at(self, chain: Chain, message: str, kind: str = "lua", **fields: str) -> Any: ...

    def harness_failure(self, chain: Chain, message: str) -> Any: ...

    def start_script_call(self, chain: Chain, tool: LocalTool, arguments: dict) -> Any: ...


@attrs.frozen
class Selection:
    """A role and the sampling options rounds on it send."""

    label: str
    temperature: float | None = None
    max_tokens: int | None = None


@attrs.frozen
class LocalTool:
    alias: str
    description: str
    #: (name, type, description or None), sorted bytewise by name.
    params: tuple[tuple[str, str, str | None], ...]
    handler: Any = attrs.field(eq=False, repr=False)

    def schema(self) -> dict:
        properties = {}
        for name, kind, description in self.params:
            prop = {"type": kind}
            if description is not None:
                prop["description"] = description
            properties[name] = prop
        return {"type": "object", "properties": properties,
                "required": [name for name, _, _ in self.params]}


@attrs.frozen
class AllowTasks:
    """A section's `tools.allow_tasks` grant; `targets` None allows any section."""

    targets: tuple[str, ...] | None


@attrs.frozen
class RoundCall:
    """One tool call of a round, with its id settled."""

    id: str
    name: str
    arguments: dict = attrs.field(eq=False)


@attrs.define(eq=False)
class LoopOp:
    msgs: Any
    selection: Selection | None
    compactor: Any
    cap: int
    phase: str = "send"
    rounds: int = 0
    #: Tool calls answered in this loop (the clean-exit rule needs one).
    answered: int = 0
    entry: ScriptEntry | None = None
    offered: tuple[str, ...] = ()
    allowed: bool = False
    turn: int = 0
    text: str = ""
    calls: list[RoundCall] = attrs.field(factory=list)
    index: int = 0
    results: list[str] = attrs.field(factory=list)
    await_text: str | None = None


@attrs.define(eq=False)
class ScriptCallOp:
    """A script `tools.call` of a local tool whose handler is running."""

    tool: LocalTool
    turn: int


@attrs.define(eq=False)
class SectionState:
    """What one section entry owns on the model side."""

    api: ModelSide
    chain: Chain
    name: str
    is_h1: bool
    selection: Selection | None = None
    local_tools: dict[str, LocalTool] = attrs.field(factory=dict)
    #: The bound aliases `tools.add` put in scope, in order first added, each
    #: with this section's description override (None: none).
    added: dict[str, str | None] = attrs.field(factory=dict)
    allow: AllowTasks | None = None
    #: Tasks this section's model started, in start order.
    model_tasks: list[Task] = attrs.field(factory=list)
    #: Task notices waiting for the next round or await_tasks.
    notices: NoticeQueue = attrs.field(factory=NoticeQueue)
    #: The await_tasks this entry's chain is parked on, if any.
    awaiting: Any = None
    ops: list = attrs.field(factory=list)
    #: Local tool handlers running now: jump refuses while any does.
    handler_depth: int = 0
    #: Numbers the tool calls a script leaves without an id.
    call_ids: int = 0
    rounds_made: int = 0
    #: tools.calls counts, None until the section's first tool call.
    calls: dict[str, int] | None = None

    def task_ended(self, task: Task) -> None:
        self.api.tasks.task_ended(self, task)

    def next_call_id(self) -> str:
        self.call_ids += 1
        return f"call_{self.call_ids}"
