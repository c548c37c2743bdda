"""Every place where Python runs the prompt's own Lua runs it under the instruction budget.

The engine reaches a prompt's metamethods from Python when it reads a global for a
`{{ name }}` placeholder (the environment's `__index`) and when it reads fields of a table
the prompt handed a host function (`tasks.spawn` options, a task handle, a join timeout, a
pending filter, a model's message list).  lupa's own `table[key]`, `table[key] = value`
runs such a metamethod on the main thread, where no count hook fires: an `__index` of
`while true do end` never ended.  Each goes through `LuaRuntime.index` / `assign` /
`guarded` (forge/lua/runtime.py), and the scan below keeps it so.

The scan (`tests/hostile/luascan.py`) follows the prompt's values from the host routes
through the engine and reports every touch lupa runs Lua for: `str()`, a subscript or
attribute whatever its key, a call, and handing one to the engine's own Lua; the touches lupa
does raw (`len()`, iteration, comparisons) are held to lupa by a test.  Each metamethod,
handed to the host functions and then reached from Lua, ends the run as `Budget`.
"""

from __future__ import annotations

import ast
import pathlib

import lupa.lua55 as lua55
import pytest

from tests.conftest import prompt_text, run_text, section
from tests.hostile import luascan

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOOP = "function() local n = 0 while true do n = n + 1 end end"
BUDGET = 200_000


def _prose_section(prose: str, code: str) -> str:
    return f"## Main\n\n{prose}\n\n```lua\n{code.strip()}\n```\n\n"


#: A prompt-made metamethod that never returns, reached from Python through each entry.
ENTRIES = {
    "prose-global-index": _prose_section(
        "Hello {{ missing }}",
        "local old = getmetatable(_ENV).__index\n"
        f"setmetatable(_ENV, {{ __index = function(t, k) if k == 'prose' then return old(t, k) "
        f"end return ({LOOP})() end }})\nreturn prose"),
    "spawn-options": section(
        "Main", f"tasks.spawn('## W', setmetatable({{}}, {{ __index = {LOOP} }}))")
        + section("W", "return 1"),
    "task-handle": section(
        "Main", f"tasks.join({{ setmetatable({{}}, {{ __index = {LOOP} }}) }})"),
    "join-timeout": section(
        "Main", f"tasks.join({{ tasks.spawn('## W') }}, setmetatable({{}}, {{ __index = {LOOP} }}))")
        + section("W", "return 1"),
    "overflow-reason-tostring": section(
        "Main", f"compactors.fail(setmetatable({{}}, {{ __tostring = {LOOP} }}))"),
    "pending-filter": section(
        "Main", f"tasks.pending(setmetatable({{}}, {{ __index = {LOOP} }}))"),
}


def _holed(value: str) -> str:
    """A 16-item list with a hole at 5, whose raw length is still 16: Lua reads `t[5]`
    through `__index`."""
    return f"local t = {{}} for i = 1, 16 do t[i] = {value} end t[5] = nil\n"


ENTRIES.update({
    "join-member-hole-index": section(
        "Main", "local h = tasks.spawn('## W')\n" + _holed("h")
        + f"tasks.join(setmetatable(t, {{ __index = {LOOP} }}))") + section("W", "return 1"),
    "tools-add-hole-index": section(
        "Main", _holed("'a'") + f"tools.add(setmetatable(t, {{ __index = {LOOP} }}))"),
    "tools-allow-tasks-hole-index": section(
        "Main", _holed("'W'") + f"tools.allow_tasks(setmetatable(t, {{ __index = {LOOP} }}))")
        + section("W", "return 1"),
})

#: Every host function that takes a table, handed a table whose metamethod never returns.
_HANDED = """
local W = tasks.spawn('## W')
for _, f in ipairs({ tasks.status, tasks.ready, tasks.pending, tasks.note, tasks.cancel,
                     tasks.concurrency, log, list_from_section, store.read, store.exists,
                     compactors.fail, tools.add, tools.allow_tasks, models.use }) do
  pcall(f, t)
end
pcall(tasks.spawn, '## W', t)
pcall(tasks.spawn, '## W', { input = t, item = t, index = t })
pcall(tasks.join, { t })
pcall(tasks.join, t)
pcall(tasks.join, { W }, t)
pcall(tasks.join_any, { t, W })
pcall(store.write, t, t)
"""

