"""Model roles: which model a round runs on, and the handles that name one.

What lives here: binding the prompt's `models:` roles to the host's one
current model (the model script's), `models.default`, `models.use` (with its
sampling options) and `models.get`, model handles, role globals, and the
order a round picks its model in (a handle passed to the call, else the
section's latest `models.use`, else the prompt-wide default, else none).

What does not: running rounds (`models`), and prepare's requirement checks
(hard keywords, `min_context`), which this kit does not make: the scripted
model satisfies every role.

Model handles are Python objects (`ModelHandle`), so Lua sees userdata, as
the spec says.  A read of an unknown field raises the spec's message, which a
`pcall` shows through `tostring`, though the raised value is the bridge's
userdata rather than a host error table.  A handle holds plain data only and
is kept by its runtime (`forge.lua.runtime.Keeper`, which says why), so a
runtime that held one can serve the next run; so are the errors it raises.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import lupa

from forge.engine.modelside import Selection
from forge.engine.tasks import lua_number_text
from forge.lua.runtime import LuaTable, typename
from forge.lua.runtime import text as _t

if TYPE_CHECKING:
    from forge.engine.modelside import ModelSide, SectionState
    from forge.lua.runtime import Keeper

_LABEL = re.compile("[A-Za-z][A-Za-z0-9_-]{0,63}")
_MAX_TOKENS = 4294967295


class ModelHandle:
    """A model handle: userdata to Lua, with nine read-only fields and no methods.

    Lua reads it through the item protocol (`lupa.as_itemgetter`), so a field
    read is `__getitem__` and a write is `__setitem__`; nothing else of the
    object is reachable.  Its errors are raised through the runtime's keeper,
    and it holds no lupa object (the keeper makes the `capabilities` table).
    """

    __slots__ = ("_capabilities", "_fields", "_keeper", "selection")

    def __init__(self, selection: Selection, fields: dict, capabilities: tuple[str, ...],
                 keeper: Keeper) -> None:
        self.selection = selection
        self._fields = {k.encode(): (v.encode("utf-8") if isinstance(v, str) else v)
                        for k, v in fields.items()}
        self._capabilities = capabilities
        self._keeper = keeper

    def __getitem__(self, key: Any) -> Any:
        if key == b"capabilities":
            try:
                return self._keeper.seq(self._capabilities)     # a fresh sequence per read
            except Exception as e:  # noqa: BLE001 - Lua gets it as the keeper's error
                self._keeper.reraise(e)
        if key not in self._fields:
            message = f"attempt to get an unknown field '{self._keeper.show(key)}'"
            del key             # the error's frame holds no Lua value
            self._keeper.fault(LookupError, message)
        return self._fields[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        message = f'model handles are read-only: cannot assign field "{self._keeper.show(key)}"'
        del key, value
        self._keeper.fault(TypeError, message)

    def __call__(self, *args: Any) -> None:
        del args
        self._keeper.fault(TypeError, "'ModelHandle' object is not callable")

    def __str__(self) -> str:
        return f"model handle: {_t(self._fields[b'name'])}"  # lua: own table


class RolesAPI:
    def __init__(self, models: ModelSide) -> None:
        self.models = models
        self.lua = models.lua
        self.script = models.script
        # Every declared role is bound to the host's one current model; with
        # no model script there is no current model and no role is bound.
        roles = models.ctx.prompt.roles
        self.roles = {r.label: r for r in roles} if self.script is not None else {}
        self.default_label: str | None = None

    @staticmethod
    def seal(L: Any, keeper: Keeper) -> None:
        """Handles (and their errors) are the only Python objects prompt code
        can hold: seal the bridge's metatable, shared by every Python object
        in the runtime, so getmetatable cannot reach it.  Once per runtime."""
        L.seal_python_objects(lupa.as_itemgetter(
            keeper.keep(ModelHandle(Selection(""), {"name": ""}, (), keeper))))

    def install_globals(self, env: Any) -> None:
        """Each bound role is a global holding its handle."""
        for label in self.roles:
            env[label.encode()] = self.handle(label)  # lua: own table (a new section VM)

    def handle(self, label: str, selection: Selection | None = None) -> Any:
        role = self.roles[label]
        thinking = None
        for word in role.keywords:          # the later hard keyword wins
            if word in ("thinking", "no-thinking"):
                thinking = word == "thinking"
        selection = selection or Selection(label)
        script = self.script
        fields = {
            "name": label, "label": label,
            "description": role.description if role.description is not None else script.description,
            "model_id": script.model_id, "context": script.context, "thinking": thinking,
            "temperature": selection.temperature, "max_tokens": selection.max_tokens,
        }
        keeper = self.lua.keeper
        return lupa.as_itemgetter(keeper.keep(ModelHandle(selection, fields, role.keywords,
                                                          keeper)))

    @staticmethod
    def handle_of(value: Any) -> Selection | None:
        return value.selection if isinstance(value, ModelHandle) else None

    def round_model(self, state: SectionState, pinned: Selection | None) -> Selection | None:
        """The model a round runs on, or None (the missing-model error)."""
        if pinned is not None:
            return pinned
        if state.selection is not None:
            return state.selection
        if self.default_label is not None:
            return Selection(self.default_label)
        return None

    # ------------------------------------------------------------ the calls
    def _label(self, call: str, value: Any) -> tuple[str | None, str | None]:
        if not isinstance(value, bytes):
            return None, f"{call} label must be a string, got {typename(value)}"
        text = _t(value)
        if not _LABEL.fullmatch(text):
            return None, f'invalid alias "{text}": expected [A-Za-z][A-Za-z0-9_-]{{0,63}}'
        if text not in self.roles:
            noun = "alias" if call == "models.get" else "label"
            return None, f'{call} {noun} "{text}" is not a bound model role'
        return text, None

    def default(self, label=None, *rest):
        text, fault = self._label("models.default", label)
        if fault:
            return self.models.err(fault)
        if self.default_label is not None and self.default_label != text:
            return self.models.err(f'models.default is already "{self.default_label}": the '
                                   "prompt-wide default cannot change mid-run")
        self.default_label = text
        return (True, self.handle(text))

    def get(self, label=None, *rest):
        text, fault = self._label("models.get", label)
        if fault:
            return self.models.err(fault)
        return (True, self.handle(text))

    def use(self, *args):
        if len(args) > 2:
            return self.models.err(f"models.use takes at most 2 arguments, got {len(args)}")
        text, fault = self._label("models.use", args[0] if args else None)
        if not fault:
            selection, fault = self._options(text, args[1] if len(args) > 1 else None)
        if fault:
            return self.models.err(fault)
        self.models.ctx.scheduler.current.section_state.selection = selection
        return (True, self.handle(text, selection))

    @staticmethod
    def _options(label: str, opts: Any) -> tuple[Selection | None, str | None]:
        if opts is None:
            return Selection(label), None
        if not isinstance(opts, LuaTable):
            return None, f"models.use options must be a table, got {typename(opts)}"
        items = list(opts.items())
        # Non-string keys first, by type name; then names bytewise, so every
        # run reports the same first fault whatever the table's order.
        odd = sorted(typename(k) for k, _ in items if not isinstance(k, bytes))
        if odd:
            return None, f"models.use option names must be strings, got {odd[0]}"
        temperature = max_tokens = None
        for key, value in sorted(items, key=lambda kv: kv[0]):
            name = _t(key)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if name == "max_tokens":
                whole = number and (isinstance(value, int) or (math.isfinite(value)
                                                               and value.is_integer()))
                if not whole or not 1 <= value <= _MAX_TOKENS:
                    actual = lua_number_text(value) if number else typename(value)
                    return None, ("models.use option max_tokens must be an integer in "
                                  f"[1, {_MAX_TOKENS}], got {actual}")
                max_tokens = int(value)
            elif name == "temperature":
                if not number:
                    return None, ("models.use option temperature must be a number, got "
                                  f"{typename(value)}")
                if isinstance(value, float) and not math.isfinite(value):
                    return None, ("models.use option temperature must be finite, got "
                                  f"{lua_number_text(value)}")
                if not 0 <= value <= 2:
                    return None, (f"models.use option temperature {lua_number_text(value)} is "
                                  "outside the supported range [0.0, 2.0]")
                temperature = value
            else:
                return None, (f'models.use option "{name}" is unknown: expected temperature or '
                              "max_tokens")
        return Selection(label, temperature, max_tokens), None


__all__ = ["ModelHandle", "RolesAPI", "Selection"]
