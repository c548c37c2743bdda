"""Model and operator scripts: the harness's side of every model round and
every `input.ask()`.

A model script is a JSON object:

    {"model":   {"id": "scripted-model", "context": 131072, "description": ""},
     "rounds":  [{"section": "Plan", "reply": {"text": "..."}, "delay": 1.5},
                 {"section": "Plan", "reply": {"tool_calls": [
                     {"name": "task", "arguments": {"target": "## Research"}}]}}],
     "default": {"text": "..."}}

- Each model round (a `models.loop` round or a `models.infer` call) takes the
  first unused entry of `rounds` whose keys all hold: `section` equals the
  heading text, without `#` marks, of the section making the round (the H1
  title in the H1 pass); `round` equals the round's number within its
  section entry (1 for the first); `user_contains` is a substring of the
  latest user message the round sends (the `models.infer` prompt).  A key
  left out always holds.  Each entry answers one round.
- `"echo": true` in a reply answers with the latest user message's text.
- `until` holds the reply until that virtual instant (seconds): the round
  lasts until then, or no time when it is already past; `delay` and `until`
  exclude each other.
- `default` answers every round that matches no unused entry; it is a reply
  object, plus an optional `delay`.  A round that matches nothing when the
  script has no default fails the run with a harness error naming the round
  and the script - never a hang.
- `delay` pins the round's virtual duration in seconds.  Without it the
  round lasts whatever the harness latency model draws for `model`
  operations: 1.0 s on the canonical schedule, a multiple of it on explored
  ones.
- A reply carries `text` (a string, possibly empty), `tool_calls` (a list of
  `{"name", "arguments"?, "id"?}`), or both, as the conversation chapter
  allows; `finish_reason` is `"stop"` unless given (`null` sends none).
  `fail` makes the round a backend failure with that message, and
  `"overflow": true` a provider context-window rejection.  A tool call
  without `id` gets `call_1`, `call_2`, ... counted per section entry, so ids
  never repeat within a conversation and never depend on the schedule.
- `stop_at` (seconds) is a round stop: at that virtual instant the model
  backend stops every model round then in flight, in any chain.  Each
  stopped round fails as a backend failure (kind `internal`,
  `ROUND_STOP_MESSAGE`); its scripted answer and the timer that would have
  delivered it are dropped (the effect reads `dropped`, and the run does
  not wait out the round).  A round due at that very instant is answered
  first (completions sort before harness faults at an instant, as for a
  host cancel), so the stop is no decision of the chooser.  Rounds sent
  later run as usual.
- `model` describes the host's one current model (every declared role is
  bound to it): its catalog id, context window and description.  Without a
  model script the host has no current model, so the prompt's roles are
  unbound.

An operator script is a JSON list of answers for `input.ask()`, taken in
the order the asks are made: each a string, or `{"text": ..., "delay": ...}`
with `delay` pinned like a model round's (unpinned: the latency model's
`operator` duration, 1.0 s canonical).  An ask made after the last answer
stays pending, like an operator who never answers; if nothing else can
happen the run ends with the deadlock report, which names the script.

A malformed script is refused before the run with an `InputError` naming the
file, the entry as a JSON pointer (such as `/rounds/2/reply`) and the rule.
The limits of `forge.limits` are checked first (docs/limits.md): the file's
size before parsing; nesting, 64-bit integers, finite numbers and valid
Unicode anywhere in it (tool-call arguments included).  Then the script must
satisfy its shipped JSON Schema (`forge/schema/model-script.schema.json`,
`operator-script.schema.json`; `forge.scriptschema`), which holds every rule
above, delays at most `MAX_SECONDS` included.  Entries keep their
`rounds[2]` names at run time: that is how the trace names them.

Injected faults (`forge.harness.Faults`, attached to a script per run)
are answered here too: a model fault fails the round with
`MODEL_FAULT_MESSAGE` and leaves its entry for the next round; an operator
fault leaves the ask pending, the answer kept for the next ask.

What does not live here: what a reply means to the run (the engine's
`forge.engine.models`), and which entry a round takes at run time
(`ScriptCursor`, one per run, so a script object can serve many runs).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from forge import scriptschema
from forge.errors import InputError
from forge.limits import MAX_SCRIPT_BYTES, data_problem
from forge.sim.readlimited import NotUTF8, TooLarge, read_text
from forge.schemawording import pointer

DEFAULT_MODEL_ID = "scripted-model"
#: What a prompt sees when an injected model fault (`forge.harness.Faults`)
#: fails its round: the spec leaves a backend failure's text to the host; the
#: error is kind `internal`, as for a script's `fail`.
MODEL_FAULT_MESSAGE = "the model backend failed (an injected fault)"
#: What a round stopped by the script's `stop_at` fails with: a backend
#: failure whose text the spec leaves to the host, kind `internal`.
ROUND_STOP_MESSAGE = "the model backend stopped the round (the model script's stop_at)"
DEFAULT_CONTEXT = 131072


@attrs.frozen
class ToolCallSpec:
    """One tool call a scripted reply makes."""

    name: str
    #: The decoded JSON arguments (a JSON object); never mutated.
    arguments: dict = attrs.field(eq=False)
    #: The call id, or None to have the engine number it.
    id: str | None = None
    #: Where the call sits in the script, such as `rounds[2].reply.tool_calls[0]`.
    where: str = ""


@attrs.frozen
class Reply:
    text: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    finish_reason: str | None = "stop"
    #: A backend failure message: the round fails instead of replying.
    fail: str | None = None
    #: A provider rejection for context length.
    overflow: bool = False
    #: Answer with the latest user message's text.
    echo: bool = False


@attrs.frozen
class ScriptEntry:
    #: `rounds[3]` or `default`, for messages.
    where: str
    section: str | None
    reply: Reply
    #: Pinned virtual duration in seconds, or None for the latency model's.
    delay: float | None = None
    #: The round's number within its section entry this entry answers, or None.
    round: int | None = None
    #: A substring the round's latest user message must hold, or None.
    user_contains: str | None = None
    #: Hold the reply until this virtual instant (seconds), or None.
    until: float | None = None

    def pinned(self, now: float) -> float | None:
        """The round's pinned duration when sent at `now` (seconds)."""
        if self.until is not None:
            return max(0.0, self.until - now)
        return self.delay

    def holds(self, section: str, number: int, latest: str) -> bool:
        return (self.section in (None, section) and self.round in (None, number)
                and (self.user_contains is None or self.user_contains in latest))


