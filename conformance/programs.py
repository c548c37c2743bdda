"""Random task programs, as Hypothesis strategies: prompts for fuzzing.

`plans` is the engine's property tests' workload: a main section that spawns
workers, waits on them in a random mix of ways and settles everything;
workers touch the store, may spawn and join (or cancel) a nested task, and
may fail.  Every plan ends cleanly on every schedule.

`programs` is the differential fuzzer's (`fuzz`): it reaches every rule of
the Tasks chapter a wrong engine could break, and logs what each step saw so
that a difference shows in the observation.  Main keeps the set of tasks it
spawned and the ones not yet delivered, and mixes waits over those (so
several members may have ended before a wait), timed waits whose partial
results it logs, second waits on delivered and cancelled tasks, cancels of
live and ended tasks, status, ready and pending reads, refused calls,
concurrency limits, bursts of more than ten tasks, a called chain that may
leak, nesting down to the depth cap, late spawns after waits, an H1 pass
that may spawn, a walk that falls through into a second section, and an
ending that joins, cancels, leaks, fails or re-raises a caught error.
Workers log their ids, may set notes and limits, nest a task they join,
cancel, time out on or leak, read their owner, fail, or fall through into
the next worker.  Whether a program ends well may depend on the schedule;
its observation under one schedule may not, which is what the differential
fuzzer relies on.

Hypothesis is an install extra (`pip install 'forge-kit[test]'`); importing
this module without it raises an ImportError that says so.  What does not
live here: running the programs or comparing engines (`fuzz`), schedules as
a strategy (`forge.sim.hypothesis`).
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ModuleNotFoundError:  # pragma: no cover - depends on the install
    raise ImportError(
        "random task programs need the Hypothesis package, an optional extra of the forge kit: "
        "pip install 'forge-kit[test]' (or pip install hypothesis)"
    ) from None

HEADER = "---\nname: plan\ndescription: generated workload\npromptforge: 0\n---\n\n# Plan\n\n"

#: The ways main may wait on, stop or look at its live tasks, one statement each.
LIVE = "do local live = tasks.pending() if #live > 0 then {} end end"


def _worker_section(index: int, lines: list[str]) -> str:
    """Worker `index`'s section with its code `lines`, and its `#### Leaf` child."""
    body = "\n".join(lines)
    return (f"### W{index}\n\n```lua\n{body}\n```\n\n"
            f"#### Leaf\n\n```lua\nstore.exists('leaf')\nreturn 'leaf'\n```\n\n")


@st.composite
def worker(draw, index: int) -> str:
    lines = []
    for n in range(draw(st.integers(0, 3))):
        lines.append(f"store.write('w{index}/{n}', 'x')")
    if draw(st.booleans()):
        lines.append("local c = tasks.spawn('#### Leaf')")
        if draw(st.booleans()):
            lines.append("tasks.join({ c })")
        else:
            lines.append("tasks.cancel(c)")
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"error('worker {index} failed', 0)")
    lines.append(f"return 'w{index}'")
    return _worker_section(index, lines)


@st.composite
def plans(draw) -> str:
    """A whole prompt that ends cleanly on every schedule."""
    count = draw(st.integers(1, 5))
    workers = [draw(worker(i)) for i in range(count)]
    ops = []
    if draw(st.booleans()):
        ops.append(f"tasks.concurrency({draw(st.integers(1, 4))})")
    ops.append("local set = {}")
    for i in range(count):
        ops.append(f"set[#set + 1] = tasks.spawn('### W{i}')")
    kinds = ["any", "timed-any", "cancel", "timed-join", "store"]
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(kinds))
        if kind == "any":
            ops.append(LIVE.format("local got, ok, r = tasks.join_any(live)"))
        elif kind == "timed-any":
            t = draw(st.sampled_from(["0", "0.005", "0.01", "0.02", "1"]))
            ops.append(LIVE.format(f"local got, ok, r = tasks.join_any(live, {{ timeout = {t} }})"))
        elif kind == "timed-join":
            t = draw(st.sampled_from(["0", "0.01", "0.05"]))
            ops.append(LIVE.format(f"tasks.join(live, {{ timeout = {t} }})"))
        elif kind == "cancel":
            ops.append(LIVE.format("tasks.cancel(live[1])"))
        else:
            ops.append("store.write('main', 'x')")
    ending = draw(st.sampled_from(["join", "cancel"]))
    if ending == "join":
        ops.append(LIVE.format("tasks.join(live)"))
    elif ending == "cancel":
        ops.append("for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end")
    ops.append("return 'done'")
    body = "\n".join(ops)
    return HEADER + f"## Main\n\n```lua\n{body}\n```\n\n" + "".join(workers)


