"""The Lua 5.5 runtime a run uses, with the sandbox and the yield bridge.

What lives here: creating the `lupa.lua55` runtime with a fixed string hash
seed and a memory cap, loading `prelude.lua` (with `patterns.lua` and
`bulk.lua`), compiling blocks (once per process: `loadable`), starting block
coroutines, converting values between Lua and Python, and keeping idle
runtimes for reuse (`acquire`/`release`).  What does not: the host globals a
section sees (the engine builds those) and any scheduling.

Strings cross the boundary as bytes (`encoding=None`): a prompt may hold
bytes that are not UTF-8, and several spec messages depend on telling them
apart.  Python code therefore passes `bytes` into Lua and decodes on the way
out.

**Reuse.**  Building a runtime and running the prelude cost more than the
Lua work of a small run, so a run takes an idle runtime and gives it back
when it ends.  Nothing of one run reaches the next: the prelude's per-run
state is set back (`E.reset`: the budget, the abort flag, serials, the weak
sets, the generator's seed), the main thread's instruction hook is cleared,
and the memory cap is set relative to what the runtime keeps.  The earlier
runs' garbage is collected only once it is as large as what the runtime
keeps: nothing a prompt can see depends on when the collector runs (below,
on weak tables), and the memory cap counts only what a full collection
leaves (`memory_tight`).  A run whose end is not clean (an abort such as
the budget, an engine bug, a run left holding much memory) gives its
runtime up instead.

lupa's collector hazards decide what Lua may hold (lupa issues #84 and
#294, reproduced by `benchmarks/lupa_hazards.py`): when Lua's collector frees
a Python object that holds lupa objects, the process can crash, and in Lua
5.5 a Python object pushed again and again can come back as another one (a
finalizer running late drops lupa's own reference to the object while a
newer userdata still points at it).  A runtime therefore hands Lua no
Python function of a run: every Python function Lua holds is a *slot* made
once per runtime, which calls a route of the engine's (a module-level
function) for the run bound to the runtime (`bind`), is kept alive by the
runtime itself as well, and after the run answers for no run (`unbind`).
Binding a run is one assignment, however large its library (`library`).
The only other Python objects Lua ever holds
are the CPU-time backstop's thread registry (`thread_registry`, which holds
no lupa object and no run) and the model side's: model handles (userdata, as prompts must see them) and
the errors reading or calling one raises (`Keeper`).  They hold plain data
and no lupa object, so Lua's collector may free them, and the runtime keeps
each alive as long as it lives, so a late finalizer can never leave a
userdata pointing at a freed object; the traceback an error carries (the
run's Python frames) is cut after each resume of a block's coroutine
(`settle`).  A runtime that has kept `KEEP_LIMIT` of them is given up after
its run.  lupa also ties a Lua value made inside a coroutine's call to that
coroutine: Python freeing it once Lua has collected the coroutine crashes,
so what a host function keeps past its call is re-made on the main thread
(`anchor`).
Prompts that name `__mode` get a fresh runtime of their own: a weak table
shows when the collector ran, which in a reused runtime depends on the heap
the earlier runs left (a weak table made under a computed name still sees
that; nothing else a prompt can reach does).
`FORGE_FRESH_RUNTIME=1` gives every run a fresh runtime (the escape hatch;
outputs are the same either way).
"""

from __future__ import annotations

import collections
import functools
import importlib.resources
import math
import os
import threading
import weakref
from typing import Any, NoReturn

import lupa.lua55 as lua55

from forge.lua import backstop

