"""lupa's two collector hazards, reproduced, next to the engine's reuse of a
runtime that stays clear of them.

    python3 benchmarks/lupa_hazards.py [--runs N]

Each part runs in a subprocess of its own, since the first may kill it:

- `issue-84`: a Python function called from Lua returns a Python object that
  holds a Lua function; when Lua's collector frees the object, the process
  crashes (lupa issue #84; with lupa 2.8 and Lua 5.5 a segmentation fault
  within a few dozen iterations).
- `issue-294`: in Lua 5.5 a Python object passed into Lua again and again can
  come back as another live Python object (lupa issue #294).
- `engine-reuse`: N runs of the examples and of prompts that fail, hit the
  budget and leave garbage, on reused runtimes, with Python's collector
  forced between them and runs built and dropped without running.  A
  reused runtime hands Lua no Python function of a run, and the model
  handles it hands Lua hold plain data and live as long as the runtime
  (`forge.lua.runtime`), so neither hazard has anything to act on; the part
  checks every observation against the first of its prompt and exits 0.

The first two are expected to report the hazard (`crashed`, `mixed up`):
that is lupa's behaviour, which the engine's design avoids.  Should lupa
fix them, they report `no hazard` and nothing else changes.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

ISSUE_84 = """
import lupa.lua55 as lua55
class Pending:
    def __init__(self, callback):
        self.callback = callback
lua = lua55.LuaRuntime()
lua.globals().make = Pending
run = lua.eval("function() make(function() end) end")
for i in range(100000):
    thread = run.coroutine()
    try:
        thread.send(None)
    except StopIteration:
        pass
print("no hazard")
"""

ISSUE_294 = """
import lupa.lua55 as lua55
class Entity:
    pass
runtime = lua55.LuaRuntime()
echo = runtime.eval("function(entity, event) return entity end")
entities = [Entity(), Entity(), Entity()]
for i in range(10000):
    if echo(entities[i % 3], runtime.table(name="update")) is not entities[i % 3]:
        print(f"mixed up: another Python object came back at call {i}")
        break
else:
    print("no hazard")
"""

ENGINE = """
import gc, pathlib, sys
sys.path.insert(0, {root!r})
from forge.engine.run import Run, RunConfig, observation_json, run_prompt
from forge.prompt import load_prompt, parse_prompt
HEADER = "---\\nname: t\\ndescription: t\\npromptforge: 0\\n---\\n\\n# T\\n\\n## A\\n\\n```lua\\n"
prompts = [load_prompt(str(p)) for p in sorted(pathlib.Path({root!r}, "examples").glob("*.md"))]
prompts += [parse_prompt(HEADER + body + "\\n```\\n", "t.md") for body in (
    "error('boom')", "while true do end",
    "local t = {{}} for i = 1, 5000 do t[i] = {{ tostring({{}}) }} end return #t",
    "tasks.spawn('## A') error('leaving')")]
first = {{}}
for i in range({runs}):
    prompt = prompts[i % len(prompts)]
    obs = observation_json(run_prompt(prompt, config=RunConfig(max_instructions=200_000)).observation())
    assert first.setdefault(i % len(prompts), obs) == obs, prompt.name
    if i % 7 == 0:
        Run(prompt)
    if i % 13 == 0:
        gc.collect()
print(f"no hazard: {runs} runs, every observation the same as its prompt's first")
"""


def part(name: str, code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    if done.returncode < 0:
        return f"{name:14} crashed (signal {-done.returncode})"
    if done.returncode != 0:
        return f"{name:14} failed: {done.stderr.strip().splitlines()[-1]}"
    return f"{name:14} {done.stdout.strip()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3000, help="engine runs in the last part")
    opts = parser.parse_args()
    print(part("issue-84", ISSUE_84))
    print(part("issue-294", ISSUE_294))
    line = part("engine-reuse", ENGINE.format(root=str(ROOT), runs=opts.runs))
    print(line)
    return 0 if "no hazard" in line else 1


if __name__ == "__main__":
    sys.exit(main())