# -- the differential fuzzer's programs ---------------------------------------------

#: Main's helpers: the spawned set, the members not yet delivered, and how a
#: value is logged (an error value by its kind, task, reason, tasks and text).
PRELUDE = """\
local set, open, last_err = {}, {}, nil
local function add(t) set[#set + 1] = t open[#open + 1] = t log('spawn ' .. t.task) end
local function drop(id)
  for i, t in ipairs(open) do if t.task == id then table.remove(open, i) return end end
end
local function say(v)
  if type(v) ~= 'table' then return tostring(v) end
  return tostring(v.kind) .. '|' .. tostring(v.task) .. '|' .. tostring(v.reason) .. '|' ..
    tostring(v.tasks) .. '|' .. tostring(v)
end
local function out(s)
  repeat log(string.sub(s, 1, 200)) s = string.sub(s, 201) until #s == 0
end
local function try(label, f, ...)
  local ok, r = pcall(f, ...)
  if not ok then last_err = r end
  out(label .. ' ' .. tostring(ok) .. ' ' .. (ok and type(r) ~= 'table' and tostring(r) or say(r)))
  return ok
end"""

#: Waits over what main has not had delivered yet; each logs what it got.
WAITS = {
    "any": "if #open > 0 then local got, ok, r = tasks.join_any(open) drop(got.task) "
           "out('any ' .. got.task .. ' ' .. tostring(ok) .. ' ' .. say(r)) end",
    "timed-any": "if #open > 0 then local got, ok, r = tasks.join_any(open, {{ timeout = {t} }}) "
                 "if got then drop(got.task) end "
                 "out('tany ' .. tostring(got and got.task) .. ' ' .. tostring(ok) .. ' ' .. say(r)) end",
    "join": "if #open > 0 then local members = open open = {{}} "
            "local res, to = tasks.join(members) local marks = {{}} "
            "for i = 1, #members do marks[i] = members[i].task .. '=' .. tostring(res[i].ok) .. "
            "':' .. say(res[i].result) end out('join ' .. tostring(to) .. ' ' .. "
            "table.concat(marks, ' ')) end",
    "timed-join": "if #open > 0 then local members = open open = {{}} "
                  "local res, to = tasks.join(members, {{ timeout = {t} }}) local marks = {{}} "
                  "for i = 1, #members do if res[i] then marks[i] = members[i].task .. '=' .. "
                  "tostring(res[i].ok) else marks[i] = members[i].task .. '=late' "
                  "open[#open + 1] = members[i] end end "
                  "out('tjoin ' .. tostring(to) .. ' ' .. table.concat(marks, ' ')) end",
}

#: Calls main makes that a careful engine refuses; each is caught and logged.
REFUSED = [
    "try('spawn-int', tasks.spawn, 42)",
    "try('spawn-missing', tasks.spawn, '### Missing')",
    "try('join-empty', tasks.join_any, {})",
    "try('join-bad-id', tasks.join, { 'x.1' })",
    "try('status-unknown', tasks.status, '0.77')",
    "try('status-self', tasks.status, sys.taskid)",
    "if #open > 0 then try('negative', tasks.join_any, open, { timeout = -1 }) end",
    "if #open > 0 then try('timeout-string', tasks.join, open, { timeout = '1' }) end",
    "try('concurrency-zero', tasks.concurrency, 0)",
    "try('cancel-int', tasks.cancel, 42)",
    "try('pending-origin', tasks.pending, { origin = 'x' })",
    "try('note-int', tasks.note, 5)",
]

