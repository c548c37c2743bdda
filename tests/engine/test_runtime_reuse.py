"""Runs on a reused Lua runtime are byte-identical to runs on a fresh one,
whatever ran on the runtime before (kit: determinism.runtime-reuse).

A run whose prompt leaves the model side out takes an idle runtime
(`forge.lua.runtime.acquire`).  These tests run every example and every
conformance case's prompt on reused runtimes, in several orders and after
runs that try to leave something behind (a failure, the instruction
budget, garbage, the generator moved or reseeded, serials taken, metatables
set on what a section can reach, tasks left parked), and compare each
observation and trace byte for byte with the same run on a fresh runtime
(`FORGE_FRESH_RUNTIME=1`).  They also check that Lua holds no Python object
but the runtime's own slots, and that nothing of a finished run stays
reachable from the runtime (what keeps lupa's collector hazards, issues #84
and #294, away from the design).  The one thing a reused runtime cannot
hide is when Lua's collector runs, which only a weak table shows: a prompt
that names `__mode` runs on a fresh runtime, and the last test checks it.
"""

from __future__ import annotations

import gc
import json
import random
import weakref

import pytest

from forge.conformance.adapters import _reference_run
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.engine.run import Run, RunConfig, observation_json, run_prompt
from forge.harness import Harness
from forge.lua import runtime as lua_runtime
from forge.prompt import load_prompt, parse_prompt
from forge.sim.chooser import Chooser, RandomProvider
from tests.conftest import EXAMPLES, HEADER, prompt_text, section

#: Runs that try to leave something on the runtime for the next run.
POISON = {
    "error": prompt_text(section("A", "error('boom')")),
    "budget": prompt_text(section("A", "local n = 0 while true do n = n + 1 end")),
    "budget-in-pcall": prompt_text(section("A", "pcall(function() while true do end end) "
                                                "return 'x'")),
    "garbage": prompt_text(section("A", "local t = {} for i = 1, 20000 do "
                                        "t[i] = { i, tostring(i) .. 'x' } end return #t")),
    "random": prompt_text(section("A", "local a = math.random(1, 1000) math.random() "
                                       "return tostring(a)")),
    "reseed": prompt_text(section("A", "math.randomseed(42) return tostring(math.random(1, 9))")),
    "serials": prompt_text(section("A", "for i = 1, 50 do local _ = tostring({}) end "
                                        "return tostring(log) .. tostring({})")),
    "strings": prompt_text(section("A", "local s = {} for i = 1, 3000 do "
                                        "s[#s + 1] = string.rep('k', i % 40) .. i end return 'x'")),
    "metatables": prompt_text(section("A", """
        string.upper = function() return 'poisoned' end
        table.concat = nil
        math.random = function() return 4 end
        tasks.spawn = nil
        store.read = nil
        x = 'leak'
        pcall(function() getmetatable('').__index = {} end)
        pcall(setmetatable, string, { __index = function() return 'leak' end })
        var.x = { 1, 2 }
        return 'x'""")),
    "parked": prompt_text(section("A", "tasks.spawn('## W') error('leaving')"),
                          section("W", "store.write('a.md', 'x') tasks.join({})")),
    "library-fails": HEADER + "```lua shared\nlocal t = {} for i = 1, 100 do t[i] = {} end "
                     "if sys.taskid ~= '0' then error('lib', 0) end\n```\n\n"
                     + section("A", "tasks.join({ tasks.spawn('### B') }) return 'x'")
                     + section("B", "return 'y'", level=3),
}

#: What a run could notice of an earlier one, looked at directly.
PROBE = prompt_text(section("A", """
    local parts = { tostring({}), tostring(log), tostring(function() end),
                    tostring(math.random(1, 1000000)), string.upper('a'),
                    tostring(table.concat ~= nil), tostring(getmetatable('')),
                    tostring(x), tostring(var.x), type(tasks.spawn),
                    type(store.read) }
    local ok, e = pcall(tasks.status, 'nope')
    parts[#parts + 1] = tostring(e)
    local seen = {}
    for k in pairs({ b = 1, a = 2, [3] = 3, [1] = 1 }) do seen[#seen + 1] = tostring(k) end
    parts[#parts + 1] = table.concat(seen, ',')
    local id = tasks.spawn('## W')
    tasks.join({ id })
    return table.concat(parts, ' ')"""), section("W", "log(tostring({})) return 'w'"))


