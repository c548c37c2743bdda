"""One Lua 5.5 runtime per run, with the sandbox and the yield bridge.

What lives here: creating the `lupa.lua55` runtime with a fixed string hash
seed and a memory cap, loading `prelude.lua`, compiling blocks, starting block
coroutines, and converting values between Lua and Python.  What does not: the
host globals a section sees (the engine builds those) and any scheduling.

Strings cross the boundary as bytes (`encoding=None`): a prompt may hold
bytes that are not UTF-8, and several spec messages depend on telling them
apart.  Python code therefore passes `bytes` into Lua and decodes on the way
out.
"""

from __future__ import annotations

import importlib.resources
import math
from typing import Any

import lupa.lua55 as lua55

#: Lua's string hash seed, fixed so nothing inside the runtime depends on a
#: per-process random seed.
STRING_HASH_SEED = 0x5EED
DEFAULT_MAX_INSTRUCTIONS = 20_000_000
DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
BUDGET_MESSAGE = (
    "instruction budget exhausted: the run executed more than {n} Lua instructions "
    "(an endless loop?)"
)

_bytecode: dict[str, bytes] = {}


def engine_chunk(name: str) -> bytes:
    """The compiled bytecode of one of the engine's own Lua files.

    Compiled once per process and loaded in binary form into every run's
    runtime: parsing the source again for each run cost more than creating
    the runtime itself.  Only the engine's own files load as bytecode;
    prompt code is always loaded as text.
    """
    if name not in _bytecode:
        source = importlib.resources.files("forge.lua").joinpath(name).read_bytes()
        compiler = lua55.LuaRuntime(encoding=None, register_eval=False, register_builtins=False)
        dump = compiler.execute("return function(s, n) return string.dump(assert(load(s, n))) end")
        _bytecode[name] = dump(source, f"=forge/{name}".encode())
    return _bytecode[name]

LuaError = lua55.LuaError
_probe = lua55.LuaRuntime()
#: The classes lupa wraps Lua tables and functions in (not exported by name).
LuaTable = type(_probe.table())
LuaFunction = type(_probe.eval("function() end"))
del _probe


def _filter(obj, name, is_setting):
    # No Python object is ever handed to prompt code, but if one were, its
    # attributes stay out of reach.
    raise AttributeError("Python attributes are not reachable from a prompt")


class LuaRuntime:
    """A run's Lua state: the prelude's exports plus conversion helpers."""

    def __init__(
        self,
        max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_memory: int = DEFAULT_MAX_MEMORY,
        random_seed: int = 0,
    ) -> None:
        self.lua = lua55.LuaRuntime(
            encoding=None,
            unpack_returned_tuples=True,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_filter,
            string_hash_seed=STRING_HASH_SEED,
            max_memory=max_memory,
        )
        self.max_memory = max_memory
        #: The first Python exception a host function raised, if any.
        self.internal_error: Exception | None = None
        g = self.lua.globals()
        g.python = None
        host = self.lua.table_from(
            {
                b"max_instructions": max_instructions,
                b"random_seed": random_seed,
                b"budget_message": BUDGET_MESSAGE.format(n=f"{max_instructions:,}").encode(),
            }
        )
        host[b"patterns"] = self.load_engine_chunk("patterns.lua")
        self.E = self.load_engine_chunk("prelude.lua")(host)
        E = self.E
        self.make_error_raw = E.make_error
        self.stamped_error_raw = E.stamped_error
        self.is_host_error = E.is_host_error
        self.new_env_raw = E.new_env
        self.run_block = E.run_block
        self.load_library = E.load_library
        self.var_proxy_raw = E.var_proxy
        self.var_backing = E.var_backing
        self.json_check_raw = E.json_check
        self.deep_copy = E.deep_copy
        self.host_raw = E.host
        self.suspender_raw = E.suspender
        self.abort_value = E.abort_value
        self.instructions_used = E.instructions_used
        self.ordered_keys = E.ordered_keys
        self.table_from = self.lua.table_from
        self._coroutine = self.run_block.coroutine

    def memory_tight(self, extra: int = 0) -> bool:
        """Whether Lua state is close to the cap (with `extra` bytes more).

        The engine stops a run here, between steps and before it hands Lua a
        large value: past the cap, an allocation the engine makes from Python
        (outside Lua's protected calls) would abort the whole process instead
        of failing the run.
        """
        return self.lua.get_memory_used() + extra > self.max_memory * 0.75

    def load_engine_chunk(self, name: str):
        return self.lua.globals().load(engine_chunk(name), f"=forge/{name}".encode(), b"b")

    # -- building Lua values -------------------------------------------------
    def table(self, mapping: dict | None = None, **kw: Any):
        t = self.lua.table()
        if mapping:
            for k, v in mapping.items():
                t[to_lua_key(k)] = self.to_lua(v)
        for k, v in kw.items():
            t[k.encode()] = self.to_lua(v)
        return t

    def seq(self, items) -> Any:
        t = self.lua.table()
        for i, v in enumerate(items, 1):
            t[i] = self.to_lua(v)
        return t

    def to_lua(self, value: Any) -> Any:
        """Python data (str, numbers, lists, dicts, None) to Lua values."""
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, dict):
            return self.table(value)
        if isinstance(value, (list, tuple)):
            return self.seq(value)
        return value

    def error(self, kind: str, message: str, **fields: Any):
        extra = self.table(fields) if fields else None
        return self.make_error_raw(kind.encode(), message.encode("utf-8"), extra)

    def stamped_error(self, kind: str, message: str, stamp: int, **fields: Any):
        """`error(...)` stamped with the suspend count `stamp` (`E.stamp`), in one Lua call."""
        extra = self.table(fields) if fields else None
        return self.stamped_error_raw(kind.encode(), message.encode("utf-8"), extra, stamp)

    def host(self, fn):
        """Wrap a Python function answering (ok, *values) as a raising Lua function."""
        return self.host_raw(self.guard(fn))

    def guard(self, fn):
        """`fn` (answering (ok, *values)) guarded for Lua, still a Python function.

        A Python exception inside `fn` is a bug in the engine, not the
        prompt's error: it is kept in `internal_error` (the run ends as
        `Internal`) and reaches Lua as an abort no `pcall` can swallow.
        """
        def guarded(*args):
            try:
                return fn(*args)
            except LuaError as e:
                # The prompt's own Lua ran inside the call (a metamethod on a
                # value it passed) and raised: its error, or the budget's abort.
                abort = self.E.abort_value()
                if abort is not None:
                    return (False, abort)
                # lupa appends Lua's traceback after the message: keep the message.
                return (False, str(e).split("\nstack traceback:", 1)[0].encode("utf-8"))
            except Exception as e:  # noqa: BLE001 - every bug must end the run, loudly
                if self.internal_error is None:
                    self.internal_error = e
                return (False, self.E.abort_with(self.error("internal", f"internal invariant "
                                                                  f"violated: {type(e).__name__}: {e}")))

        return guarded

    def build_library(self, spec: list) -> Any:
        """The host library table from flat (kind, name, value) triples
        (`E.build_library` says what each kind means), in one Lua call."""
        return self.E.build_library(*spec)

    def suspender(self, op: str):
        return self.suspender_raw(op.encode())

    def new_env(self, globals_table=None):
        return self.new_env_raw(globals_table)

    def block_coroutine(self, source: bytes, chunkname: bytes, env):
        return self._coroutine(source, chunkname, env)