#: Each metamethod a value can carry, and Lua that reaches it.
METAMETHODS = {
    "__tostring": "local _ = tostring(t)",
    "__index": "local _ = t[1]",
    "__len": "local _ = #t",
    "__eq": "local _ = t == setmetatable({}, getmetatable(t))",
    "__lt": "local _ = t < setmetatable({}, getmetatable(t))",
    "__le": "local _ = t <= setmetatable({}, getmetatable(t))",
    "__pairs": "for _ in pairs(t) do end",
    "__call": "t()",
    "__concat": "local _ = t .. 'x'",
    "__close": "do local x <close> = t end",
}

for _name, _reach in METAMETHODS.items():
    # Handed to every host function first: wherever the engine reaches the metamethod from
    # Python, and then where Lua does, the endless loop ends the run as Budget.
    ENTRIES[f"metamethod-{_name}"] = section(
        "Main", f"local t = setmetatable({{}}, {{ {_name} = {LOOP} }})\n{_HANDED}\n{_reach}"
    ) + section("W", "return 1")

#: Metamethods of values the engine reads only for their type, never running them: a host
#: error value whose fields the prompt replaced, raised again.  (kind, message phrase)
UNRUN = {
    "error-kind-tostring": (section(
        "Main", "local ok, e = pcall(tasks.status, {})\n"
        f"e.kind = setmetatable({{}}, {{ __tostring = {LOOP} }})\nerror(e)"),
        "Lua", "tasks.status expects a Task handle or task id, got table"),
    "error-message-tostring": (section(
        "Main", "local ok, e = pcall(tasks.status, {})\n"
        f"e.message = setmetatable({{}}, {{ __tostring = {LOOP} }})\nerror(e)"),
        "Lua", "table"),
}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_a_metamethod_reached_from_python_is_charged(name):
    """An endless metamethod the engine reaches from Python ends the run as Budget at the
    run's instruction budget, as the same loop in a block does (kit: budget.instructions)."""
    obs = run_text(prompt_text(ENTRIES[name]), max_instructions=BUDGET)
    assert obs["error"]["kind"] == "Budget", obs["error"]
    assert obs["error"]["message"].startswith("instruction budget exhausted")


def test_many_short_metamethod_calls_are_charged_as_one_long_one():
    """Each guarded call keeps its thread's hook count, so thousands of calls of a few
    hundred instructions add up: a prompt cannot hide work in many short `__index` runs
    (kit: budget.instructions)."""
    code = ("local opts = setmetatable({}, { __index = function() "
            "local n = 0 for i = 1, 100 do n = n + i end return nil end })\n"
            "for i = 1, 1e9 do pcall(tasks.pending, opts) end")
    obs = run_text(prompt_text(section("Main", code)), max_instructions=2_000_000)
    assert obs["error"]["kind"] == "Budget"


def test_the_guarded_read_gives_what_lua_reads():
    """A guarded read sees the prompt's `__index` answer, as Lua would (kit: budget.instructions)."""
    code = ("local opts = setmetatable({}, { __index = function(_, k) "
            "if k == 'input' then return 'from index' end end })\n"
            "local h = tasks.spawn('## W', opts) return tasks.join({ h })[1].result")
    obs = run_text(prompt_text(section("Main", code) + section("W", "return args")))
    assert obs["result"] == "from index"


def test_an_error_a_guarded_metamethod_raises_reaches_the_caller_as_raised():
    """An error value the prompt's `__index` raises inside a host call is the error the
    call raises, a table as itself (lupa hands Python only an error's text, none of a
    table) and a string with its position (kit: budget.instructions)."""
    code = ("local ok, e = pcall(tasks.pending, setmetatable({}, { __index = function() "
            "error({ code = 7 }) end }))\n"
            "local ok2, e2 = pcall(tasks.pending, setmetatable({}, { __index = function() "
            "error('boom') end }))\n"
            "return table.concat({ tostring(ok), type(e), e.code, tostring(ok2), e2 }, ' | ')")
    obs = run_text(prompt_text(section("Main", code)))
    assert obs["result"].startswith('false | table | 7 | false | [string "section `Main`')
    assert obs["result"].endswith(": boom")



