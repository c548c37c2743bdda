"""The `tools` namespace: bound and local tools, scope, script calls, counts.

What lives here: the run's bound tool slots (a `tools:` slot whose path the
tool script catalogues, `forge.toolscript`), `tools.always` and `tools.add`
and the scope they build, `tools.add_local` and the local tools a section
registers, `tools.call` (a script call: a bound tool is a harness operation
answered by the tool script; a local tool's handler runs inside the calling
chain; anything else is `unbound_tool`), `tools.allow_tasks` and its
allowlist rules, the tool list a round offers the model (bound tools in
scope order, then local tools in registration order, then the task built-ins
when the section allowed tasks), and the `tools.calls` counts.

What does not: running a model's tool calls inside a round (`models`), the
task built-ins themselves (`modeltasks`).

The kit has no capability catalogue: the tool script is the run's whole
catalogue, and no Tool objects or alias globals exist (`tools.add` and
`tools.call` take alias strings).  The four task built-ins (and the current
revision's `task_events`) are engine names: a bound or local tool under one
is never offered and never reachable, so nothing shadows them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.engine.modelside import AllowTasks, LocalTool
from forge.engine.requests import ToolCall
from forge.lua.runtime import (
    LuaFunction,
    LuaTable,
    NotJSON,
    decode,
    from_lua_json,
    typename,
)
from forge.lua.runtime import text as _t

if TYPE_CHECKING:
    from forge.engine.state import Chain
    from forge.engine.modelside import ModelSide, SectionState
    from forge.toolscript import ScriptedTool, ToolReply

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import toolscript
else:
    toolscript = deferred("forge.toolscript")

#: The model's task built-ins, in the fixed order a round offers them.
BUILTINS = ("task", "task_cancel", "task_status", "await_tasks")
#: Engine tool names a script call can never reach, the current revision's
#: `task_events` included, so no local tool under those names is callable.
ENGINE_NAMES = BUILTINS + ("task_events",)

ALIAS_GRAMMAR = "[A-Za-z][A-Za-z0-9_-]{0,63}"
_ALIAS = re.compile(ALIAS_GRAMMAR)
PARAM_TYPES = ("string", "integer", "number", "boolean")

JUMP_REFUSAL = (
    "jump is unavailable inside a local tool handler: return a value from the handler and call "
    "jump from the block after the tool call returns"
)


def alias_fault(value: Any, call: str) -> str | None:
    """The grammar check every alias goes through first."""
    if not isinstance(value, bytes):
        return f"{call} alias must be a string, got {typename(value)}"
    text = _t(value)
    if not _ALIAS.fullmatch(text):
        return f'invalid alias "{text}": expected {ALIAS_GRAMMAR}'
    return None


def debug_list(names) -> str:
    """A list of names as the reference engine prints it: `["a", "b"]`."""
    return "[" + ", ".join(f'"{n}"' for n in names) + "]"


@attrs.frozen
class ToolSpec:
    """One tool as a round offers it to the model."""

    name: str
    description: str
    parameters: dict = attrs.field(eq=False)


@attrs.frozen
class BoundTool:
    """A bound tool slot: its alias, its tool path and the scripted tool there."""

    alias: str
    path: str
    tool: ScriptedTool = attrs.field(eq=False, repr=False)


def _read_calls(parts: Any, *args):
    return parts[ToolsAPI].read_calls(*args)


class ToolsAPI:
    def __init__(self, models: ModelSide) -> None:
        self.models = models
        self.ctx = models.ctx
        self.lua = models.ctx.lua
        script = models.ctx.harness.tool
        self.cursor = toolscript.ToolCursor(script)
        catalogue = script.tools if script is not None else {}
        #: alias -> bound slot, in `tools:` order.
        self.bound: dict[str, BoundTool] = {
            alias: BoundTool(alias, path, catalogue[path])
            for alias, path in models.ctx.prompt.tools if path in catalogue}
        models.known_tools.update(self.bound)
        #: The run-wide `tools.always` aliases, in order, each with its override.
        self.run_wide: dict[str, str | None] = {}
        #: Each `tools.calls` view's counts, by its number less one, and the
        #: Lua function every view reads them through.
        self._views: list[dict[str, int]] = []
        self._reader: Any = None

    def _err(self, message: str, kind: str = "lua", **fields: str):
        return self.models.err(message, kind, **fields)

    def _state(self) -> SectionState:
        return self.ctx.scheduler.current.section_state

    # ------------------------------------------------------------ scope
    def always(self, alias=None, description=None, *rest):
        fault = alias_fault(alias, "tools.always")
        if fault:
            return self._err(fault)
        if description is not None and not isinstance(description, bytes):
            return self._err("tools.always description must be a string, got "
                             f"{typename(description)}")
        name = _t(alias)
        if name not in self.bound:
            return self._err(f'tools.always alias "{name}" is not a bound tool slot')
        if name not in self.run_wide or description is not None:
            self.run_wide[name] = _t(description) if description is not None else \
                self.run_wide.get(name)
        return (True,)

    def add(self, *args):
        if not args or args == (None,):
            return (True,)
        if len(args) > 2:
            return self._err("tools.add takes one alias plus an optional override, got extra "
                             f"{typename(args[2])}")
        target, override = args[0], args[1] if len(args) > 1 else None
        if override is not None and not isinstance(override, bytes):
            return self._err(f"tools.add override must be a string, got {typename(override)}")
        if isinstance(target, LuaTable):
            if override is not None:
                return self._err("tools.add array form takes no override")
            entries = [self.lua.index(target, i) for i in range(1, len(target) + 1)]
        else:
            entries = [target]
        for entry in entries:
            if not isinstance(entry, bytes):
                return self._err("tools.add expects strings, Tool objects, or arrays of either, "
                                 f"got {typename(entry)}")
        for entry in entries:
            fault = alias_fault(entry, "tools.add")
            if fault:
                return self._err(fault)
        # All or nothing: every entry is checked before any is recorded.
        for entry in entries:
            if _t(entry) not in self.bound:
                return self._err(f'tools.add alias "{_t(entry)}" is not a bound tool slot')
        added = self._state().added
        for entry in entries:
            name = _t(entry)
            if override is not None:
                added[name] = _t(override)
            else:
                added.setdefault(name, None)
        return (True,)

    def add_local(self, alias=None, description=None, params=None, handler=None, *rest):
        fault = alias_fault(alias, "tools.add_local")
        if fault:
            return self._err(fault)
        name = _t(alias)
        state = self._state()
        if name in self.bound:
            return self._err(f'tools.add_local alias "{name}" duplicates a bound tool slot')
        if name in state.local_tools:
            return self._err(f'tools.add_local alias "{name}" is already registered')
        if not isinstance(description, bytes) or decode(description) is None:
            return self._err(f"tools.add_local description must be a string, got {typename(description)}")
        if not isinstance(params, LuaTable):
            return self._err(f"tools.add_local params must be a table, got {typename(params)}")
        parsed = []
        for key, spec in sorted(params.items(), key=lambda kv: _t(kv[0]).encode()):
            pname = _t(key)
            if isinstance(spec, bytes):
                kind, pdesc = _t(spec), None
            elif isinstance(spec, LuaTable):
                kind_raw, desc_raw = spec[1], spec[2]
                if not isinstance(kind_raw, bytes) or (desc_raw is not None
                                                       and not isinstance(desc_raw, bytes)):
                    return self._err(f'tools.add_local param "{pname}" must be a type string or a '
                                     "{type, description} array")
                kind, pdesc = _t(kind_raw), _t(desc_raw) if desc_raw is not None else None
            else:
                return self._err(f'tools.add_local param "{pname}" must be a type string or a '
                                 "{type, description} array")
            if kind not in PARAM_TYPES:
                return self._err(f'tools.add_local param "{pname}" has unsupported type "{kind}": '
                                 'expected "string", "integer", "number", or "boolean"')
            parsed.append((pname, kind, pdesc))
        if not isinstance(handler, LuaFunction):
            return self._err(f"tools.add_local handler must be a function, got {typename(handler)}")
        state.local_tools[name] = LocalTool(name, _t(description), tuple(parsed),
                                            self.lua.anchor(handler))
        self.models.known_tools.add(name)
        return (True,)

    def allow_tasks(self, targets=None, *rest):
        state = self._state()
        if targets is None:
            state.allow = AllowTasks(None)
            return (True,)
        if not isinstance(targets, LuaTable):
            return self._err("tools.allow_tasks targets must be a list of section headings, got "
                             f"{typename(targets)}")
        headings = []
        # Only the list part is read: 1..#t.
        for i in range(1, len(targets) + 1):
            entry = self.lua.index(targets, i)
            if not isinstance(entry, bytes):
                return self._err("tools.allow_tasks targets must be section heading strings, got "
                                 f"{typename(entry)}")
            text = _t(entry).strip()
            if not text:
                return self._err("tools.allow_tasks targets must be non-empty section headings")
            headings.append(text)
        if not headings:
            return self._err("tools.allow_tasks targets must name at least one section; call it "
                             "with no argument to allow any section")
        state.allow = AllowTasks(tuple(headings))
        return (True,)

    # ------------------------------------------------------------ offered
    def scope(self, state: SectionState) -> tuple[str, ...]:
        """The section's bound aliases in scope order: `tools.always`, then `tools.add`."""
        return tuple(self.run_wide) + tuple(a for a in state.added if a not in self.run_wide)

    def offered(self, state: SectionState) -> tuple[ToolSpec, ...]:
        """What a round sent now offers: bound tools in scope order, local
        tools in registration order, then the task built-ins."""
        specs = []
        for alias in self.scope(state):
            tool = self.bound[alias].tool
            # The precedence is fixed: section override, run override, catalogue.
            description = state.added.get(alias) or self.run_wide.get(alias)
            if description is None:
                description = tool.description
            specs.append(ToolSpec(alias, description, tool.parameters))
        specs.extend(ToolSpec(t.alias, t.description, t.schema())
                     for t in state.local_tools.values())
        # A tool under an engine name is never reachable, so never offered.
        specs = [spec for spec in specs if spec.name not in ENGINE_NAMES]
        if state.allow is not None:
            specs.extend(self.models.tasks.specs(state.allow))
        return tuple(specs)

    # ------------------------------------------------------------ counts
    def count(self, chain: Chain, alias: str) -> None:
        """Count one call attempt for the calling section (tools.calls)."""
        state = chain.section_state
        if state.calls is None:
            state.calls = {}
            if chain.env is not None:
                # The view names its counts to the runtime's one reader by a
                # number, so Lua holds no Python function of the run.
                self._views.append(state.calls)
                if self._reader is None:
                    self._reader = self.lua.host(b"tools.calls", _read_calls)
                # `tools` is a global the prompt may have replaced (or the
                # environment's metatable): its metamethods run under the budget.
                tools = self.lua.index(chain.env, b"tools")
                self.lua.assign(tools, b"calls", self.models.L.calls_view(self._reader,
                                                                          len(self._views)))
        state.calls[alias] = state.calls.get(alias, 0) + 1

    def read_calls(self, view: int, key=None, *rest):
        """A read of `tools.calls[key]` in the section whose counts are view `view`."""
        calls = self._views[view - 1]
        name = self.lua.show(key)
        if isinstance(key, bytes) and name in calls:
            return (True, calls[name])
        suffix = " - check for typos or add it via tools.add" if calls else ""
        return self._err(f'tools.calls: "{name}" has no seeded count; seeded aliases: '
                         f"{debug_list(sorted(calls))}{suffix}")

    # ------------------------------------------------------------ script calls
    def call(self, chain: Chain, count: int = 0, alias=None, args=None, *rest):
        """`tools.call(alias, args?)`: a resume tuple, or a handler to run."""
        if not isinstance(alias, bytes):
            return self._err(f"tools.call alias must be a string or Tool object, got {typename(alias)}")
        name = _t(alias)
        if args is None:
            data = {}
        elif not isinstance(args, LuaTable):
            return self._err(f"args must be a table, got {typename(args)}")
        else:
            try:
                data = from_lua_json(args)
            except NotJSON:
                return self._err("args must be a JSON-representable table")
            if data == []:
                data = {}
        state = chain.section_state
        tool = state.local_tools.get(name)
        bound = self.bound.get(name)
        if name in ENGINE_NAMES or (tool is None and bound is None):
            self.ctx.events.emit(chain, "tool_call_failed")
            return self._err(f'tool "{name}" is not bound in this run; bound aliases: '
                             f"{debug_list(self.bound)}", "unbound_tool", name=name)
        self.count(chain, name)
        if bound is not None:
            turn = chain.task.turns
            return self.invoke(chain, bound, data,
                               lambda reply: self._script_answer(chain, name, turn, reply))
        return self.models.start_script_call(chain, tool, data)

    # ------------------------------------------------------------ bound tools
    def invoke(self, chain: Chain, bound: BoundTool, arguments: dict, answered):
        """Park `chain` on a call of a bound tool; `answered(reply)` runs when
        the tool script's reply arrives (never, for a reply that never answers)."""
        reply = self.cursor.take(bound.tool, bound.alias, arguments)
        if reply is None:
            return self.models.harness_failure(chain, self.cursor.no_reply_message(
                bound.tool, bound.alias, chain.task.id))
        request = ToolCall(bound.alias, reply.where)
        if reply.never:
            return self.ctx.effects.never_answered_op(chain, "tool", request,
                                              {"tool": bound.alias, "reply": reply.where})
        return self.ctx.effects.harness_op(chain, "tool", request, lambda: answered(reply),
                                   pinned=reply.delay,
                                   detail={"tool": bound.alias, "reply": reply.where})

    def _script_answer(self, chain: Chain, alias: str, turn: int, reply: ToolReply) -> None:
        """A script call's reply: the result, or the tool's failure as kind `tool`."""
        if reply.error is not None:
            self.ctx.events.emit(chain, "tool_call_failed")
            self.ctx.scheduler.make_ready(chain, self.models.error_at(
                chain, f"tool call failure: {reply.error}", "tool"))
            return
        self.ctx.events.emit(chain, "tool_call_succeeded")
        self.ctx.events.emit(chain, "tool_result", turn=turn, tool_call_id="", alias=alias,
                      content=reply.result, trusted=True)
        self.ctx.scheduler.make_ready(chain, (True, b"done", reply.result.encode("utf-8")))
