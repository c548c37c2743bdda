"""Runs on a reused Lua runtime are byte-identical to runs on a fresh one,
whatever ran on the runtime before (kit: determinism.runtime-reuse).

A run takes an idle runtime (`forge.lua.runtime.acquire`), the model side
included.  These tests run every example and every conformance case's
prompt on reused runtimes, in several orders and after runs that try to
leave something behind (a failure, the instruction budget, garbage, the
generator moved or reseeded, serials taken, metatables set on what a
section can reach, tasks left parked, model handles and their errors, local
tool handlers), and compare each observation and trace byte for byte with
the same run on a fresh runtime (`FORGE_FRESH_RUNTIME=1`).  They also check
that Lua holds no Python object but the runtime's own slots once a run is
over, that nothing of a finished run stays reachable from the runtime (what
keeps lupa's collector hazards, issues #84 and #294, away from the design),
and that a Lua value a host function kept from inside a block's coroutine
outlives that coroutine safely.  The one thing a reused runtime cannot hide
is when Lua's collector runs, which only a weak table shows: a prompt that
names `__mode` runs on a fresh runtime, and the last test checks it.
"""

from __future__ import annotations

import gc
import json
import pathlib
import random
import subprocess
import sys
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
from tests.engine.test_models import R, calls, header, sec
from tests.engine.test_models import run as model_run
from tests.engine.test_models import text as reply_text

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


def test_a_reused_runtime_lets_the_last_runs_threads_go_without_python(monkeypatch):
    """The CPU-time backstop's thread registrations: a run on a reused
    runtime registers each thread it runs once, and its start lets the last
    run's threads go in Lua alone, with no call into Python per thread
    (`begin` cleared the backstop's set just before).  The runs stay
    byte-identical (kit: determinism.runtime-reuse)."""
    from forge.lua import backstop

    seen: list[bool] = []
    register = backstop.Threads.register

    def recording(self, shown, alive):
        seen.append(alive)
        register(self, shown, alive)
    monkeypatch.setattr(backstop.Threads, "register", recording)
    monkeypatch.setattr(lua_runtime, "_idle", [])      # a runtime made with the recorder
    first = run_prompt(parse_prompt((EXAMPLES / "two-tasks.md").read_text(), "two-tasks.md"))
    seen.clear()
    second = run_prompt(parse_prompt((EXAMPLES / "two-tasks.md").read_text(), "two-tasks.md"))
    assert second.lua is first.lua
    assert seen and all(seen), f"registrations (True) and letting go (False): {seen}"
    assert observation_json(first.observation()) == observation_json(second.observation())


def test_a_reused_runtime_carries_little_garbage(monkeypatch):
    """`begin` leaves a small run's garbage for later and collects it once it
    reaches `GARBAGE_ALLOWANCE`: a full collection before every run cost more
    than a small run's Lua work (kit: determinism.runtime-reuse)."""
    starts = []
    begin = lua_runtime.LuaRuntime.begin

    def recording(self, *args):
        begin(self, *args)
        starts.append(self.lua.get_memory_used())
    monkeypatch.setattr(lua_runtime.LuaRuntime, "begin", recording)
    _run(PROBE)
    runtime = _run(PROBE).lua
    starts.clear()
    for _ in range(200):
        assert _run(PROBE).lua is runtime
    collected = [i for i in range(1, len(starts)) if starts[i] < starts[i - 1]]
    assert 0 < len(collected) < 40, "the garbage was collected before almost every run"
    for first, end in zip(collected, [*collected[1:], len(starts)]):
        live = starts[first]            # what the collection left
        assert max(starts[first:end]) <= live + lua_runtime.GARBAGE_ALLOWANCE


GROWS = prompt_text(section("A", """
    big = {}
    for i = 1, 400000 do big[i] = i end
    local t = tasks.spawn('## B')
    tasks.join({ t })
    return tostring(#big)
    """) + section("B", "return 'b'"))


def _pause(runtime) -> int:
    return runtime.lua.globals().collectgarbage(b"param", b"pause")


