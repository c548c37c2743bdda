"""Lua values as JSON data (`forge.lua.runtime.from_lua_json`): the rules
the engine applies wherever Lua data leaves for Python (task inputs and
items, `var` in events, message lists, tool arguments), checked against a
plain transcription of them over random Lua values (kit: lua-json)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.lua.runtime import LuaRuntime, LuaTable, NotJSON, decode, from_lua_json, typename

LUA = LuaRuntime()


def oracle(value, depth=0):
    """The rules as written: a table whose keys are exactly 1..n is a list,
    read by index; any other table an object with sorted text keys, read in
    `next` order; the first value that breaks a rule names its type."""
    if depth > 200:
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
        keys = list(value.keys())
        if all(isinstance(k, int) and not isinstance(k, bool) for k in keys) and sorted(
                keys) == list(range(1, len(keys) + 1)):
            return [oracle(value[i], depth + 1) for i in range(1, len(keys) + 1)]
        out = {}
        for k in keys:
            if isinstance(k, bytes):
                ks = decode(k)
                if ks is None:
                    raise NotJSON("string", representable=False)
            elif isinstance(k, int) and not isinstance(k, bool):
                ks = str(k)
            else:
                raise NotJSON(typename(k), representable=False)
            out[ks] = oracle(value[k], depth + 1)
        return dict(sorted(out.items()))
    raise NotJSON(typename(value))


def outcome(fn, value):
    try:
        return ("ok", fn(value))
    except NotJSON as e:
        return ("NotJSON", e.typename, e.representable)


#: Lua expressions for leaves and keys, some of which break the rules.
LEAVES = ["1", "-7", "0.5", "-0.0", "1e300", "0/0", "1/0", "math.mininteger", "true", "false",
          "'a'", "'\\255'", "'caf\\195\\169'", "print", "coroutine.create(print)", "{}"]
KEYS = ["1", "2", "3", "4", "'1'", "'a'", "'b'", "'\\255'", "1.5", "true", "{}"]


@st.composite
def lua_source(draw, depth=0):
    if depth >= 3 or draw(st.booleans()):
        return draw(st.sampled_from(LEAVES))
    entries = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.deferred(
        lambda: lua_source(depth + 1))), max_size=5))
    body = ", ".join(f"[{k}] = {v}" for k, v in entries)
    return "{" + body + "}"


@settings(max_examples=400, deadline=None)
@given(lua_source())
def test_conversion_follows_the_rules_over_random_values(source):
    value = LUA.lua.execute(f"return {source}".encode())
    assert outcome(from_lua_json, value) == outcome(oracle, value)


@pytest.mark.parametrize("source", [
    "{3, 2, 1}",                         # array part
    "{[3] = 'c', [1] = 'a', [2] = 'b'}",  # keys 1..n in the hash part, out of order
    "{[2] = 'b', [3] = 'c'}",            # not from 1: an object
    "{1, 2, nil, 4}",                     # a hole: an object
    "setmetatable({1, 2}, {__index = function() return 9 end, __pairs = error})",
    "(function() local t = {} for i = 1, 300 do t = {t} end return t end)()",
])
def test_conversion_of_tables_follows_the_rules(source):
    value = LUA.lua.execute(f"return {source}".encode())
    assert outcome(from_lua_json, value) == outcome(oracle, value)
