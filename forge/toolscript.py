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
file, the entry as a JSON pointer (such as `/tools/a~1b~1c/replies/1`) and
the rule: the limits of `forge.limits` first, then the shipped JSON Schema
`forge/schema/tool-script.schema.json` (`forge.scriptschema`), which holds
every rule above.

What does not live here: binding slots and answering calls in a run
(`forge.engine.tools`), the model and operator scripts (`forge.scripts`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from forge import scriptschema
from forge.scripts import check_limits, read_json

#: What a call reads when an injected tool fault fails it: the spec leaves a
#: tool's failure text to the tool.
TOOL_FAULT_MESSAGE = "the tool failed (an injected fault)"
DEFAULT_PARAMETERS = {"type": "object", "properties": {}}



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
    #: The run's fault injector, attached per run (as `ModelScript.injector`).
    injector: Any = attrs.field(default=None, eq=False, repr=False)


def load_tool_script(path: str | Path) -> ToolScript:
    return tool_script_from_data(read_json(path), str(path))


def tool_script_from_data(data: Any, source: str) -> ToolScript:
    """A checked tool script from decoded JSON; `source` names it in messages."""
    check_limits(data, source)
    scriptschema.check(scriptschema.TOOL, data, source)
    tools = {}
    for path, raw in data.get("tools", {}).items():
        where = f"tools[{json.dumps(path)}]"
        replies = tuple(_reply(r, f"{where}.replies[{i}]")
                        for i, r in enumerate(raw.get("replies", ())))
        default = _reply(raw["default"], f"{where}.default") if "default" in raw else None
        tools[path] = ScriptedTool(path, raw.get("description", ""),
                                   raw.get("parameters", DEFAULT_PARAMETERS), replies, default)
    return ToolScript(source, tools)


def _reply(raw: dict, where: str) -> ToolReply:
    return ToolReply(where, raw.get("match", {}), raw.get("result"), raw.get("error"),
                     raw.get("never", False), raw.get("delay"))


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
        injector = self.script.injector if self.script is not None else None
        return injector is not None and injector.fires("tool", f"fail a call of `{alias}`")

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