def _run(text: str, seed: int | None = None, max_instructions: int = 2_000_000) -> Run:
    prompt = parse_prompt(text, "t.md")
    chooser = Chooser(RandomProvider(seed)) if seed is not None else None
    return run_prompt(prompt, Harness(), chooser,
                      RunConfig(seed=seed or 0, max_instructions=max_instructions))


def _bytes(run: Run) -> tuple[str, str]:
    return observation_json(run.observation()), run.trace.lines()


@pytest.fixture
def fresh(monkeypatch):
    """Run `fn()` on fresh runtimes only."""
    def call(fn):
        monkeypatch.setenv(lua_runtime.FRESH_ENV, "1")
        try:
            return fn()
        finally:
            monkeypatch.delenv(lua_runtime.FRESH_ENV)
    return call


def test_consecutive_runs_share_one_runtime():
    """A clean run gives its runtime back and the next run takes it (kit: determinism.runtime-reuse)."""
    for text in (PROBE, *POISON.values()):
        assert ("_G" in text) or _run(text, max_instructions=200_000).lua.reusable
    first = _run(PROBE)
    second = _run(PROBE)
    assert first.lua.reusable and second.lua is first.lua
    assert _bytes(first) == _bytes(second)


def test_the_escape_hatch_gives_each_run_a_fresh_runtime(fresh):
    """FORGE_FRESH_RUNTIME=1 builds a runtime per run (kit: determinism.runtime-reuse)."""
    runs = fresh(lambda: [_run(PROBE), _run(PROBE)])
    assert not runs[0].lua.reusable and runs[0].lua is not runs[1].lua


@pytest.mark.parametrize("order", ["forward", "reversed", "shuffled"])
def test_probes_after_poison_match_fresh_runs(fresh, order):
    """Whatever ran before, a probe's observation and trace are those of a fresh runtime
    (kit: determinism.runtime-reuse)."""
    names = sorted(POISON)
    if order == "reversed":
        names.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(names)
    expected = {seed: fresh(lambda: _bytes(_run(PROBE, seed))) for seed in (None, 3)}
    poisoned = {name: fresh(lambda: _bytes(_run(POISON[name], max_instructions=200_000)))
                for name in names}
    for name in names:
        got = _bytes(_run(POISON[name], max_instructions=200_000))
        assert got == poisoned[name], name
        for seed, want in expected.items():
            assert _bytes(_run(PROBE, seed)) == want, (name, seed)


def test_every_example_matches_a_fresh_run(fresh):
    """Every example, on its canonical schedule and a random one, run twice over in a mixed
    order on reused runtimes (kit: determinism.runtime-reuse)."""
    paths = sorted(EXAMPLES.glob("*.md"))
    jobs = [(p, seed) for p in paths for seed in (None, 5)]
    expected = fresh(lambda: {job: _bytes(_example(*job)) for job in jobs})
    order = jobs + list(reversed(jobs))
    random.Random(11).shuffle(order)
    for i, job in enumerate(order):
        if i % 5 == 0:
            _run(POISON[sorted(POISON)[i % len(POISON)]], max_instructions=200_000)
        assert _bytes(_example(*job)) == expected[job], job


def _example(path, seed):
    prompt = load_prompt(str(path))
    chooser = Chooser(RandomProvider(seed)) if seed is not None else None
    return run_prompt(prompt, Harness(), chooser, RunConfig(seed=seed or 0))


def test_every_conformance_case_matches_a_fresh_run(fresh):
    """Every conformance case's prompt with its harness, in the suite's order and reversed,
    on reused runtimes (kit: determinism.runtime-reuse)."""
    cases = [c for c in load_cases(DEFAULT_CASES_DIR) if c.prompt is not None]
    assert len(cases) > 100

    def observe(case):
        text, run = _reference_run(case.prompt, case.harness, None, case.path)
        return text, (run.trace.lines() if run is not None else None)

    expected = fresh(lambda: [observe(c) for c in cases])
    for order in (range(len(cases)), reversed(range(len(cases)))):
        for i in order:
            assert observe(cases[i]) == expected[i], cases[i].id


