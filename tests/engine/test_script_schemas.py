"""The shipped JSON Schemas of the model, operator and tool scripts
(kit: script-schema): each rule refuses a bad script in one line naming the
file, the entry as a JSON pointer and the rule; every script the kit ships
satisfies its schema; and the schemas are valid Draft 2020-12.
"""

from __future__ import annotations

import json
import pathlib

import jsonschema
import pytest
import tomllib

from forge import scriptschema
from forge.errors import InputError
from forge.scripts import model_script_from_data, operator_script_from_data
from forge.toolscript import tool_script_from_data

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = {scriptschema.MODEL: model_script_from_data,
         scriptschema.OPERATOR: operator_script_from_data,
         scriptschema.TOOL: tool_script_from_data}
OK = {"text": "fine"}

# (schema, script, the one line after "t.json: ")
RULES = [
    # model scripts
    ("model-script", [], "/: expected a JSON object, got []"),
    ("model-script", {"turns": []}, "/: unknown field `turns`"),
    ("model-script", {"model": {"name": "m"}}, "/model: unknown field `name`"),
    ("model-script", {"model": {"id": " "}}, "/model/id: must be a non-empty string"),
    ("model-script", {"model": {"context": 0}}, "/model/context: must be at least 1, got 0"),
    ("model-script", {"model": {"context": 2**32}},
     "/model/context: must be at most 4294967295, got 4294967296"),
    ("model-script", {"model": {"context": 1.5}}, "/model/context: expected an integer, got 1.5"),
    ("model-script", {"model": {"description": 1}}, "/model/description: expected a string, got 1"),
    ("model-script", {"rounds": {}}, "/rounds: expected an array, got {}"),
    ("model-script", {"rounds": [OK]}, "/rounds/0: missing required field `reply`"),
    ("model-script", {"rounds": [{"reply": OK, "when": 1}]}, "/rounds/0: unknown field `when`"),
    ("model-script", {"rounds": [{"reply": OK}, {"reply": OK, "section": "## Plan"}]},
     "/rounds/1/section: is the heading text without `#` marks"),
    ("model-script", {"rounds": [{"reply": OK, "section": ""}]},
     "/rounds/0/section: must be a non-empty string"),
    ("model-script", {"rounds": [{"reply": OK, "round": 0}]},
     "/rounds/0/round: must be at least 1, got 0"),
    ("model-script", {"rounds": [{"reply": OK, "round": "1"}]},
     "/rounds/0/round: expected an integer, got \"1\""),
    ("model-script", {"rounds": [{"reply": OK, "user_contains": " "}]},
     "/rounds/0/user_contains: must be a non-empty string"),
    ("model-script", {"rounds": [{"reply": OK, "delay": -1}]},
     "/rounds/0/delay: must be a number of seconds from 0 to 1e9"),
    ("model-script", {"rounds": [{"reply": OK, "until": 1e10}]},
     "/rounds/0/until: must be a number of seconds from 0 to 1e9"),
    ("model-script", {"rounds": [{"reply": OK, "delay": 1, "until": 2}]},
     "/rounds/0: `delay` and `until` exclude each other"),
    ("model-script", {"rounds": [{"reply": 5}]}, "/rounds/0/reply: expected a JSON object, got 5"),
    ("model-script", {"rounds": [{"reply": {"text": "a", "tone": "dry"}}]},
     "/rounds/0/reply: unknown field `tone`"),
    ("model-script", {"rounds": [{"reply": {}}]},
     "/rounds/0/reply: a reply needs `text`, `tool_calls`, `echo`, `fail` or `overflow`"),
    ("model-script", {"rounds": [{"reply": {"echo": False}}]},
     "/rounds/0/reply: a reply needs `text`, `tool_calls`, `echo`, `fail` or `overflow`"),
    ("model-script", {"rounds": [{"reply": {"text": 3}}]},
     "/rounds/0/reply/text: expected a string, got 3"),
    ("model-script", {"rounds": [{"reply": {"fail": "down", "text": "a"}}]},
     "/rounds/0/reply: a failed round (`fail` or `overflow`) carries no `text`, `tool_calls` "
     "or `echo`"),
    ("model-script", {"rounds": [{"reply": {"overflow": True, "echo": True}}]},
     "/rounds/0/reply: a failed round (`fail` or `overflow`) carries no `text`, `tool_calls` "
     "or `echo`"),
    ("model-script", {"rounds": [{"reply": {"fail": ""}}]},
     "/rounds/0/reply/fail: must be a non-empty string"),
    ("model-script", {"rounds": [{"reply": {"overflow": 1}}]},
     "/rounds/0/reply/overflow: expected true or false, got 1"),
    ("model-script", {"rounds": [{"reply": {"echo": True, "text": "a"}}]},
     "/rounds/0/reply: an `echo` reply takes its text from the user message: no `text`"),
    ("model-script", {"rounds": [{"reply": {"text": "a", "finish_reason": ""}}]},
     "/rounds/0/reply/finish_reason: must be a non-empty string or null"),
    ("model-script", {"rounds": [{"reply": {"tool_calls": {}}}]},
     "/rounds/0/reply/tool_calls: expected an array, got {}"),
    ("model-script", {"rounds": [{"reply": {"tool_calls": [{"arguments": {}}]}}]},
     "/rounds/0/reply/tool_calls/0: missing required field `name`"),
    ("model-script", {"rounds": [{"reply": {"tool_calls": [{"name": "t", "args": {}}]}}]},
     "/rounds/0/reply/tool_calls/0: unknown field `args`"),
    ("model-script", {"rounds": [{"reply": {"tool_calls": [{"name": "t", "arguments": [1]}]}}]},
     "/rounds/0/reply/tool_calls/0/arguments: expected a JSON object, got [1]"),
    ("model-script", {"rounds": [{"reply": {"tool_calls": [{"name": "t", "id": ""}]}}]},
     "/rounds/0/reply/tool_calls/0/id: must be a non-empty string"),
    ("model-script", {"default": {"text": "a", "section": "Plan"}},
     "/default: unknown field `section`"),
    ("model-script", {"default": {"echo": "yes"}},
     "/default/echo: expected true or false, got \"yes\""),
    ("model-script", {"default": {"text": "a", "delay": 2, "until": 3}},
     "/default: `delay` and `until` exclude each other"),
    ("model-script", {"stop_at": "5"}, "/stop_at: must be a number of seconds from 0 to 1e9"),
    ("model-script", {"stop_at": -1}, "/stop_at: must be a number of seconds from 0 to 1e9"),
    # operator scripts
    ("operator-script", {}, "/: expected an array, got {}"),
    ("operator-script", ["fine", 3], "/1: an answer is a string or {\"text\": ..., \"delay\": ...}"),
    ("operator-script", [{"delay": 1}], "/0: missing required field `text`"),
    ("operator-script", [{"text": "a", "after": 1}], "/0: unknown field `after`"),
    ("operator-script", [{"text": 1}], "/0/text: expected a string, got 1"),
    ("operator-script", [{"text": "a", "delay": -2}],
     "/0/delay: must be a number of seconds from 0 to 1e9"),
    # tool scripts
    ("tool-script", [], "/: expected a JSON object, got []"),
    ("tool-script", {"tool": {}}, "/: unknown field `tool`"),
    ("tool-script", {"tools": []}, "/tools: expected a JSON object, got []"),
    ("tool-script", {"tools": {"Web/x/y": {}}},
     "/tools/Web~1x~1y: a key is an exact tool path namespace/pack/name, each segment of "
     "lowercase ASCII letters, digits, '-', '_', '.'"),
    ("tool-script", {"tools": {"a/b/c": 1}}, "/tools/a~1b~1c: expected a JSON object, got 1"),
    ("tool-script", {"tools": {"a/b/c": {"calls": []}}}, "/tools/a~1b~1c: unknown field `calls`"),
    ("tool-script", {"tools": {"a/b/c": {"description": 2}}},
     "/tools/a~1b~1c/description: expected a string, got 2"),
    ("tool-script", {"tools": {"a/b/c": {"parameters": []}}},
     "/tools/a~1b~1c/parameters: expected a JSON object, got []"),
    ("tool-script", {"tools": {"a/b/c": {"replies": {}}}},
     "/tools/a~1b~1c/replies: expected an array, got {}"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{}]}}},
     "/tools/a~1b~1c/replies/0: a reply has exactly one of `result`, `error` or `\"never\": true`"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"result": "x", "error": "y"}]}}},
     "/tools/a~1b~1c/replies/0: a reply has exactly one of `result`, `error` or `\"never\": true`"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"never": True, "delay": 1}]}}},
     "/tools/a~1b~1c/replies/0: a reply that never answers has no delay"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"never": "yes"}]}}},
     "/tools/a~1b~1c/replies/0/never: expected true or false, got \"yes\""),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"result": "x", "match": 1}]}}},
     "/tools/a~1b~1c/replies/0/match: expected a JSON object, got 1"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"result": "x", "when": 1}]}}},
     "/tools/a~1b~1c/replies/0: unknown field `when`"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"result": 5}]}}},
     "/tools/a~1b~1c/replies/0/result: expected a string, got 5"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"error": " "}]}}},
     "/tools/a~1b~1c/replies/0/error: must be a non-empty string"),
    ("tool-script", {"tools": {"a/b/c": {"replies": [{"result": "x", "delay": 2e9}]}}},
     "/tools/a~1b~1c/replies/0/delay: must be a number of seconds from 0 to 1e9"),
    ("tool-script", {"tools": {"a/b/c": {"default": {"match": {}, "result": "x"}}}},
     "/tools/a~1b~1c/default: unknown field `match`"),
]