@attrs.frozen
class ModelScript:
    source: str
    rounds: tuple[ScriptEntry, ...] = ()
    default: ScriptEntry | None = None
    model_id: str = DEFAULT_MODEL_ID
    context: int = DEFAULT_CONTEXT
    description: str = ""
    #: The virtual instant (seconds) at which every model round in flight is
    #: stopped (`stop_at`), or None.
    stop_at: float | None = None
    #: The run's fault injector (`forge.harness.Faults`), attached per run by
    #: `Harness.attach_faults`; None draws no faults.
    injector: Any = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class OperatorAnswer:
    where: str
    text: str
    delay: float | None = None


@attrs.frozen
class OperatorScript:
    source: str
    answers: tuple[OperatorAnswer, ...] = ()
    #: As `ModelScript.injector`.
    injector: Any = attrs.field(default=None, eq=False, repr=False)


# -- loading ------------------------------------------------------------------------------

def read_json(path: str | Path) -> Any:
    """The decoded script, within the limits of `forge.limits` (size before parsing)."""
    name = str(path)
    try:
        text = read_text(path, MAX_SCRIPT_BYTES)
    except OSError as e:
        raise InputError(f"cannot read this script: {e.strerror or e}", file=name) from None
    except TooLarge as e:
        raise InputError(f"script: {e}", file=name) from None
    except NotUTF8 as e:
        raise InputError(str(e), file=name, line=e.line) from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_int)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", file=name, line=e.lineno) from None
    except RecursionError:
        raise InputError("script: nested too deeply to read", file=name) from None
    except ValueError as e:  # the int-digits limit, or a NaN/Infinity constant
        raise InputError(f"not valid JSON: {e}", file=name) from None


def _int(digits: str) -> int:
    # A long number is refused before int() (which is quadratic in its length);
    # a short one past 64 bits is kept, so `data_problem` can name its place.
    if len(digits) > 100:
        raise ValueError(f"an integer past 64 bits ({len(digits.lstrip('-'))} digits)")
    return int(digits)


def _no_constant(name: str):
    raise ValueError(f"`{name}` is not a JSON number")


def check_limits(data: Any, source: str) -> None:
    """Refuse decoded script data that breaks the limits of `forge.limits`,
    naming the place as a JSON pointer; run before the schema."""
    problem = data_problem(data)
    if problem is not None:
        path, rule = problem
        raise InputError(f"{pointer(path)}: {rule}", file=source)


def read_script_data(path: str | Path) -> Any:
    """A script file's decoded JSON, within the limits (not yet checked as a script):
    what a replay file records, so `model_script_from_data` rebuilds the script."""
    return read_json(path)


def load_model_script(path: str | Path) -> ModelScript:
    return model_script_from_data(read_json(path), str(path))


def load_operator_script(path: str | Path) -> OperatorScript:
    return operator_script_from_data(read_json(path), str(path))


