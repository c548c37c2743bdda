"""The walk, jump, call, var, sys, args, log, the store, the shared library and the scalar
return rule, as the surrounding chapters of the language state them.

Those chapters are mostly outside the clause catalogue (spec/*.toml), so most of these
tests cite kit: tags; the ids tests cite their Tasks clauses."""

from __future__ import annotations

import pytest

from tests.conftest import prompt_text, run_text, section


def result_of(*sections, h1="", **kw):
    obs = run_text(prompt_text(*sections, h1=h1), **kw)
    assert obs["outcome"] == "ok", obs["error"]
    return obs["result"]


def test_walk_falls_through_siblings_but_never_into_children():
    """The walk falls through to the next sibling and never enters a child section
    (kit: walk.fall-through)."""
    assert result_of(
        section("A", "var.seen = 'a'"),
        section("Child", "error('never')", level=3),
        section("B", "return var.seen .. 'b'"),
    ) == "ab"


def test_nothing_returned_anywhere_gives_done():
    """A walk that returns nothing anywhere gives the result done (kit: walk.done)."""
    assert result_of(section("A", "local x = 1")) == "done"


@pytest.mark.parametrize("code, text", [
    ("return 'text'", "text"), ("return 42", "42"), ("return 1.5", "1.5"), ("return 3.0", "3"),
    ("return true", "true"), ("return 'a', 'b'", "a"), ("return ''", ""),
])
def test_scalar_return_rule(code, text):
    """Returned scalars render as text: numbers naturally, booleans as words, only the first of
    several values (kit: walk.scalar-return)."""
    assert result_of(section("A", code)) == text


def test_returning_a_table_fails():
    """Returning a table fails the run with kind Lua and the table message
    (kit: walk.scalar-return)."""
    obs = run_text(prompt_text(section("A", "return {}")))
    assert obs["error"]["kind"] == "Lua"
    assert obs["error"]["message"] == "cannot return a table as a result"


def test_sys_id_numbers_section_entries_per_chain():
    """sys.id numbers the chain's section entries from 0.1 when there is no H1 pass;
    sys.section_name and sys.section_count describe the section (tasks.ids.root-chain,
    kit: sys.fields)."""
    assert result_of(section("First", "var.a = sys.id"), section("Second", "return var.a .. ' ' .. sys.id")) == "0.1 0.2"
    assert result_of(section("Only", "return sys.section_name .. ' ' .. sys.id .. ' of ' .. sys.section_count")) == "Only 0.1 of 1"


def test_calls_take_child_ids_and_sys_taskid_stays_the_callers():
    """Two calls take child indices 0 and 1 of the caller's counter, and sys.taskid inside them
    is the caller's (tasks.ids.child-extends-owner, tasks.ids.one-child-counter,
    tasks.ids.sys-taskid-call-and-task)."""
    text = prompt_text(
        section("Main", "local a = call('## Sub') local b = call('## Sub') return sys.id .. ',' .. a .. ',' .. b"),
        section("Sub", "return sys.id .. '/' .. sys.taskid"),
    )
    assert run_text(text)["result"] == "0.1,0.0.0/0,0.1.0/0"


def test_var_travels_across_fall_through_and_jump():
    """var set in the H1 pass and in sections survives fall-through and jump, and a jump skips
    the sections in between (kit: walk.var)."""
    assert result_of(
        section("A", "var.from_a = 'a' jump('## C')"),
        section("B", "error('skipped')"),
        section("C", "var.from_c = 'c'"),
        section("D", "return var.from_h1 .. var.from_a .. var.from_c"),
        h1="var.from_h1 = 'seed'",
    ) == "seedac"


def test_jump_into_a_child_walks_the_children_then_resumes_the_parent_level():
    """A jump to a child walks its siblings, then the walk resumes at the jumper's level
    (kit: walk.jump-child)."""
    text = prompt_text(
        section("A", "log('A') jump('### X')"),
        section("X", "log('X')", level=3),
        section("Y", "log('Y')", level=3),
        section("B", "log('B') return 'end'"),
    )
    obs = run_text(text)
    assert obs["logs"] == ["A", "X", "Y", "B"] and obs["result"] == "end"


def test_pcall_cannot_stop_a_jump():
    """A jump under pcall still moves the walk at block end, and the block's return is ignored
    (kit: walk.jump)."""
    assert result_of(
        section("A", "local ok = pcall(jump, '## C') var.ok = tostring(ok) return 'ignored'"),
        section("B", "return 'B'"),
        section("C", "return 'C ' .. var.ok"),
    ) == "C false"


def test_a_bad_jump_target_fails_the_run_uncatchably():
    """A jump to a missing heading fails the run even under pcall (kit: walk.jump-target)."""
    obs = run_text(prompt_text(section("A", "pcall(jump, '## Nowhere')")))
    assert obs["error"]["kind"] == "Lua"
    assert obs["error"]["message"] == "section heading `## Nowhere` not found"