def to_lua_key(k: Any) -> Any:
    return k.encode("utf-8") if isinstance(k, str) else k


def typename(value: Any) -> str:
    """The Lua type name of a value as lupa hands it to Python."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (bytes, str)):
        return "string"
    if isinstance(value, LuaTable):
        return "table"
    if isinstance(value, LuaFunction):
        return "function"
    if lua55.lua_type(value) == "thread":
        return "thread"
    return "userdata"


def results(value: Any) -> tuple:
    """What a Lua call returned, as a tuple (lupa gives one value bare)."""
    return value if isinstance(value, tuple) else (value,)


def text(value: Any) -> str:
    """A Lua string (bytes) or any other value as Python text, lossily."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def decode(value: bytes) -> str | None:
    """UTF-8 text of a Lua string, or None when it is not valid UTF-8."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


class NotJSON(Exception):
    def __init__(self, typename: str, representable: bool = True):
        self.typename = typename
        self.representable = representable


def from_lua_json(value: Any, _depth: int = 0) -> Any:
    """Lua data to JSON-compatible Python data.

    A table whose keys are exactly 1..n becomes a list, an empty table an
    empty list... no: an empty table becomes `{}` only when it has no array
    part to speak of, which JSON cannot tell apart; we render it as `[]`
    like most Lua JSON encoders.  Raises NotJSON for functions, userdata,
    threads, non-finite numbers and keys JSON cannot hold.
    """
    if _depth > 200:
        raise NotJSON("table", representable=False)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NotJSON("number", representable=False)
        return value
    if isinstance(value, bytes):
        text = decode(value)
        if text is None:
            raise NotJSON("string", representable=False)
        return text
    if isinstance(value, LuaTable):
        keys = list(value.keys())
        if all(isinstance(k, int) and not isinstance(k, bool) for k in keys) and sorted(keys) == list(
            range(1, len(keys) + 1)
        ):
            return [from_lua_json(value[i], _depth + 1) for i in range(1, len(keys) + 1)]
        out = {}
        for k in keys:
            if isinstance(k, bytes):
                ks = decode(k)
                if ks is None:
                    raise NotJSON("string", representable=False)
            elif isinstance(k, int) and not isinstance(k, bool):
                ks = str(k)
            elif isinstance(k, float) and k.is_integer():
                ks = str(int(k))
            else:
                raise NotJSON(typename(k), representable=False)
            out[ks] = from_lua_json(value[k], _depth + 1)
        return dict(sorted(out.items()))
    raise NotJSON(typename(value))


_compiler: lua55.LuaRuntime | None = None


def compile_check(source: str, chunkname: str) -> str | None:
    """Compile a block without running it: the diagnostic, or None.

    One private runtime serves every check; compiling runs no prompt code,
    so nothing leaks between prompts.
    """
    global _compiler
    if _compiler is None:
        _compiler = lua55.LuaRuntime(encoding=None, register_eval=False, register_builtins=False,
                                     string_hash_seed=STRING_HASH_SEED)
        _compiler.execute("compile = function(s, n) local f, e = load(s, n, 't', {}) "
                          "if f then return nil end return e end")
    message = _compiler.globals().compile(source.encode("utf-8"), chunkname.encode("utf-8"))
    return None if message is None else message.decode("utf-8", "replace")
