"""The host library of a run in one table: every name a section VM can call
into Python, and which part of the run answers it.

Each row names a call by its Lua name, the part that answers it (by the
part's type: `Host`, `TasksAPI`, `Fanout`, `ModelsAPI`, `ToolsAPI`,
`RolesAPI`) and that part's public method:

- `now`: an immediate call, `method(part, *args)`, answered at once with
  `(True, values...)` or `(False, error value)`; Lua raises the error at the
  call site.  A `counted` one (the `tasks` functions) first counts as a
  suspending call.
- `later`: a suspending call, yielded by the block's coroutine as
  `(name, args...)` and answered by `method(part, chain, *args)` with a resume
  tuple or `PARK` (`forge.engine.kernel` dispatches it).
- `value`: a Lua function of the runtime itself (the model side's Lua).

A run binds its parts by type (`Parts`) and the runtime's slots call the
routes made here with them, so the routes are constants shared by every run
of a runtime (`LuaRuntime.library`).  The model side's rows are in the
library only of a run that needs it (`ModelsAPI.needed`).

What lives here: the table and the two libraries built from it.  What does
not: what each call does (the parts), building the Lua table (`forge.lua`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from forge.engine.fanout import Fanout
from forge.engine.host import STORE_OPS, Host
from forge.engine.models import ModelsAPI, lua_side
from forge.engine.roles import RolesAPI
from forge.engine.tasks import TasksAPI
from forge.engine.tools import ToolsAPI

#: The parts of one run by type, as the routes and the kernel find them.
Parts = dict


@attrs.frozen
class Call:
    name: str
    #: The library entry's kind (`E.build_library`); None for a suspending
    #: call the model side's own Lua yields, which is no entry of the library.
    kind: bytes | None
    part: type | None = None
    now: Callable[..., Any] | None = None
    later: Callable[..., Any] | None = None
    counted: bool = False
    value: Callable[[Any], Any] | None = None
    #: A row of the model side.
    model: bool = False


def _store_now(op: str) -> Callable[..., Any]:
    return lambda host, *args: host.direct_store(op, *args)


def _store_later(op: str) -> Callable[..., Any]:
    return lambda host, chain, *args: host.store(chain, op, *args)


def _model_value(field: str) -> Callable[[Any], Any]:
    return lambda runtime: getattr(lua_side(runtime), field)


#: Every call, in the order of the library's entries.
CALLS: tuple[Call, ...] = (
    Call("log", b"host", Host, now=Host.log),
    Call("list_from_section", b"host", Host, now=Host.list_from_section),
    Call("jump", b"host", Host, now=Host.jump),
    Call("call", b"suspend", Host, later=Host.call),
    Call("fanout", b"suspend", Fanout, later=Fanout.start),
    *(Call(f"store.{op}", b"store", Host, now=_store_now(op), later=_store_later(op))
      for op in STORE_OPS),
    Call("tasks.spawn", b"handle", TasksAPI, now=TasksAPI.spawn, counted=True),
    Call("tasks.concurrency", b"host", TasksAPI, now=TasksAPI.concurrency, counted=True),
    Call("tasks.ready", b"host", TasksAPI, now=TasksAPI.ready, counted=True),
    Call("tasks.status", b"host", TasksAPI, now=TasksAPI.status, counted=True),
    Call("tasks.pending", b"host", TasksAPI, now=TasksAPI.pending, counted=True),
    Call("tasks.note", b"host", TasksAPI, now=TasksAPI.note, counted=True),
    Call("tasks.cancel", b"host", TasksAPI, now=TasksAPI.cancel_by_id, counted=True),
    Call("tasks.join_any", b"suspend", TasksAPI, later=TasksAPI.join_any),
    Call("tasks.join", b"suspend", TasksAPI, later=TasksAPI.join),
    Call("models.default", b"host", RolesAPI, now=RolesAPI.default, model=True),
    Call("models.use", b"host", RolesAPI, now=RolesAPI.use, model=True),
    Call("models.get", b"host", RolesAPI, now=RolesAPI.get, model=True),
    Call("models.infer", b"value", ModelsAPI, later=ModelsAPI.infer,
         value=_model_value("infer"), model=True),
    Call("models.loop", b"value", ModelsAPI, later=ModelsAPI.loop,
         value=_model_value("loop"), model=True),
    Call("messages.new", b"value", value=_model_value("new_list"), model=True),
    Call("compactors.fail", b"host", ModelsAPI, now=ModelsAPI.compactors_fail, model=True),
    Call("tools.always", b"host", ToolsAPI, now=ToolsAPI.always, model=True),
    Call("tools.add", b"host", ToolsAPI, now=ToolsAPI.add, model=True),
    Call("tools.add_local", b"host", ToolsAPI, now=ToolsAPI.add_local, model=True),
    Call("tools.allow_tasks", b"host", ToolsAPI, now=ToolsAPI.allow_tasks, model=True),
    Call("tools.call", b"value", ToolsAPI, later=ToolsAPI.call, value=_model_value("call"),
         model=True),
    Call("input.ask", b"suspend", ModelsAPI, later=ModelsAPI.ask, model=True),
    Call("input.connected", b"host", ModelsAPI, now=ModelsAPI.input_connected, model=True),
    Call("models.continue", None, ModelsAPI, later=ModelsAPI.continue_loop, model=True),
    Call("models.handler_done", None, ModelsAPI, later=ModelsAPI.handler_done, model=True),
)


def _route(call: Call) -> Callable[..., Any]:
    """The route a runtime slot calls with the bound run's parts."""
    part, method = call.part, call.now
    assert part is not None and method is not None, call.name
    if call.counted:
        def counted(parts: Parts, *args: Any) -> Any:
            answering = parts[part]
            answering.count()
            return method(answering, *args)
        return counted
    return lambda parts, *args: method(parts[part], *args)


def _entry(call: Call) -> tuple:
    if call.kind == b"value":
        return (call.kind, call.name.encode(), call.value)
    if call.kind == b"suspend":
        return (call.kind, call.name.encode(), None)
    return (call.kind, call.name.encode(), _route(call))


_ENTRIES = {call.name: _entry(call) for call in CALLS if call.kind is not None}

#: The library of a run without and with the model side: constants, so a
#: runtime builds each once (`LuaRuntime.library`).
LIBRARY: tuple = tuple(_ENTRIES[c.name] for c in CALLS if c.kind is not None and not c.model)
LIBRARY_WITH_MODELS: tuple = tuple(_ENTRIES[c.name] for c in CALLS if c.kind is not None)

#: Suspending call name -> (the part's type, its method), for the kernel.
SUSPENDING: dict[str, tuple[type, Callable[..., Any]]] = {
    c.name: (c.part, c.later) for c in CALLS if c.later is not None and c.part is not None}


__all__ = ["CALLS", "LIBRARY", "LIBRARY_WITH_MODELS", "SUSPENDING", "Call", "Parts"]
