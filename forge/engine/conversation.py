"""Message lists as `models.loop` sees them: checking, composing, measuring.

What lives here: the checks a message list must pass at the `models.loop`
call and before every round (the list as a whole, each record's own fields,
then the rules across records, first failure only, with the conversation
chapter's exact messages), the composition of the list into what a model
receives (merging runs of records) as far as the precheck needs it, the
precheck's token estimate, and the JSON form of a list for the observation.
What does not: running rounds or appending records (`models`).

Lists and records are Lua tables.  Everything here reads them raw (their
conversion by `from_lua_json`, and lupa's `items()`), never through
`__index`, so a record's metatable can neither answer for it nor run code
during a check.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from forge.lua.runtime import LuaTable, NotJSON, from_lua_json, typename

ROLES = ("system", "user", "assistant", "tool")
_ROLE_LIST = "system, user, assistant, tool"


@attrs.frozen
class ListFault:
    """The first broken rule: its message, and whether it spans records
    (those are also reported as a failed round)."""

    message: str
    across: bool = False


def check_list(value: Any) -> ListFault | None:
    """The first rule `value` breaks as a message list, or None."""
    return checked_list(value)[0]


def checked_list(value: Any) -> tuple[ListFault | None, list | None, list | None]:
    """`check_list`'s answer, and for a list that passes, the list as JSON
    data (as `list_json` gives it) and its records as read (what
    `estimate_tokens` measures).

    The list is converted first (the JSON check needs the conversion
    anyway), and the record rules then read the converted data: a Lua table
    whose keys are exactly 1..n is a list there and any other table a dict,
    a string is text, and the only key a dict cannot show the type of (an
    integer key reads as its digits) is looked up in Lua, for a call's
    arguments.
    """
    if not isinstance(value, LuaTable):
        return (ListFault(f"messages must be a table of message tables, got {typename(value)}"),
                None, None)
    # from_lua_json refuses functions, userdata, non-finite numbers, keys
    # JSON cannot hold, text that is not UTF-8, and (by depth) cycles.
    try:
        data = from_lua_json(value)
    except NotJSON:
        return ListFault("messages must be a JSON-representable table"), None, None
    if not data:
        return ListFault("messages must not be empty"), None, None
    if not isinstance(data, list):
        return ListFault("messages must be an array of message tables"), None, None
    parsed = []
    for index, record in enumerate(data, 1):
        fault, rec = _check_record(index, record, value)
        if fault:
            return ListFault(fault), None, None
        parsed.append(rec)
    fault = _check_across(parsed)
    if fault:
        return ListFault(fault, across=True), None, None
    return None, _calls_as_objects(data), parsed


def user_record(text: str) -> _Record:
    """The record `{role = "user", content = text}` as read, for a record the
    engine appends itself after the check (a task notice)."""
    return _Record(role="user", text=text)


@attrs.frozen
class _Record:
    role: str
    #: Plain text content, or None when the content is a parts array.
    text: str | None
    parts: tuple = ()
    has_tool_calls: bool = False
    call_ids: tuple[str, ...] = ()
    calls_json: tuple[str, ...] = ()
    tool_call_id: str | None = None
    has_tool_call_id: bool = False


def _table(value: Any) -> bool:
    """Whether converted data came from a Lua table."""
    return isinstance(value, (dict, list))


def _fields(value: Any) -> dict:
    """A converted table's string-keyed fields (an array has none)."""
    return value if isinstance(value, dict) else {}


def _check_record(index: int, record: Any, lua_list: LuaTable) -> tuple[str | None, _Record | None]:
    at = f"messages[{index}]"
    if not _table(record):
        return f"{at} must be a message table", None
    fields = _fields(record)
    role = fields.get("role")
    if not isinstance(role, str):
        return f"{at} role must be a string, one of: {_ROLE_LIST}", None
    if role not in ROLES:
        return f'{at} role "{role}" is unknown; known roles: {_ROLE_LIST}', None
    content = fields.get("content")
    text, parts = None, ()
    content_rule = f"{at} content must be a string or a non-empty array of content parts"
    if isinstance(content, str):
        text = content
    elif isinstance(content, list) and content:
        parsed_parts = []
        for p, item in enumerate(content, 1):
            fault, part = _check_part(at, p, item)
            if fault:
                return fault, None
            parsed_parts.append(part)
        parts = tuple(parsed_parts)
    else:
        return content_rule, None
    has_id = "tool_call_id" in fields
    tool_call_id = fields.get("tool_call_id")
    if has_id and not isinstance(tool_call_id, str):
        return f"{at} tool_call_id must be a string", None
    if role == "tool" and not has_id:
        return f"{at} is a tool message and must set a string tool_call_id", None
    calls = fields.get("tool_calls")
    call_ids, calls_json = [], []
    if calls is not None:
        if not _table(calls):
            return f"{at} tool_calls must be an array", None
        if isinstance(calls, dict) and calls:
            return f"{at} tool_calls must be an array", None
        for c, call in enumerate(calls if isinstance(calls, list) else (), 1):
            cat = f"{at} tool_calls[{c}]"
            if not _table(call):
                return f"{cat} must be a table", None
            cf = _fields(call)
            if not isinstance(cf.get("id"), str):
                return f"{cat} must set a string id", None
            if not isinstance(cf.get("name"), str):
                return f"{cat} must set a string name", None
            arguments = cf.get("arguments")
            # A keyed table: `{}` passes, a non-empty sequence does not, and
            # neither does a table with an integer key.
            if arguments is not None and not (
                    arguments == [] or (isinstance(arguments, dict)
                                        and _string_keys(lua_list, index, c))):
                return f"{cat} arguments must be a table", None
            call_ids.append(cf["id"])
            calls_json.append(json.dumps({
                "id": cf["id"], "name": cf["name"],
                "arguments": arguments if arguments is not None else {},
            }, separators=(",", ":"), sort_keys=True, ensure_ascii=False))
    return None, _Record(
        role=role, text=text, parts=parts, has_tool_calls=calls is not None,
        call_ids=tuple(call_ids), calls_json=tuple(calls_json),
        tool_call_id=tool_call_id if has_id else None, has_tool_call_id=has_id,
    )