TIMEOUTS = ["0", "0.005", "0.01", "0.02", "0.05", "1"]

#: Sections a program has beside its workers (children of ## Main), each
#: only when an operation uses it (so a shrunk program keeps only what it
#: needs): a quick task for bursts, a task that takes store time while
#: others run, two tasks that spawn each other down to the depth cap (a
#: section sees its siblings, not itself), and a called chain.
SHARED = {
    "burst": """\
### Quick

```lua
store.exists('q')
return 'q' .. tostring(sys.index)
```

""",
    "nap": """\
### Nap

```lua
for i = 1, 4 do store.write('nap/' .. i, 'x') end
return 'nap'
```

""",
    "deep": """\
### Deep

```lua
local ok, t = pcall(tasks.spawn, '### Dive')
if not ok then return 'cap at ' .. tasks.status(sys.taskid).depth .. ': ' .. tostring(t) end
local _, done, r = tasks.join_any({ t })
return r
```

### Dive

```lua
local ok, t = pcall(tasks.spawn, '### Deep')
if not ok then return 'cap at ' .. tasks.status(sys.taskid).depth .. ': ' .. tostring(t) end
local _, done, r = tasks.join_any({ t })
return r
```

""",
    "call": """\
### Helper

```lua
log('helper ' .. sys.id .. ' ' .. sys.taskid)
local t = tasks.spawn('#### Hleaf')
log('hleaf ' .. t.task)
if not var.leak then tasks.join({ t }) end
return 'helped'
```

#### Hleaf

```lua
return 'hleaf'
```

""",
}


@st.composite
def fuzz_worker(draw) -> str:
    """`### W@`, with its own `#### Leaf`; `@` stands for the worker's index
    (workers are drawn as a list, which shrinks by dropping any one)."""
    index = "@"
    lines = [f"log('W{index} ' .. sys.id .. ' ' .. sys.taskid)"]
    for n in range(draw(st.integers(0, 3))):
        lines.append(f"store.write('w' .. sys.taskid .. '/{n}', 'x')")
    # Each rare part is drawn as the largest value, so shrinking (towards
    # 0) leaves it out.
    if draw(st.integers(0, 3)) == 3:
        lines.append(f"log('wconc ' .. tasks.concurrency({draw(st.integers(1, 12))}))")
    if draw(st.booleans()):
        lines.append(f"tasks.note('w{index} halfway')")
        lines.append("log('self note ' .. tostring(tasks.status(sys.taskid).note))")
    if draw(st.integers(0, 3)) == 3:
        lines.append("local ok, e = pcall(tasks.status, '0') log('owner ' .. tostring(e))")
    leaf = draw(st.sampled_from(["none", "join", "cancel", "timed", "leak", "cancel-twice"]))
    if leaf != "none":
        lines.append("local c = tasks.spawn('#### Leaf') log('leaf ' .. c.task)")
    if leaf == "join":
        lines.append("tasks.join({ c })")
    elif leaf == "cancel":
        lines.append("tasks.cancel(c)")
    elif leaf == "cancel-twice":
        lines.append("tasks.cancel(c) store.exists('w') tasks.cancel(c) "
                     "local _, ok, e = tasks.join_any({ c }) log('leaf ' .. tostring(ok) .. ' ' .. "
                     "tostring(e))")
    elif leaf == "timed":
        t = draw(st.sampled_from(TIMEOUTS))
        lines.append(f"local got = tasks.join_any({{ c }}, {{ timeout = {t} }}) "
                     "log('leaf in time ' .. tostring(got ~= nil)) "
                     "if not got then tasks.join({ c }) end")
    if draw(st.integers(0, 4)) == 4:
        lines.append(f"error('worker {index} failed', 0)")
    if draw(st.integers(0, 5)) < 5:  # else it falls through into the next worker
        lines.append(f"return 'w{index}'")
    return _worker_section(index, lines)


