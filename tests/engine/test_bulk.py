"""The sandbox's size-charged library functions (forge/lua/bulk.lua, and the
prelude's string.format and table.concat) against Lua's own C functions:
the same results, the same errors - message, position and the name the call
site used - over many argument shapes and call shapes, and a charge made
before the work that grows with the bytes (kit: budget.bulk-calls).

The plain functions run in a lupa runtime of their own with the standard
library; the sandbox's in a kit runtime.  Both compile each case from the
same text under the same chunk name, so positions compare byte for byte.
"""

from __future__ import annotations

import lupa.lua55 as lua55
import pytest

from forge.lua.runtime import LuaRuntime

SERIALIZE = r"""
local function show(v, seen)
  local t = type(v)
  if t == 'string' then return string.format('%q', v) end
  if t ~= 'table' then return tostring(v) end
  if seen[v] then return '<cycle>' end
  seen[v] = true
  local keys = {}
  for k in next, v do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) ~= type(b) then return type(a) < type(b) end
    return a < b
  end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = show(k, seen) .. '=' .. show(v[k], seen) end
  return '{' .. table.concat(parts, ',') .. '}'
end
return function(code, env)
  local f, err = load(code, '=t', 't', env)
  if not f then return 'compile: ' .. err end
  local r = table.pack(pcall(f))
  return show(r, {})
end
"""

_sandbox = LuaRuntime(instructions=10**15)
_plain = lua55.LuaRuntime(encoding=None)
_plain_run = _plain.execute(SERIALIZE)
# The serializer runs with the plain library in both runtimes; only the
# case's code sees the sandbox's functions.
_sandbox_run = _sandbox.lua.execute(SERIALIZE)


def both(code: str) -> tuple[str, str]:
    env = _sandbox.new_env()
    return (_sandbox_run(code.encode(), env).decode("utf-8", "replace"),
            _plain_run(code.encode(), _plain.globals()).decode("utf-8", "replace"))