def test_a_table_named_in_a_message_shows_no_address():
    """A table a host call names in its message reads as the sandbox's `tostring` does,
    never as a process address (kit: budget.instructions)."""
    obs = run_text(prompt_text(section("Main", "compactors.fail({})")))
    assert obs["error"]["message"] == ('unknown overflow reason "table: 0x00000001"; '
                                       'expected "precheck" or "provider"')


def _raw_lua_accesses(path: pathlib.Path) -> list[str]:
    """Subscripts keyed by Lua strings (bytes, or `.encode()`): lupa table reads or writes,
    which run metamethods unguarded.  Engine-made tables are marked `# lua: <why>`."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Subscript):
            continue
        key = node.slice
        lua_key = (isinstance(key, ast.Constant) and isinstance(key.value, bytes)) or (
            isinstance(key, ast.Call) and isinstance(key.func, ast.Attribute)
            and key.func.attr == "encode")
        if lua_key and "# lua: " not in lines[node.lineno - 1]:
            found.append(f"{path.name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_no_engine_module_reads_a_lua_table_unguarded():
    """Every table access keyed by a Lua string in the engine and the runtime either goes
    through the guarded entry or names why the table is the engine's own - a new raw access
    fails here (kit: budget.instructions)."""
    modules = sorted((ROOT / "forge" / "engine").rglob("*.py")) + sorted(
        (ROOT / "forge" / "lua").rglob("*.py"))
    raw = [line for path in modules for line in _raw_lua_accesses(path)]
    assert raw == []


def test_the_scan_sees_a_raw_access(tmp_path):
    """The scan is not vacuous: an unmarked `t[b'k']` is reported (kit: budget.instructions)."""
    module = tmp_path / "probe.py"
    module.write_text("def f(t, k):\n    t[k.encode()] = t[b'k']  # lua: own table\n"
                      "    return t[b'k']\n")
    assert _raw_lua_accesses(module) == ["probe.py:3: return t[b'k']"]


@pytest.mark.parametrize("name", sorted(UNRUN))
def test_a_metamethod_the_engine_only_names_never_runs(name):
    """A raised host error whose fields the prompt replaced with tables is read for their
    type, so their `__tostring` never runs (kit: budget.instructions)."""
    text, kind, phrase = UNRUN[name]
    obs = run_text(prompt_text(text), max_instructions=BUDGET, max_cpu_seconds=5.0)
    assert obs["error"]["kind"] == kind, obs["error"]
    assert obs["error"]["message"] == phrase


# -- the scan of every Python-to-Lua entry (tests/hostile/luascan.py) ------------------------

SCANNED = ("forge/engine", "forge/lua")


def _scanned() -> list[pathlib.Path]:
    return [p for folder in SCANNED for p in sorted((ROOT / folder).rglob("*.py"))]


def _routes() -> set[str]:
    """`Class.method` of every host route: the method a library row names, or the one its
    route calls (the store's rows call `Host.direct_store` / `Host.store`)."""
    from forge.engine.library import CALLS

    routes = set()
    for call in CALLS:
        for function in (call.now, call.later):
            if function is None:
                continue
            if "<lambda>" in function.__qualname__:
                called = [n for n in function.__code__.co_names if hasattr(call.part, n)]
                routes.add(f"{call.part.__name__}.{called[-1]}")
            else:
                routes.add(function.__qualname__)
    return routes


def test_no_engine_module_runs_a_prompt_value_unguarded():
    """Every place the engine's Python touches a prompt's Lua value so that lupa runs Lua -
    `str()`, a subscript or attribute of any key, a call, handing it to the engine's own Lua -
    goes through the guarded entry or says on its line why no prompt code runs there; a new
    one fails here (kit: budget.instructions)."""
    assert luascan.runs_lua(luascan.scan(_scanned(), _routes())) == []


def test_only_the_scanned_modules_hold_a_prompt_value():
    """Lua values cross into Python only in the scanned folders: no other module of the kit
    imports lupa or the runtime's Lua-value helpers (the prompt parser only compiles a block,
    running none of it) (kit: budget.instructions).  A module that holds the runtime module
    itself (imported, or deferred: `deferred("forge.lua.runtime")`) holds what it reads off it."""
    holders = set()
    kit = [p for folder in ("forge", "sim", "spec", "conformance")
           for p in sorted((ROOT / folder).rglob("*.py"))]
    for path in kit:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(tuple(f"{folder}/" for folder in SCANNED)):
            continue
        tree = ast.parse(path.read_text())
        runtime_names = set()   # the module's names for forge.lua.runtime itself
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{a.name}" for a in node.names]
                runtime_names |= {a.asname or a.name for a in node.names
                                  if f"{node.module}.{a.name}" == "forge.lua.runtime"}
            else:
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                        and node.value.args and isinstance(node.value.args[0], ast.Constant)
                        and node.value.args[0].value in ("lupa", "forge.lua.runtime")):
                    runtime_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                continue
            holders |= {f"{rel}: {n}" for n in names
                        if n.startswith("lupa") or n.startswith("forge.lua.runtime.")}
        holders |= {f"{rel}: forge.lua.runtime.{node.attr}" for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in runtime_names}
    assert sorted(holders) == ["forge/prompt/parser.py: forge.lua.runtime.compile_check"]