@st.composite
def programs(draw) -> str:
    """A whole prompt for the differential fuzzer (see the module's docstring)."""
    bodies = draw(st.lists(fuzz_worker(), min_size=1, max_size=5))
    count = len(bodies)
    workers = [body.replace("@", str(i)) for i, body in enumerate(bodies)]
    h1 = draw(st.sampled_from(["none", "log", "spawn", "none", "log", "spawn", "reraise"]))
    ops = [PRELUDE, "log('main ' .. sys.id .. ' ' .. sys.taskid)"]
    used: set[str] = set()
    if h1 == "spawn":
        ops.append("add(var.early)")
    if draw(st.booleans()):
        ops.append(f"log('conc ' .. tasks.concurrency({draw(st.integers(1, 12))}))")
    for i in range(count):
        ops.append(f"add(tasks.spawn('### W{i}'))")
    kinds = ["any", "timed-any", "join", "timed-join", "rejoin", "rejoin-any", "cancel",
             "cancel-open", "status", "pending", "store", "read", "spawn", "burst", "nap",
             "call", "deep", "refused", "note", "cancel-wait", "dup-join"]
    for kind, i, param in draw(st.lists(st.tuples(st.sampled_from(kinds), st.integers(1, 7),
                                                  st.integers(0, 255)), max_size=6)):
        # i names a member of the set (past the workers: a late spawn, or
        # nothing); param picks the op's variant.
        if kind in SHARED:
            used.add(kind)
        if kind in ("any", "join"):
            ops.append(WAITS[kind].format())
        elif kind in ("timed-any", "timed-join"):
            ops.append(WAITS[kind].format(t=TIMEOUTS[param % len(TIMEOUTS)]))
        elif kind in ("rejoin", "rejoin-any"):
            wait = "tasks.join" if kind == "rejoin" else "tasks.join_any"
            ops.append(f"if set[{i}] and try('{kind} ' .. set[{i}].task, {wait}, {{ set[{i}] }}) "
                       f"then drop(set[{i}].task) end")
        elif kind == "cancel":
            ops.append(f"if set[{i}] then try('cancel ' .. set[{i}].task, tasks.cancel, set[{i}]) "
                       f"log('ready ' .. tostring(tasks.ready(set[{i}]))) end")
        elif kind == "cancel-wait":
            # A cancelled task may be waited on again and again.
            ops.append(f"if set[{i}] then tasks.cancel(set[{i}]) "
                       f"try('cancelled ' .. set[{i}].task, tasks.join_any, {{ set[{i}] }}) "
                       f"if try('again', tasks.join, {{ set[{i}] }}) then drop(set[{i}].task) end end")
        elif kind == "dup-join":
            ops.append(f"if set[{i}] and try('twice ' .. set[{i}].task, tasks.join, "
                       f"{{ set[{i}], set[{i}] }}) then drop(set[{i}].task) end")
        elif kind == "cancel-open":
            ops.append("if #open > 0 then tasks.cancel(open[1]) end")
        elif kind == "status":
            ops.append(f"if set[{i}] then local s = tasks.status(set[{i}]) out('status ' .. "
                       f"set[{i}].task .. ' ' .. s.target .. ' ' .. s.origin .. ' ' .. s.state .. ' ' .. "
                       "tostring(s.ok) .. ' ' .. tostring(s.section) .. ' ' .. tostring(s.blocked) .. "
                       "' ' .. tostring(s.note) .. ' [' .. table.concat(s.tasks, ',') .. '] ' .. "
                       f"s.depth .. ' ' .. tostring(tasks.ready(set[{i}]))) end")
        elif kind == "pending":
            ops.append("local ids = {} for _, t in ipairs(tasks.pending()) do ids[#ids + 1] = t.task "
                       "end out('pending ' .. table.concat(ids, ','))")
        elif kind == "store":
            ops.append("store.write('main', 'x')")
        elif kind == "read":
            ops.append(f"if set[{i}] and store.exists('w' .. set[{i}].task .. '/0') then "
                       f"log('read ' .. store.read('w' .. set[{i}].task .. '/0')) end")
        elif kind == "spawn":
            ops.append(f"add(tasks.spawn('### W{param % count}'))")
        elif kind == "burst":
            ops.append("for k = 1, 10 do add(tasks.spawn('### Quick', { index = k })) end")
        elif kind == "nap":
            ops.append("local n = tasks.spawn('### Nap') log('nap ' .. n.task) tasks.join({ n })")
        elif kind == "call":
            leak = param % 2 == 1
            ops.append(f"var.leak = {'true' if leak else 'false'} try('call', call, '### Helper')")
        elif kind == "deep":
            ops.append("local d = tasks.spawn('### Deep') local _, ok, r = tasks.join_any({ d }) "
                       "out('deep ' .. d.task .. ' ' .. tostring(ok) .. ' ' .. say(r))")
        elif kind == "refused":
            ops.append(REFUSED[param % len(REFUSED)])
        else:
            ops.append("tasks.note('main note')")
    ending = draw(st.sampled_from(["join", "cancel", "leak", "fail", "reraise", "reraise-last"]))
    if ending == "join":
        ops.append(WAITS["join"].format())
    elif ending == "cancel":
        ops.append("for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end")
    elif ending == "fail":
        ops.append("error('main failed', 0)")
    elif ending in ("reraise", "reraise-last"):
        between = draw(st.sampled_from(["", "tasks.ready(set[1])", "store.exists('z')"]))
        if ending == "reraise":
            ops.append("tasks.cancel(set[1]) local _, ok, e = tasks.join_any({ set[1] }) "
                       f"{between} error(e)")
        else:
            ops.append(f"{between} if last_err then error(last_err) end")
    tail = draw(st.booleans())
    if not tail:
        ops.append("return 'done'")
    body = "\n".join(ops)
    first = ""
    if h1 == "log":
        first = "```lua\nlog('h1 ' .. sys.id)\n```\n\n"
    elif h1 == "spawn":
        first = "```lua\nlog('h1 ' .. sys.id)\nvar.early = tasks.spawn('## Early')\n```\n\n"
    elif h1 == "reraise":
        # A caught error raised again after another suspending call, in the
        # H1 pass: the run error is rebuilt from the value's kind.
        between = draw(st.sampled_from(["store.exists('h1')", "", "tasks.pending()"]))
        first = ("```lua\nlocal ok, e = pcall(call, '## Leaky')\nlog('h1 caught ' .. tostring(e))\n"
                 f"{between}\nerror(e)\n```\n\n")
    rest = ("## Tail\n\n```lua\nlog('tail ' .. sys.id)\nlocal t = tasks.spawn('### Tleaf')\n"
            "log('tleaf ' .. t.task)\ntasks.join({ t })\n"
            "for _, p in ipairs(tasks.pending()) do tasks.cancel(p) end\nreturn 'tail done'\n```\n\n"
            "### Tleaf\n\n```lua\nreturn 'tleaf'\n```\n\n") if tail else ""
    early = {"spawn": "## Early\n\n```lua\nstore.exists('e')\nreturn 'early'\n```\n",
             "reraise": "## Leaky\n\n```lua\ntasks.spawn('### Lost')\nreturn 'leaky'\n```\n\n"
                        "### Lost\n\n```lua\nreturn 'lost'\n```\n"}.get(h1, "")
    return (HEADER + first + f"## Main\n\n```lua\n{body}\n```\n\n" + "".join(SHARED[k] for k in SHARED if k in used)
            + "".join(workers)
            + rest + early)


