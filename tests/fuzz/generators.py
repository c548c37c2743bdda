"""Hypothesis generators of hostile and broken inputs, one family per input kind.

Each generator mixes inputs that are nearly right (a valid shape with one
field wrong) with inputs that are wrong everywhere (hostile JSON values,
deep nesting, numbers past every limit, raw text mutations), because the
first kind reaches the deep checks and the second the parsers.

What does not live here: running them (`cli`) and the assertions (the
`test_*` modules).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

# -- values ---------------------------------------------------------------------------------

HUGE_INTS = st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**64 + 1,
                             10**30, -(10**30), 2**53 + 1, 0, -1, 1])
HUGE_FLOATS = st.sampled_from([1e300, -1e300, 1e308, 1.7976931348623157e308, 5e-324, -0.0,
                               1e-300, 1e9, 1e9 + 1, 86400.5, 0.5, 2.5])
TEXTS = st.one_of(
    st.sampled_from(["", " ", "#", "## Research", "## Plan", "Plan", "Research", "task",
                     "await_tasks", "task_status", "\x00", "\ud800", "é", "\u202e", "%s",
                     "{}", "null", "\n", "a" * 300]),
    st.text(max_size=12),
)
SCALARS = st.one_of(st.none(), st.booleans(), HUGE_INTS, st.integers(), HUGE_FLOATS,
                    st.floats(allow_nan=False, allow_infinity=False), TEXTS)


def json_values(max_leaves: int = 12):
    """Any JSON value, small."""
    return st.recursive(SCALARS, lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(TEXTS, children, max_size=4)), max_leaves=max_leaves)


def maybe(valid, hostile_rate: int = 16):
    """Mostly `valid`, sometimes any JSON value (about one in `hostile_rate`)."""
    # Not st.integers: Hypothesis favours the ends of a range, which would make
    # "hostile" far more common than one in `hostile_rate`.
    pick = st.sampled_from(range(hostile_rate))
    return pick.flatmap(lambda n: json_values() if n == hostile_rate // 2 else valid)


def optional_fields(required: dict, optional: dict):
    return st.fixed_dictionaries(required, optional=optional)


# -- text mutations ---------------------------------------------------------------------------

@st.composite
def mutate_text(draw, text: str) -> str:
    """`text` as is, or broken: truncated, a character changed, nesting
    inserted, a huge number or a long line spliced in."""
    how = draw(st.sampled_from(["keep"] * 12 + ["truncate", "replace", "nest", "number",
                                "line", "bom", "nul"]))
    if not text:
        return text
    at = draw(st.integers(0, len(text)))
    if how == "truncate":
        return text[:at]
    if how == "replace":
        return text[:at] + draw(st.sampled_from(list('{}[]",:=\'\n\\#-0e'))) + text[at + 1:]
    if how == "nest":
        depth = draw(st.sampled_from([70, 1000, 5000, 100_000]))
        opener, closer = draw(st.sampled_from([("[", "]"), ("{\"a\":", "}"), ("{a=", "}")]))
        return text[:at] + opener * depth + "1" + closer * depth + text[at:]
    if how == "number":
        return text[:at] + draw(st.sampled_from(["9" * 5000, "1e999", "-1e400", "NaN",
                                                 "Infinity", "inf", "nan", "0x1p9999",
                                                 "99999999999999999999"])) + text[at:]
    if how == "line":
        return text[:at] + "x" * draw(st.sampled_from([10_000, 300_000])) + text[at:]
    if how == "bom":
        return "\ufeff" + text
    if how == "nul":
        return text[:at] + "\x00" + text[at:]
    return text


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


# -- model scripts ------------------------------------------------------------------------------

TOOL_NAMES = st.sampled_from(["task", "await_tasks", "task_status", "cancel_task", "tasks",
                              "nope", "", "task "])
ARG_KEYS = st.sampled_from(["target", "id", "ids", "args", "timeout", "reason", "x"])
TARGETS = st.sampled_from(["## Research", "## Plan", "# Delegator", "Research", "## Nope", ""])


def tool_calls():
    call = optional_fields(
        {"name": maybe(TOOL_NAMES)},
        {"arguments": maybe(st.dictionaries(ARG_KEYS, st.one_of(TARGETS, SCALARS), max_size=3)),
         "id": maybe(TEXTS)})
    return st.lists(maybe(call, 30), max_size=3)


def replies():
    finish = {"finish_reason": maybe(st.sampled_from(["stop", "length", "tool_calls", None]))}
    return st.one_of(
        optional_fields({"text": maybe(TEXTS)}, finish),
        optional_fields({"tool_calls": maybe(tool_calls())}, {**finish, "text": maybe(TEXTS)}),
        optional_fields({"fail": maybe(TEXTS)}, {}),
        optional_fields({"overflow": maybe(st.booleans())}, {}),
        optional_fields({}, {  # anything goes
            "text": maybe(TEXTS), "tool_calls": maybe(tool_calls()), **finish,
            "fail": maybe(TEXTS), "overflow": maybe(st.booleans())}))


def delays():
    return st.one_of(st.floats(0, 100), st.integers(0, 10), st.floats(0, 100), HUGE_FLOATS,
                     HUGE_INTS, SCALARS)


@st.composite
def model_scripts(draw) -> str:
    entry = optional_fields({"reply": maybe(replies(), 30)},
                            {"section": maybe(st.sampled_from(["Plan", "Research", "# Plan"])),
                             "delay": delays()})
    model = optional_fields({}, {"id": maybe(TEXTS), "context": maybe(HUGE_INTS),
                                 "description": maybe(TEXTS)})
    script = draw(optional_fields({}, {"rounds": maybe(st.lists(maybe(entry, 30), max_size=5), 30),
                                       "model": maybe(model), "default": maybe(replies())}))
    return draw(mutate_text(dumps(draw(maybe(st.just(script), 30)))))


@st.composite
def operator_scripts(draw) -> str:
    answer = st.one_of(TEXTS, optional_fields({"text": maybe(TEXTS)}, {"delay": delays()}))
    script = draw(maybe(st.lists(maybe(answer, 30), max_size=4), 30))
    return draw(mutate_text(dumps(script)))


# -- tool scripts ---------------------------------------------------------------------------------

TOOL_IDS = st.sampled_from(["promptforge/web/fetch", "web/fetch", "fetch", "", "a/b/c/d",
                            "promptforge/nope"])


def tool_replies():
    reply = optional_fields({}, {"result": maybe(TEXTS), "error": maybe(TEXTS),
                                 "delay": delays(), "match": maybe(json_values(4))})
    return st.lists(maybe(reply, 30), max_size=4)


@st.composite
def tool_scripts(draw) -> str:
    tool = optional_fields({}, {
        "description": maybe(TEXTS),
        "parameters": maybe(st.just({"type": "object", "properties": {"url": {"type": "string"}},
                                     "required": ["url"]}), 8),
        "replies": maybe(tool_replies(), 30),
        "default": maybe(optional_fields({}, {"result": maybe(TEXTS), "error": maybe(TEXTS),
                                              "delay": delays()}), 30)})
    script = draw(optional_fields({}, {"tools": maybe(st.dictionaries(TOOL_IDS, maybe(tool, 30),
                                                                      max_size=3), 30)}))
    return draw(mutate_text(dumps(draw(maybe(st.just(script), 30)))))


# -- lifecycle scenario files -------------------------------------------------------------------

ACTION_NAMES = st.sampled_from(["spawn", "run_fails", "retry", "stop", "stop_tree", "run_completes",
                                "run_cancelled", "fail", "complete",
                                "run_pauses", "pause", "resume", "recover", "status", "nope", ""])


@st.composite
def scenario_files(draw, examples: list[str]) -> tuple[str, str]:
    """(suffix, text): an example scenario broken as text, or a TOML one built
    from actions, actors and hosts nearly right."""
    if draw(st.booleans()):
        return ".toml", draw(st.sampled_from(examples).flatmap(mutate_text))
    actor = optional_fields({"name": maybe(TEXTS)},
                            {"do": maybe(st.one_of(ACTION_NAMES,
                                                   st.lists(ACTION_NAMES, max_size=3)))})
    body = draw(optional_fields({}, {
        "description": maybe(TEXTS),
        "setup": maybe(st.lists(maybe(ACTION_NAMES), max_size=4)),
        "actor": maybe(st.lists(maybe(actor, 30), max_size=4)),
        "host": maybe(json_values(4)),
        "store": maybe(st.sampled_from(["memory", "sqlite", "nope"])),
        "config": maybe(st.dictionaries(TEXTS, SCALARS, max_size=2)),
        "expect": maybe(json_values(4))}))
    if draw(st.booleans()):
        return ".json", draw(mutate_text(dumps(body)))
    return ".toml", draw(mutate_text(toml_document(body)))


# -- replay files ---------------------------------------------------------------------------------

@st.composite
def replay_files(draw) -> str:
    choice = maybe(st.one_of(
        st.tuples(st.sampled_from(["chain", "latency:store", "replayed"]),
                  maybe(st.integers(1, 4)), maybe(st.integers(0, 3))).map(list),
        st.tuples(st.just("chain"), HUGE_INTS, HUGE_INTS).map(list)))
    body = draw(optional_fields({"choices": maybe(st.lists(choice, max_size=8), 30)},
                                {"args": maybe(TEXTS), "prompt": maybe(TEXTS),
                                 "seed": maybe(HUGE_INTS)}))
    return draw(mutate_text(dumps(draw(maybe(st.just(body), 30)))))


# -- case files (TOML) --------------------------------------------------------------------------

def toml_value(value) -> str:
    """A TOML inline spelling of a JSON-ish value (None has no TOML form: an
    empty table stands for it)."""
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(text, text)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(table: dict) -> str:
    """A TOML document of `key = inline value` lines."""
    return "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in table.items())


def toml_string(text: str) -> str:
    """A TOML basic string: escapes for quotes, backslashes and controls only."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