#: (setup, function, arguments): each is called as `string.rep(ARGS)`, through
#: a local alias, through pcall and, when the first argument is a string
#: literal, as a method.  `t` is shown after the call (insert, remove, move).
BIG = "string.rep('ab', 300)"
CASES = [
    ("", "string.rep", args) for args in (
        "'x', 3", "'x', 3, ','", "'x', 0", "'x', -1", "'', 5", "12, 3", "'x', '3'", "'x', 2.0",
        "'x', 2.5", "'x'", "", "{}, 1", "'x', 1, {}", "'x', 300", "'ab', 200, '--'",
        "'x', math.maxinteger", "'x', math.maxinteger, 'y'", "'x', 3, 5", "'x', '0x10'", "'x', nil")
] + [
    ("", "string.sub", args) for args in (
        "'hello', 2", "'hello', 2, 3", "'hello', -3", "'hello', 0", "'hello', 10", "'hello'",
        "'hello', '2'", "'hello', 1.5", "123, 1, 2", "nil, 1", "'hello', 1, {}",
        f"{BIG}, 5, 500", f"{BIG}, 2", "'hello', math.mininteger, math.maxinteger",
        f"{BIG}, -400, -2", "'hello', 3, 2")
] + [
    ("", "string.byte", args) for args in (
        "'hello'", "'hello', 2", "'hello', 1, -1", "'hello', 10", "'hello', -10, 10",
        "'hello', 'x'", "{}", f"{BIG}, 1, -1", "'', 1, 1", "'hello', 2.0, '4'", "55, 1, 2",
        "'hello', nil, 3", "string.rep('x', 10000), 1, -1", "'hello', 1, 1e9")
] + [
    ("", f"string.{name}", args) for name in ("upper", "lower", "reverse") for args in (
        "'aBc'", "12", "", "{}", f"{BIG}", "'x', 'extra'", "string.rep('Ab', 5000)")
] + [
    ("", "string.format", args) for args in (
        "'%d', 1", "'%d', 'x'", "", "'%5.2f|%s', 3.14159, " + BIG, "'%q', 'a\\0b'",
        "'%q', " + BIG, "'%s %s', 'a'", "'%y', 1", "12", "'%s', setmetatable({}, "
        "{__tostring = function() return 'T' end})", "'%s', setmetatable({}, "
        "{__tostring = function() error('in tostring') end})")
] + [
    ("", "string.pack", args) for args in (
        "'i4', 7", "'c5', 'ab'", "'z', 'abc'", "'s1', 'abc'", "'i4'", "'i17', 1", "'c', 'a'",
        "'c300', 'x'", "{}, 1", "'<i2>i2', 1, 2", "'s1', " + BIG)
] + [
    ("", "string.unpack", args) for args in (
        "'i4', string.pack('i4', 7)", "'c2', 'a'", "'z', 'abc\\0'", "'i4', 'ab', 5", "'i4'",
        "'c300', " + BIG, "'s1', 'abc'", "'b', 'a', 0")
] + [
    ("", "string.packsize", args) for args in ("'i4i8'", "'s'", "'c10'", "{}", "'i99'")
] + [
    ("", "string.dump", args) for args in ("string.len", "1", "", "function() return 1 end, true")
] + [
    ("local t = {1, 2, 3}", "table.insert", args) for args in (
        "t, 4", "t, 1, 0", "t, 5, 0", "t, 0, 0", "t, 4, 9", "t, 1, 2, 3", "t", "nil, 1",
        "t, '1', 0", "t, 1.5, 0", "t, 2.0, 'x'", "'str', 1", "setmetatable({}, {__len = "
        "function() return 2.5 end}), 1, 1", "setmetatable({}, {__len = function() "
        "return 2 end}), 1, 'v'")
] + [
    ("local t = {1, 2, 3}", "table.remove", args) for args in (
        "t", "t, 1", "t, 3", "t, 4", "t, 5", "t, 0", "{}, 0", "{}", "t, 'x'", "nil", "t, nil",
        "t, -1", "setmetatable({}, {__len = function() return 'x' end})")
] + [
    ("local t = {1, 2, 3}", "table.move", args) for args in (
        "t, 1, 3, 2", "t, 1, 3, 1, {}", "t, 2, 1, 1", "{}, -1, math.maxinteger, 1",
        "t, 1, 2, math.maxinteger", "'abc', 1, 2, 1, {}", "1, 1, 2, 1", "t, 1, 'x', 1",
        "t, 1, 3", "t, 1, 3, 1, 'x'")
] + [
    ("local t = {1, 2, 3}", "table.unpack", args) for args in (
        "t", "t, 2", "t, 2, 5", "{}, 1, 1e7", "t, 'a'", "nil", "t, -1, 1", "'abc'",
        "t, math.maxinteger - 1, math.maxinteger", "t, 1, 300", "setmetatable({}, {__len = "
        "function() return 3 end, __index = function(_, k) return k * 2 end})")
] + [
    ("local t = {3, 1, 2}", "table.sort", args) for args in (
        "t", "t, function(a, b) return a > b end", "t, 1", "{1, 'x'}", "nil",
        "{3, 1, 2}, function(a, b) error('in comparator') end", "{3, 2, 1}, function() return true end")
] + [
    ("", "table.create", args) for args in ("3", "3, 4", "-1", "'x'", "1e10", "0, 2^40")
] + [
    ("local t = {'a', 'b', 3}", "table.concat", args) for args in (
        "t", "t, ','", "t, ',', 2", "t, ',', 2, 3", "{{}}", "", "t, {}", "{1, 2}, 3",
        "t, ',', 1, 5", "t, '', 1, 1e12", "setmetatable({}, {__index = function() "
        "error('in index') end}), '', 1, 2")
] + [
    ("", "tonumber", args) for args in (
        "'12'", "' 0x10 '", "'z', 36", "'12', 1", "12, 10", "", "nil", "'1e2'", "{}",
        "'  ' .. string.rep(' ', 300) .. '5'", "'ff', 16.0", "'ff', '16'")
] + [
    ("", "getmetatable", args) for args in (
        "", "{}", "nil", "setmetatable({}, {__metatable = 1})", "1, 2")
] + [
    ("", "error", args) for args in (
        "'boom'", "'boom', 2", "'boom', 0", "'boom', {}", "{}", "", "'boom', '1'",
        "'boom', 2.0", "'boom', math.maxinteger", "'boom', math.mininteger", "nil, 1",
        "'boom', 2^32 + 1")
]