def test_call_falls_through_later_siblings_and_discards_its_var():
    """A called chain falls through the target's later siblings, and its var changes do not
    reach the caller (kit: walk.call)."""
    assert result_of(
        section("A", "var.x = 'caller' var.from_call = call('### S1')"),
        section("S1", "var.x = 'callee' log('S1')", level=3),
        section("S2", "return 'S1 S2 ' .. var.x", level=3),
        section("B", "return 'B saw: ' .. var.from_call .. ' then ' .. var.x"),
    ) == "B saw: S1 S2 callee then caller"


def test_call_input_replaces_args():
    """call with an input string replaces args for the called chain and the chains it calls
    (kit: walk.call-input)."""
    assert result_of(
        section("Main", "return call('## Sub', 'chain-args')"),
        section("Sub", "return call('## Inner')"),
        section("Inner", "return 'Args: ' .. args"),
        args="run-args",
    ) == "Args: chain-args"


def test_call_depth_cap():
    """Mutual recursion through call stops at the cap of 8 with the recursion message
    (kit: walk.call-depth-cap)."""
    text = prompt_text(section("A", "local ok, e = pcall(call, '## B') return tostring(e)"),
                       section("B", "return call('## A')"))
    assert run_text(text)["result"] == "call recursion exceeded cap of 8"


def test_var_rejects_non_json_data_at_the_assignment():
    """Assigning a non-JSON value to a var field fails at the assignment and is catchable
    (kit: var.json-data)."""
    assert result_of(section("A", """
local ok, err = pcall(function() var.handler = log end)
var.kept = 'yes'
return tostring(err) .. '|' .. var.kept
""")) == "var.handler must be JSON data, got function|yes"


def test_reassigning_var_fails_the_run():
    """Reassigning the var global fails the run with the reassignment message
    (kit: var.reassign)."""
    obs = run_text(prompt_text(section("A", "var = 5"), section("B", "return 1")))
    assert obs["error"]["message"] == "the `var` global was reassigned; write `var.<field>` instead"


def test_sys_is_sealed():
    """sys refuses unknown fields and writes, and its metatable is sealed (kit: sys.sealed)."""
    assert result_of(section("A", """
local _, e1 = pcall(function() return sys.nope end)
local _, e2 = pcall(function() sys.when = 'x' end)
return tostring(e1) .. '|' .. tostring(e2) .. '|' .. getmetatable(sys)
""")) == "runtime error: unknown sys field 'nope'|sys is read-only; cannot set 'when'|sys is sealed"


def test_argv_without_declaration_holds_the_prose():
    """Without an args declaration argv.prose holds the argument string (kit: args.argv-prose)."""
    assert result_of(section("A", "return argv.prose"), args="hello there") == "hello there"


def test_log_rules():
    """log takes exactly one short single-line UTF-8 string and says which rule a bad call broke
    (kit: log.rules)."""
    obs = run_text(prompt_text(section("A", """
log('one')
local _, e1 = pcall(log)
local _, e2 = pcall(log, 5)
local _, e3 = pcall(log, 'a\\nb')
local _, e4 = pcall(log, string.rep('x', 257))
return tostring(e1) .. '|' .. tostring(e2) .. '|' .. tostring(e3) .. '|' .. tostring(e4)
""")))
    assert obs["logs"] == ["one"]
    assert obs["result"] == ("log expects exactly one argument|log message must be a UTF-8 string|"
                             "log message must not contain newline or control characters|"
                             "log message must be at most 256 characters")


def test_list_from_section():
    """list_from_section returns a list section's items (kit: list-from-section)."""
    text = prompt_text(section("Main", "return table.concat(list_from_section('### Topics'), ', ')")) + \
        "### Topics\n\n- alpha\n- beta\n"
    assert run_text(text)["result"] == "alpha, beta"


def test_prose_renders_at_first_read():
    """A section's prose placeholders render when prose is first read, after the block changed
    var (kit: prose.first-read)."""
    text = prompt_text() + "## A\n\nThe word is {{ var.word }}.\n\n```lua\nvar.word = 'mutated'\nreturn prose\n```\n"
    assert run_text(text)["result"] == "The word is mutated."


def test_runtime_errors_name_the_prompt_line():
    """A runtime error names the block's label and the prompt file line
    (kit: errors.line-numbers)."""
    text = "---\nname: c\ndescription: d\npromptforge: 0\n---\n# Checker\n\n## Check\n\nAsk the model.\n\n```lua\nlocal a = 1\nassert(false)\n```\n"
    obs = run_text(text)
    assert obs["error"]["message"] == ('section `Check` epilog:14: [string "section `Check` epilog"]:14: '
                                       "assertion failed!")


def test_h1_errors_end_the_run_as_requirements_unmet():
    """An uncaught error in the H1 pass ends the run as RequirementsUnmet
    (kit: h1.requirements-unmet)."""
    obs = run_text(prompt_text(section("Work", "return 'never'"), h1="assert(false, 'the gate cannot hold')"))
    assert obs["error"]["kind"] == "RequirementsUnmet"
    assert "the gate cannot hold" in obs["error"]["message"]


