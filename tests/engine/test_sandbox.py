"""The Lua sandbox: exactly the listed libraries, nothing that escapes, and
runaway prompts end with a clear error instead of a hang."""

from __future__ import annotations

import pytest

from tests.conftest import prompt_text, run_text, section

ESCAPES = {
    "io": "return io.open('/etc/passwd'):read('a')",
    "os": "return os.execute('true')",
    "require": "return require('os')",
    "load": "return load('return 1')()",
    "loadstring": "return loadstring('return 1')()",
    "dofile": "return dofile('/etc/passwd')",
    "loadfile": "return loadfile('/etc/passwd')",
    "debug": "return debug.getinfo(1)",
    "coroutine": "return coroutine.create(function() end)",
    "package": "return package.loaded",
    "collectgarbage": "return collectgarbage('count')",
    "rawget": "return rawget(_G, 'io')",
    "rawset": "rawset(_G, 'x', 1) return 'x'",
    "python": "return python.eval('1')",
    "print": "print('x') return 'x'",
    "utf8": "return utf8.char(72)",
    "env-io": "return _ENV.io.open('x')",
    "G-io": "return _G._G.io.open('x')",
    "string-metatable": "local mt = getmetatable('') return mt.__index.rep('x', 2)",
    "string-metatable-set": "getmetatable('').__index = {} return 'x'",
    "error-metatable": "local ok, e = pcall(tasks.spawn, 1) getmetatable(e).__tostring = nil return 'x'",
    "string-dump-load": "return load(string.dump(function() return 1 end))()",
    "require-via-G": "return _G['require']('io')",
    "gc-finalizer": "setmetatable({}, { __gc = function() log('late') end }) return 'x'",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_attempt_is_refused(name):
    """Each escape attempt fails the run as an ordinary Lua error (kit: sandbox.escapes)."""
    obs = run_text(prompt_text(section("Main", ESCAPES[name])))
    assert obs["outcome"] == "failed", obs["result"]
    assert obs["error"]["kind"] == "Lua"


def test_the_sandbox_lists_exactly_the_chapters_globals():
    """Every base global the Lua-environment chapter lists is present and _VERSION reads Lua
    5.5; the escape tests check that nothing else is (kit: sandbox.globals)."""
    code = """
    local base = { 'assert', 'error', 'pcall', 'xpcall', 'getmetatable', 'setmetatable',
      'ipairs', 'pairs', 'next', 'select', 'tonumber', 'tostring', 'type', '_G', '_VERSION',
      'string', 'table', 'math' }
    local out = {}
    for _, name in ipairs(base) do out[#out + 1] = name .. '=' .. type(_G[name]) end
    return table.concat(out, ' ') .. ' ' .. _VERSION
    """
    obs = run_text(prompt_text(section("Main", code)))
    assert "=nil" not in obs["result"]
    assert obs["result"].endswith("Lua 5.5")


def test_library_changes_do_not_leak_into_the_next_section():
    """A section that removes library functions does not take them away from the next section
    (kit: sandbox.fresh-libraries)."""
    obs = run_text(prompt_text(
        section("A", "string.upper = nil  table.concat = nil"),
        section("B", "return string.upper('x') .. table.concat({'a', 'b'})"),
    ))
    assert obs["result"] == "Xab"


def test_pairs_visits_keys_in_the_chapters_order():
    """pairs visits array part, then other keys in the fixed order the Lua-environment chapter
    gives (kit: lua.pairs-order)."""
    code = """
    local seen = {}
    for k in pairs({ 'a', 'b', z = 1, [true] = 2, [10] = 3 }) do seen[#seen + 1] = tostring(k) end
    local more = {}
    for k in pairs({[true]='t', [7]='seven', b='bee', [false]='f', [2.5]='half', a='ay'}) do
      more[#more + 1] = tostring(k)
    end
    return table.concat(seen, ' ') .. '|' .. table.concat(more, ' ')
    """
    obs = run_text(prompt_text(section("Main", code)))
    assert obs["result"] == "1 2 true 10 z|false true 2.5 7 a b"


def test_integer_and_float_type_names_in_messages():
    """Type names in messages tell integer from number: a non-string spawn target names its Lua
    type (tasks.spawn-errors.target-type)."""
    code = """
    local _, a = pcall(tasks.spawn, 5)
    local _, b = pcall(tasks.spawn, 1.5)
    return tostring(a) .. '|' .. tostring(b)
    """
    obs = run_text(prompt_text(section("Main", code)))
    assert obs["result"] == ("section target must be a string, got integer|"
                             "section target must be a string, got number")


RUNAWAY = {
    "endless-loop": (section("Main", "while true do end"), "instruction budget exhausted"),
    "loop-under-pcall": (
        section("Main", "while true do pcall(function() while true do end end) end"),
        "instruction budget exhausted",
    ),
    "endless-jump": (section("A", "jump('## B')") + section("B", "jump('## A')"),
                     "section entry budget exhausted"),
    "unbounded-spawn": (
        section("Main", "while true do tasks.spawn('## C') end") + section("C", "return 1"),
        "task budget exhausted",
    ),
    # 14 tasks of 20 MB each aborted the process ("PANIC: unprotected error in
    # call to Lua API (not enough memory)") when their results reached Lua.
    "result-bomb": (
        section("Main", "local hs = {} for i = 1, 14 do hs[#hs + 1] = tasks.spawn('### W') end "
                        "tasks.join(hs)")
        + section("W", "return string.rep('x', 20 * 1024 * 1024)", level=3),
        "result budget exhausted",
    ),
    "joined-results-past-lua-memory": (
        section("Main", "local big = string.rep('y', 120 * 1024 * 1024) local hs = {} "
                        "for i = 1, 5 do hs[#hs + 1] = tasks.spawn('### W') end tasks.join(hs)")
        + section("W", "return string.rep('x', 20 * 1024 * 1024)", level=3),
        "Lua memory exhausted: delivering the joined results (104,857,600 bytes)",
    ),
    "fanout-results-past-lua-memory": (
        section("Main", "local big = string.rep('y', 80 * 1024 * 1024) "
                        "fanout('### W', {1, 2, 3, 4, 5, 6})")
        + section("W", "return string.rep('x', 20 * 1024 * 1024)", level=3),
        "Lua memory exhausted: delivering the fanout's results",
    ),
    "memory-bomb": (
        section("Main", "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end"),
        "memory",
    ),
    "memory-bomb-in-one-allocation": (
        section("Main", "local s = string.rep('x', 100 * 1024 * 1024) return s .. s .. s"),
        "not enough memory: the run exceeded its Lua memory limit",
    ),
    # The store lives outside Lua's heap: without its own quota these held
    # gigabytes (a 1 MB write a step reached 24 GB in a minute).
    "store-bomb": (
        section("Main", "local c = string.rep('a', 1000000) "
                        "for i = 1, 100000 do store.write('f' .. i, c) end"),
        "store budget exhausted: the store would hold more than 67,108,864 bytes",
    ),
    "append-bomb": (
        section("Main", "local c = string.rep('a', 1000000) "
                        "for i = 1, 100000 do store.append('f', c) end"),
        "store budget exhausted: the store would hold more than 67,108,864 bytes (writing f)",
    ),
    "file-count-bomb": (
        section("Main", "for i = 1, 100000 do store.write('f' .. i, 'x') end"),
        "store budget exhausted: the store would hold more than 10,000 files",
    ),
    # Lua's C matcher backtracks without bound inside one VM instruction, where
    # the count hook never fires: these ran for minutes (the first > 30 s).
    "backtracking-find": (
        section("Main", "return string.find(string.rep('a', 3000), string.rep('a-', 20) .. 'b')"),
        "instruction budget exhausted",
    ),
    "quadratic-method-find": (
        section("Main", "return ('a'):rep(1e6):find('a-b')"),
        "instruction budget exhausted",
    ),
    "backtracking-match": (
        section("Main", "return string.match(string.rep('a', 100), string.rep('a*', 30) .. 'b')"),
        "instruction budget exhausted",
    ),
    "backtracking-gsub": (
        section("Main", "return (string.rep('x', 5000):gsub('x-x-x-y', ''))"),
        "instruction budget exhausted",
    ),
    "backtracking-gmatch": (
        section("Main", "for w in string.rep('ab', 3000):gmatch('.-.-.-c') do end"),
        "instruction budget exhausted",
    ),
    "balanced-scan": (
        section("Main", "return string.find(string.rep('(', 200000), '%b()')"),
        "instruction budget exhausted",
    ),
    "many-small-matches": (
        section("Main", "for i = 1, 1e9 do string.find('aaaaaaaaaaaaaaaaaaaa', 'a*b') end"),
        "instruction budget exhausted",
    ),
    # Each store operation costs the engine ~100 us however small: 150,000 took 15 s.
    "small-store-ops": (
        section("Main", "for i = 1, 1e9 do store.exists('f') end"),
        "store budget exhausted: the run made more than 50,000 store operations",
    ),
    # The spec's log quotas are per section VM; thousands of VMs could each use theirs.
    # Values the run keeps outside Lua's heap: results, error messages, notes
    # and the data each task_started event copies.  Unbounded, 600 tasks of
    # 5 MB (or thousands of 50 MB) reached gigabytes.
    "results-across-tasks": (
        section("Main", "for i = 1, 600 do tasks.join({tasks.spawn('### W')}) end")
        + section("W", "return string.rep('x', 5 * 1024 * 1024)", level=3),
        "result budget exhausted: the run's results, error messages, notes and task data would "
        "take more than 134,217,728 bytes (a result of 5,242,880 bytes from task 0.",
    ),
    "called-results": (
        section("Main", "for i = 1, 600 do local r = call('### W') end")
        + section("W", "return string.rep('x', 5 * 1024 * 1024)", level=3),
        "result budget exhausted",
    ),
    "error-messages-across-tasks": (
        section("Main", "for i = 1, 600 do pcall(tasks.join, {tasks.spawn('### W')}) end")
        + section("W", "error(string.rep('x', 5 * 1024 * 1024))", level=3),
        "(an error message of 5,242,",
    ),
    "notes-across-tasks": (
        section("Main", "for i = 1, 600 do tasks.join({tasks.spawn('### W')}) end")
        + section("W", "tasks.note(string.rep('x', 5 * 1024 * 1024)) return 1", level=3),
        "(a note of 5,242,880 bytes)",
    ),
    # One instruction a call, ten megabytes copied a call: ran for minutes.
    "note-loop-under-pcall": (
        section("Main", "local s = string.rep('x', 1e7) for i = 1, 1e6 do pcall(tasks.note, s) end"),
        "(a note of 10,000,000 bytes)",
    ),
    "var-copied-into-every-task": (
        section("Main", "var.x = string.rep('x', 20 * 1024 * 1024) local hs = {} "
                        "for i = 1, 30 do hs[#hs + 1] = tasks.spawn('### W') end tasks.join(hs)")
        + section("W", "return #var.x", level=3),
        "(the input, item and var a task starts with)",
    ),
    # Thirty million one-byte lines: gigabytes of Python strings, then a
    # process abort handing the answer to Lua.
    "read-numbered-lines": (
        section("Main", "store.write('f', string.rep('a\\n', 30 * 1024 * 1024)) "
                        "return #store.read_numbered('f')"),
        "store budget exhausted: f has more than 1,000,000 lines to number or read by range",
    ),
    "store-answers-held-in-lua": (
        section("Main", "store.write('f', string.rep('a', 60 * 1024 * 1024)) local t = {} "
                        "for i = 1, 100 do t[i] = store.read('f') end"),
        "Lua memory exhausted",
    ),
    # Each operation copies its text: 50,000 reads of 10 MB ran for minutes
    # inside the operation count; a glob looks at every file.
    "store-read-loop": (
        section("Main", "store.write('f', string.rep('a', 10 * 1024 * 1024)) "
                        "for i = 1, 1e9 do local s = store.read('f') end"),
        "store budget exhausted: the run's store operations copied more than 1,073,741,824 "
        "bytes (text read, written or searched)",
    ),
    "store-glob-loop": (
        section("Main", "for i = 1, 9000 do store.write('f' .. i, '') end "
                        "for i = 1, 1e9 do store.glob('**') end"),
        "store budget exhausted: the run's store operations copied more than",
    ),
    # Library calls whose work grows with their arguments ran inside one VM
    # instruction, where the count hook never fires: each of these ran for
    # minutes or hours (benchmarks/hostile.py measures them); bulk.lua
    # charges their bytes first (kit: budget.bulk-calls).
    "rep-loop": (
        section("Main", "for i = 1, 1e9 do local r = string.rep('abcdefgh', 4 * 1024 * 1024) end"),
        "instruction budget exhausted",
    ),
    "sub-copy-loop": (
        section("Main", "local s = string.rep('x', 32 * 1024 * 1024) "
                        "for i = 1, 1e9 do local t = s:sub(2) end"),
        "instruction budget exhausted",
    ),
    "upper-loop": (
        section("Main", "local s = string.rep('x', 8 * 1024 * 1024) "
                        "for i = 1, 1e9 do local t = s:upper() end"),
        "instruction budget exhausted",
    ),
    "reverse-loop": (
        section("Main", "local s = string.rep('x', 8 * 1024 * 1024) "
                        "for i = 1, 1e9 do local t = s:reverse() end"),
        "instruction budget exhausted",
    ),
    "format-loop": (
        section("Main", "local s = string.rep('x', 8 * 1024 * 1024) "
                        "for i = 1, 1e9 do local t = string.format('%s.', s) end"),
        "instruction budget exhausted",
    ),
    "format-q-loop": (
        section("Main", "local s = string.rep('\\0', 4 * 1024 * 1024) "
                        "for i = 1, 1e9 do local t = string.format('%q', s) end"),
        "instruction budget exhausted",
    ),
    "byte-range-loop": (
        section("Main", "local s = string.rep('x', 500000) "
                        "for i = 1, 1e9 do local n = select('#', s:byte(1, -1)) end"),
        "instruction budget exhausted",
    ),
    "char-loop": (
        section("Main", "local t = { string.byte(string.rep('x', 500000), 1, -1) } "
                        "for i = 1, 1e9 do local s = string.char(table.unpack(t)) end"),
        "instruction budget exhausted",
    ),
    "table-concat-loop": (
        section("Main", "local t = {} for i = 1, 1000 do t[i] = string.rep('x', 8192) end "
                        "for i = 1, 1e9 do local s = table.concat(t) end"),
        "instruction budget exhausted",
    ),
    "insert-front-loop": (
        section("Main", "local t = { string.byte(string.rep('x', 500000), 1, -1) } "
                        "for i = 1, 1e9 do table.insert(t, 1, i) end"),
        "instruction budget exhausted",
    ),
    "remove-front-loop": (
        section("Main", "local t = { string.byte(string.rep('x', 500000), 1, -1) } "
                        "for i = 1, 1e9 do table.insert(t, table.remove(t, 1)) end"),
        "instruction budget exhausted",
    ),
    "unpack-loop": (
        section("Main", "local t = { string.byte(string.rep('x', 500000), 1, -1) } "
                        "for i = 1, 1e9 do local n = select('#', table.unpack(t)) end"),
        "instruction budget exhausted",
    ),
    "move-nothing": (
        section("Main", "local t = {} for i = 1, 1e9 do table.move(t, 1, 1e8, 2) end"),
        "instruction budget exhausted",
    ),
    "sort-loop": (
        section("Main", "local t = { string.byte(string.rep('qwertyuiop', 20000), 1, -1) } "
                        "for i = 1, 1e9 do table.sort(t) end"),
        "instruction budget exhausted",
    ),
    "tonumber-scan-loop": (
        section("Main", "local s = string.rep(' ', 32 * 1024 * 1024) .. '1' "
                        "for i = 1, 1e9 do local n = tonumber(s) end"),
        "instruction budget exhausted",
    ),
    "error-message-loop": (
        section("Main", "local s = string.rep('x', 32 * 1024 * 1024) "
                        "for i = 1, 1e9 do pcall(function() error(s) end) end"),
        "instruction budget exhausted",
    ),
    "gsub-replacement-loop": (
        section("Main", "local r, s = string.rep('y', 100000), string.rep('x', 300) "
                        "for i = 1, 1e9 do local t = s:gsub('', r) end"),
        "instruction budget exhausted",
    ),
    "pack-padding-loop": (
        section("Main", "for i = 1, 1e9 do local s = string.pack('c33554432', '') end"),
        "instruction budget exhausted",
    ),
    "table-create-loop": (
        section("Main", "for i = 1, 1e9 do local t = table.create(4 * 1024 * 1024) end"),
        "instruction budget exhausted",
    ),
    "log-bomb-across-tasks": (
        section("Main", "local ts = {} for i = 1, 2000 do ts[#ts + 1] = tasks.spawn('### L') end "
                        "tasks.join(ts)")
        + section("L", "for i = 1, 1000 do log(string.rep('b', 250)) end", level=3),
        "log budget exhausted: the run logged more than 100,000 checkpoints or 16,777,216 bytes",
    ),
}


#: Entries run under the default instruction budget rather than the 5
#: million that ends the loops sooner: filling Lua's memory 1000 bytes at a
#: time is charged for the bytes (forge/lua/bulk.lua), about 16 million
#: instructions before the memory cap is met.
RUNAWAY_BUDGET = {"memory-bomb": 20_000_000}


@pytest.mark.parametrize("name", sorted(RUNAWAY))
def test_runaway_prompt_ends_with_a_clear_error(name):
    """Endless loops, endless jumps, unbounded spawning, a memory bomb and results too large to
    deliver, and values too many or too large to keep each end the run as Budget with a
    message naming the exhausted budget - never a process abort (kit: budget.instructions,
    kit: budget.section-entries, kit: budget.tasks, kit: budget.memory, kit: budget.store,
    kit: budget.logs, kit: budget.patterns, kit: budget.bulk-calls, kit: budget.kept-values)."""
    text, phrase = RUNAWAY[name]
    obs = run_text(prompt_text(text), max_instructions=RUNAWAY_BUDGET.get(name, 5_000_000))
    assert obs["outcome"] == "failed"
    assert phrase in obs["error"]["message"]
    assert obs["error"]["kind"] == "Budget"


def test_a_budget_checked_after_the_scheduler_picks_a_task_ends_the_run_cleanly():
    """The step budget (and the memory check beside it) can end the run after the scheduler
    has taken a task's chain off the ready list but before stepping it; the run still ends as
    Budget, not as a kit error looking for the chain in the list (kit: budget.steps)."""
    text = (section("Main", "local hs = {} for i = 1, 4 do hs[i] = tasks.spawn('### W') end "
                            "tasks.join(hs)")
            + section("W", "for i = 1, 100 do tasks.join({tasks.spawn('#### N')}) end", level=3)
            + section("N", "return 1", level=4))
    obs = run_text(prompt_text(text), max_steps=50)
    assert obs["error"] == {"kind": "Budget", "message": "step budget exhausted: the run took "
                            "more than 50 scheduling steps (unbounded spawning or waiting?)"}


def test_a_caught_log_refusal_past_the_run_budget_still_ends_the_run():
    """Once the run-wide log budget is spent, a pcall around `log` cannot keep the block
    going: each task logs until its own VM's quota refuses it, but the task that spends the
    run's budget is stopped there, not left spinning until the instruction budget
    (kit: budget.logs)."""
    loop = ("while true do local ok, e = pcall(log, 'x') "
            "if not ok and tostring(e):find('event budget') then break end end "
            "tasks.spawn('#### Z')")
    text = (section("Main", "local ts = {} for i = 1, 200 do ts[#ts + 1] = tasks.spawn('### L') "
                            "end tasks.join(ts)")
            + section("L", loop, level=3)
            + section("Z", "return 'z'", level=4))
    obs = run_text(prompt_text(text))
    assert obs["error"]["kind"] == "Budget"
    assert obs["error"]["message"].startswith("log budget exhausted")
    assert len(obs["logs"]) == 100_000
    spawned_after = [t for t in obs["tasks"].values() if t["target"] == "Z"]
    assert len(spawned_after) == 100_000 // 1024     # the tasks whose own quota ran out first


def test_unbounded_recursion_ends():
    """Unbounded Lua recursion ends the run with a stack overflow (kit: budget.lua-stack)."""
    obs = run_text(prompt_text(section("Main", "local function f(n) return f(n + 1) + 1 end return f(1)")))
    assert obs["outcome"] == "failed"
    assert "stack overflow" in obs["error"]["message"]


def test_a_bug_in_a_host_function_ends_the_run_as_internal(monkeypatch):
    """No pcall can swallow it, and it is reported, not raised as a traceback
    (kit: errors.internal)."""
    from forge.engine.tasks import TasksAPI

    def broken(self, *args):
        raise ZeroDivisionError("boom")

    # The bug: what every tasks function calls first (`TasksAPI.count`).
    monkeypatch.setattr(TasksAPI, "count", broken)
    obs = run_text(prompt_text(section("Main", "pcall(tasks.note, 'x') return 'swallowed'")))
    assert obs["outcome"] == "failed"
    assert obs["error"]["kind"] == "Internal"
    assert "ZeroDivisionError: boom" in obs["error"]["message"]


def test_a_bug_in_a_suspending_call_ends_the_run_as_internal(monkeypatch):
    """A Python exception inside a suspending host call ends the run as Internal even under
    pcall (kit: errors.internal)."""
    from forge.engine.host import Host

    def broken(self, chain, *args):
        raise KeyError("lost")

    # The bug: what `call` asks first (`Host.check_target`).
    monkeypatch.setattr(Host, "check_target", broken)
    obs = run_text(prompt_text(section("Main", "pcall(call, '## B') return 'swallowed'"),
                               section("B", "return 1")))
    assert obs["error"]["kind"] == "Internal"


HOSTILE_VALUES = {
    "table-key-in-var": ("var[{}] = 1", "Lua", "var[table] must be JSON data, got table"),
    "float-key-in-var": ("var[1.5] = 1", "Lua", "var[1.5] must be JSON data, got number"),
    "nested-table-key": ("var.x = { [{}] = 1 }", "Lua", "var.x[table] must be JSON data, got table"),
    "erroring-index-in-a-handle": (
        "tasks.status(setmetatable({}, { __index = function() error('boom', 0) end }))",
        "Lua", "boom"),
    "endless-index-in-a-handle": (
        "tasks.status(setmetatable({}, { __index = function() while true do end end }))",
        "Budget", "instruction budget exhausted"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_VALUES))
def test_a_hostile_value_is_the_prompts_own_failure_never_internal(name):
    """A value the prompt hands the host (a var key, a table with metamethods)
    fails as the prompt's own error, or as Budget when its metamethod never
    returns, and never as Internal; its message names no address
    (kit: sandbox.hostile-values)."""
    code, kind, message = HOSTILE_VALUES[name]
    obs = run_text(prompt_text(section("Main", code + "\nreturn 'unreachable'")),
                   max_instructions=100_000)
    assert obs["outcome"] == "failed"
    assert obs["error"]["kind"] == kind, obs["error"]
    assert message in obs["error"]["message"]
    assert "0x" not in obs["error"]["message"]


def test_ordinary_pattern_calls_keep_their_results():
    """Matching under the budget changes no result: the C matcher's answers for ordinary calls,
    and the port's for large subjects (kit: budget.patterns)."""
    code = """
    local big = string.rep('word ', 20000)
    local squeezed, n = big:gsub('%s+', '_')
    local words = 0
    for _ in big:gmatch('%a+') do words = words + 1 end
    return table.concat({ ('  trim me  '):match('^%s*(.-)%s*$'), #squeezed, n, words,
      tostring(big:find('word', 99990, true)), tostring(string.find(big, '(w)(o)', 7)) }, '|')
    """
    obs = run_text(prompt_text(section("Main", code)))
    assert obs["result"] == "trim me|100000|20000|20000|99991|11", obs.get("error")


def test_a_malformed_pattern_is_the_prompts_error_with_its_position():
    """A malformed pattern fails as the C matcher's message at the prompt's line, on the C and
    the port path alike (kit: budget.patterns)."""
    messages = set()
    for subject in ("'x'", "string.rep('x', 100000)"):
        obs = run_text(prompt_text(section("Main", f"local r = ({subject}):find('a*%') return r")))
        assert obs["error"]["kind"] == "Lua"
        messages.add(obs["error"]["message"])
    (message,) = messages
    assert message.endswith('"]:12: malformed pattern (ends with \'%\')'), message