def _string_keys(lua_list: LuaTable, index: int, call: int) -> bool:
    """Whether the arguments table of record `index`'s call `call` has only
    string keys (read in Lua, raw: its conversion shows integer keys as text)."""
    # lua: each key was found present by a raw read (`_check_record`), so no `__index` runs
    arguments = lua_list[index][b"tool_calls"][call][b"arguments"]  # lua: present raw
    return all(isinstance(k, bytes) for k in arguments.keys())


def _check_part(at: str, p: int, part: Any) -> tuple[str | None, tuple | None]:
    pat = f"{at} content part {p}"
    if not _table(part):
        return f"{pat} must be a table with a string type field", None
    pf = _fields(part)
    kind = pf.get("type")
    if not isinstance(kind, str):
        return f"{pat} must be a table with a string type field", None
    if kind == "text":
        if not isinstance(pf.get("text"), str):
            return f"{pat} is a text part and must set a string text field", None
        return None, ("text", pf["text"])
    if kind == "image_url":
        image = pf.get("image_url")
        if not _table(image) or not isinstance(_fields(image).get("url"), str):
            return (f"{pat} is an image_url part and must set an image_url table with a string "
                    "url field"), None
        return None, ("image_url", "")
    return f'{pat} has unknown type "{kind}"; known types: text, image_url', None


def _check_across(records: list[_Record]) -> str | None:
    leading = 0
    while leading < len(records) and records[leading].role == "system":
        leading += 1
    if leading >= 2:
        for n in range(leading):
            if records[n].text is None:
                return (f"messages[{n + 1}] is a system message with content parts; only plain "
                        "text system messages can be composed")
    seen_ids: set[str] = set()
    pending: list[str] = []
    batch_at = 0
    for n, rec in enumerate(records, 1):
        if rec.has_tool_calls and rec.role != "assistant":
            return f"messages[{n}] sets tool_calls but is not an assistant message"
        if rec.has_tool_call_id and rec.role != "tool":
            return f"messages[{n}] sets a tool_call_id but is not a tool message"
        if rec.role != "tool" and pending:
            return f'messages[{batch_at}] tool call "{pending[0]}" has no tool result'
        if rec.role == "system" and n > leading:
            return f"messages[{n}] is a system message outside the leading system block"
        if rec.role == "assistant" and rec.call_ids:
            for call_id in rec.call_ids:
                if call_id in seen_ids:
                    return f'messages[{n}] tool call id "{call_id}" duplicates an earlier tool call'
                seen_ids.add(call_id)
            pending, batch_at = list(rec.call_ids), n
        elif rec.role == "tool":
            if rec.tool_call_id not in pending:
                return (f"messages[{n}] is an orphan tool record: no pending assistant tool call "
                        f'with id "{rec.tool_call_id}"')
            pending.remove(rec.tool_call_id)
    if pending:
        return f'messages[{batch_at}] tool call "{pending[0]}" has no tool result'
    return None


# -- composition and the precheck ---------------------------------------------------------

def estimate_tokens(records: list[_Record]) -> int:
    """The precheck's estimate for a checked list's records (`checked_list`):
    the composed conversation's UTF-8 bytes divided by 4, plus 4 per
    composed (merged) record."""
    total = 0
    merged = 0
    previous: str | None = None
    leading = True
    for rec in records:
        if rec.role == "system" and leading:
            kind = "system"
        else:
            leading = False
            if rec.role == "assistant":
                kind = "assistant_calls" if rec.call_ids else "assistant_text"
            else:
                kind = rec.role
        joins = (
            (kind == previous and kind in ("system", "user", "assistant_text"))
            or (previous == "assistant_text" and kind == "assistant_calls")
        )
        if not joins:
            merged += 1
        elif kind in ("system", "user") and (rec.text is None or rec.text):
            total += 2      # the blank line that joins the two texts
        total += _content_bytes(rec)
        previous = kind
    return total // 4 + 4 * merged


def _content_bytes(rec: _Record) -> int:
    size = len(rec.text.encode("utf-8")) if rec.text is not None else 0
    size += sum(len(text.encode("utf-8")) for kind, text in rec.parts if kind == "text")
    size += sum(len(c.encode("utf-8")) for c in rec.calls_json)
    return size


def list_json(value: LuaTable) -> list:
    """The list as JSON data for the observation (records as they are)."""
    try:
        data = from_lua_json(value)
    except NotJSON:
        return []
    if not isinstance(data, list):
        return []
    return _calls_as_objects(data)


def _calls_as_objects(data: list) -> list:
    # An empty Lua table reads as `[]`; a call's arguments are always an object.
    for record in data:
        if isinstance(record, dict) and isinstance(record.get("tool_calls"), list):
            for call in record["tool_calls"]:
                if isinstance(call, dict) and call.get("arguments", {}) == []:
                    call["arguments"] = {}
    return data


__all__ = ["ListFault", "check_list", "checked_list", "estimate_tokens", "list_json",
           "user_record"]