#: Lua's string hash seed, fixed so nothing inside the runtime depends on a
#: per-process random seed.
STRING_HASH_SEED = 0x5EED
DEFAULT_MAX_INSTRUCTIONS = 20_000_000
DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
#: Idle runtimes kept for reuse (a process runs one run at a time, or a few
#: when a caller interleaves them).
POOL_SIZE = 2
#: The bytecode the process keeps (`loadable`): its total size, least
#: recently loaded dropped first, and the largest block kept.
COMPILED_BYTES = 32 * 1024 * 1024
COMPILED_CHUNK_BYTES = 64 * 1024
#: A run that ends holding more Lua memory than this gives its runtime up:
#: a fresh one is cheaper than carrying a large heap into the next run.
REUSE_MEMORY_LIMIT = 16 * 1024 * 1024
#: The most garbage of earlier runs a reused runtime carries into a run
#: (`LuaRuntime.begin`): a quarter of a per cent of the memory cap, and what
#: about 30 runs of a small prompt leave.
GARBAGE_ALLOWANCE = 640 * 1024
#: While a reused runtime's heap is below `SMALL_HEAP`, Lua's collector
#: starts a cycle only once the heap has grown to this per cent of what the
#: last one left (Lua's own default is 250): the few kilobytes of garbage
#: each small run leaves wait for `begin`'s collection, instead of paying
#: for cycles that mark the prelude and libraries again every dozen runs.
#: Past `SMALL_HEAP` (checked between steps, `memory_tight`) the run goes
#: on with Lua's default, so a large run's heap grows no further between
#: cycles than it would on a fresh runtime.
SMALL_HEAP_PAUSE = 1000
SMALL_HEAP = 4 * 1024 * 1024
#: Model handles and their errors a runtime keeps alive (`Keeper`) before it
#: is given up after its run: each holds a few hundred bytes.
KEEP_LIMIT = 4096
FRESH_ENV = "FORGE_FRESH_RUNTIME"
#: The metatable field that makes a table weak.  A weak table shows when the
#: collector ran, and in a reused runtime that depends on the heap earlier
#: runs left: a prompt that names it runs on a fresh runtime.
WEAK_MODE = "__mode"
BUDGET_MESSAGE = (
    "instruction budget exhausted: the run executed more than {n} Lua instructions "
    "(an endless loop?)"
)


@functools.lru_cache(maxsize=16)
def budget_message(instructions: int) -> bytes:
    """`BUDGET_MESSAGE` for a budget, as Lua raises it (made once per budget)."""
    return BUDGET_MESSAGE.format(n=f"{instructions:,}").encode()


_bytecode: dict[str, bytes] = {}


