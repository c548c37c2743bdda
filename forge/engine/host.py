"""The globals a section VM sees, and the suspending calls behind them.

What lives here: the host library's own entries (`log`, `list_from_section`,
`jump`, `call`, `fanout`, `store`), building a fresh environment for each
section entry (`args`, `argv`, `sys`, `var`, `prose`, `item`), reading `var`
back, the H1 pass's hand-over to the walk, and the handlers of the
suspending calls among those entries.  What does not: scheduling (`kernel`),
task semantics and the `tasks` namespace (`tasks`), the model side
(`models`).

Every suspending call is a yield of `(op, args...)` from the block's
coroutine, answered by a public method here; calls that answer at once are
public methods returning `(True, values...)` or `(False, error value)`, and
the Lua wrapper raises the error at the call site.  Which method answers
which name is the one table in `forge.engine.library`.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Protocol

from forge.deferred import deferred
from forge.engine.state import Chain, Frame
from forge.errors import ForgeInternalError
from forge.engine.failures import Failure
from forge.engine.parking import PARK
from forge.engine.requests import CalledChain
from forge.engine.rules import ids
from forge.lua.runtime import LuaTable, decode, typename
from forge.lua.runtime import NotJSON, from_lua_json, text as _t
from forge.prompt.headings import HeadingError, resolve

if TYPE_CHECKING:
    from forge.engine.context import Context

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.engine import substitution
else:
    substitution = deferred("forge.engine.substitution")


class JumpRule(Protocol):
    """What the host asks of the model side before a jump (`models`)."""

    def jump_refusal(self, chain: Chain) -> str | None: ...

LOG_MAX_CHARS = 256
#: Log quotas per section VM: events, and bytes (events x 256).
LOG_EVENTS_PER_VM = 1024
LOG_BYTES_PER_VM = LOG_EVENTS_PER_VM * LOG_MAX_CHARS

#: `sys.when`: the one instant every run reports, so no run reads the clock.
WHEN = "2026-01-01T00:00:00Z"
_WHEN = WHEN.encode()

STORE_OPS = ("write", "append", "read", "read_numbered", "str_replace", "delete", "glob", "exists")


def _render(parts: Any, key: int):
    return parts[Host].render_entry(key)


class Host:
    def __init__(self, ctx: Context, library: tuple, parts: Any) -> None:
        self.ctx = ctx
        self.lua = ctx.lua
        #: The model side's say on `jump` (handed over by the composition root).
        self.models: JumpRule = None      # type: ignore[assignment]
        self.lib = self.lua.library(library, parts)
        # A chain's section VMs name it to the run's one prose callback by a
        # number (`Chain.vm_key`), so Lua holds no Python object of the run;
        # the chain leaves this map when it ends.
        self._vms: dict[int, Chain] = {}
        self._keys = 0
        self._render = self.lua.host(b"render", _render)
        self._section_vm = self.lua.fn.section_vm
        # What every section VM of the run is handed alike, encoded once.
        self._execution = ctx.config.execution.encode("utf-8")
        self._section_count = len(ctx.prompt.top_level)

    def err(self, message: str, kind: str = "lua", **fields: str):
        return (False, self.ctx.errors.error_value(kind, message, self.ctx.scheduler.current, **fields))

    # ------------------------------------------------------------ argv
    def initial_argv(self, args: str):
        decl = self.ctx.prompt.args_decl
        if decl is None:
            return self.lua.fn.prose_argv(args.encode("utf-8"))
        try:
            value = json.loads(args)
        except (ValueError, RecursionError):
            return None
        return self.lua.to_lua(value)

    # ------------------------------------------------------------ sections
    def begin_root(self, root: Chain) -> None:
        prompt = self.ctx.prompt
        top = prompt.top_level
        root.frames = [Frame(top, 0)] if top else []
        if prompt.h1_has_pass:
            self.ctx.chains.enter_section(root, None)
        else:
            ids.skip_h1_entry(root)
            root.claim_identity = "0"
            if not top:
                root.in_h1 = False

    def section_env(self, chain: Chain, entry: str):
        """A fresh section VM environment for `chain`'s entry `entry`, built
        in one Lua call (`E.section_vm`)."""
        first_entry = chain.kind == "task" and ids.in_first_entry(chain)
        index = chain.first_index if first_entry else None
        key = chain.vm_key
        if key == 0:
            self._keys += 1
            key = chain.vm_key = self._keys
            self._vms[key] = chain
        env, argv_reader = self._section_vm(
            self.lib, self._render, key, entry.encode(), ids.taskid(chain).encode("utf-8"),
            chain.section_name.encode("utf-8"), self._execution, self._section_count, _WHEN,
            index, chain.args, chain.var, first_entry and chain.has_item, chain.first_item, chain.argv, chain.in_h1)
        chain.argv_reader = argv_reader
        return env

    def render_entry(self, key: int):
        chain = self._vms.get(key)
        if chain is None:
            raise ForgeInternalError("prose was read in a section VM whose chain has ended")
        return self._render_prose(chain)

    def forget(self, chain: Chain) -> None:
        """`chain` has ended: no section VM of it reads prose again."""
        self._vms.pop(chain.vm_key, None)

    def _render_prose(self, chain: Chain):
        block = chain.current_block
        text = block.prose if block is not None else ""
        try:
            return (True, substitution.render(text, _Resolver(self, chain)).encode("utf-8"))
        except substitution.SubstitutionError as e:
            return self.err(e.render())

    def read_back_var(self, chain: Chain) -> bool:
        """Check `var` is still the guarded global; fail the chain if not."""
        if not self.lua.fn.var_intact(chain.env, chain.var):
            self.ctx.chains.fail_chain(
                chain,
                Failure("lua", "the `var` global was reassigned; write `var.<field>` instead",
                        fatal_kind="Lua"),
            )
            return False
        return True

    def end_h1(self, chain: Chain) -> None:
        """The H1 pass hands over to the walk: argv freezes, claims restart."""
        argv = chain.argv_reader()
        if argv is not None:
            err = self.lua.fn.json_check(argv, b"argv")
            if err is not None:
                # The H1 freeze names only the type found, wherever it sits.
                found = _t(err).rsplit(" ", 1)[-1]
                self.ctx.chains.fail_chain(chain, Failure("lua", f"argv must be JSON data, got {found}",
                                                   fatal_kind="Lua"))
                return
        chain.argv = self.lua.fn.deep_copy(argv)
        self.ctx.claims.release("h1")
        chain.claim_identity = "0"

    # ------------------------------------------------------------ log
    def log(self, *args):
        chain = self.ctx.scheduler.current
        if len(args) != 1:
            return self.err("log expects exactly one argument")
        # The event unit is spent before the message is checked.
        chain.log_events += 1
        if chain.log_events > LOG_EVENTS_PER_VM:
            return self.err("lua log event budget exceeded")
        message = args[0]
        if not isinstance(message, bytes) or decode(message) is None:
            return self.err("log message must be a UTF-8 string")
        text = decode(message)
        if len(text) > LOG_MAX_CHARS:
            return self.err(f"log message must be at most {LOG_MAX_CHARS} characters")
        if any(ord(c) < 0x20 or ord(c) == 0x7F or c in "\u2028\u2029" for c in text):
            return self.err("log message must not contain newline or control characters")
        if chain.log_bytes + len(message) > LOG_BYTES_PER_VM:
            return self.err("lua log cumulative byte budget exceeded")
        chain.log_bytes += len(message)
        if not self.ctx.events.log(chain, text, len(message)):
            return self.err("log budget exhausted")     # the run has ended as Budget
        return (True,)

    # ------------------------------------------------------------ headings
    def check_target(self, chain: Chain, target: Any) -> tuple[int | None, Any]:
        """Resolve a heading reference from the chain's current section.

        Returns (index, None) or (None, error tuple).
        """
        if not isinstance(target, bytes):
            return None, self.err(f"section target must be a string, got {typename(target)}")
        text = decode(target)
        if text is None:
            return None, self.err("section target must be a valid UTF-8 string")
        origin = None if chain.in_h1 or chain.section is None else chain.section.index
        try:
            return resolve(self.ctx.prompt, origin, text), None
        except HeadingError as e:
            return None, self.err(e.message)

    def check_worker(self, chain: Chain, target: Any) -> tuple[int | None, Any]:
        """Resolve a task or fanout target: a section that can run as a worker."""
        index, error = self.check_target(chain, target)
        if error:
            return None, error
        section = self.ctx.prompt.sections[index]
        if section.is_list:
            return None, self.err(f"section `{section.name}` is a list section, not a worker template")
        return index, None

    def list_from_section(self, target=None, *rest):
        chain = self.ctx.scheduler.current
        index, error = self.check_target(chain, target)
        if error:
            return error
        section = self.ctx.prompt.sections[index]
        if section.items is None:
            return self.err(f"section `{section.name}` has no pre-parsed items")
        return (True, self.lua.seq(list(section.items)))

    def jump(self, target=None, *rest):
        chain = self.ctx.scheduler.current
        if chain.loading_library:
            return self.err("jump is not available during shared library load")
        refusal = self.models.jump_refusal(chain)
        if refusal:
            return self.err(refusal)
        if not isinstance(target, bytes):
            return self.err(f"section target must be a string, got {typename(target)}")
        chain.pending_jump = _t(target)
        # The jump applies when the block ends; raising here ends the block
        # unless a pcall catches it, which is what the spec describes.
        return self.err("jump")

    # ------------------------------------------------------------ call
    def call(self, chain: Chain, target=None, input_=None, *rest):
        ctx = self.ctx
        index, error = self.check_target(chain, target)
        if error:
            return error
        args, argv = chain.args, chain.argv
        if input_ is not None:
            if not isinstance(input_, bytes):
                return self.err(f"input must be a string, got {typename(input_)}")
            if decode(input_) is None:
                return self.err("input must be a valid UTF-8 string")
            args, argv = input_, self.initial_argv(decode(input_))
        refusal = ids.depth_refusal(chain, "call")
        if refusal:
            return self.err(refusal)
        if not self.read_back_var(chain):
            return PARK
        section = ctx.prompt.sections[index]
        child = Chain(
            title=ctx.prompt.title,
            id=ids.take_for_call(chain),
            kind="call",
            task=chain.task,
            parent=chain,
            depth=chain.depth + 1,
            args=args,
            argv=argv,
            var=self.lua.fn.deep_copy(chain.var),
            limit=chain.limit,
            claim_identity=chain.claim_identity,
        )
        siblings = ctx.prompt.siblings(index)
        child.frames = [Frame(siblings, siblings.index(section.index))]

        def ended(c: Chain, ok: bool, value: Any) -> None:
            if not chain.live:
                return
            if ok:
                if not ctx.budget.room_for(len(value or ""), "returning the called chain's result"):
                    return
                ctx.scheduler.make_ready(chain, (True, (value if value is not None else "").encode("utf-8")))
            else:
                ctx.scheduler.make_ready(chain, (False, ctx.errors.as_error_value(value, chain)))

        child.on_end = ended
        ctx.trace.emit(ctx.clock.now, "call_start", chain=chain.id, callee=child.id)
        ctx.scheduler.make_ready(child, None)
        return ctx.scheduler.park(chain, CalledChain(child))

    # ------------------------------------------------------------ store
    def direct_store(self, op: str, *args):
        """A store call during the shared library's load: answered at once."""
        answer = self.store(self.ctx.scheduler.current, op, *args, direct=True)
        if isinstance(answer, tuple):
            return answer
        return self.err("store operation failed")      # a claims conflict ended the run

    def _string_arg(self, name: str, value: Any, optional: bool = False):
        if value is None and optional:
            return None, None
        if not isinstance(value, bytes):
            return None, self.err(f"{name} must be a string, got {typename(value)}")
        text = decode(value)
        if text is None:
            return None, self.err(f"{name} must be a valid UTF-8 string")
        return text, None

    def _bound(self, name: str, value: Any):
        if value is None:
            return None, None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, self.err(f"{name} must be an integer, got {typename(value)}")
        if isinstance(value, float):
            if not value.is_integer():
                return None, self.err(f"{name} must be an integer, got number")
            value = int(value)
        return value, None

    def store(self, chain: Chain, op: str, *args, direct: bool = False):
        store = self.ctx.harness.store
        call = functools.partial(self.ctx.effects.store_call, direct=direct)
        args = args + (None,) * (3 - len(args))
        if op == "glob":
            pattern, error = self._string_arg("pattern", args[0])
            if error:
                return error
            return call(chain, op, None, lambda: store.glob(pattern))
        path, error = self._string_arg("path", args[0])
        if error:
            return error
        if op in ("write", "append"):
            contents, error = self._string_arg("contents", args[1])
            if error:
                return error
            fn = getattr(store, op)
            return call(chain, op, path, lambda: fn(path, contents))
        if op in ("read", "read_numbered"):
            start, error = self._bound("start", args[1])
            if error:
                return error
            end, error = self._bound("end", args[2])
            if error:
                return error
            fn = getattr(store, op)
            return call(chain, op, path, lambda: fn(path, start, end))
        if op == "str_replace":
            old, error = self._string_arg("old", args[1])
            if error:
                return error
            new, error = self._string_arg("new", args[2])
            if error:
                return error
            return call(chain, op, path, lambda: store.str_replace(path, old, new))
        fn = getattr(store, op)
        return call(chain, op, path, lambda: fn(path))