def test_a_reused_runtime_collects_rarely_only_while_its_heap_is_small():
    """A small run on a reused runtime leaves its garbage for `begin` (the
    collector's pause raised), and a run whose heap passes `SMALL_HEAP` goes
    on with Lua's own pause, as on a fresh runtime; the next run raises it
    again (kit: determinism.runtime-reuse)."""
    _run(PROBE)
    runtime = _run(PROBE).lua
    default = runtime._default_pause
    assert default < lua_runtime.SMALL_HEAP_PAUSE
    assert _pause(runtime) == lua_runtime.SMALL_HEAP_PAUSE
    grown = _run(GROWS, max_instructions=20_000_000)
    assert grown.result == "400000"
    assert grown.lua is runtime and _pause(runtime) == default
    assert _run(PROBE).lua is runtime and _pause(runtime) == lua_runtime.SMALL_HEAP_PAUSE


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

    runs = []

    def observe(case):
        text, run = _reference_run(case.prompt, case.harness, None, case.path)
        runs.append(run)
        return text, (run.trace.lines() if run is not None else None)

    expected = fresh(lambda: [observe(c) for c in cases])
    assert not any(run.lua.reusable for run in runs if run is not None)
    for order in (range(len(cases)), reversed(range(len(cases)))):
        runs.clear()
        for i in order:
            assert observe(cases[i]) == expected[i], cases[i].id
        # The model side's runs really ran on reused runtimes: each took the
        # runtime the run before it gave back.
        model_side = [(a, b) for a, b in zip(runs, runs[1:]) if a is not None and b is not None
                      and b.models.L is not None and a.lua.clean()]
        assert len(model_side) > 50
        assert all(b.lua is a.lua for a, b in model_side)


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
    """After runs of every kind, the model side's included, every Python object reachable
    in the reused Lua state is one of the runtime's slots, and nothing of a finished run
    stays alive: not through the errors its handles raised, nor through lupa's copy of
    the last one (kit: determinism.runtime-reuse)."""
    for name in sorted(POISON):
        _run(POISON[name], max_instructions=200_000)
    first = _run(PROBE)
    kept = weakref.ref(first)
    for name in sorted(POISON):
        if "budget" not in name:
            assert _run(POISON[name]).lua is first.lua, name
    model = _model("handle-errors")
    assert model.lua is first.lua and len(model.lua.keeper.kept) > 200
    kept_model = weakref.ref(model)
    assert _model("local-tools").lua is first.lua
    runtime = first.lua
    del first, model
    assert _run(PROBE).lua is runtime
    gc.collect()
    assert kept() is None, "a finished run is still reachable"
    assert kept_model() is None, "a finished model-side run is still reachable"
    found = runtime.lua.execute(LUA_USERDATA)()
    objects = [found[i] for i in range(1, len(found) + 1)]
    assert objects, "the walk saw no slot at all"
    slot_ids = {id(slot) for _, slot in runtime._slots} | {id(runtime.thread_registry)}
    assert all(id(o) in slot_ids for o in objects), objects
    assert runtime._bound == [None] and runtime._failed == [lua_runtime._unbound]


def test_a_run_dropped_before_it_ran_releases_nothing_it_holds():
    """A run built and never executed keeps its runtime; dropping it unbinds the slots
    before Lua's state closes (kit: determinism.runtime-reuse)."""
    for _ in range(50):
        Run(parse_prompt(PROBE, "t.md"))
    gc.collect()
    assert _bytes(_run(PROBE)) == _bytes(_run(PROBE))


def test_a_slot_answers_for_the_bound_run_and_keeps_its_one_route():
    """A slot calls its route with the run bound to the runtime, answers the
    stub's error once the run is unbound, and a name keeps the route it was
    made with (kit: determinism.runtime-reuse)."""
    runtime = lua_runtime.LuaRuntime(reusable=True)

    def route(run, *args):
        return (True, run + b":" + b",".join(args))

    face = runtime.host(b"probe", route)
    call = runtime.lua.execute("return function(f, ...) return pcall(f, ...) end")
    runtime.bind(b"run-a")
    assert call(face, b"x", b"y") == (True, b"run-a:x,y")
    runtime.bind(b"run-b")
    assert call(face, b"z") == (True, b"run-b:z")
    runtime.unbind()
    ok, error = call(face)
    assert not ok and b"no run is bound" in bytes(error if isinstance(error, bytes) else b"")
    assert runtime.host(b"probe", route) is face
    with pytest.raises(ValueError, match="already calls another route"):
        runtime.host(b"probe", lambda run: (True,))