def engine_chunk(name: str) -> bytes:
    """The compiled bytecode of one of the engine's own Lua files.

    Compiled once per process and loaded in binary form into every run's
    runtime: parsing the source again for each run cost more than creating
    the runtime itself.  (Prompt blocks are compiled once per process too,
    by `loadable`.)
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


ATTRIBUTES_UNREACHABLE = "Python attributes are not reachable from a prompt"


def _not_callable(self, *args) -> NoReturn:
    del args                # the error's frame holds no Lua value
    self._keeper.fault(TypeError, f"'{type(self).__name__}' object is not callable")


#: The errors Lua can get from a Python object (`Keeper.fault`): the
#: built-in classes under their own names (what a prompt's `tostring` and a
#: call show), made callable only to raise a kept error instead of lupa's.
_FAULTS = {base: type(base.__name__, (base,), {"__call__": _not_callable,
                                                "__module__": __name__})
           for base in (LookupError, TypeError, AttributeError, MemoryError)}


class Keeper:
    """The Python objects a runtime hands Lua besides its slots: model handles
    and the errors lupa raises into Lua from them.

    Each is kept alive as long as the runtime (up to `KEEP_LIMIT`; past it
    the runtime is given up after its run), so lupa can never be left with a
    userdata whose object was freed (issue #294's late finalizer).  None of
    them holds a lupa object, so Lua's collector may free its userdata at
    any time (issue #84).  An error raised into Lua carries the Python frames
    it was raised through, which hold the run's lupa objects: every traceback
    is cut in Python, never left for Lua's collector, before the next error
    is raised and when the run ends (`strip`).
    """

    __slots__ = ("_runtime", "full", "kept", "raised")

    def __init__(self, runtime: LuaRuntime) -> None:
        self._runtime = weakref.ref(runtime)
        self.kept: list = []
        self.raised: list = []
        self.full = False

    def keep(self, obj: Any) -> Any:
        if len(self.kept) < KEEP_LIMIT:
            self.kept.append(obj)
        else:
            self.full = True
        return obj

    def fault(self, kind: type, message: str) -> NoReturn:
        """Raise into Lua an error of `kind` whose `tostring` is `message`."""
        error = _FAULTS[kind](message)
        error._keeper = self
        self.strip()
        self.raised.append(self.keep(error))
        raise error

    def reraise(self, error: BaseException) -> NoReturn:
        """Raise `error` (caught from lupa) into Lua as a kept error of its class."""
        kind = next((k for k in _FAULTS if isinstance(error, k)), TypeError)
        self.fault(kind, str(error))

    def strip(self) -> None:
        """Cut the tracebacks of the errors raised so far (in Python, outside
        Lua's collector): what stays is the error and its message."""
        for error in self.raised:
            error.__traceback__ = error.__context__ = error.__cause__ = None
        self.raised.clear()

    def filter(self, obj, name, is_setting) -> NoReturn:
        # No Python object a prompt holds has an attribute it may read or set.
        del obj, name       # the error's frame holds no Lua value
        self.fault(AttributeError, ATTRIBUTES_UNREACHABLE)

    def seq(self, items) -> Any:
        """A new Lua sequence of `items` in the runtime."""
        return self._runtime().seq(items)

    def show(self, value: Any) -> str:
        """`value` as a message names it (`LuaRuntime.show`)."""
        return self._runtime().show(value)


class LuaRuntime:
    """A run's Lua state: the prelude's exports plus conversion helpers."""

    def __init__(
        self,
        instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_memory: int = DEFAULT_MAX_MEMORY,
        random_seed: int = 0,
        reusable: bool = False,
        cpu_seconds: float | None = None,
    ) -> None:
        self.keeper = Keeper(self)
        #: The threads that run a prompt's code, for the CPU-time backstop,
        #: and the one Python function Lua holds besides the slots: it takes
        #: a thread's name and holds no lupa object and no run, and the
        #: runtime keeps it alive as long as Lua may call it.
        self.threads = backstop.Threads()
        self.thread_registry = self.threads.register
        deadline = (float("inf") if cpu_seconds is None
                    else self.threads.start(cpu_seconds))
        self.lua = lua55.LuaRuntime(
            encoding=None,
            unpack_returned_tuples=True,
            register_eval=False,
            register_builtins=False,
            attribute_filter=self.keeper.filter,
            string_hash_seed=STRING_HASH_SEED,
            max_memory=max_memory,
        )
        self.max_memory = max_memory
        #: The first Python exception a host function raised, if any.
        self.internal_error: BaseException | None = None
        g = self.lua.globals()
        g.python = None
        host = self.lua.table_from(
            {
                b"max_instructions": instructions,
                b"max_memory": max_memory,
                b"random_seed": random_seed,
                b"budget_message": budget_message(instructions),
                b"cpu_deadline": deadline,
                b"cpu_message": backstop.message(cpu_seconds or 0.0),
                b"register_thread": self.thread_registry,
            }
        )
        host[b"patterns"] = self.load_engine_chunk("patterns.lua")  # lua: own table
        host[b"bulk"] = self.load_engine_chunk("bulk.lua")  # lua: own table
        #: The prelude's table, handed to the engine's other Lua sides; and
        #: its functions as Python calls them, each looked up in Lua once.
        self.E = self.load_engine_chunk("prelude.lua")(host)
        self.fn = Functions(self.E)
        self.table_from = self.lua.table_from
        self._coroutine = self.fn.run_block.coroutine
        self.reusable = reusable
        self._clear_hook = self.lua.globals().debug.sethook
        #: What a fresh runtime holds and may hold when a run starts; a reused
        #: one counts its memory from the same start (`begin`).
        self._setup_used = self.lua.get_memory_used()
        self._fresh_limit = self.lua.get_max_memory(True)
        self._offset = 0
        #: When `begin` next collects: past this many bytes in use, or once
        #: the runtime keeps a different number of libraries, host functions
        #: and engine tables than `_kept`.
        self._collect_above = 0
        self._kept = -1
        self._collectgarbage = self.lua.globals().collectgarbage
        #: Lua's own pause, and whether `SMALL_HEAP_PAUSE` is in force.
        self._default_pause = self._collectgarbage(b"param", b"pause")
        self._pause_raised = False
        #: Slots: the Python functions Lua holds, by name, each with the route
        #: it calls and its Lua face; the run they answer for (`bind`).
        self._slot_index: dict[bytes, int] = {}
        self._slots: list[tuple[Any, Any]] = []
        self._slot_lua: dict[bytes, Any] = {}
        self._bound: list = [None]
        self._failed: list = [_unbound]
        #: Each library built, by the identity of its entries: the entries
        #: (kept, so the identity stays theirs) and the Lua table.
        self._libraries: dict[int, tuple] = {}
        #: Lupa keeps the last error a Python function raised into Lua, with
        #: its traceback (the run's frames), until the next: `unbind` makes
        #: it this stand-in's, a C function raising with no frame of a run.
        self._own = [{}.pop]
        self._pcall = self.lua.globals().pcall
        self._select = self.lua.globals().select
        #: The engine's Lua sides loaded once per runtime, by name (the model
        #: side's `models.lua`): they hold no state of a run.
        self.engine_tables: dict[str, Any] = {}

    def __del__(self) -> None:
        # Dropped with a run still bound (a run built and never executed):
        # the slots let go of it first, so that closing the Lua state frees
        # no Python object holding lupa objects (lupa issue #84).  A runtime
        # whose constructor raised bound nothing and has no slots.
        if "_failed" in self.__dict__:
            self.unbind(forget=False)
        if "threads" in self.__dict__:
            self.threads.stop()         # before the Lua state and its threads go

    # -- reuse -----------------------------------------------------------------
    def begin(self, instructions: int, random_seed: int,
              cpu_seconds: float | None = None) -> None:
        """Make a reused runtime what a fresh one would be for the next run."""
        # A C function called from Python runs no Lua instruction, so the old
        # hook cannot fire on the way out.
        self._clear_hook()
        if cpu_seconds is None:
            self.threads.stop()
            deadline = float("inf")
        else:
            deadline = self.threads.start(cpu_seconds)     # which forgets the last run's threads
        self.fn.reset(instructions, budget_message(instructions),
                     random_seed, deadline, backstop.message(cpu_seconds or 0.0))
        self.internal_error = None
        # The earlier runs' garbage is collected only once it reaches
        # `GARBAGE_ALLOWANCE`, or when the runtime has built something it
        # keeps since the last collection: a full collection marks the whole
        # heap (about 45 us for the prelude and libraries alone), which cost
        # a small run more than its own Lua work; spread over the ~30 small
        # runs the allowance holds, it costs ~2 us each.  What a prompt can
        # see does not depend on it (see `memory_tight` and the module
        # docstring on weak tables).
        kept = len(self._libraries) + len(self._slot_lua) + len(self.engine_tables)
        if kept != self._kept or self.lua.get_memory_used() > self._collect_above:
            self.lua.gccollect()
            live = self.lua.get_memory_used()
            self._kept = kept
            self._collect_above = live + GARBAGE_ALLOWANCE
            self._offset = max(0, live - self._setup_used)
            self.lua.set_max_memory(self._fresh_limit + self._offset, True)
        if not self._pause_raised:
            self._collectgarbage(b"param", b"pause", SMALL_HEAP_PAUSE)
            self._pause_raised = True

    def clean(self) -> bool:
        """Whether the run that used this runtime ended so that another may use it."""
        return (self.internal_error is None and self.fn.abort_value() is None
                and not self.keeper.full
                and self.lua.get_memory_used() - self._offset < REUSE_MEMORY_LIMIT)

    def unbind(self, forget: bool = True) -> None:
        """Every slot calls the stub again and no error Lua holds keeps a frame
        of the run: the runtime keeps nothing of the run.  (`forget` false:
        the runtime is being dropped, and lupa's last error goes with it.)"""
        self._bound[0] = None
        self._failed[0] = _unbound
        if forget:
            self.settle()
        else:
            self.keeper.strip()

    def settle(self) -> None:
        """Cut what the errors raised into Lua since the last call hold of the
        run's Python frames (`Keeper.strip`), lupa's copy of the last one
        included.  Called after each resume of a block's coroutine, while it
        is alive: those frames may hold Lua values made inside its calls,
        which lupa ties to that coroutine, so freeing them once Lua has
        collected it would crash."""
        if self.keeper.raised:
            self.keeper.strip()
            # pcall is C: no instruction of the run's budget is spent.
            self._pcall(self._own[0])

    def anchor(self, value: Any) -> Any:
        """`value` (a Lua value a host function was given) as the engine may
        keep it past the call: lupa ties a value made inside a coroutine's
        call to that coroutine, and freeing it after Lua collected the
        coroutine crashes the process; this one is the main thread's (made by
        a C function, so no instruction of the run's budget is spent)."""
        return self._select(1, value)

    def _slot(self, name: bytes, route):
        """The Python function Lua holds for slot `name`, made once: it calls
        `route(run, *args)` for the bound run, guarded as `failure` says (the
        slot itself holds no lupa object, and no run once it is unbound)."""
        i = self._slot_index.get(name)
        if i is not None:
            if self._slots[i][0] is not route:
                raise ValueError(f"slot {name!r} already calls another route")
            return self._slots[i][1]
        bound, failed = self._bound, self._failed

        def slot(*args):
            run = bound[0]
            if run is None:
                return _unbound()
            try:
                return route(run, *args)
            except Exception as e:  # noqa: BLE001 - `failure` says what it is
                return failed[0](e)

        self._slot_index[name] = len(self._slots)
        self._slots.append((route, slot))       # never only Lua's: see the module docstring
        return slot

    def bind(self, run: Any) -> None:
        """Every slot answers for `run` until `unbind`."""
        self._bound[0] = run
        self._failed[0] = self.failure

    def memory_tight(self, extra: int = 0) -> bool:
        """Whether Lua state is close to the cap (with `extra` bytes more).

        The engine stops a run here, between steps and before it hands Lua a
        large value: past the cap, an allocation the engine makes from Python
        (outside Lua's protected calls) would abort the whole process instead
        of failing the run.

        Only what a full collection leaves counts: garbage depends on when
        the collector last ran, which on a reused runtime depends on the runs
        before, so a decision read off garbage would make a run's outcome
        depend on its runtime's history (a test compares the memory bombs on
        fresh and reused runtimes).
        """
        limit = self.max_memory * 0.75 - extra
        used = self.lua.get_memory_used() - self._offset
        if self._pause_raised and used > SMALL_HEAP:
            self._collectgarbage(b"param", b"pause", self._default_pause)
            self._pause_raised = False
        if used <= limit:
            return False
        self.lua.gccollect()
        return self.lua.get_memory_used() - self._offset > limit

    def load_engine_chunk(self, name: str):
        return self.lua.globals().load(engine_chunk(name), f"=forge/{name}".encode(), b"b")

    # -- the prompt's Lua, run from Python --------------------------------------
    # Reading or writing a field of a table the prompt made (or of a section
    # environment, whose metatable a prompt may replace) can run the
    # prompt's metamethods: every such access from Python goes through these,
    # which run it under the instruction budget (`E.guarded` in prelude.lua
    # says how).  lupa's own `table[key]`, `table[key] = value` and `str()`
    # would run it uncounted; `tests/hostile/test_entry_points.py` keeps the
    # engine's modules free of them on values a prompt can reach.
    def guarded(self, function, *args):
        """`function(*args)` (a Lua function) under the budget."""
        return self.fn.guarded(function, *args)

    def tostring(self, value) -> str:
        """The sandbox's `tostring(value)` (a `__tostring` included), under the budget."""
        return text(self.fn.guarded(self.fn.tostring, value))

    def index(self, table, key):
        """`table[key]` as Lua reads it (metamethods included), under the budget."""
        return self.fn.index(table, key)

    def assign(self, table, key, value) -> None:
        """`table[key] = value` as Lua writes it, under the budget."""
        self.fn.assign(table, key, value)

    # -- building Lua values -------------------------------------------------
    def table(self, mapping: dict | None = None, **kw: Any):
        t = self.lua.table()
        if mapping:
            for k, v in mapping.items():
                t[to_lua_key(k)] = self.to_lua(v)  # lua: own table
        for k, v in kw.items():
            t[k.encode()] = self.to_lua(v)  # lua: own table
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

    def show(self, value: Any) -> str:
        """`value` as a message names it, as the sandbox's `tostring` prints
        it but without running a metamethod: a string as its text, a table,
        function, thread or userdata by its type and the run's serial for it
        (never an address), anything else as Lua writes it."""
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        kind = typename(value)
        if kind in ("table", "function", "thread", "userdata"):
            return f"{kind}: 0x{self.fn.serial(value):08x}"
        return self.fn.tostring(value).decode("utf-8", "replace")

    def error(self, kind: str, message: str, **fields: Any):
        extra = self.table(fields) if fields else None
        return self.fn.make_error(kind.encode(), message.encode("utf-8"), extra)

    def stamped_error(self, kind: str, message: str, stamp: int, **fields: Any):
        """`error(...)` stamped with the suspend count `stamp` (`E.stamp`), in one Lua call."""
        extra = self.table(fields) if fields else None
        return self.fn.stamped_error(kind.encode(), message.encode("utf-8"), extra, stamp)

    def host(self, name: bytes, route) -> Any:
        """The Lua function `name`: it calls `route(run, *args)` for the bound
        run (`bind`), which answers (ok, *values); Lua raises the error of a
        false answer.  Made once per runtime.

        A Python exception inside `route` is a bug in the engine, not the
        prompt's error: it is kept in `internal_error` (the run ends as
        `Internal`) and reaches Lua as an abort no `pcall` can swallow."""
        slot = self._slot(name, route)
        face = self._slot_lua.get(name)
        if face is None:
            face = self._slot_lua[name] = self.fn.host(slot)
        return face

    def failure(self, e: Exception):
        """What Lua gets when a guarded host function raised `e`."""
        if isinstance(e, (LuaError, *_FAULTS.values())):
            # The prompt's own Lua ran inside the call (a metamethod on a
            # value it passed) and raised: its error, or the budget's abort.
            abort = self.fn.abort_value()
            if abort is not None:
                return (False, abort)
            if not isinstance(e, LuaError):
                # A model handle's error (`Keeper.fault`) the metamethod let
                # through: the very error value Lua saw, raised on.
                return (False, e)
            # The value a guarded call raised (a table too: lupa's LuaError
            # keeps only text), raised on at the host call, as Lua would.
            raised = self.fn.take_guard_error()
            if raised is not None:
                return (False, raised)
            # lupa appends Lua's traceback after the message: keep the message.
            return (False, str(e).split("\nstack traceback:", 1)[0].encode("utf-8"))
        # Every other exception is a bug, and must end the run, loudly.
        if self.internal_error is None:
            self.internal_error = e
        return (False, self.fn.abort_with(self.error("internal", f"internal invariant "
                                                          f"violated: {type(e).__name__}: {e}")))

    def library(self, entries: tuple, run: Any) -> Any:
        """The host library table of `entries`, bound to `run` (`bind`).

        `entries` is a constant of the engine: (kind, name, target) triples
        (`E.build_library` says what each kind means).  The target of a
        `host`, `handle` or `store` entry is a route (`host`); of a `value` entry, a
        function of the runtime giving the Lua value (the runtime's own, the
        same every run).  Built in one Lua call once per runtime; a run only
        binds it.
        """
        built = self._libraries.get(id(entries))
        if built is None:
            flat: list = []
            for kind, name, target in entries:
                if kind in (b"host", b"handle", b"store"):
                    target = self._slot(name, target)
                elif kind == b"value":
                    target = target(self)
                flat += (kind, name, target)
            built = self._libraries[id(entries)] = (entries, self.fn.build_library(*flat))
        self.bind(run)
        return built[1]

    def suspender(self, op: str):
        return self.fn.suspender(op.encode())

    def new_env(self, globals_table=None):
        return self.fn.new_env(globals_table)

    def block_coroutine(self, source: bytes, chunkname: bytes, env):
        return self._coroutine(*loadable(source, chunkname), env)

    def load_library(self, source: bytes, chunkname: bytes, env):
        """Replay the shared library into `env`: (true, values...) or (false, error)."""
        return self.fn.load_library(*loadable(source, chunkname), env)


class Functions:
    """The prelude's table of functions (`E`) as Python calls them: each is
    looked up in Lua on first use and kept, since looking a name up in a Lua
    table from Python makes a new wrapper every time.  Only functions: the
    prelude never replaces one after loading."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def __getattr__(self, name: str) -> Any:
        value = self._table[name.encode()]  # lua: own table
        if not isinstance(value, LuaFunction):
            raise AttributeError(f"the prelude has no function {name!r}")
        setattr(self, name, value)      # found on the instance from now on
        return value


def _unbound(*args):
    return (False, b"internal: no run is bound to this runtime")


_idle: list[LuaRuntime] = []
_idle_lock = threading.Lock()


def reuse_enabled() -> bool:
    return os.environ.get(FRESH_ENV, "") in ("", "0")


def acquire(instructions: int, random_seed: int, reuse: bool,
            cpu_seconds: float | None = backstop.DEFAULT_MAX_CPU_SECONDS) -> LuaRuntime:
    """A runtime for one run: an idle one made ready (`begin`) when `reuse`
    and reuse is on, else a fresh one.  The run's CPU-time deadline
    (`forge.lua.backstop`) starts now."""
    if not (reuse and reuse_enabled()):
        return LuaRuntime(instructions=instructions, random_seed=random_seed,
                          cpu_seconds=cpu_seconds)
    with _idle_lock:
        runtime = _idle.pop() if _idle else None
    if runtime is None:
        return LuaRuntime(instructions=instructions, random_seed=random_seed,
                          reusable=True, cpu_seconds=cpu_seconds)
    runtime.begin(instructions, random_seed, cpu_seconds)
    return runtime


def release(runtime: LuaRuntime, keep: bool = True) -> None:
    """The run that used `runtime` has ended: keep it for the next (unless
    `keep` is false, or the run did not end cleanly), or give it up."""
    runtime.unbind()
    # The backstop's watchdog may have left a thread's hook firing at every
    # instruction: such a runtime is not reused.
    stopped = runtime.threads.tightened
    runtime.threads.stop()
    if keep and not stopped and runtime.reusable and runtime.clean():
        with _idle_lock:
            if len(_idle) < POOL_SIZE:
                _idle.append(runtime)


def ending_kind(abort: Any) -> str:
    """The run error kind of the run-ending abort value: `Backstop` for the
    CPU-time backstop's, `Budget` for every other budget's."""
    return backstop.BACKSTOP_KIND if abort[b"kind"] == b"backstop" else "Budget"  # lua: own table


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
    """A Lua string (bytes) or any other value as Python text, lossily.

    A Lua table, function or thread reads as its type name: lupa's `str()` would run a
    prompt's `__tostring` on the main thread, outside the budget (`LuaRuntime.tostring` runs
    it under the budget), or print a process address."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if lua55.lua_type(value) is not None:
        return typename(value)
    return str(value)  # lua: not a Lua object (lua_type above): a number or a Python object


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


_INT_ONLY = {int}


def _first(pair: tuple) -> Any:
    return pair[0]


def from_lua_json(value: Any, _depth: int = 0) -> Any:
    """Lua data to JSON-compatible Python data.

    A table whose keys are exactly 1..n becomes a list; any other table an
    object with text keys, sorted.  An empty table becomes `[]`: Lua cannot
    tell an empty list from an empty object, and most Lua JSON encoders
    choose the list.  Raises NotJSON for functions, userdata, threads,
    non-finite numbers, invalid UTF-8 and keys JSON cannot hold.
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
        # One raw pass over the table, in Lua's `next` order (lupa's items()).
        items = list(value.items())
        if not items:
            return []
        keys = [k for k, _ in items]
        # Distinct integers from 1 to n, n of them: exactly the keys 1..n
        # (`type`, not isinstance: a boolean key is no index).
        if (type(keys[0]) is int and set(map(type, keys)) == _INT_ONLY
                and min(keys) == 1 and max(keys) == len(keys)):
            if keys != list(range(1, len(keys) + 1)):
                items.sort(key=_first)
            return [from_lua_json(v, _depth + 1) for _, v in items]
        out = {}
        for k, v in items:
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
            out[ks] = from_lua_json(v, _depth + 1)
        return dict(sorted(out.items()))
    raise NotJSON(typename(value))


_compiler: lua55.LuaRuntime | None = None


def _compiler_runtime() -> lua55.LuaRuntime:
    global _compiler
    if _compiler is None:
        _compiler = lua55.LuaRuntime(encoding=None, register_eval=False, register_builtins=False,
                                     string_hash_seed=STRING_HASH_SEED)
        _compiler.execute(
            "compile = function(s, n) local f, e = load(s, n, 't', {}) "
            "if f then return nil end return e end "
            "dump = function(s, n) local f = load(s, n, 't', {}) "
            "if f then return string.dump(f) end return nil end")
    return _compiler


def loadable(chunk: bytes, chunkname: bytes) -> tuple[bytes, bytes, bytes]:
    """What `run_block` and `load_library` load for a chunk: (code, chunk
    name, mode).  A block is compiled once per process and every section VM
    loads its bytecode (a new closure per load, with the VM's environment as
    its only upvalue): loading the dump costs a third of compiling the text
    again.  The dump keeps its debug information - the chunk name and every
    line - so errors read exactly as from the text.  A chunk that does not
    compile loads as text, and fails there as it always did; so does one
    past `COMPILED_CHUNK_BYTES`.  What is kept is bounded by `COMPILED_BYTES`."""
    key = (chunk, chunkname)
    with _compiled_lock:
        found = _compiled.get(key)
        if found is not None:
            _compiled.move_to_end(key)
            return found
    if len(chunk) > COMPILED_CHUNK_BYTES:
        return chunk, chunkname, b"t"
    with _compiled_lock:
        code = _compiler_runtime().globals().dump(chunk, chunkname)
        found = (chunk, chunkname, b"t") if code is None else (code, chunkname, b"b")
        global _compiled_bytes
        _compiled[key] = found
        _compiled_bytes += len(chunk) + len(found[0])
        while _compiled_bytes > COMPILED_BYTES:
            (old, _), dropped = _compiled.popitem(last=False)
            _compiled_bytes -= len(old) + len(dropped[0])
    return found


_compiled: collections.OrderedDict = collections.OrderedDict()
_compiled_bytes = 0
_compiled_lock = threading.Lock()


def compile_check(source: str, chunkname: str) -> str | None:
    """Compile a block without running it: the diagnostic, or None.

    One private runtime serves every check; compiling runs no prompt code,
    so nothing leaks between prompts.
    """
    message = _compiler_runtime().globals().compile(source.encode("utf-8"),
                                                   chunkname.encode("utf-8"))
    return None if message is None else message.decode("utf-8", "replace")
