"""The Lua port of the pattern matcher (forge/lua/patterns.lua) against Lua's
own C matcher: random patterns and subjects through find, match, gmatch and
gsub (string, table and function replacements) must give the same results
and the same error messages.

The port is forced (`c_limit = -1`) in a bare runtime, so every call here
runs it; the C functions of the same runtime are the oracle.  Subjects and
patterns are short and drawn from the bytes that mean something to a
pattern, so the draws reach the classes, sets, anchors, captures, %b, %f,
back references and every malformed form.
"""

from __future__ import annotations

import importlib.resources

import lupa.lua55 as lua55
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.cli import FUZZ

_runtime = lua55.LuaRuntime(encoding=None)
_chunk = _runtime.globals().load(
    importlib.resources.files("forge.lua").joinpath("patterns.lua").read_bytes(),
    b"=forge/patterns.lua", b"t")
_deps = _runtime.eval("""{
  byte = string.byte, sub = string.sub, find = string.find,
  match = string.match, gmatch = string.gmatch, gsub = string.gsub,
  charge = function() end, charge_bytes = function() end, getinfo = debug.getinfo,
  pcall = pcall, c_limit = -1 }""")
PORT = _chunk(_deps)
C = _runtime.eval("string")
# One call, protected, in a chunk of its own (so errors carry the same
# position: not a tail call, whose frame Lua drops for the port but keeps for
# a C function); every result is rendered to text so tables compare by content.
_call = _runtime.eval("""function(lib, op, s, p, a, b)
  local out = {}
  local function show(...)
    local n = select('#', ...)
    local t = { n }
    for i = 1, n do t[#t + 1] = type((select(i, ...))) .. ':' .. tostring((select(i, ...))) end
    return table.concat(t, '|')
  end
  local code = [[
    local lib, op, s, p, a, b = ...
    if op == 'gmatch' then
      local seen = {}
      local it = lib.gmatch(s, p, a)
      for i = 1, 50 do
        local r = table.pack(it())
        if r.n == 0 or r[1] == nil then break end
        for j = 1, r.n do seen[#seen + 1] = tostring(r[j]) end
        seen[#seen + 1] = ';'
      end
      return table.concat(seen, ',')
    end
    local r
    if op == 'gsub-f' then
      r = table.pack(lib.gsub(s, p, function(x, y) if x == 'b' then return nil end return '<' .. tostring(x) .. tostring(y) .. '>' end, a))
    elseif op == 'gsub-t' then
      r = table.pack(lib.gsub(s, p, { a = 'A', b = false, ab = 1, [1] = 'one', c = {} }, a))
    else
      r = table.pack(lib[op](s, p, a, b))
    end
    return table.unpack(r, 1, r.n)
  ]]
  local f = load(code, '=case')
  return show(pcall(f, lib, op, s, p, a, b))
end""")

PATTERN_BYTES = list(b"ab()[]%.^$*+-?1209fsbwdaAx-] \x00")
SUBJECT_BYTES = list(b"abc()[] x0\x00")

patterns = st.lists(st.sampled_from(PATTERN_BYTES), max_size=9).map(bytes)
subjects = st.lists(st.sampled_from(SUBJECT_BYTES), max_size=10).map(bytes)
inits = st.one_of(st.none(), st.integers(-12, 12))
replacements = st.lists(st.sampled_from(list(b"x%012%ab")), max_size=5).map(bytes)


def agree(op, s, p, a=None, b=None):
    ported = _call(PORT, op.encode(), s, p, a, b)
    native = _call(C, op.encode(), s, p, a, b)
    assert ported == native, (op, s, p, a, b)


@FUZZ
@given(op=st.sampled_from(["find", "match", "gmatch"]), s=subjects, p=patterns, init=inits)
def test_find_match_gmatch_agree_with_the_c_matcher(op, s, p, init):
    """find, match and gmatch of the port give C's results and errors (kit: budget.patterns)."""
    agree(op, s, p, init)


@FUZZ
@given(s=subjects, p=patterns, repl=replacements, limit=st.one_of(st.none(), st.integers(-1, 4)))
def test_gsub_with_a_string_agrees_with_the_c_matcher(s, p, repl, limit):
    """gsub with a replacement string (%0-%9, %%, bad escapes) agrees (kit: budget.patterns)."""
    agree("gsub", s, p, repl, limit)


@FUZZ
@given(op=st.sampled_from(["gsub-f", "gsub-t"]), s=subjects, p=patterns,
       limit=st.one_of(st.none(), st.integers(0, 4)))
def test_gsub_with_a_function_or_table_agrees_with_the_c_matcher(op, s, p, limit):
    """gsub with a function or a table (nil/false keep, bad values refused) agrees
    (kit: budget.patterns)."""
    agree(op, s, p, limit)


def test_the_known_forms_agree():
    """Hand-picked corners: every malformed-pattern message, position captures, frontiers,
    balances, anchors, empty matches and too many captures (kit: budget.patterns)."""
    cases = [
        ("find", b"abc", b"%"), ("find", b"abc", b"[a"), ("find", b"abc", b"%f"),
        ("find", b"abc", b"(%1)"), ("match", b"abc", b"a)"), ("find", b"abc", b"%b"),
        ("find", b"a(b)c", b"%b()"), ("find", b"THE (quick) fox", b"%f[%a]%a+"),
        ("find", b"abc", b"()b()"), ("match", b"  trim  ", b"^%s*(.-)%s*$"),
        ("gsub", b"abc", b"", b"-"), ("gsub", b"hello world", b"(o)", b"[%1%0%%]"),
        ("gsub", b"abc", b"%w", b"%2"), ("gsub", b"abc", b"%w", b"%x"), ("gsub", b"abc", b"(a", b"%1"),
        ("find", b"a" * 300, b"(a" * 33), ("find", b"a" * 300, b"a?" * 300 + b"b"),
        ("match", b"key = value", b"^(%w+)%s*=%s*(%w+)$"), ("find", b"a\x00b", b"%z"),
        ("find", b"x]y", b"[]]"), ("find", b"x-y", b"[a-]"), ("find", b"a.b", b"%."),
        ("gmatch", b"one two  three", b"%a+"), ("gmatch", b"abc", b""), ("gsub-t", b"abc", b"%w"),
        ("gsub-f", b"abab", b"(a)(b)"), ("find", b"abc", b"^b"), ("gmatch", b"^a^a", b"^a"),
    ]
    for op, s, p, *rest in cases:
        agree(op, s, p, *rest)
