"""The message-list check `models.loop` runs at the call and before every
round: each rule's exact message from the conversations chapter, the first
broken rule only, in the chapter's order (kit: conversation.list-check)."""

from __future__ import annotations

import pytest

from forge.engine.conversation import check_list, checked_list, estimate_tokens
from forge.lua.runtime import LuaRuntime

LUA = LuaRuntime()


def lua(source: str):
    return LUA.lua.execute(f"return {source}".encode())


U = "{role = 'user', content = 'hi'}"
CALL = "{id = 'c1', name = 'f', arguments = {}}"

#: (the list, in Lua; the message of the first rule it breaks)
BROKEN = [
    ("nil", "messages must be a table of message tables, got nil"),
    ("'text'", "messages must be a table of message tables, got string"),
    ("{" + U + ", {role = 'user', content = 'x', extra = print}}",
     "messages must be a JSON-representable table"),
    ("{}", "messages must not be empty"),
    ("{[1] = " + U + ", [3] = " + U + "}", "messages must be an array of message tables"),
    ("{" + U + ", 'user'}", "messages[2] must be a message table"),
    ("{{content = 'x'}}", "messages[1] role must be a string, one of: system, user, assistant, tool"),
    ("{{'user', content = 'x'}}",
     "messages[1] role must be a string, one of: system, user, assistant, tool"),
    ("{{role = 'robot', content = 'x'}}",
     'messages[1] role "robot" is unknown; known roles: system, user, assistant, tool'),
    ("{{role = 'user'}}",
     "messages[1] content must be a string or a non-empty array of content parts"),
    ("{{role = 'user', content = {}}}",
     "messages[1] content must be a string or a non-empty array of content parts"),
    ("{{role = 'user', content = {type = 'text', text = 'x'}}}",
     "messages[1] content must be a string or a non-empty array of content parts"),
    ("{{role = 'user', content = 5}}",
     "messages[1] content must be a string or a non-empty array of content parts"),
    ("{{role = 'user', content = {'x'}}}",
     "messages[1] content part 1 must be a table with a string type field"),
    ("{{role = 'user', content = {{type = 'text', text = 'a'}, {text = 'b'}}}}",
     "messages[1] content part 2 must be a table with a string type field"),
    ("{{role = 'user', content = {{type = 'audio'}}}}",
     'messages[1] content part 1 has unknown type "audio"; known types: text, image_url'),
    ("{{role = 'user', content = {{type = 'text', text = 3}}}}",
     "messages[1] content part 1 is a text part and must set a string text field"),
    ("{{role = 'user', content = {{type = 'image_url', image_url = {'u'}}}}}",
     "messages[1] content part 1 is an image_url part and must set an image_url table with a "
     "string url field"),
    ("{{role = 'user', content = {{type = 'image_url', image_url = 'u'}}}}",
     "messages[1] content part 1 is an image_url part and must set an image_url table with a "
     "string url field"),
    ("{{role = 'tool', content = 'x', tool_call_id = 7}}",
     "messages[1] tool_call_id must be a string"),
    ("{{role = 'tool', content = 'x'}}",
     "messages[1] is a tool message and must set a string tool_call_id"),
    ("{{role = 'assistant', content = '', tool_calls = 'f'}}",
     "messages[1] tool_calls must be an array"),
    ("{{role = 'assistant', content = '', tool_calls = {x = " + CALL + "}}}",
     "messages[1] tool_calls must be an array"),
    ("{{role = 'assistant', content = '', tool_calls = {" + CALL + ", 'f'}}}",
     "messages[1] tool_calls[2] must be a table"),
    ("{{role = 'assistant', content = '', tool_calls = {{name = 'f'}}}}",
     "messages[1] tool_calls[1] must set a string id"),
    ("{{role = 'assistant', content = '', tool_calls = {{}}}}",
     "messages[1] tool_calls[1] must set a string id"),
    ("{{role = 'assistant', content = '', tool_calls = {{id = 'c'}}}}",
     "messages[1] tool_calls[1] must set a string name"),
    ("{{role = 'assistant', content = '', tool_calls = {{id = 'c', name = 'f', arguments = {1}}}}}",
     "messages[1] tool_calls[1] arguments must be a table"),
    ("{{role = 'assistant', content = '', tool_calls = {{id = 'c', name = 'f', "
     "arguments = {a = 1, [2] = 1}}}}}", "messages[1] tool_calls[1] arguments must be a table"),
    ("{{role = 'assistant', content = '', tool_calls = {{id = 'c', name = 'f', arguments = 'x'}}}}",
     "messages[1] tool_calls[1] arguments must be a table"),
    # Across records, in the chapter's order.
    ("{{role = 'system', content = 's'}, {role = 'system', content = {{type = 'text', text = 't'}}}, "
     + U + "}", "messages[2] is a system message with content parts; only plain text system "
     "messages can be composed"),
    ("{{role = 'user', content = 'x', tool_calls = {" + CALL + "}}}",
     "messages[1] sets tool_calls but is not an assistant message"),
    ("{{role = 'user', content = 'x', tool_call_id = 'c1'}}",
     "messages[1] sets a tool_call_id but is not a tool message"),
    ("{" + U + ", {role = 'system', content = 's'}}",
     "messages[2] is a system message outside the leading system block"),
    ("{{role = 'assistant', content = '', tool_calls = {" + CALL + ", " + CALL + "}}}",
     'messages[1] tool call id "c1" duplicates an earlier tool call'),
    ("{{role = 'assistant', content = '', tool_calls = {" + CALL + "}}, " + U + "}",
     'messages[1] tool call "c1" has no tool result'),
    ("{{role = 'assistant', content = '', tool_calls = {" + CALL + "}}}",
     'messages[1] tool call "c1" has no tool result'),
    ("{" + U + ", {role = 'tool', content = 'r', tool_call_id = 'c9'}}",
     'messages[2] is an orphan tool record: no pending assistant tool call with id "c9"'),
    # The first broken rule only: record fields before any rule across records.
    ("{{role = 'tool', content = 'r', tool_call_id = 'c9'}, {role = 'user'}}",
     "messages[2] content must be a string or a non-empty array of content parts"),
]