LUA_USERDATA = """
return function()
  local seen, found, n, python_mt = {}, {}, 0, nil
  local function walk(v)
    local t = type(v)
    if t ~= 'table' and t ~= 'function' and t ~= 'userdata' and t ~= 'thread' then return end
    if seen[v] then return end
    seen[v] = true
    if t == 'userdata' and debug.getmetatable(v) == python_mt then n = n + 1; found[n] = v end
    local mt = debug.getmetatable(v)
    if mt then walk(mt) end
    if t == 'table' then
      for k, x in next, v do walk(k); walk(x) end
    elseif t == 'function' then
      local i = 1
      while true do
        local name, x = debug.getupvalue(v, i)
        if name == nil then break end
        walk(x); i = i + 1
      end
    end
  end
  local registry = debug.getregistry()
  python_mt = registry.POBJECT
  -- lupa's own objects, made with the runtime: None, eval, builtins.
  for k, v in next, registry do
    if type(k) == 'string' and type(v) == 'userdata' then seen[v] = true end
  end
  walk(registry)
  return found
end
"""


def test_lua_holds_no_python_object_but_the_slots():
    """After runs of every kind, every Python object reachable in the reused Lua state is
    one of the runtime's slots, and nothing of a finished run stays alive (kit:
    determinism.runtime-reuse)."""
    for name in sorted(POISON):
        _run(POISON[name], max_instructions=200_000)
    first = _run(PROBE)
    kept = weakref.ref(first)
    for name in sorted(POISON):
        if "budget" not in name:
            assert _run(POISON[name]).lua is first.lua, name
    runtime = first.lua
    del first
    assert _run(PROBE).lua is runtime
    gc.collect()
    assert kept() is None, "a finished run is still reachable"
    found = runtime.lua.execute(LUA_USERDATA)()
    objects = [found[i] for i in range(1, len(found) + 1)]
    assert objects, "the walk saw no slot at all"
    slot_ids = {id(s) for s in runtime._slots}
    assert all(id(o) in slot_ids for o in objects), objects
    assert all(fn is lua_runtime._unbound for fn in runtime._slot_fns + runtime._failed)
    assert all(fn is lua_runtime._unbound for fn in runtime._slot_fns)


def test_a_run_dropped_before_it_ran_releases_nothing_it_holds():
    """A run built and never executed keeps its runtime; dropping it unbinds the slots
    before Lua's state closes (kit: determinism.runtime-reuse)."""
    for _ in range(50):
        Run(parse_prompt(PROBE, "t.md"))
    gc.collect()
    assert _bytes(_run(PROBE)) == _bytes(_run(PROBE))


def test_model_side_prompts_run_on_fresh_runtimes():
    """A prompt that reaches the model side puts model handles (Python objects) into Lua,
    so it never shares a runtime (kit: determinism.runtime-reuse)."""
    run = _run(prompt_text(section("A", "return type(models)")))
    assert not run.lua.reusable


