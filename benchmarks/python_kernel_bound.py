"""What a kernel written in Python could cost: the least the engine's design allows.

    python3 benchmarks/python_kernel_bound.py [--seconds S] [--json] [--account]

`lua_kernel_bound.py` asks what a kernel in Lua would cost; this script asks
the question the engine's own design poses, since the reference engine keeps
its kernel in Python (issue 32's decision).  `PythonKernel` below is the
happy path of one prompt, `examples/two-tasks.md`, written in plain Python
on lupa, as the engine is: each section's environment and coroutine made in
Lua, the ready list in Python with a chooser asked at every step, the
spawns as a Python function Lua calls, the join as a yield the kernel
answers, the trace's records emitted into the engine's own `Trace` (so
their bytes and hash are made as the floor's and the engine's are), the
events and the task statuses as the observation shows them - and nothing
else: no budgets, no admission, no errors, no store, no variation sites, no
letting go of the graph.  It is not an engine and nothing imports it.

Before measuring, the script checks that the observation it builds equals
the engine's for the same prompt (and exits 1 if the engine's output for
two-tasks has changed, rather than measure different work).  It then
measures, interleaved on the CPU clock (`timing.interleaved`): the
fresh-runtime floor of `run.py`, this kernel on one runtime kept across
runs (as the engine keeps one), the Lua kernel, the engine's run with its
observation and `forge.api.run_prompt` on the prompt's path, each as a
ratio to the floor.  An engine in Python that does everything the spec asks
costs more than this kernel: its figure is a floor under the engine's.

`--account` measures no time: it counts the Python bytecode instructions
one call executes (`sys.settrace` with opcode events, after warm-up calls),
for this kernel and for `forge.api.run_prompt`, the latter by module - a
count no machine's load moves, which says where the engine's Python goes
beyond the happy path's.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lua_kernel_bound import LuaKernel  # noqa: E402
from run import Floor, _runtime  # noqa: E402
from timing import bound_parser, interleaved  # noqa: E402
from forge.engine.run import run_prompt  # noqa: E402
from forge.prompt import parse_prompt  # noqa: E402
from forge.sim.trace import Trace  # noqa: E402

#: The Lua side: a section's chunk loaded in an environment of its own that
#: reads `tasks` from the chain's table (run in a coroutine of `run`), a chain's `tasks` table (its
#: `spawn` the kernel's Python function, its `join` a yield to the kernel).
LUA_SIDE = b"""
local setmetatable, load, assert, pcall, yield = setmetatable, load, assert, pcall, coroutine.yield
local G = _G
local function enter(code, name, api)
  return assert(load(code, name, 'b', setmetatable({tasks = api}, {__index = G})))
end
local function run(f) return pcall(f) end
local function api(spawn)
  return {spawn = spawn, join = function(handles) return yield('tasks.join', handles) end}
end
local function handle(id) return {id = id} end
return enter, api, handle, run
"""

EXECUTION = "run-1"


class _Chain:
    __slots__ = ("id", "kind", "target", "seq", "spawned", "api", "co", "section", "value",
                 "members", "left", "result")

    def __init__(self, id: str, kind: str, target: str | None) -> None:
        self.id, self.kind, self.target = id, kind, target
        self.seq = self.spawned = 0
        self.co = self.section = self.value = self.members = self.result = None
        self.left = 0


class PythonKernel:
    """The happy path of two-tasks in Python, on one runtime kept across runs."""

    def __init__(self, prompt) -> None:
        self.lua = _runtime()
        self.enter_lua, self.api_lua, self.handle_lua, run = self.lua.execute(LUA_SIDE)
        self.coroutine = run.coroutine
        dump = self.lua.eval("function(s, n) return string.dump(assert(load(s, n))) end")
        self.sections = {}
        for section in prompt.sections:
            block = section.blocks[0]
            name = block.location.encode("utf-8")
            source = ("\n" * (block.first_line - 1) + block.source).encode("utf-8")
            self.sections[section.name] = (dump(source, name), name)
        self.title = prompt.title
        self.name = prompt.name

    def observation(self) -> dict:
        trace, events, ready, done, waiter, order = Trace(), [], [], {}, {}, []
        emit = trace.emit
        lua = self.lua

        def event(c: _Chain, kind: str, section: str | None = None, **fields) -> None:
            events.append({"kind": kind, "execution": EXECUTION, "section": section or c.section,
                           "provenance": {"task": c.id, "seq": c.seq}, **fields})
            c.seq += 1

        def enter(c: _Chain, name: str) -> None:
            c.co = self.coroutine(self.enter_lua(*self.sections[name], c.api))
            c.section = name
            for kind in ("section_started", "lua_shared_load_started",
                         "lua_shared_load_succeeded", "lua_chunk_started"):
                event(c, kind)

        def chain(id: str, kind: str, target: str | None) -> _Chain:
            c = _Chain(id, kind, target)

            def spawn(heading: bytes):
                name = heading.decode("utf-8")[3:]
                tid = f"{c.id}.{c.spawned}"
                c.spawned += 1
                t = chain(tid, "task", name)
                order.append(t)
                emit(0, "spawn", owner=c.id, task=tid, target=name)
                event(c, "task_started", task=tid, target=name, origin="author", input=None,
                      item=None, index=None, var=[])
                emit(0, "admit", task=tid)
                ready.append(t)
                return self.handle_lua(tid.encode("utf-8"))

            c.api = self.api_lua(spawn)
            return c

        root = chain("0", "root", None)
        emit(0, "run_start", prompt=self.name, args="")
        event(root, "run_started", self.title)
        enter(root, "Main")
        ready.append(root)
        while ready:
            c = ready.pop(_first(len(ready)))
            emit(0, "step", chain=c.id, kind=c.kind)
            if c.co is None:
                enter(c, c.target)
            value, c.value = c.value, None
            got = c.co.send(value)
            first, second = got[0], got[1]
            if first == b"tasks.join":
                emit(0, "call", chain=c.id, op="tasks.join")
                members = [h[b"id"].decode("utf-8") for h in second.values()]
                for tid in members:
                    waiter[tid] = c
                emit(0, "wait", chain=c.id, call="tasks.join", members=members, timeout=None)
                c.members, c.left = members, len(members)
                continue
            for kind in ("lua_chunk_succeeded", "lua_teardown_started",
                         "lua_teardown_succeeded", "section_finished"):
                event(c, kind)
            c.result = second
            done[c.id] = c
            if c.kind == "root":
                event(c, "run_succeeded", self.title)
                emit(0, "run_end", outcome="ok", error=None)
                # Each chain's `tasks` table holds its `spawn`, which holds
                # the chain: a cycle through Lua that neither collector sees
                # whole, cut here as the engine's `Run._let_go` cuts its own.
                for t in (root, *order):
                    t.api = t.co = None
                return {
                    "outcome": "ok", "result": second.decode("utf-8"), "error": None,
                    "logs": [], "events": events,
                    "tasks": {t.id: {"target": t.target, "origin": "author", "state": "done",
                                     "turns": 0, "tasks": [], "depth": 1, "ok": True}
                              for t in order},
                    "messages": {}, "rounds": [], "effects": [], "store": {},
                    "virtual_time": 0.0, "trace_sha256": trace.sha256()}
            event(c, "task_succeeded", task=c.id)
            emit(0, "task_end", task=c.id, end="task_succeeded")
            w = waiter[c.id]
            w.left -= 1
            if w.left == 0:
                for tid in w.members:
                    emit(0, "deliver", chain=w.id, task=tid)
                w.value = lua.table_from([lua.table_from({b"result": done[tid].result})
                                          for tid in w.members])
                ready.append(w)
        raise AssertionError("the ready list ran dry before the root chain ended")


def _first(n: int) -> int:
    """The canonical schedule's choice: the chain that became ready first."""
    return 0


