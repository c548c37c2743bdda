"""Tool scripts: the kit's stand-in for a host's tool catalogue.

A tool script is a JSON object whose `tools` maps exact tool paths
(`namespace/pack/name`, the values of a prompt's `tools:` frontmatter) to the
tool the host would supply there and how it answers:

    {"tools": {
       "promptforge/web/fetch": {
         "description": "Fetch one page",
         "replies": [
           {"match": {"url": "https://a.example"}, "result": "page A"},
           {"result": "first other page", "delay": 2.5},
           {"error": "connection reset"},
           {"never": true}],
         "default": {"result": "a page"}}}}

- A prompt's slot `alias: path` is a bound tool slot exactly when the script
  has `path` (the kit has no capabilities to activate, so the script is the
  run's whole catalogue); a slot whose path it lacks stays unbound without a
  report, as the tools chapter allows for a path its capability does not
  supply.  Without a tool script no slot is bound.
- Each call of the tool (a script `tools.call` or a model tool call) takes
  the first unused entry of `replies` whose `match` is absent or whose every
  key equals the call's argument of that name; each entry answers one call.
  Entries without `match` therefore answer by call order.  `default` answers
  every call no unused entry matches; with no default such a call ends the
  run with a harness error naming the tool and the script, never a hang.
- A reply is `result` (the tool's text), `error` (the tool's own failure
  message: a script call raises kind `tool`, `tool call failure: {message}`;
  a model call reads it wrapped as untrusted) or `"never": true` (the host
  never answers: the calling chain stays parked, until a cancel or the
  deadlock report).  `delay` pins the call's virtual duration in seconds;
  without it the call lasts the latency model's `tool` duration.
- `description` is the catalogue description the model is offered (default
  empty); `parameters` is the argument JSON Schema the model is offered
  (default `{"type": "object", "properties": {}}`), checked to be an object.
- A tool fault (`--faults tool`, `forge.harness.Faults`) fails a call with
  `TOOL_FAULT_MESSAGE` and leaves its entry for the next call.

A malformed script is refused before the run with an `InputError` naming the
file, the entry (such as `tools["a/b/c"].replies[1]`) and the rule.

What does not live here: binding slots and answering calls in a run
(`forge.engine.tools`), the model and operator scripts (`forge.scripts`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs

from forge.scripts import Checker, check_limits, json_type, read_json

#: What a call reads when an injected tool fault fails it: the spec leaves a
#: tool's failure text to the tool.
TOOL_FAULT_MESSAGE = "the tool failed (an injected fault)"
#: A tool path, as the tools chapter's grammar spells it.
TOOL_PATH = re.compile(r"[a-z0-9_.-]+/[a-z0-9_.-]+/[a-z0-9_.-]+")
DEFAULT_PARAMETERS = {"type": "object", "properties": {}}

_TOP_KEYS = ("tools",)
_TOOL_KEYS = ("description", "parameters", "replies", "default")
_REPLY_KEYS = ("match", "result", "error", "never", "delay")


@attrs.frozen
class ToolReply:
    #: `tools["a/b/c"].replies[2]` or `tools["a/b/c"].default`, for messages.
    where: str
    #: Argument name -> the JSON value it must equal; empty matches any call.
    match: dict = attrs.field(eq=False, factory=dict)
    result: str | None = None
    error: str | None = None
    never: bool = False
    delay: float | None = None


@attrs.frozen
class ScriptedTool:
    path: str
    description: str = ""
    parameters: dict = attrs.field(eq=False, factory=lambda: dict(DEFAULT_PARAMETERS))
    replies: tuple[ToolReply, ...] = ()
    default: ToolReply | None = None

    @property
    def short_name(self) -> str:
        return self.path.rsplit("/", 1)[1]


@attrs.frozen
class ToolScript:
    source: str
    #: Tool path -> tool, in file order.
    tools: dict = attrs.field(eq=False, factory=dict)
    #: The run's fault injector, attached per run (as `ModelScript.faults`).
    faults: Any = attrs.field(default=None, eq=False, repr=False)


def load_tool_script(path: str | Path) -> ToolScript:
    return tool_script_from_data(read_json(path), str(path))


def tool_script_from_data(data: Any, source: str) -> ToolScript:
    """A checked tool script from decoded JSON; `source` names it in messages."""
    check = Checker(source)
    check_limits(check, data, "script")
    data = check.object(data, "script", _TOP_KEYS)
    raw_tools = data.get("tools", {})
    if not isinstance(raw_tools, dict):
        check.fail("tools", f"must be a JSON object of tool path: tool, got {json_type(raw_tools)}")
    tools = {}
    for path, raw in raw_tools.items():
        where = f"tools[{json.dumps(path)}]"
        if not TOOL_PATH.fullmatch(path):
            check.fail(where, "a key is an exact tool path namespace/pack/name, each segment of "
                              "lowercase ASCII letters, digits, '-', '_', '.'")
        entry = check.object(raw, where, _TOOL_KEYS)
        description = check.string(entry.get("description", ""), f"{where}.description")
        parameters = entry.get("parameters", DEFAULT_PARAMETERS)
        if not isinstance(parameters, dict):
            check.fail(f"{where}.parameters", "must be a JSON Schema object, got "
                                              f"{json_type(parameters)}")
        raw_replies = entry.get("replies", [])
        if not isinstance(raw_replies, list):
            check.fail(f"{where}.replies", f"must be an array, got {json_type(raw_replies)}")
        replies = tuple(_reply(check, r, f"{where}.replies[{i}]", matches=True)
                        for i, r in enumerate(raw_replies))
        default = None
        if entry.get("default") is not None:
            default = _reply(check, entry["default"], f"{where}.default", matches=False)
        tools[path] = ScriptedTool(path, description, parameters, replies, default)
    return ToolScript(source, tools)


def _reply(check: Checker, raw: Any, where: str, matches: bool) -> ToolReply:
    keys = _REPLY_KEYS if matches else tuple(k for k in _REPLY_KEYS if k != "match")
    entry = check.object(raw, where, keys)
    match = entry.get("match", {})
    if not isinstance(match, dict):
        check.fail(f"{where}.match", f"must be a JSON object of argument: value, got "
                                     f"{json_type(match)}")
    never = entry.get("never", False)
    if not isinstance(never, bool):
        check.fail(f"{where}.never", f"must be a boolean, got {json_type(never)}")
    outcomes = [k for k in ("result", "error") if k in entry] + (["never"] if never else [])
    if len(outcomes) != 1:
        check.fail(where, "a reply has exactly one of `result`, `error` or `\"never\": true`")
    result = entry.get("result")
    if result is not None or "result" in entry:
        result = check.string(result, f"{where}.result")
    error = entry.get("error")
    if "error" in entry:
        error = check.string(error, f"{where}.error", non_empty=True)
    if never and "delay" in entry:
        check.fail(f"{where}.delay", "a reply that never answers has no delay")
    return ToolReply(where, match, result, error, never, check.delay(entry.get("delay"),
                                                                      f"{where}.delay"))


class ToolCursor:
    """Which replies of one tool script a run has used."""

    def __init__(self, script: ToolScript | None) -> None:
        self.script = script
        self._used: dict[str, list[bool]] = {
            path: [False] * len(tool.replies) for path, tool in (script.tools.items()
                                                                  if script else ())}

    def take(self, tool: ScriptedTool, alias: str, arguments: dict) -> ToolReply | None:
        """The reply answering a call of `tool` with `arguments`, or None."""
        used = self._used[tool.path]
        for i, reply in enumerate(tool.replies):
            if not used[i] and all(k in arguments and arguments[k] == v
                                   for k, v in reply.match.items()):
                if self._fault(alias):
                    return self._failed(reply)
                used[i] = True
                return reply
        reply = tool.default
        if reply is not None and self._fault(alias):
            return self._failed(reply)
        return reply

    def _fault(self, alias: str) -> bool:
        faults = self.script.faults if self.script is not None else None
        return faults is not None and faults.fires("tool", f"fail a call of `{alias}`")

    @staticmethod
    def _failed(reply: ToolReply) -> ToolReply:
        return ToolReply(f"{reply.where} (injected fault)", error=TOOL_FAULT_MESSAGE)

    def no_reply_message(self, tool: ScriptedTool, alias: str, task: str) -> str:
        used = sum(self._used[tool.path])
        return (f"tool script {self.script.source}: no reply for a call of `{alias}` "
                f"({tool.path}, task {task}): {used} of {len(tool.replies)} entries in its "
                "`replies` are used, none left matches the call's arguments, and the tool has no "
                "`default`")


__all__ = ["ScriptedTool", "TOOL_FAULT_MESSAGE", "ToolCursor", "ToolReply", "ToolScript",
           "load_tool_script", "tool_script_from_data"]