# -- programs where the model starts tasks ----------------------------------------

MODEL_HEADER = ("---\nname: talk\ndescription: generated model workload\npromptforge: 0\n"
                "models:\n  writer: {}\n---\n\n# Talk\n\n```lua\nmodels.default('writer')\n```\n\n")

#: The sections the model may start: one whose result needs escaping in the
#: notice's envelope, one that fails, one that waits on a slow model round.
MODEL_TARGETS = """\
### Child

```lua
return 'child <b>&</b>'
```

### Broken

```lua
error('boom')
```

### Slow

```lua
return models.infer('Take your time.')
```
"""

#: What the prompt may do between two of the model's loops.
BETWEEN = [
    "",
    "local mine = tasks.pending({ origin = 'model' }) if #mine > 0 then tasks.cancel(mine[1]) end",
    "local ids = {} for _, t in ipairs(tasks.pending({ origin = 'model' })) do "
    "ids[#ids + 1] = t.task end log('model tasks ' .. table.concat(ids, ','))",
    "store.write('between', 'x')",
]


@st.composite
def model_call(draw) -> dict:
    """One task built-in call the scripted model makes."""
    name = draw(st.sampled_from(["task", "task_cancel", "task_status", "await_tasks"]))
    if name == "task":
        return {"name": name, "arguments": {
            "target": "### " + draw(st.sampled_from(["Child", "Broken", "Slow"]))}}
    if name == "await_tasks":
        timeout = draw(st.sampled_from([None, 0, 0.5, 2]))
        return {"name": name, "arguments": {} if timeout is None else {"timeout": timeout}}
    return {"name": name, "arguments": {"id": f"0.{draw(st.integers(0, 4))}"}}