def _calls(fn: str, args: str) -> list[str]:
    shapes = [f"local r = table.pack({fn}({args}))",
              f"local f = {fn}; local r = table.pack(f({args}))",
              f"local function g() local x = {fn}({args}) return x end\nlocal r = table.pack(g())"]
    shapes.append(f"local r = table.pack(pcall({fn}{', ' if args else ''}{args}))")
    ns, name = fn.split(".") if "." in fn else ("", fn)
    first, _, rest = args.partition(",")
    if ns == "string" and first.strip().startswith("'"):
        shapes.append(f"local r = table.pack(({first.strip()}):{name}({rest.strip()}))")
    return shapes


@pytest.mark.parametrize("setup,fn,args", CASES, ids=[f"{fn}({args})"[:60] for _, fn, args in CASES])
def test_a_charged_function_agrees_with_lua(setup, fn, args):
    """Results and errors (message, position, name) are Lua's own (kit: budget.bulk-calls)."""
    for call in _calls(fn, args):
        code = f"{setup}\n{call}\nreturn r, {'t' if 't =' in setup else 'nil'}"
        sandboxed, plain = both(code)
        assert sandboxed == plain, code


def test_errors_of_lua_code_a_charged_function_calls_pass_through():
    """A metamethod's or comparator's own error is not prefixed again (kit: budget.bulk-calls)."""
    for code in ("local t = setmetatable({}, {__index = function() error('mm') end}) "
                 "local r = table.pack(table.unpack(t, 1, 2))",
                 "local t = setmetatable({}, {__newindex = function() error({}) end}) "
                 "table.insert(t, 1, 2)",
                 "table.sort({1, 2, 3}, function(a, b) local x = nil; return x.y end)",
                 "local t = setmetatable({}, {__len = function() error('len', 2) end}) "
                 "table.insert(t, 1)"):
        sandboxed, plain = both(code)
        assert sandboxed == plain, code


#: Error levels counted across the sandbox's own Lua frames (its pcall and
#: xpcall, the charged wrappers): each names the position Lua would.
LEVELS = [
    "local r = table.pack(pcall(error, 'm', 2))",
    "local r = table.pack(pcall(error, 'm', 3))",
    "local r = table.pack(xpcall(error, function(e) return e end, 'm', 2))",
    "local r = table.pack(xpcall(error, function(e) return e end, 'm', 3))",
    "local r = table.pack(pcall(pcall, error, 'm', 2))",
    "local r = table.pack(pcall(pcall, error, 'm', 3))",
    "local function f() error('m', 2) end\nlocal r = table.pack(pcall(f))",
    "local function f() error('m', 3) end\nlocal function g()\n f()\nend\n"
    "local r = table.pack(pcall(g))",
    "local function f() error('m', 2) end\nlocal r = table.pack(pcall(function()\n f() end))",
    "local r = table.pack(pcall(table.sort, {1, 2, 3}, function() error('m', 2) end))",
    "local r = table.pack(pcall(table.sort, {1, 2, 3}, function() error('m', 3) end))",
    "local r = table.pack(pcall(string.gsub, 'ab', '.', function() error('m', 2) end))",
    "local r = table.pack(pcall(string.rep, setmetatable({}, {__index = function() end}), 2))",
    "local r = table.pack(pcall(error, 'm', 50))",
    "local r = table.pack(pcall(error, {}, 2))",
]


@pytest.mark.parametrize("call", LEVELS)
def test_an_error_level_counts_the_frames_lua_would(call):
    """`error(msg, level)` skips the sandbox's own Lua frames when it counts
    levels, so the position is the one plain Lua gives (kit: budget.bulk-calls)."""
    code = f"{call}\nreturn r"
    sandboxed, plain = both(code)
    assert sandboxed == plain, code


