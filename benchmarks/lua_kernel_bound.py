"""What a kernel written in Lua could cost: a bound for the engine's design.

    python3 benchmarks/lua_kernel_bound.py [--seconds S] [--json]

The engine keeps its kernel, walk and task bookkeeping in Python and hands
Lua only the prompt's blocks.  This script answers how much of a run's cost
that choice is.  `KERNEL` below is the happy path of one prompt,
`examples/two-tasks.md`, written in Lua: the sections' environments and
coroutines, the ready list with a Python chooser asked at every step, the
spawns, the join and its deliveries, the trace lines and the events - and
nothing else (no budgets, no errors, no other calls).  It is not an engine
and nothing imports it.  Before measuring, the script checks that the
observation it builds, trace hash included, equals the engine's for the
same prompt; if the engine's output for two-tasks changes, the script says
so and exits 1 rather than measure different work.

It then measures, interleaved on the CPU clock (`timing.interleaved`): the
fresh-runtime floor of `run.py`, this Lua kernel on one runtime kept across
runs (as the engine keeps one), and the engine's own run, and prints each
as a ratio to the floor.  A kernel in Lua that also did what this one
leaves out would cost more than this figure and less than the engine.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from run import Floor, _runtime  # noqa: E402
from timing import bound_parser, interleaved  # noqa: E402
from forge.engine.run import run_prompt  # noqa: E402
from forge.prompt import parse_prompt  # noqa: E402

#: Called with (sections, choose, title) per run: `sections` maps a section
#: name to its block's bytecode and chunk name, `choose(n)` picks one of n
#: ready chains.  Returns the trace's lines, the events and the tasks as
#: JSON texts, and the result.  Trace records are written with sorted keys,
#: as `forge.sim.trace.canonical_json` writes them.
KERNEL = rb"""
local load, setmetatable, create, resume, yield = load, setmetatable, coroutine.create, coroutine.resume, coroutine.yield
local concat, format, remove, ipairs = table.concat, string.format, table.remove, ipairs
local G = _G
return function(sections, choose, title)
  local lines, n = {}, 0
  local function I() n = n + 1; return n - 1 end
  local function line(fmt, ...) lines[#lines + 1] = format(fmt, ...) end
  local events = {}
  local function event(c, kind, extra, section)
    events[#events + 1] = format(
      '{"execution":"run-1","kind":"%s","provenance":{"seq":%d,"task":"%s"},"section":"%s"%s}',
      kind, c.seq, c.id, section or c.section, extra or '')
    c.seq = c.seq + 1
  end
  local ready, done, waiter, order = {}, {}, {}, {}
  local function make_ready(c, v) c.value = v; ready[#ready + 1] = c end
  local function enter(c, name)
    local env = setmetatable({tasks = c.api}, {__index = G})
    local f = assert(load(sections[name][1], sections[name][2], 'b', env))
    c.co = create(function() return pcall(f) end)
    c.section = name
    event(c, 'section_started'); event(c, 'lua_shared_load_started')
    event(c, 'lua_shared_load_succeeded'); event(c, 'lua_chunk_started')
  end
  local function chain(id, kind, target)
    local c = {id = id, kind = kind, seq = 0, spawned = 0, target = target}
    c.api = {
      spawn = function(heading)
        local name = heading:sub(4)
        local tid = c.id .. '.' .. c.spawned
        c.spawned = c.spawned + 1
        local t = chain(tid, 'task', name)
        order[#order + 1] = t
        line('{"i":%d,"owner":"%s","t":0,"target":"%s","task":"%s","what":"spawn"}', I(), c.id, name, tid)
        event(c, 'task_started', format(
          ',"index":null,"input":null,"item":null,"origin":"author","target":"%s","task":"%s","var":[]', name, tid))
        line('{"i":%d,"t":0,"task":"%s","what":"admit"}', I(), tid)
        make_ready(t)
        return {id = tid}
      end,
      join = function(handles) return yield('tasks.join', handles) end,
    }
    return c
  end
  local root = chain('0', 'root')
  line('{"args":"","i":%d,"prompt":"two-tasks","t":0,"what":"run_start"}', I())
  event(root, 'run_started', nil, title)
  enter(root, 'Main')
  make_ready(root)
  while #ready > 0 do
    local c = remove(ready, choose(#ready) + 1)
    line('{"chain":"%s","i":%d,"kind":"%s","t":0,"what":"step"}', c.id, I(), c.kind)
    if not c.co then enter(c, c.target) end
    local _, a, b = resume(c.co, c.value)
    if a == 'tasks.join' then
      line('{"chain":"%s","i":%d,"op":"tasks.join","t":0,"what":"call"}', c.id, I())
      local ids = {}
      for k, h in ipairs(b) do ids[k] = '"' .. h.id .. '"'; waiter[h.id] = c end
      line('{"call":"tasks.join","chain":"%s","i":%d,"members":[%s],"t":0,"timeout":null,"what":"wait"}',
           c.id, I(), concat(ids, ','))
      c.members, c.left = b, #b
    else
      event(c, 'lua_chunk_succeeded'); event(c, 'lua_teardown_started')
      event(c, 'lua_teardown_succeeded'); event(c, 'section_finished')
      c.result = b
      done[c.id] = c
      if c.kind == 'root' then
        event(c, 'run_succeeded', nil, title)
        line('{"error":null,"i":%d,"outcome":"ok","t":0,"what":"run_end"}', I())
        local tasks = {}
        for k, t in ipairs(order) do
          tasks[k] = format('"%s":{"depth":1,"ok":true,"origin":"author","state":"done",'
                            .. '"target":"%s","tasks":[],"turns":0}', t.id, t.target)
        end
        return concat(lines, '\n') .. '\n', '[' .. concat(events, ',') .. ']',
               '{' .. concat(tasks, ',') .. '}', b
      end
      event(c, 'task_succeeded', format(',"task":"%s"', c.id))
      line('{"end":"task_succeeded","i":%d,"t":0,"task":"%s","what":"task_end"}', I(), c.id)
      local w = waiter[c.id]
      w.left = w.left - 1
      if w.left == 0 then
        local results = {}
        for k, h in ipairs(w.members) do
          line('{"chain":"%s","i":%d,"t":0,"task":"%s","what":"deliver"}', w.id, I(), h.id)
          results[k] = {result = done[h.id].result}
        end
        make_ready(w, results)
      end
    end
  end
end
"""


class LuaKernel:
    """`KERNEL` on one runtime kept across runs, for one prompt."""

    def __init__(self, prompt) -> None:
        self.lua = _runtime()
        self.kernel = self.lua.execute(KERNEL)
        dump = self.lua.eval("function(s, n) return string.dump(assert(load(s, n))) end")
        self.sections = self.lua.table()
        for section in prompt.sections:
            block = section.blocks[0]
            name = block.location.encode("utf-8")
            source = ("\n" * (block.first_line - 1) + block.source).encode("utf-8")
            self.sections[section.name.encode("utf-8")] = self.lua.table(dump(source, name), name)
        self.title = prompt.title.encode("utf-8")

    def observation(self) -> dict:
        lines, events, tasks, result = self.kernel(self.sections, _first, self.title)
        return {"outcome": "ok", "result": result.decode("utf-8"), "error": None, "logs": [],
                "events": json.loads(events), "tasks": json.loads(tasks), "messages": {},
                "rounds": [], "effects": [], "store": {}, "virtual_time": 0.0,
                "trace_sha256": hashlib.sha256(lines).hexdigest()}


def _first(n: int) -> int:
    """The canonical schedule's choice: the chain that became ready first."""
    return 0


def main() -> int:
    parser = bound_parser(__doc__)
    args = parser.parse_args()
    two = parse_prompt((ROOT / "examples" / "two-tasks.md").read_text(), "two-tasks.md")
    bound = LuaKernel(two)
    engine = run_prompt(two).observation()
    if bound.observation() != engine:
        print("lua_kernel_bound: the engine's observation of examples/two-tasks.md no longer "
              "equals the Lua kernel's, so they would not measure the same work; bring KERNEL "
              "in line with the engine first", file=sys.stderr)
        return 1
    floor = Floor(two)
    per_call = interleaved({
        "fresh_floor": floor.fresh,
        "lua_kernel": bound.observation,
        "engine": lambda: run_prompt(two).observation(),
    }, args.seconds)
    ratios = {name: {stat: per_call[name][stat] / per_call["fresh_floor"][stat]
                     for stat in ("min", "median")}
              for name in ("lua_kernel", "engine")}
    if args.json:
        print(json.dumps({"per_call_s": per_call, "vs_fresh_floor": ratios}, indent=2))
        return 0
    for name, label in (("fresh_floor", "fresh-runtime floor"), ("lua_kernel", "kernel in Lua"),
                        ("engine", "the engine")):
        row = per_call[name]
        ratio = ("" if name == "fresh_floor" else
                 f"  {ratios[name]['min']:.2f}x / {ratios[name]['median']:.2f}x the floor")
        print(f"{label:20} {row['min'] * 1e6:7.1f} / {row['median'] * 1e6:7.1f} µs (min / median){ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