@st.composite
def model_programs(draw) -> tuple[str, dict]:
    """A prompt whose section lets the model start and manage tasks over a few
    loops, and its model script: each loop is rounds of task built-in calls
    ended by a text reply; between loops the prompt may cancel one of the
    model's tasks, list them or park; every message the model was sent is
    logged; at the end the prompt cancels the model's tasks or leaves them
    to be abandoned quietly."""
    loops = draw(st.lists(st.lists(st.lists(model_call(), min_size=1, max_size=3), max_size=3),
                          min_size=1, max_size=3))
    rounds = []
    lines = ["local function out(s)",
             "  s = string.gsub(s, '%c', '~')  -- a log line holds no newline",
             "  repeat log(string.sub(s, 1, 200)) s = string.sub(s, 201) until #s == 0",
             "end",
             "tools.allow_tasks()",
             "local msgs = messages.new():user('Go.')"]
    for n, loop in enumerate(loops):
        delay = draw(st.sampled_from([1.0, 0.5, 3.0]))
        for calls in loop:
            rounds.append({"section": "Talk", "delay": delay, "reply": {"tool_calls": calls}})
        rounds.append({"section": "Talk", "delay": delay, "reply": {"text": f"loop {n} done"}})
        lines.append("models.loop(msgs)")
        lines.append(BETWEEN[draw(st.integers(0, len(BETWEEN) - 1))])
        lines.append("msgs:user('Next.')")
    if draw(st.booleans()):
        lines.append("for _, t in ipairs(tasks.pending({ origin = 'model' })) do tasks.cancel(t) end")
    lines += ["for i, m in ipairs(msgs) do out(i .. ' ' .. m.role .. ': ' .. tostring(m.content)) end",
              "return 'talked'"]
    body = "\n".join(line for line in lines if line)
    script = {"rounds": rounds, "default": {"text": "late", "delay": 50.0}}
    return MODEL_HEADER + f"## Talk\n\n```lua\n{body}\n```\n\n" + MODEL_TARGETS, script


@st.composite
def fuzz_inputs(draw, models: bool = True) -> tuple[str, dict | None]:
    """What the differential fuzzer runs: a program and its model script (or
    None); one in five lets the model start tasks, unless the implementation
    lacks the `models` feature (`models` false)."""
    if models and draw(st.integers(0, 4)) == 4:
        return draw(model_programs())
    return draw(programs()), None