@pytest.mark.parametrize("source, message", BROKEN)
def test_each_broken_rule_gives_its_message(source, message):
    fault = check_list(lua(source))
    assert fault is not None and fault.message == message


def test_only_rules_across_records_are_reported_as_failed_rounds():
    assert not check_list(lua("{{role = 'user'}}")).across
    assert check_list(lua("{" + U + ", {role = 'system', content = 's'}}")).across


def test_a_list_that_passes_comes_back_as_data_and_records():
    source = ("{{role = 'system', content = 's'}, {role = 'user', content = {{type = 'text', "
              "text = 'caf\\195\\169'}, {type = 'image_url', image_url = {url = 'u'}}}}, "
              "{role = 'assistant', content = '', tool_calls = {" + CALL + ", {id = 'c2', "
              "name = 'g', arguments = {k = 1}}}}, {role = 'tool', content = 'a', "
              "tool_call_id = 'c2'}, {role = 'tool', content = 'b', tool_call_id = 'c1'}}")
    fault, data, records = checked_list(lua(source))
    assert fault is None
    assert data[2]["tool_calls"][0]["arguments"] == {}      # an empty table is an object here
    assert data[1]["content"][0]["text"] == "café"
    assert [r.role for r in records] == ["system", "user", "assistant", "tool", "tool"]
    assert records[2].call_ids == ("c1", "c2")
    assert records[2].calls_json == ('{"arguments":[],"id":"c1","name":"f"}',
                                     '{"arguments":{"k":1},"id":"c2","name":"g"}')
    # The precheck: composed UTF-8 bytes / 4, plus 4 per composed record.
    assert estimate_tokens(records) == (1 + 5 + sum(map(len, records[2].calls_json)) + 1 + 1) // 4 + 4 * 5