def test_the_scan_starts_from_every_host_route():
    """Each host route is found in the scanned modules, so the scan follows every argument a
    prompt can hand the engine (kit: budget.instructions)."""
    program = luascan.Program(_scanned(), _routes())
    assert program.unresolved == []
    assert {"TasksAPI.spawn", "Host.store", "Host.direct_store", "ModelsAPI.handler_done",
            "ToolsAPI.add_local"} <= _routes()


def _trap(runtime=None):
    """A Lua table whose every metamethod records its name in `hits` and returns, and one
    more of the same metatable."""
    lua = runtime or lua55.LuaRuntime(encoding=None)
    make = lua.execute("""
        local hits = {}
        local mt = {}
        for _, name in ipairs({ '__index', '__newindex', '__tostring', '__len', '__eq', '__lt',
                                '__le', '__pairs', '__call', '__concat', '__close', '__name',
                                '__unm', '__add' }) do
          mt[name] = function(...) hits[#hits + 1] = name return nil end
        end
        mt.__tostring = function() hits[#hits + 1] = '__tostring' return 'trap' end
        mt.__pairs = function(t) hits[#hits + 1] = '__pairs' return next, {}, nil end
        local t = setmetatable({ 1, 2, x = 3 }, mt)
        rawset(t, 5, setmetatable({}, mt))
        return function() return t, setmetatable({}, mt), hits end
    """)
    return make()


#: Python's touches of each kind (`luascan.LUPA_RUNS_LUA`), on a trap `t` and another `u`.
_TOUCHES = {
    "tostring": [lambda t, u: str(t), lambda t, u: f"{t}", lambda t, u: "%s" % t],
    "index": [lambda t, u: t[9], lambda t, u: t[b"y"], lambda t, u: t.y,
              lambda t, u: t.__setitem__(b"z", 1)],
    "call": [lambda t, u: t()],
    "len": [lambda t, u: len(t)],
    "iterate": [lambda t, u: list(t), lambda t, u: list(t.items()), lambda t, u: dict(t)],
    "compare": [lambda t, u: t == u, lambda t, u: t != u, lambda t, u: 1 in t],
    "repr": [lambda t, u: repr(t)],
}


@pytest.mark.parametrize("kind", sorted(_TOUCHES))
def test_lupa_runs_lua_exactly_for_the_touches_the_scan_forbids(kind):
    """The scan allows `len()`, iteration, comparisons and `repr()` of a prompt's value because
    lupa does them raw, running no metamethod; and forbids `str()`, subscripts, attributes
    and calls because lupa runs one.  Held here to the lupa the kit runs on, so a lupa that
    changes either fails (kit: budget.instructions)."""
    for touch in _TOUCHES[kind]:
        t, u, hits = _trap()
        try:
            touch(t, u)
        except TypeError:
            pass
        assert (len(hits) > 0) is luascan.LUPA_RUNS_LUA[kind], (kind, list(hits.values()))