class _Resolver:
    """Looks up the roots a `{{ }}` placeholder may name, for substitution."""

    def __init__(self, host: Host, chain: Chain) -> None:
        self.host, self.chain = host, chain

    def args(self) -> str:
        return _t(self.chain.args)

    def argv(self) -> Any:
        return _lua_to_data(self.chain.argv)

    def var(self) -> Any:
        return _lua_to_data(self.chain.var)

    def sys(self) -> dict:
        ctx, chain = self.host.ctx, self.chain
        out = {
            "taskid": ids.taskid(chain),
            "section_name": chain.section_name,
            "execution": ctx.config.execution,
            "section_count": len(ctx.prompt.top_level),
            "when": WHEN,
            "id": ids.current_entry(chain),
        }
        if chain.kind == "task" and ids.in_first_entry(chain) and chain.first_index is not None:
            out["index"] = chain.first_index
        return out

    def item(self) -> tuple[bool, Any]:
        chain = self.chain
        if chain.kind == "task" and ids.in_first_entry(chain) and chain.has_item:
            return True, _lua_to_data(chain.first_item)
        return False, None

    def global_(self, name: str) -> tuple[bool, Any]:
        env = self.chain.env
        # The environment's `__index` may be the prompt's own: read under the budget.
        value = self.host.lua.index(env, name.encode()) if env is not None else None
        if value is None:
            return False, None
        return True, _lua_to_data(value, strict=True)


class NotData(Exception):
    pass


def _lua_to_data(value: Any, strict: bool = False) -> Any:
    try:
        return from_lua_json(value)
    except NotJSON as e:
        if strict:
            raise NotData(e.typename) from None
        return None


__all__ = ["Host", "LuaTable"]