PROMPT = '''---
name: fuzz
description: fuzz case
promptforge: 0
---

# Fuzz

```lua
return 'ok ' .. args
```
'''

MODEL_PROMPT = '''---
name: fuzz-model
description: fuzz case with a model
promptforge: 0
capabilities: [promptforge/user-input]
models:
  writer: {}
---

# Fuzz

```lua
models.default('writer')
```

## Plan

```lua
tools.allow_tasks()
local msgs = messages.new():user('go')
models.loop(msgs)
return msgs[#msgs].content
```

## Research

```lua
return input.ask()
```
'''


LIFECYCLE_OPS = st.sampled_from([
    "spawn", "recover", "run_completes", "run_fails", "retry", "continue_with", "stop", "config",
    "run_pauses", "notices", "store_retry_claim", "list", "store_rewrite_state",
    "run_cancelled", "meta_for", "delete_tree", "stop_tree", "get", "nope"])
LIFECYCLE_FIELDS = st.sampled_from([
    "parent", "from_task", "agent", "agents", "input", "label", "kind", "state", "error", "result",
    "run", "launch_error", "during_launch", "during", "err", "raise", "graceful", "n", "step",
    "max_depth", "max_attempts", "max_continuations", "continue_hook", "stopper", "via"])


def operations():
    op = st.fixed_dictionaries(
        {"op": maybe(LIFECYCLE_OPS)},
        optional={"as": st.sampled_from(["t1", "t2"]), "task": st.sampled_from(["t1", "t2", "x"])}
    ).flatmap(lambda base: st.dictionaries(LIFECYCLE_FIELDS, maybe(st.one_of(
        TEXTS, st.booleans(), st.integers(-2, 5), HUGE_INTS, st.sampled_from(["t1", "t2"]))),
        max_size=3).map(lambda extra: {**extra, **base}))
    return st.lists(maybe(op, 30), min_size=1, max_size=6)