def test_the_engine_lua_the_scan_allows_reads_a_prompt_value_raw():
    """The engine's Lua functions the scan lets the engine hand a prompt's value
    (`luascan.RAW_LUA`) run none of its metamethods: each is called here on a table whose
    every metamethod records itself (kit: budget.instructions)."""
    from forge.engine.models import lua_side
    from forge.lua.runtime import LuaRuntime

    runtime = LuaRuntime()
    fn, side = runtime.fn, lua_side(runtime)
    t, u, hits = _trap(runtime.lua)
    calls = {
        "deep_copy": lambda: fn.deep_copy(t),
        "json_check": lambda: fn.json_check(t, b"x"),
        "ordered_keys": lambda: fn.ordered_keys(t),
        "serial": lambda: fn.serial(t),
        "list_serial": lambda: side.list_serial(t),
        "stamp": lambda: fn.stamp(t, 1),
        "stamp_of": lambda: fn.stamp_of(t),
        "is_host_error": lambda: fn.is_host_error(t),
        "var_intact": lambda: fn.var_intact(t, u),
        "typename": lambda: fn.typename(t),
        "join_results": lambda: fn.join_results(1, b"1", True, t),
        "fanout_result": lambda: fn.fanout_result(b"x", True, t, False),
        "make_error": lambda: fn.make_error(b"lua", b"m", t),
        "stamped_error": lambda: fn.stamped_error(b"lua", b"m", t, 1),
        "abort_with": lambda: fn.abort_with(t),
        "append": lambda: side.append(t, u),
        "truncate": lambda: side.truncate(t, 0),
        "select": lambda: runtime.anchor(t),
    }
    #: Allowed for another reason, said in `luascan.RAW_LUA`: they read nothing of the value
    #: now, or run the prompt's code under the budget.
    other = {"section_vm", "coroutine", "load_library"}
    assert set(calls) | other == luascan.RAW_LUA
    for name, call in calls.items():
        call()
        assert list(hits.values()) == [], name


#: One planted touch of each kind, in a route `Probe.route(self, value, *args)`.
PLANTED = {
    "tostring": ["str(value)", "f'{value}'", "'%s' % value", "format(value)", "str(args[0])"],
    "index": ["value[1]", "value[b'k']", "value.name", "value[1] = 2", "args[0][1]"],
    "call": ["value()", "value.f()", "args[0]()"],
    "lua-call": ["self.lua.fn.section_env(value)", "self.models.L.infer(value)"],
    "len": ["len(value)"],
    "iterate": ["for k in value: pass", "list(value)", "dict(value)", "[k for k in value]"],
    "compare": ["value == other", "value < 1", "1 in value"],
    "repr": ["repr(value)"],
}


def _plant(tmp_path: pathlib.Path, body: str, extra: str = "") -> list[str]:
    module = tmp_path / "probe.py"
    module.write_text("class Probe:\n    def route(self, value, *args):\n"
                      + "".join(f"        {line}\n" for line in body.splitlines()) + extra)
    return [f"{t.kind}: {t.text}" for t in luascan.scan([module], {"Probe.route"})]


@pytest.mark.parametrize("kind,code", [(k, c) for k, codes in PLANTED.items() for c in codes])
def test_the_scan_reports_a_planted_touch_of_each_kind(tmp_path, kind, code):
    """The scan is not vacuous: a planted `str(lua_value)`, integer-keyed read, call, `len()`,
    loop or comparison is reported as its kind (kit: budget.instructions)."""
    found = _plant(tmp_path, code)
    assert f"{kind}: {code}" in found
    assert {f.split(": ", 1)[1] for f in found} == {code}


def test_the_scan_follows_a_value_into_the_functions_it_reaches(tmp_path):
    """A prompt's value handed on to a helper, a loop's item or an assigned name is still the
    prompt's (kit: budget.instructions)."""
    found = _plant(tmp_path, "x = value\nself._helper(x)\nfor item in args:\n    str(item)",
                   "    def _helper(self, v):\n        return v[1]\n")
    assert found == ["tostring: str(item)", "index: return v[1]"]