def opcodes(call, warm: int = 5) -> collections.Counter:
    """The Python bytecode instructions one `call()` executes, by the file
    of the code that executes them (paths under the repository relative)."""
    for _ in range(warm):
        call()
    counts: collections.Counter = collections.Counter()
    root = f"{ROOT}{os.sep}"

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[frame.f_code.co_filename.removeprefix(root)] += 1
        return trace

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return counts


def account(bound: PythonKernel, path: pathlib.Path) -> dict:
    import forge.api as api

    engine = opcodes(lambda: api.run_prompt(str(path)))
    return {"python_kernel": sum(opcodes(bound.observation).values()),
            "api_run_prompt": sum(engine.values()),
            "api_run_prompt_by_file": dict(engine.most_common())}


def main() -> int:
    import forge.api as api

    parser = bound_parser(__doc__)
    parser.add_argument("--account", action="store_true",
                        help="count the Python instructions a call executes instead of timing")
    args = parser.parse_args()
    path = ROOT / "examples" / "two-tasks.md"
    two = parse_prompt(path.read_text(), "two-tasks.md")
    bound, lua_bound = PythonKernel(two), LuaKernel(two)
    engine = run_prompt(two).observation()
    if bound.observation() != engine or lua_bound.observation() != engine:
        print("python_kernel_bound: the engine's observation of examples/two-tasks.md no longer "
              "equals the kernels', so they would not measure the same work; bring them in "
              "line with the engine first", file=sys.stderr)
        return 1
    if args.account:
        counted = account(bound, path)
        if args.json:
            print(json.dumps(counted, indent=2))
            return 0
        print(f"Python instructions a call executes: kernel in Python {counted['python_kernel']:,}, "
              f"api.run_prompt {counted['api_run_prompt']:,}, of which:")
        for name, n in counted["api_run_prompt_by_file"].items():
            print(f"  {n:7,}  {n / counted['api_run_prompt']:6.1%}  {name}")
        return 0
    floor = Floor(two)
    per_call = interleaved({
        "fresh_floor": floor.fresh,
        "python_kernel": bound.observation,
        "lua_kernel": lua_bound.observation,
        "engine": lambda: run_prompt(two).observation(),
        "api_run_prompt": lambda: api.run_prompt(str(path)),
    }, args.seconds)
    ratios = {name: {stat: per_call[name][stat] / per_call["fresh_floor"][stat]
                     for stat in ("min", "median")}
              for name in per_call if name != "fresh_floor"}
    if args.json:
        print(json.dumps({"per_call_s": per_call, "vs_fresh_floor": ratios}, indent=2))
        return 0
    labels = {"fresh_floor": "fresh-runtime floor", "python_kernel": "kernel in Python",
              "lua_kernel": "kernel in Lua", "engine": "the engine",
              "api_run_prompt": "api.run_prompt"}
    for name, label in labels.items():
        row = per_call[name]
        ratio = ("" if name == "fresh_floor" else
                 f"  {ratios[name]['min']:.2f}x / {ratios[name]['median']:.2f}x the floor")
        print(f"{label:20} {row['min'] * 1e6:7.1f} / {row['median'] * 1e6:7.1f} µs "
              f"(min / median){ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