@st.composite
def case_files(draw) -> str:
    harness = optional_fields({}, {
        "args": maybe(TEXTS), "concurrency": maybe(st.one_of(st.integers(1, 4), HUGE_INTS)),
        "store": maybe(st.dictionaries(TEXTS, TEXTS, max_size=2)),
        "latency": maybe(st.dictionaries(st.sampled_from(["store", "model", "operator", "tool"]),
                                         delays(), max_size=2)),
        "cancel_at": delays(),
        "refuse": maybe(st.dictionaries(st.sampled_from(["write", "read", "*"]),
                                        st.lists(TEXTS, max_size=2), max_size=1)),
        # Few schedules or an invalid count: 5000 valid schedules is a slow
        # case, not a broken one.
        "seeds": st.one_of(st.integers(0, 2), HUGE_INTS.filter(lambda n: not 3 <= n <= 10000),
                           st.sampled_from([10001, "3", 2.5, [], None])),
        "model_script": maybe(st.builds(json.loads, model_scripts().filter(_is_json_object))),
        "operator_script": maybe(st.builds(json.loads, operator_scripts().filter(_is_json_list))),
    })
    expect = optional_fields({}, {
        "outcome": maybe(st.sampled_from(["ok", "failed", "cancelled"])),
        "result": maybe(st.one_of(TEXTS, st.fixed_dictionaries({"regex": TEXTS}))),
        "virtual_time": maybe(HUGE_FLOATS), "logs": maybe(st.lists(TEXTS, max_size=2))})
    lifecycle = draw(st.booleans())
    body = ({"operations": maybe(operations(), 30), "features": maybe(st.just(["lifecycle"]))}
            if lifecycle else {"prompt": maybe(st.sampled_from([PROMPT, MODEL_PROMPT]), 30),
                               "features": maybe(st.just(["tasks"]))})
    case = draw(optional_fields(
        {"clauses": maybe(st.just(["tasks.glance.example-two-tasks"]), 30), **body},
        {"flags": maybe(st.sampled_from([["any-schedule"], ["canonical"]])),
         "harness": maybe(harness, 30), "expect": maybe(expect, 30)}))
    lines = []
    for key, value in case.items():
        if isinstance(value, dict) and draw(st.booleans()):
            lines.append(f"[{key}]")
            lines += [f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()]
        else:
            lines.insert(0, f"{key} = {toml_value(value)}")
    return draw(mutate_text("\n".join(lines) + "\n"))