@pytest.mark.parametrize("code", [
    "self.lua.tostring(value)",
    "self.lua.index(value, 1)",
    "if isinstance(value, bytes):\n    str(value)",
    "if not isinstance(value, (int, float)):\n    return\nstr(value)",
    "str(value)  # lua: a planted exemption",
    "self.lua.fn.deep_copy(value)",
    "len(args)",
    "args[0] is None",
])
def test_the_scan_passes_a_guarded_or_proven_touch(tmp_path, code):
    """A guarded entry, a value tested plain first, a marked line, the raw engine Lua and the
    route's own argument tuple are not reported (kit: budget.instructions)."""
    assert luascan.runs_lua(luascan.scan([_write(tmp_path, code)], {"Probe.route"})) == []


def _write(tmp_path: pathlib.Path, body: str) -> pathlib.Path:
    module = tmp_path / "probe.py"
    module.write_text("class Probe:\n    def route(self, value, *args):\n"
                      + "".join(f"        {line}\n" for line in body.splitlines()))
    return module


# -- the CPU-time backstop (forge/lua/backstop.py) ------------------------------------------

#: Loops of single instructions whose work grows with their data: no count reaches them.
BACKSTOP = {
    "concat-100mb-loop": "local s = string.rep('x', 100 * 1024 * 1024) "
                         "for i = 1, 1e6 do local t = s .. 'y' end",
    "compare-long-equal-prefix": "local a = string.rep('x', 50 * 1024 * 1024) .. 'a' "
                                 "local b = string.rep('x', 50 * 1024 * 1024) .. 'b' "
                                 "local n = 0 for i = 1, 1e6 do if a < b then n = n + 1 end end",
}


@pytest.mark.parametrize("name", sorted(BACKSTOP))
def test_a_loop_of_long_instructions_ends_at_the_cpu_backstop(name):
    """`..` on a 100 MB string and `<` on long equal-prefixed strings in a loop end with the
    backstop's own error kind, whose message says the ending is not deterministic
    (kit: budget.cpu-backstop)."""
    obs = run_text(prompt_text(section("Main", BACKSTOP[name])), max_cpu_seconds=0.5)
    assert obs["error"]["kind"] == "Backstop", obs["error"]
    assert "CPU time limit reached: the run used more than 0.5 s" in obs["error"]["message"]
    assert "not deterministic" in obs["error"]["message"]


def test_a_run_under_its_cpu_limit_is_untouched_by_the_backstop():
    """A run that stays under the limit ends as it always did (kit: budget.cpu-backstop)."""
    obs = run_text(prompt_text(section("Main", "while true do end")), max_instructions=100_000,
                   max_cpu_seconds=60.0)
    assert obs["error"]["kind"] == "Budget"


def test_a_run_the_backstop_ended_never_becomes_a_replay_record():
    """A replay record claims its run reproduces; a Backstop ending cannot, so no record is
    made of it (kit: budget.cpu-backstop)."""
    from forge.errors import InputError
    from forge.run.record import record
    from forge.runspec import Expectation, spec_from_flags

    spec = spec_from_flags(str(ROOT / "examples" / "two-tasks.md"))
    obs = {"outcome": "failed", "error": {"kind": "Backstop", "message": "CPU time limit"}}
    with pytest.raises(InputError, match="not deterministic"):
        record(spec, Expectation(), 0, [], obs)
    assert record(spec, Expectation(), 0, [], {"outcome": "ok"})["run"]["seed"] == 0


def test_the_cpu_limit_is_a_run_option_of_the_api_and_the_command_line(tmp_path):
    """`max_cpu_seconds` (`--max-cpu-seconds`) sets the backstop's limit; a run the backstop
    ended writes no replay file (kit: budget.cpu-backstop)."""
    from click.testing import CliRunner

    from forge.api import run_prompt
    from forge.cli import main

    prompt = tmp_path / "p.md"
    prompt.write_text(prompt_text(section("Main", BACKSTOP["concat-100mb-loop"])))
    assert run_prompt(prompt, max_cpu_seconds=0.5).error["kind"] == "Backstop"
    replay = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["run", str(prompt), "--max-cpu-seconds", "0.5",
                                       "--replay-out", str(replay)])
    assert result.exit_code == 2
    assert "--replay-out: no replay file written" in result.stderr
    assert not replay.exists()