def test_a_run_that_ends_in_an_engine_bug_or_the_budget_gives_its_runtime_up(monkeypatch):
    """After an Internal or a Budget ending the runtime is discarded, not reused
    (kit: determinism.runtime-reuse; kit: errors.internal)."""
    from forge.engine.tasks import TasksAPI

    budget = _run(POISON["budget"], max_instructions=200_000)
    assert budget.observation()["error"]["kind"] == "Budget"
    assert _run(PROBE).lua is not budget.lua

    def broken(self, *args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(TasksAPI, "_note", broken)
    bug = _run(prompt_text(section("A", "pcall(tasks.note, 'x') return 'swallowed'")))
    assert bug.observation()["error"]["kind"] == "Internal"
    monkeypatch.undo()
    after = _run(PROBE)
    assert after.lua is not bug.lua
    assert all(fn is lua_runtime._unbound for fn in bug.lua._slot_fns + bug.lua._failed)


#: Weak tables show when the collector ran: the counts at three points of a
#: run that makes garbage.
WEAK = prompt_text(section("A", """
    local w = setmetatable({}, { __mode = 'k' })
    for i = 1, 200 do w[{}] = i end
    local counts, junk = {}, {}
    for round = 1, 3 do
      for i = 1, 300 do junk[i % 10] = { string.rep('y', 2500) .. i } end
      local n = 0 for _ in pairs(w) do n = n + 1 end
      counts[round] = n
      w[{}] = round
    end
    return table.concat(counts, ',')"""))


def test_a_prompt_that_names_weak_tables_runs_on_a_fresh_runtime(fresh):
    """A weak table would show collections that depend on the runs before, so such a
    prompt never shares a runtime and gives the same bytes after any run (kit:
    determinism.runtime-reuse)."""
    want = fresh(lambda: _bytes(_run(WEAK)))
    for name in sorted(POISON):
        _run(POISON[name], max_instructions=200_000)
        run = _run(WEAK)
        assert not run.lua.reusable
        assert _bytes(run) == want, name


def test_memory_bombs_end_alike_on_reused_and_fresh_runtimes(fresh):
    """Where a run meets the memory cap does not depend on the garbage its
    runtime carries from earlier runs (kit: determinism.runtime-reuse,
    kit: budget.memory): the bombs of the hostile catalogue that end on Lua
    memory give a fresh runtime's bytes on a reused one."""
    from tests.engine.test_sandbox import RUNAWAY

    names = sorted(n for n in RUNAWAY if "lua-memory" in n)
    assert names
    expected = {n: fresh(lambda: _bytes(_run(prompt_text(RUNAWAY[n][0]),
                                             max_instructions=5_000_000)))
                for n in names}
    for name in names:
        # A spawn storm that ends in the budget yet gives its runtime back
        # left it holding what moved the cap's point before the fix.
        for before in ("new runtime", "garbage", "unbounded-spawn"):
            if before == "new runtime":
                lua_runtime._idle.clear()
            elif before in POISON:
                _run(POISON[before], max_instructions=200_000)
            else:
                _run(prompt_text(RUNAWAY[before][0]), max_instructions=5_000_000)
            run = _run(prompt_text(RUNAWAY[name][0]), max_instructions=5_000_000)
            assert run.lua.reusable, (name, before)
            assert _bytes(run) == expected[name], (name, before)


#: Bulk-call bombs that log as they go: a charge landing at another call
#: would end the run after another number of logs.
BULK_BOMBS = {
    "rep": "for i = 1, 1e9 do log('r' .. i) local r = string.rep('abcdefgh', 2^19 + i) end",
    "concat": "local t = {} for i = 1, 300 do t[i] = string.rep('x', 8000 + i) end "
              "for i = 1, 1e9 do log('c' .. i) local s = table.concat(t, ',') end",
    "insert": "local t = { string.byte(string.rep('x', 200000), 1, -1) } "
              "for i = 1, 1e9 do log('i' .. i) table.insert(t, 1, i) end",
    "gsub": "local r = string.rep('y', 5000) for i = 1, 1e9 do log('g' .. i) "
            "local s = ('x'):rep(200 + i % 7):gsub('', r) end",
}


def test_bulk_call_bombs_end_alike_on_reused_and_fresh_runtimes(fresh):
    """The charges of size-proportional library calls depend on their arguments only, so
    a bomb that logs ends after the same log on a fresh, a reused and a storm-worn runtime
    (kit: determinism.runtime-reuse, kit: budget.bulk-calls)."""
    texts = {n: prompt_text(section("A", code)) for n, code in BULK_BOMBS.items()}
    expected = {n: fresh(lambda: _bytes(_run(t, max_instructions=3_000_000)))
                for n, t in texts.items()}
    for name, text in texts.items():
        observation = json.loads(expected[name][0])
        assert observation["error"]["kind"] == "Budget" and len(observation["logs"]) > 3, name
        for before in ("new runtime", "garbage", "strings", "unbounded-spawn"):
            if before == "new runtime":
                lua_runtime._idle.clear()
            elif before in POISON:
                _run(POISON[before], max_instructions=200_000)
            else:
                from tests.engine.test_sandbox import RUNAWAY
                _run(prompt_text(RUNAWAY[before][0]), max_instructions=5_000_000)
            run = _run(text, max_instructions=3_000_000)
            assert run.lua.reusable, (name, before)
            assert _bytes(run) == expected[name], (name, before)
