"""A section's library tables (`string`, `table`, `math`, and the host
namespaces such as `tasks` and `store`) are its own copies, made when the
section first touches them (`E.section_env`).  Nothing a prompt can do may
tell a table not copied yet from one copied at the section's start: reading,
setting and clearing the globals, walking the environment's keys with
`pairs` or `next`, checking it as JSON data, and replacing or reading its
metatable all behave as with copies made up front (kit: sandbox.environment).
"""

from __future__ import annotations

import pytest

from tests.conftest import prompt_text, run_text, section

#: Touching every library first copies them all: the reference behaviour.
TOUCH_ALL = "local _ = string, table, math, tasks, store\n"

KEYS = """
local keys = {}
for k in pairs(_G) do keys[#keys + 1] = k end
return table.concat(keys, ',')
"""

NEXT_WALK = """
local keys, k = {}, next(_G)
while k ~= nil do
  if k ~= 'keys' then keys[#keys + 1] = k end
  k = next(_G, k)
end
return #keys
"""

CASES = {
    "pairs walks every library": KEYS,
    "next walks every library": NEXT_WALK,
    "a global set over a library": "string = 5 return tostring(string)",
    "a library cleared": "table = nil return tostring(table)",
    "a library cleared then walked": "math = nil\n" + KEYS,
    "the metatable replaced": "setmetatable(_G, nil) return type(string) .. type(tasks)",
    "the metatable read": "local mt = getmetatable(_G) "
                          "return tostring(mt.__index(_G, 'math') == math)",
    "the environment as var data": "var.x = _G return 'unreachable'",
    "the environment as a spawn item": "local ok, e = pcall(tasks.spawn, '## B', {item = _G}) "
                                       "return tostring(e)",
}


def _outcome(code: str) -> tuple:
    obs = run_text(prompt_text(section("A", code), section("B", "return 'b'")))
    return obs["outcome"], obs["result"], obs["error"] and obs["error"]["message"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_pending_library_behaves_as_a_copy(name):
    code = CASES[name]
    assert _outcome(code) == _outcome(TOUCH_ALL + code)


def test_the_walk_names_every_library_and_global():
    outcome, result, _ = _outcome(KEYS)
    assert outcome == "ok"
    names = result.split(",")
    assert {"string", "table", "math", "tasks", "store", "log", "args", "sys", "var"} <= set(names)
    assert names == sorted(names)


def test_each_section_has_its_own_copies():
    obs = run_text(prompt_text(
        section("A", "string.upper = nil tasks.extra = 1 table.x = 1"),
        section("B", "return tostring(string.upper ~= nil) .. tostring(tasks.extra) "
                     ".. tostring(table.x)")))
    assert obs["result"] == "truenilnil"