def _is_json_object(text: str) -> bool:
    return _decodes_to(text, dict)


def _is_json_list(text: str) -> bool:
    return _decodes_to(text, list)


def _decodes_to(text: str, kind: type) -> bool:
    try:
        return isinstance(json.loads(text), kind)
    except (ValueError, RecursionError):
        return False


@st.composite
def expectations_files(draw) -> tuple[str, str]:
    """(suffix, text): a TOML or JSON expectations file."""
    table = draw(maybe(st.dictionaries(
        st.sampled_from(["examples/two-tasks", "examples", "two-tasks", "nope", ""]),
        st.one_of(st.sampled_from(["fail", "skip", "pass"]),
                  st.dictionaries(st.sampled_from(["two-tasks", "x"]),
                                  st.sampled_from(["fail", "skip", "x"]), max_size=2), SCALARS),
        max_size=3), 8))
    if draw(st.booleans()) or not isinstance(table, dict):
        return ".json", draw(mutate_text(dumps(table)))
    text = "\n".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in table.items()) + "\n"
    return ".toml", draw(mutate_text(text))


# -- flags ------------------------------------------------------------------------------------

INT_FLAG_VALUES = st.one_of(HUGE_INTS.map(str), st.sampled_from(
    ["", "x", "1.5", "1e3", "-0", "+5", "0x10", "٣", "9" * 40, " 7 ", "inf", "nan"]),
    st.integers(-3, 3).map(str))
SECONDS_VALUES = st.one_of(HUGE_FLOATS.map(repr), st.sampled_from(
    ["inf", "-inf", "nan", "1e309", "-1", "0", "x", "", "1e9", "1000000001", "86401", "0.001"]))
PATTERNS = st.sampled_from(["(", "[", "*", "a{99999999999}", "(" * 5000, "two", "^examples/",
                            "\\", "x" * 2000, "(?P<", "tasks\\."])
PATHS = st.sampled_from(["OUT", "OUT", "/nonexistent-dir/out", "/", ".", "", "/proc/self/x",
                         "a\x00b", "x" * 5000, "sub/deeper/out", "/dev/full"])
STRATEGIES = st.one_of(st.sampled_from(
    ["canonical", "random:3", "pct:1:2", "pct:1:99999999999", "pct:" + "9" * 30, "random:",
     "random:-" + "9" * 25, "replay:", "replay:/nonexistent", "fast", "pct:1:0", "random:٣",
     "pct:1:2:3"]), st.text(max_size=8))