STORE = """
store.write('notes/n.md', 'one\\ntwo\\nthree\\n')
store.append('notes/n.md', 'four')
local parts = {
  store.read('notes/n.md', 2, 3),
  store.read('notes/n.md', 99),
  store.read_numbered('notes/n.md', 3),
  tostring(store.exists('notes')),
  table.concat(store.glob('notes/*.md'), ','),
}
store.str_replace('notes/n.md', 'two', '2')
parts[#parts + 1] = store.read('notes/n.md', 2, 2)
local ok, e = pcall(store.read, 'missing.md')
parts[#parts + 1] = e.kind .. ':' .. tostring(e)
local ok2, e2 = pcall(store.write, '/abs', 'x')
parts[#parts + 1] = tostring(e2)
return table.concat(parts, '|')
"""


def test_store_operations_and_errors():
    """store.write, append, read with ranges, read_numbered, exists, glob and str_replace work,
    and store and path errors are catchable (kit: store.operations)."""
    assert result_of(section("A", STORE)) == (
        "two\nthree||3| three\n4| four|true|notes/n.md|2|store:file not found in store: missing.md|"
        'invalid path "/abs": path is absolute'
    )


def test_uncaught_store_errors_end_the_run_as_vfs():
    """An uncaught store error ends the run with kind Vfs (kit: store.vfs-error)."""
    obs = run_text(prompt_text(section("A", "return store.read('missing.md')")))
    assert (obs["error"]["kind"], obs["error"]["value_kind"]) == ("Vfs", "store")


def test_the_store_can_be_seeded(tmp_path):
    """A store seeded from a folder is readable by the prompt (kit: harness.store-seed)."""
    from forge.store import MemoryStore
    from forge.harness import Harness

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("seeded")
    harness = Harness(store=MemoryStore.from_folder(str(tmp_path)))
    obs = run_text(prompt_text(section("A", "return store.read('docs/a.md')")), harness=harness)
    assert obs["result"] == "seeded"


def test_events_carry_execution_section_and_provenance():
    """Events run from run_started to run_succeeded and carry the execution, the section and an
    increasing provenance sequence (kit: events.provenance)."""
    obs = run_text(prompt_text(section("A", "log('hi') store.write('x', 'y')")))
    kinds = [e["kind"] for e in obs["events"]]
    assert kinds[0] == "run_started" and kinds[-1] == "run_succeeded"
    assert {"section_started", "lua_chunk_started", "lua_chunk_succeeded", "store_write_succeeded",
            "section_finished", "lua"} <= set(kinds)
    seqs = [e["provenance"]["seq"] for e in obs["events"] if e["provenance"]["task"] == "0"]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    assert all(e["execution"] == "run-1" and e["section"] for e in obs["events"])


SHARED = """---
name: shared
description: The shared library replays into every section VM
promptforge: 0
---

# Shared

```lua shared
counter = 0
function greet(name) return 'hello ' .. name end
```

## First

```lua
counter = counter + 1
counter = counter + 1
var.first = counter
```

## Second

```lua
counter = counter + 1
return greet('x') .. ' ' .. var.first .. ' ' .. counter
```
"""


def test_the_shared_library_replays_into_every_section_vm():
    """The shared library is loaded afresh into each section's VM, so its globals restart per
    section (kit: lua.shared-library)."""
    obs = run_text(SHARED)
    assert obs["result"] == "hello x 2 1"
    kinds = [e["kind"] for e in obs["events"]]
    assert kinds.count("lua_shared_load_started") == 2
    assert kinds.count("lua_teardown_succeeded") == 2


@pytest.mark.parametrize("library, message", [
    ("error('shared boom')", "shared boom"),
    ("call('## A')", "attempt to yield from outside a coroutine"),
    ("jump('## A')", "jump is not available during shared library load"),
    ("do return {} end", "cannot return a table as a result"),
])
def test_a_failing_shared_library_ends_the_run_as_lua(library, message):
    """A shared library that errors, suspends, jumps or returns a table ends the run as Lua
    (kit: lua.shared-library)."""
    text = SHARED.replace("counter = 0", library, 1)
    obs = run_text(text)
    assert obs["error"]["kind"] == "Lua" and message in obs["error"]["message"]


def test_log_event_quota():
    """The 1025th log is refused with the budget message under pcall, and ends the run as Quota
    without it (kit: quota.log-events)."""
    caught = run_text(prompt_text(section("A", """
local ok, err
for i = 1, 2000 do ok, err = pcall(log, 'x') if not ok then break end end
return tostring(err)
""")))
    assert caught["result"] == "lua log event budget exceeded"
    assert len(caught["logs"]) == 1024
    uncaught = run_text(prompt_text(section("A", "for i = 1, 2000 do log('x') end")))
    assert (uncaught["error"]["kind"], uncaught["error"]["message"]) == ("Quota", "lua log event quota exceeded")


def test_a_prompt_that_is_only_an_h1_runs_and_ends():
    """A prompt with an H1 title and nothing else is valid and runs: its walk
    is empty, so the run ends ok at once, never as Internal (kit: walk.h1-only)."""
    obs = run_text("---\nname: x\ndescription: y\npromptforge: 0\n---\n# T\n")
    assert obs["outcome"] == "ok" and obs["error"] is None