@pytest.mark.parametrize("name, script, message", RULES)
def test_each_rule_refuses_a_bad_script_in_one_line(name, script, message):
    """The file, the entry as a JSON pointer, the rule (kit: script-schema)."""
    with pytest.raises(InputError) as e:
        BUILD[name](script, "t.json")
    assert e.value.render() == f"t.json: {message}"
    assert "\n" not in e.value.render()


def _custom_messages(node) -> set[str]:
    if isinstance(node, dict):
        found = {node["errorMessage"]} if "errorMessage" in node else set()
        return found.union(*(_custom_messages(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_custom_messages(v) for v in node))
    return set()


@pytest.mark.parametrize("name", scriptschema.NAMES)
def test_every_worded_rule_of_a_schema_has_a_bad_script_above(name):
    """No rule of the schemas goes untested (kit: script-schema)."""
    tested = " ".join(m for n, _, m in RULES if n == name)
    for message in _custom_messages(scriptschema.schema(name)):
        assert message in tested, message


@pytest.mark.parametrize("name", scriptschema.NAMES)
def test_the_schemas_are_valid_draft_2020_12(name):
    """The shipped schema files themselves (kit: script-schema)."""
    jsonschema.Draft202012Validator.check_schema(scriptschema.schema(name))
    assert scriptschema.path_of(name).is_file()


def _shipped() -> list[tuple[str, str, object]]:
    out = []
    for path in sorted((ROOT / "examples").rglob("*.json")):
        kind = {".model": "model-script", ".tools": "tool-script",
                ".operator": "operator-script"}.get(pathlib.Path(path.stem).suffix)
        if kind is not None:
            out.append((kind, str(path.relative_to(ROOT)), json.loads(path.read_text())))
    for path in sorted((ROOT / "conformance" / "cases").rglob("*.toml")):
        harness = tomllib.loads(path.read_text()).get("harness", {})
        for key, kind in (("model_script", "model-script"), ("tool_script", "tool-script"),
                          ("operator_script", "operator-script")):
            if key in harness:
                out.append((kind, f"{path.relative_to(ROOT)} [{key}]", harness[key]))
    return out


SHIPPED = _shipped()


def test_the_kit_ships_scripts_of_every_kind():
    """So the check below covers all three schemas (kit: script-schema)."""
    assert {kind for kind, _, _ in SHIPPED} == set(scriptschema.NAMES)


@pytest.mark.parametrize("name, where, script", SHIPPED, ids=[w for _, w, _ in SHIPPED])
def test_every_shipped_script_satisfies_its_schema(name, where, script):
    """Examples and conformance cases alike (kit: script-schema)."""
    assert scriptschema.problem(name, script) is None
    BUILD[name](script, where)