def test_a_run_on_a_fresh_runtime_leaves_its_slots_bound_to_nothing(fresh):
    """A fresh runtime's slots let go of the run when it ends, as a reused
    one's do, so the run and its runtime hold no cycle through Lua
    (kit: determinism.runtime-reuse)."""
    run = fresh(lambda: _run(PROBE))
    assert not run.lua.reusable
    assert run.lua._bound == [None] and run.lua._failed == [lua_runtime._unbound]
    assert run.seed_independent() in (True, False)       # still reads Lua after its end


#: Model-side runs that try to leave something on the runtime: handles and
#: the errors they raise (some raised inside a host call, through a
#: metamethod), local tool handlers kept past their block, tools.calls views.
#: Each is (prompt, model script rounds).
MODEL_POISON = {
    "handle-errors": (header() + sec("Plan", """
        keep = {}
        for i = 1, 40 do
          local ok, e = pcall(function() return writer['nope' .. i] end)
          local ok2, e2 = pcall(function() return e.kind end)
          local ok3, e3 = pcall(function() return e() end)
          local ok4, e4 = pcall(function() writer.name = i end)
          local ok5, e5 = pcall(function() return writer() end)
          keep[i] = { e, e2, e3, e4, e5, models.get('writer'), writer.capabilities }
        end
        local sly = setmetatable({}, { __index = function() return writer.nope end })
        pcall(tools.add, sly)
        error(keep[1][1])"""), []),
    "local-tools": (header() + sec("Plan", """
        tools.add_local('noop', 'Nothing', {}, function() return 'ok ' .. tools.calls.noop end)
        local msgs = messages.new():user('go')
        models.loop(msgs)
        var.n = #msgs""") + sec("Churn", """
        local t = {} for i = 1, 20000 do t[i] = { tostring(i) } end
        local ok, e = pcall(function() return tools.calls.nothing end)
        return tostring(e) .. var.n"""),
        [R("Plan", calls(("noop", {}))), R("Plan", reply_text("done"))]),
    "budget": (header() + sec("Plan", """
        tools.add_local('spin', 'Spin', {}, function() while true do end end)
        models.loop(messages.new():user('go'))"""), [R("Plan", calls(("spin", {})))]),
}

#: What a model-side run could notice of an earlier one.
MODEL_PROBE = (header() + sec("Plan", """
    local parts = { type(writer), tostring(writer), tostring(models.get('writer').name),
                    tostring({}), tostring(math.random(1, 1000000)), tostring(keep) }
    local ok, e = pcall(function() return writer.nope end)
    parts[#parts + 1] = type(e) .. ' ' .. tostring(e) .. ' ' .. tostring(getmetatable(e))
    ok, e = pcall(function() return e.kind end)
    parts[#parts + 1] = tostring(e)
    tools.add_local('echo', 'Echo', { text = 'string' }, function(a) return a.text end)
    local msgs = messages.new():user('hi')
    models.loop(msgs)
    parts[#parts + 1] = msgs[#msgs].content .. ' ' .. tools.calls.echo
    parts[#parts + 1] = models.infer('again')
    return table.concat(parts, ' | ')"""),
    [R("Plan", calls(("echo", {"text": "x"}))), R("Plan", reply_text("looped")),
     R("Plan", reply_text("inferred"))])


def _model(name_or_probe, seed=None):
    text, rounds = MODEL_POISON[name_or_probe] if name_or_probe in MODEL_POISON else MODEL_PROBE
    return model_run(text, rounds, seed=seed)


def test_model_side_runs_share_a_runtime_and_match_fresh_ones(fresh):
    """A prompt that reaches the model side takes the runtime the run before gave
    back, and its bytes are a fresh runtime's whatever ran before (kit:
    determinism.runtime-reuse)."""
    want = {seed: fresh(lambda: _bytes(_model("probe", seed))) for seed in (None, 4)}
    poisoned = {name: fresh(lambda: _bytes(_model(name))) for name in MODEL_POISON}
    assert poisoned["budget"][0].count('"Budget"') and '"Lua"' in poisoned["handle-errors"][0]
    first = _model("probe")
    second = _model("probe")
    assert first.lua.reusable and second.lua is first.lua
    names = sorted(MODEL_POISON) + sorted(POISON)
    for order in (names, names[::-1]):
        for name in order:
            if name in MODEL_POISON:
                before = _model(name)
                assert _bytes(before) == poisoned[name], name
            else:
                before = _run(POISON[name], max_instructions=200_000)
            for seed, expected in want.items():
                kept = before.lua.clean()       # what its release saw
                probe = _model("probe", seed)
                assert probe.lua.reusable
                assert _bytes(probe) == expected, (name, seed)
                assert (probe.lua is before.lua) == kept, name
                before = probe
        assert not _model("budget").lua.clean()


