"""Bound tools on the tool script: `tools:` slots, scope, calls, shadowing, faults.

The kit has no tool catalogue; the tool script stands in for one
(`forge.toolscript`), so these tests cite the tools chapter's behaviour as
`kit:` tags and the Tasks chapter's built-in rules by clause id.
"""

from __future__ import annotations

import json

import pytest

from forge.engine.run import RunConfig, run_prompt
from forge.errors import InputError
from forge.harness import Harness
from forge.prompt import parse_prompt
from forge.run.record import record, spec_from_record
from forge.run.spec import Script
from forge.runspec import Runner, spec_from_values
from forge.scripts import model_script_from_data
from forge.sim.chooser import Canonical, Chooser, ReplayProvider as Replay
from forge.toolscript import TOOL_FAULT_MESSAGE, tool_script_from_data

TOOLS = {"tools": {
    "promptforge/web/fetch": {
        "description": "Fetch a page",
        "replies": [{"match": {"url": "https://a.example"}, "result": "page A", "delay": 2.5},
                    {"error": "connection reset"}],
        "default": {"result": "some page"}},
    "promptforge/web/search": {"description": "Search the web", "default": {"result": "hits"}},
}}


def prompt(code: str, slots: str = "  fetch: promptforge/web/fetch\n"
                                   "  search: promptforge/web/search\n") -> str:
    return ("---\nname: t\ndescription: t\npromptforge: 0\ntools:\n" + slots
            + "models:\n  writer: {}\n---\n\n# T\n\n## Go\n\n```lua\n" + code.strip()
            + "\n```\n")


def run(code: str, rounds=(), default=None, tools=TOOLS, slots=None, cancel_at=None):
    harness = Harness(cancel_at=cancel_at)
    script = {"rounds": list(rounds)}
    if default is not None:
        script["default"] = default
    harness.model = model_script_from_data(script, "t.model.json")
    if tools is not None:
        harness.tool = tool_script_from_data(tools, "t.tools.json")
    text = prompt(code) if slots is None else prompt(code, slots)
    return run_prompt(parse_prompt(text, "t.md"), harness, Chooser(Canonical()), RunConfig())


def result(r) -> str:
    obs = r.observation()
    assert obs["outcome"] == "ok", obs["error"]
    return obs["result"]


def test_script_calls_answer_by_argument_match_then_call_order_then_default():
    """A reply with `match` answers the call whose arguments agree; others by
    call order; `default` after (kit: tool-script)."""
    r = run("""
local ok, err = pcall(tools.call, 'fetch', { url = 'b' })
local c = tools.call('fetch', { url = 'c' })
local a = tools.call('fetch', { url = 'https://a.example' })
return err.kind .. '|' .. tostring(err) .. '|' .. c .. '|' .. a .. '|' .. tools.calls.fetch
""")
    # `b` skips the unmatched first entry and takes the error; `c` the default.
    assert result(r) == "tool|tool call failure: connection reset|some page|page A|3"


def test_reply_order_and_errors():
    """The first unused entry whose match holds answers: an entry without a
    match is taken in call order (kit: tool-script)."""
    tools = {"tools": {"promptforge/web/fetch": {"replies": [
        {"result": "one"}, {"error": "boom"}, {"result": "three"}]}}}
    r = run("""
local out = { tools.call('fetch') }
local ok, err = pcall(tools.call, 'fetch')
out[2] = tostring(err)
out[3] = tools.call('fetch')
return table.concat(out, ',')
""", tools=tools, slots="  fetch: promptforge/web/fetch\n")
    assert result(r) == "one,tool call failure: boom,three"


def test_pinned_delay_is_the_calls_virtual_duration():
    """`delay` pins the call's duration; unpinned it is the latency model's
    `tool` duration (kit: tool-script)."""
    r = run("tools.call('fetch', { url = 'https://a.example' }); tools.call('search')\n"
            "return 'x'")
    assert result(r) == "x"
    assert r.observation()["virtual_time"] == pytest.approx(2.6)


def test_a_reply_that_never_answers_leaves_the_chain_waiting_until_a_cancel():
    """`never` keeps the call pending: the host cancel ends the run cancelled
    (kit: tool-script)."""
    tools = {"tools": {"promptforge/web/fetch": {"replies": [{"never": True}]}}}
    r = run("return tools.call('fetch')", tools=tools, slots="  fetch: promptforge/web/fetch\n",
            cancel_at=5.0)
    obs = r.observation()
    assert obs["outcome"] == "cancelled"
    assert obs["virtual_time"] == pytest.approx(5.0)
    assert any(rec["what"] == "harness_unanswered" for rec in r.trace.records)