def _reply(data: dict, where: str) -> Reply:
    calls = tuple(ToolCallSpec(call["name"], call.get("arguments", {}), call.get("id"),
                               f"{where}.tool_calls[{j}]")
                  for j, call in enumerate(data.get("tool_calls", ())))
    return Reply(data.get("text"), calls, data.get("finish_reason", "stop"), data.get("fail"),
                 data.get("overflow", False), data.get("echo", False))


def _entry(raw: dict, where: str, reply: dict, reply_where: str) -> ScriptEntry:
    # JSON Schema counts 2.0 as an integer; the run counts rounds in ints.
    number = raw.get("round")
    return ScriptEntry(where, raw.get("section"), _reply(reply, reply_where), raw.get("delay"),
                       None if number is None else int(number), raw.get("user_contains"),
                       raw.get("until"))


def model_script_from_data(data: Any, source: str) -> ModelScript:
    """A checked model script from decoded JSON; `source` names it in messages."""
    check_limits(data, source)
    scriptschema.check(scriptschema.MODEL, data, source)
    model = data.get("model", {})
    rounds = tuple(_entry(raw, f"rounds[{i}]", raw["reply"], f"rounds[{i}].reply")
                   for i, raw in enumerate(data.get("rounds", ())))
    default = data.get("default")
    if default is not None:
        default = _entry(default, "default", default, "default")
    return ModelScript(source, rounds, default, model.get("id", DEFAULT_MODEL_ID),
                       int(model.get("context", DEFAULT_CONTEXT)), model.get("description", ""),
                       data.get("stop_at"))


def operator_script_from_data(data: Any, source: str) -> OperatorScript:
    """A checked operator script from decoded JSON."""
    check_limits(data, source)
    scriptschema.check(scriptschema.OPERATOR, data, source)
    return OperatorScript(source, tuple(
        OperatorAnswer(f"[{i}]", raw) if isinstance(raw, str)
        else OperatorAnswer(f"[{i}]", raw["text"], raw.get("delay"))
        for i, raw in enumerate(data)))


# -- taking entries at run time ------------------------------------------------------------

class ScriptCursor:
    """Which entries of one script a run has used."""

    def __init__(self, model: ModelScript | None, operator: OperatorScript | None) -> None:
        self.model = model
        self.operator = operator
        self._used = [False] * (len(model.rounds) if model else 0)
        self._next_answer = 0

    def take_round(self, section: str, number: int = 1, latest: str = "") -> ScriptEntry | None:
        """The entry answering round `number` of `section` whose latest user
        message is `latest`, or None when nothing matches."""
        assert self.model is not None
        for i, entry in enumerate(self.model.rounds):
            if not self._used[i] and entry.holds(section, number, latest):
                if self._model_fault(section):
                    return self._failed(entry)
                self._used[i] = True
                return self._echoed(entry, latest)
        entry = self.model.default
        if entry is not None and self._model_fault(section):
            return self._failed(entry)
        return self._echoed(entry, latest) if entry is not None else None

    @staticmethod
    def _echoed(entry: ScriptEntry, latest: str) -> ScriptEntry:
        if not entry.reply.echo:
            return entry
        return attrs.evolve(entry, reply=attrs.evolve(entry.reply, text=latest))

    def _model_fault(self, section: str) -> bool:
        injector = self.model.injector
        return injector is not None and injector.fires("model", f"fail a round of `{section}`")

    @staticmethod
    def _failed(entry: ScriptEntry) -> ScriptEntry:
        """An injected backend failure in place of `entry`, which stays unused
        (the next round gets it, as after a real transient failure)."""
        return attrs.evolve(entry, where=f"{entry.where} (injected fault)",
                            reply=Reply(fail=MODEL_FAULT_MESSAGE))

    def no_round_message(self, section: str, round_number: int, task: str) -> str:
        model = self.model
        used = sum(self._used)
        return (
            f"model script {model.source}: no reply for model round {round_number} of section "
            f"`{section}` (task {task}): {used} of {len(model.rounds)} entries in `rounds` are "
            f"used, none left matches section `{section}`, and the script has no `default`"
        )

    def take_answer(self) -> OperatorAnswer | None:
        assert self.operator is not None
        if self._next_answer >= len(self.operator.answers):
            return None
        injector = self.operator.injector
        if injector is not None and injector.fires("operator", "never answer"):
            return None     # this ask stays pending; the answer waits for the next one
        answer = self.operator.answers[self._next_answer]
        self._next_answer += 1
        return answer

    @property
    def answers_given(self) -> int:
        return self._next_answer


__all__ = [
    "ModelScript",
    "OperatorAnswer",
    "OperatorScript",
    "Reply",
    "ScriptCursor",
    "ScriptEntry",
    "ToolCallSpec",
    "load_model_script",
    "load_operator_script",
    "model_script_from_data",
    "operator_script_from_data",
    "read_script_data",
]