#: Lua values a host call was given inside a task's coroutine and Python
#: keeps past that coroutine: a local tool handler, and the frames (holding
#: the call's `opts`) of a handle error raised inside the call and caught in
#: Lua.  Lua collects the coroutines before Python frees their run: lupa ties
#: a value made inside a coroutine's call to that coroutine, so without
#: `LuaRuntime.anchor` and `LuaRuntime.settle` freeing them reads freed
#: memory (a crash within a few rounds).
COLLECTED_COROUTINES = """
import gc, sys
sys.path.insert(0, {root!r})
from tests.engine.test_models import header, sec, run
from tests.engine.test_runtime_reuse import POISON, _run
SPAWN = ("for i = 1, 30 do tasks.spawn('## Tool') end tasks.join(tasks.pending()) "
         "local t = {{}} for i = 1, 20000 do t[i] = {{ tostring(i) }} end return 'x'")
HANDLER = "tools.add_local('noop', 'Nothing', {{}}, function() return 'ok' end) return 'y'"
FRAMES = ("local sly = setmetatable({{}}, {{ __index = function() "
          "pcall(function() return writer.nope end) end }}) "
          "pcall(tasks.spawn, '## Plan', sly) return 'y'")
for tool in (HANDLER, FRAMES):
    for i in range(20):
        prompt = header() + sec("Plan", SPAWN) + sec("Tool", tool)
        assert run(prompt, []).observation()["result"] == "x"
        _run(POISON["garbage"], max_instructions=2_000_000)
        gc.collect()
print("ok")
"""


def test_lua_values_kept_past_their_coroutine_are_freed_safely():
    """Runs that keep Lua values given inside a task's coroutine past it, on one
    reused runtime, with Lua's and Python's collectors between them, end normally
    (kit: determinism.runtime-reuse)."""
    root = str(pathlib.Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", COLLECTED_COROUTINES.format(root=root)],
                          capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode,
                                                                   done.stderr[-2000:])


def test_a_run_that_ends_in_an_engine_bug_or_the_budget_gives_its_runtime_up(monkeypatch):
    """After an Internal or a Budget ending the runtime is discarded, not reused
    (kit: determinism.runtime-reuse; kit: errors.internal)."""
    from forge.engine.tasks import TasksAPI

    budget = _run(POISON["budget"], max_instructions=200_000)
    assert budget.observation()["error"]["kind"] == "Budget"
    assert _run(PROBE).lua is not budget.lua

    def broken(self, *args):
        raise ZeroDivisionError("boom")

    # The bug: what every tasks function calls first (`TasksAPI.count`).
    monkeypatch.setattr(TasksAPI, "count", broken)
    bug = _run(prompt_text(section("A", "pcall(tasks.note, 'x') return 'swallowed'")))
    assert bug.observation()["error"]["kind"] == "Internal"
    monkeypatch.undo()
    after = _run(PROBE)
    assert after.lua is not bug.lua
    assert bug.lua._bound == [None] and bug.lua._failed == [lua_runtime._unbound]


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


def _wear(before: str) -> None:
    """Leave the next run's runtime as `before` says: a new one ("new runtime"),
    or the one a poison run or a catalogue runaway gave back."""
    from tests.engine.test_sandbox import RUNAWAY

    if before == "new runtime":
        lua_runtime._idle.clear()
    elif before in POISON:
        _run(POISON[before], max_instructions=200_000)
    else:
        _run(prompt_text(RUNAWAY[before][0]), max_instructions=5_000_000)


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
            _wear(before)
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
            _wear(before)
            run = _run(text, max_instructions=3_000_000)
            assert run.lua.reusable, (name, before)
            assert _bytes(run) == expected[name], (name, before)


def test_a_runtime_whose_constructor_raised_is_dropped_quietly():
    """A runtime that could not be built (a seed Lua cannot hold) has bound
    no run: dropping it says nothing on stderr (it had raised AttributeError
    from `__del__`, printed as an ignored exception)."""
    import gc
    import sys

    from forge.lua.runtime import LuaRuntime

    unraisable = []
    old, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with pytest.raises(OverflowError):
            LuaRuntime(random_seed=2**63)
        gc.collect()
    finally:
        sys.unraisablehook = old
    assert unraisable == []