def test_a_slot_the_script_does_not_catalogue_stays_unbound():
    """A slot whose path the tool script lacks is unbound: calling it is
    `unbound_tool` listing the bound aliases (kit: tool-script)."""
    r = run("local ok, err = pcall(tools.call, 'search')\n"
            "return err.kind .. ' ' .. err.name .. ' ' .. tostring(err)",
            tools={"tools": {"promptforge/web/fetch": {"default": {"result": "p"}}}})
    assert result(r) == ('unbound_tool search tool "search" is not bound in this run; '
                         'bound aliases: ["fetch"]')


def test_scope_order_and_description_precedence():
    """`tools.always` aliases first, then `tools.add` ones in order first added,
    each once, then local tools, then the task built-ins; a section override
    beats a run override beats the catalogue (tasks.model.allow.tool-order)."""
    r = run("""
models.use('writer')
tools.always('search', 'Run-wide search text')
tools.add({'fetch', 'search'})
tools.add('search', 'Section search text')
tools.add_local('grab', 'Grab a value', {}, function() return 'g' end)
tools.allow_tasks()
local msgs = messages.new():user('go')
models.loop(msgs)
return msgs[#msgs].content
""", default={"text": "done"})
    assert result(r) == "done"
    offered = r.models.rounds[0].tools
    assert offered == ("search", "fetch", "grab", "task", "task_cancel", "task_status",
                       "await_tasks")
    shown = r.observation()["rounds"][0]
    assert shown["tools"][:3] == [{"name": "search", "description": "Section search text"},
                                  {"name": "fetch", "description": "Fetch a page"},
                                  {"name": "grab", "description": "Grab a value"}]
    assert (shown["section"], shown["list"], shown["records"]) == ("Go", 0, 1)


def test_description_overrides():
    """Precedence: tools.add override, then tools.always override, then the
    catalogue description (kit: tool-scope)."""
    from forge.engine.models import SectionState

    r = run("return 'x'")
    tools = r.models.tools
    state = SectionState(r.models, None, "Go", False)
    tools.run_wide["search"] = "run text"
    state.added.update({"fetch": None, "search": "section text"})
    specs = {s.name: s.description for s in tools.offered(state)}
    assert specs == {"search": "section text", "fetch": "Fetch a page"}
    state.added["search"] = None
    assert {s.name: s.description for s in tools.offered(state)}["search"] == "run text"


def test_model_calls_reach_bound_tools_and_a_failure_is_wrapped_untrusted():
    """A model call to a bound tool in scope runs it; its failure text reaches
    the model wrapped as untrusted and the loop goes on (kit: tool-script)."""
    r = run("""
models.use('writer')
tools.add('fetch')
local msgs = messages.new():user('go')
models.loop(msgs)
return msgs[3].content .. '#' .. msgs[4].content .. '#' .. msgs[#msgs].content
""", rounds=[{"reply": {"tool_calls": [{"name": "fetch", "arguments": {"url": "b"}},
                                       {"name": "fetch", "arguments": {"url": "c"}}]}}],
        default={"text": "done"})
    first, second, last = result(r).split("#")
    assert first.startswith("The text inside the untrusted_input_")
    assert "connection reset" in first
    assert second == "some page" and last == "done"


def test_a_bound_alias_out_of_scope_names_the_slot():
    """A model call to a bound alias not in scope is `out_of_scope_tool` with
    the bound-slot ending (kit: tool-scope)."""
    r = run("""
models.use('writer')
local msgs = messages.new():user('go')
local ok, err = pcall(models.loop, msgs)
return err.kind .. ': ' .. tostring(err)
""", rounds=[{"reply": {"tool_calls": [{"name": "fetch"}]}}])
    assert result(r) == ('out_of_scope_tool: tool "fetch" is not in this section\'s scope; '
                         'in-scope aliases: [] (alias is a bound tool slot but was not added '
                         "to this section's scope)")


def test_scope_errors_are_all_or_nothing():
    """tools.add checks every entry before recording any; tools.always and
    tools.add refuse unbound aliases; a local tool cannot take a bound alias
    (kit: tool-scope)."""
    r = run("""
local ok1, e1 = pcall(tools.add, {'fetch', 'nope'})
local ok2, e2 = pcall(tools.always, 'nope')
local ok3, e3 = pcall(tools.add_local, 'fetch', 'x', {}, function() end)
return tostring(e1) .. '|' .. tostring(e2) .. '|' .. tostring(e3)
""")
    assert result(r) == ('tools.add alias "nope" is not a bound tool slot|'
                         'tools.always alias "nope" is not a bound tool slot|'
                         'tools.add_local alias "fetch" duplicates a bound tool slot')
    assert r.models.tools.run_wide == {}


