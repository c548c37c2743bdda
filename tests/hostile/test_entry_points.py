"""Every place where Python runs the prompt's own Lua runs it under the instruction budget.

The engine reaches a prompt's metamethods from Python when it reads a global for a
`{{ name }}` placeholder (the environment's `__index`) and when it reads fields of a table
the prompt handed a host function (`tasks.spawn` options, a task handle, a join timeout, a
pending filter, a model's message list).  lupa's own `table[key]`, `table[key] = value`
runs such a metamethod on the main thread, where no count hook fires: an `__index` of
`while true do end` never ended.  Each goes through `LuaRuntime.index` / `assign` /
`guarded` (forge/lua/runtime.py), and the scan below keeps it so.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from tests.conftest import prompt_text, run_text, section

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