def _charged(code: str) -> int:
    """Instructions charged by `code` run without the count hook: only charges count."""
    runtime = LuaRuntime(instructions=10**15)
    run = runtime.lua.eval("function(code, env) return assert(load(code, '=t', 't', env))() end")
    before = runtime.fn.instructions_used()
    run(code.encode(), runtime.new_env())
    return runtime.fn.instructions_used() - before


@pytest.mark.parametrize("code,bytes_", [
    ("local s = string.rep('ab', 2^20)", 2 * 2**20),
    ("local s = string.rep('a', 2^20, ',')", 2 * 2**20),
    ("local s = string.rep('a', '1048576')", 2**20),       # the protected path
    ("local s = ('x'):rep(2^20):sub(2)", 2 * 2**20),
    ("local s = ('x'):rep(2^20):upper()", 5 * 2**20),       # 4 a byte: converted one at a time
    ("local s = string.format('%s.', ('x'):rep(2^20))", 2 * 2**20),
    ("local s = table.concat({('x'):rep(2^20)})", 2 * 2**20),
    ("local s = string.pack('c1048576', '')", 2**20),
    ("local t = {('x'):rep(5000):byte(1, -1)}", 65 * 5000),  # a value pushed: an instruction
    ("local s = ('x'):rep(1000):gsub('', ('y'):rep(1000))", 1000 * 1001),
])
def test_a_large_call_is_charged_for_its_bytes(code, bytes_):
    """ceil(bytes / 64) instructions, give or take the charge of making the argument
    (kit: budget.bulk-calls)."""
    charged = _charged(code)
    assert bytes_ // 64 <= charged <= bytes_ // 64 * 1.25 + 100, charged


def test_small_calls_are_not_charged():
    """A call whose work is a few instructions' worth charges nothing; its own
    instructions are what the hook counts (kit: budget.bulk-calls)."""
    assert _charged("for i = 1, 100 do local s = ('abc'):rep(10):sub(2, 5):upper() "
                    "local t = {} table.insert(t, 1, 'x') table.remove(t, 1) "
                    "local n = tonumber('12') local b = ('x'):byte(1) "
                    "local f = string.format('%d-%s', i, 'x') end") == 0


def test_a_call_past_the_memory_cap_is_charged_no_more_than_the_cap_allows():
    """A result Lua cannot allocate fails with Lua's own memory error, after a charge of at
    most the memory cap's bytes: nothing Lua would accept is refused (kit: budget.bulk-calls)."""
    runtime = LuaRuntime(instructions=10**15)
    run = runtime.lua.eval("function(env) return pcall(load('return string.rep(\"x\", 2^40)', "
                           "'=t', 't', env)) end")
    ok, message = run(runtime.new_env())
    assert (ok, message) == (False, b"not enough memory")
    assert runtime.fn.instructions_used() == runtime.max_memory // 64


@pytest.mark.parametrize("call", ["s:upper()", "s:rep(1)", "s:reverse()", "('%s'):format(s)"])
def test_a_loop_of_large_calls_is_not_failed_by_its_own_garbage(call):
    """The C library builds a large result in a buffer taken from the allocator
    directly, where running out fails at once, with no emergency collection:
    a loop making 32 MiB results ran out of memory on its sixth call, holding
    one live value.  Large charged calls collect garbage first when the cap is
    near, so only live values decide (kit: budget.bulk, kit: determinism)."""
    from forge.engine.run import RunConfig, run_prompt
    from forge.prompt import parse_prompt

    text = ("---\nname: g\ndescription: g\npromptforge: 0\n---\n\n# G\n\n## Main\n\n```lua\n"
            "local s = string.rep('a', 32 * 1024 * 1024)\n"
            f"for i = 1, 10 do local t = {call} end\nreturn 'done'\n```\n")
    run = run_prompt(parse_prompt(text, "g.md"), config=RunConfig(max_instructions=100_000_000))
    assert (run.outcome, run.error) == ("ok", None)