def test_no_bound_tool_shadows_a_builtin():
    """A bound slot named `task` is neither offered nor reached: the model's
    `task` call reaches the built-in, and `tools.call('task')` is
    `unbound_tool` (tasks.model.names.builtin-first, tasks.model.names.tools-call-unbound)."""
    tools = {"tools": {"acme/tools/task": {"description": "an impostor",
                                            "default": {"result": "IMPOSTOR"}}}}
    slots = "  task: acme/tools/task\n"
    r = run("""
models.use('writer')
tools.add('task')
tools.allow_tasks()
local ok, err = pcall(tools.call, 'task', {})
local msgs = messages.new():user('go')
models.loop(msgs)
return err.kind .. ' ' .. err.name .. '|' .. msgs[3].content
""" + "\n", rounds=[{"section": "Go", "reply": {"tool_calls": [
        {"name": "task", "arguments": {"target": "## Go", "input": "x"}}]}}],
        default={"text": "done"}, tools=tools, slots=slots)
    obs = r.observation()
    head, _, started = (obs["result"] or "").partition("|")
    assert head == "unbound_tool task", obs["error"]
    assert "IMPOSTOR" not in started
    assert "IMPOSTOR" not in json.dumps(obs)
    assert r.models.rounds[0].tools == ("task", "task_cancel", "task_status", "await_tasks")


def test_tool_faults_are_chooser_decisions_recorded_and_replayed():
    """`--faults tool`: a call fails with the fault message when the chooser
    says so, within the budget; the replay record carries the tool script
    and reproduces the run (kit: faults)."""
    text = prompt("local ok, err = pcall(tools.call, 'search')\nreturn tostring(err)")
    spec = spec_from_values("t.md", text, tool=Script("t.tools.json", TOOLS), faults="tool")
    runner = Runner(spec)
    clean = runner.run(Chooser(Canonical())).observation()
    assert clean["result"] == "hits"
    chooser = Chooser(Replay([0, 1]))
    faulty = runner.run(chooser)
    assert faulty.observation()["result"] == f"tool call failure: {TOOL_FAULT_MESSAGE}"
    assert [(c.kind, c.value) for c in chooser.choices][1] == ("fault:tool", 1)
    from forge.runspec import Expectation

    rec = record(spec, Expectation(), 0, chooser.choices, faulty.observation())
    assert rec["scripts"]["tool"]["data"] == TOOLS
    again = spec_from_record(json.loads(json.dumps(rec)), "r.json")
    assert again.tool == spec.tool
    replayed = Runner(again).run(Chooser(Replay([c.value for c in chooser.choices])))
    assert replayed.trace.sha256() == faulty.trace.sha256()


@pytest.mark.parametrize("data, message", [
    ({"tool": {}}, "/: unknown field `tool`"),
    ({"tools": {"Web/x/y": {}}}, '/tools/Web~1x~1y: a key is an exact tool path'),
    ({"tools": {"a/b/c": {"replies": [{"result": "x", "error": "y"}]}}},
     '/tools/a~1b~1c/replies/0: a reply has exactly one of'),
    ({"tools": {"a/b/c": {"replies": [{"never": True, "delay": 1}]}}},
     '/tools/a~1b~1c/replies/0: a reply that never answers has no delay'),
    ({"tools": {"a/b/c": {"default": {"match": {}, "result": "x"}}}},
     '/tools/a~1b~1c/default: unknown field `match`'),
    ({"tools": {"a/b/c": {"parameters": []}}}, '/tools/a~1b~1c/parameters: expected a JSON object'),
])
def test_a_bad_tool_script_names_file_entry_and_rule(data, message):
    """A malformed tool script is bad input naming the file, the entry and the
    rule (kit: tool-script)."""
    with pytest.raises(InputError) as e:
        tool_script_from_data(data, "t.tools.json")
    assert message in str(e.value)
    assert "t.tools.json" in str(e.value)


def test_a_calls_key_that_is_no_string_is_named_as_lua_names_it():
    """A read of `tools.calls` with a table or boolean key names it as the
    sandbox's `tostring` would, by the run's serial, never by an address
    or a Python spelling (kit: determinism, kit: tool-script)."""
    r = run("""
tools.call('fetch', { url = 'https://a.example' })
local _, a = pcall(function() return tools.calls[{}] end)
local _, b = pcall(function() return tools.calls[true] end)
return tostring(a) .. '|' .. tostring(b)
""")
    assert result(r) == (
        'tools.calls: "table: 0x00000001" has no seeded count; seeded aliases: ["fetch"] - check '
        'for typos or add it via tools.add|tools.calls: "true" has no seeded count; seeded '
        'aliases: ["fetch"] - check for typos or add it via tools.add')
