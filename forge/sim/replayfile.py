"""The replay file: a run's whole definition and its choice sequence, as JSON.

Two shapes are read.  Format 1 (written by `forge explore` and by `forge run
--replay-out`, documented in docs/exploring.md) is self-contained: the kit
version, the prompt's path and sha256, the run's arguments and seed, the
harness (concurrency, cancel instant, instruction budget, latencies, the
store's files, each script's content, the fault plan), the expectation that
failed, and every choice as `[kind, n, value]`.  The legacy shape (no
`format` key: `{"choices", "args", "prompt", "seed"}`) still serves
`--strategy replay:FILE`.

What lives here: reading and checking both shapes (`read_replay`), writing
(`write_record`, `dump_replay`).  What does not: what the fields mean to a
run (`forge.runspec` builds the run from them), and the providers
that answer from a record (`forge.sim.chooser`).  This module imports nothing of
the project, so `forge.sim.chooser` can re-export it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

#: The format number written; a reader refuses any other.
FORMAT = 1
#: The largest replay file read, in bytes; checked before parsing.
MAX_REPLAY_BYTES = 64 * 1024 * 1024  # = forge.limits.MAX_REPLAY_BYTES (sim imports no forge)
#: The most choices a replay file may hold.
MAX_REPLAY_CHOICES = 10_000_000
_LEGACY_KEYS = ("args", "choices", "prompt", "seed")
#: The longest duration or instant a record may hold, in seconds
#: (= forge.limits.MAX_SECONDS), and the largest latency multiplier.
MAX_SECONDS = 1e9
MAX_MULTIPLIER = 1000.0
MAX_MENU = 64
_I64 = range(-(2**63), 2**63)
_SHAPE = 'a replay file holds {"choices": [[kind, n, value], ...]}'


class ReplayFileError(ValueError):
    """A replay file that cannot be used: names the file, the place and the rule."""

    def __init__(self, path: str, where: str, rule: str, line: int | None = None) -> None:
        self.path, self.where, self.rule, self.line = path, where, rule, line
        self.detail = f"{where}: {rule}" if where else rule
        at = f":{line}" if line else ""
        super().__init__(f"{path}{at}: {self.detail}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef"
                                                               for c in value)


def _is_number(value) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def bad(self, where: str, rule: str, line: int | None = None) -> NoReturn:
        raise ReplayFileError(self.path, where, rule, line)

    def object(self, value: Any, where: str, keys: tuple[str, ...],
               optional: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            self.bad(where, "must be an object with " + ", ".join(keys))
        for key in value:
            if key not in keys and key not in optional:
                self.bad(f"{where}.{key}", "unknown key; expected one of "
                         + ", ".join(sorted(keys + optional)))
        for key in keys:
            if key not in value:
                self.bad(f"{where}.{key}", "missing")
        return value

    def check(self, ok: bool, where: str, rule: str) -> None:
        if not ok:
            self.bad(where, rule)

    def each(self, value: Any, where: str, rule: str, item: Callable[[Any], bool]) -> None:
        self.check(isinstance(value, list), where, f"must be a list; {rule}")
        for i, v in enumerate(value):
            self.check(item(v), f"{where}[{i}]", rule)


def load_json(path: str) -> Any:
    """The JSON a replay file holds - any replay file, a lifecycle race's too -
    read within `MAX_REPLAY_BYTES`.

    Raises:
        ReplayFileError: unreadable, too large, not UTF-8 or not JSON.
    """
    r = _Reader(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_REPLAY_BYTES + 1)
    except OSError as e:
        r.bad("", f"cannot read replay file: {e.strerror or e}")
    if len(raw) > MAX_REPLAY_BYTES:
        r.bad("", f"a replay file is at most {MAX_REPLAY_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        r.bad("", f"not valid UTF-8 (byte {e.start})", raw[:e.start].count(b"\n") + 1)
    except json.JSONDecodeError as e:
        r.bad("", f"not JSON: {e.msg}", e.lineno)
    except RecursionError:
        r.bad("", "the JSON is nested too deeply")
    except ValueError as e:  # an integer of thousands of digits
        r.bad("", f"not a replay file the kit will read: {e}")
    return data


def read_replay(path: str) -> dict:
    """The checked contents of a replay file:
    `{"choices": [int, ...], "triples": [(kind, n, value), ...], "args": str,
    "prompt": str | None, "seed": int | None, "record": dict | None}`, where
    `record` is the whole format-1 object (None for the legacy shape).

    Raises:
        ReplayFileError: unreadable, too large, not JSON, or not a replay file.
    """
    r = _Reader(path)
    data = load_json(path)
    if not isinstance(data, dict):
        r.bad("$", _SHAPE)
    if "format" in data:
        return _read_v1(r, data)
    for key in data:
        if key not in _LEGACY_KEYS:
            r.bad(f"$.{key}", "unknown key; expected one of " + ", ".join(_LEGACY_KEYS))
    triples = _choices(r, data.get("choices"))
    args = data.get("args", "")
    r.check(isinstance(args, str), "$.args", "the run's arguments are a string")
    prompt = data.get("prompt")
    r.check(prompt is None or isinstance(prompt, str), "$.prompt", "the prompt path is a string")
    seed = data.get("seed")
    r.check(seed is None or (_is_int(seed) and seed in _I64), "$.seed",
            "the seed is a whole number within 64 bits")
    return {"choices": [t[2] for t in triples], "triples": triples, "args": args,
            "prompt": prompt, "seed": seed, "record": None}


def read_choices(path: str, choices: Any) -> list[tuple[str, int, int]]:
    """A replay file's `choices`, checked by the rule every replay file's
    choices follow (a lifecycle race's too).

    Raises:
        ReplayFileError: naming `$.choices` and the rule.
    """
    return _choices(_Reader(path), choices)


def _choices(r: _Reader, choices: Any) -> list[tuple[str, int, int]]:
    if not isinstance(choices, list):
        r.bad("$.choices", _SHAPE)
    if len(choices) > MAX_REPLAY_CHOICES:
        r.bad("$.choices", f"at most {MAX_REPLAY_CHOICES} choices")
    out = []
    for i, c in enumerate(choices):
        where = f"$.choices[{i}]"
        if not (isinstance(c, list) and len(c) == 3):
            r.bad(where, f"a choice is [kind, n, value]; {_SHAPE}")
        kind, n, value = c
        if not isinstance(kind, str):
            r.bad(f"{where}[0]", f"the kind is a string; {_SHAPE}")
        if not _is_int(n) or not 1 <= n < 2**63:
            r.bad(f"{where}[1]", f"the option count is a whole number from 1 to 2^63-1; {_SHAPE}")
        if not _is_int(value) or not 0 <= value < n:
            r.bad(f"{where}[2]", f"the value is a whole number from 0 to n-1 ({n - 1}); {_SHAPE}")
        out.append((kind, n, value))
    return out


_TOP = ("format", "kit", "prompt", "run", "store", "scripts", "faults", "expect", "trace_sha256",
        "observation_sha256", "choices")
_RUN = ("args", "seed", "concurrency", "cancel_at", "max_instructions", "latency")


def _read_v1(r: _Reader, data: dict) -> dict:
    if data.get("format") != FORMAT:
        r.bad("$.format", f"this kit reads replay format {FORMAT}, the file is format "
              f"{json.dumps(data.get('format'))[:40]}")
    r.object(data, "$", _TOP, optional=("failure", "strategy"))
    r.check(isinstance(data["kit"], str), "$.kit", "the kit version is a string")
    prompt = r.object(data["prompt"], "$.prompt", ("path", "sha256", "text"))
    r.check(isinstance(prompt["path"], str), "$.prompt.path", "the prompt path is a string")
    r.check(isinstance(prompt["text"], str), "$.prompt.text", "the prompt's text is a string")
    r.check(_is_sha256(prompt["sha256"]), "$.prompt.sha256", "64 lowercase hex digits")
    run = r.object(data["run"], "$.run", _RUN, optional=("refuse",))
    r.check(isinstance(run.get("refuse", {}), dict)
            and all(isinstance(v, list) and all(isinstance(p, str) for p in v)
                    for v in run.get("refuse", {}).values()),
            "$.run.refuse", "an object of operation: list of paths")
    r.check(isinstance(run["args"], str), "$.run.args", "the run's arguments are a string")
    r.check(_is_int(run["seed"]) and run["seed"] in _I64, "$.run.seed",
            "the seed is a whole number within 64 bits")
    r.check(_is_int(run["concurrency"]) and 1 <= run["concurrency"] <= 1_000_000,
            "$.run.concurrency", "a whole number from 1 to 1000000")
    r.check(run["cancel_at"] is None or (_is_number(run["cancel_at"])
                                         and 0 <= run["cancel_at"] <= MAX_SECONDS),
            "$.run.cancel_at", f"null or a number of seconds from 0 to {MAX_SECONDS:g}")
    r.check(run["max_instructions"] is None or (_is_int(run["max_instructions"])
                                                and 1000 <= run["max_instructions"] < 2**63),
            "$.run.max_instructions", "null or a whole number from 1000 to 2^63-1")
    latency = r.object(run["latency"], "$.run.latency", ("base", "menu"),
                       optional=("orders", "ties"))
    for flag in ("orders", "ties"):
        r.check(isinstance(latency.get(flag, False), bool), f"$.run.latency.{flag}",
                "true or false")
    base = latency["base"]
    r.check(isinstance(base, dict) and all(isinstance(k, str) and _is_number(v)
                                           and 0 <= v <= MAX_SECONDS for k, v in base.items()),
            "$.run.latency.base", f"an object of operation: seconds from 0 to {MAX_SECONDS:g}")
    r.each(latency["menu"], "$.run.latency.menu",
           f"each multiplier a number from 0 to {MAX_MULTIPLIER:g}",
           lambda m: _is_number(m) and 0 <= m <= MAX_MULTIPLIER)
    r.check(1 <= len(latency["menu"]) <= MAX_MENU, "$.run.latency.menu",
            f"from 1 (the canonical multiplier) to {MAX_MENU} multipliers")
    store = data["store"]
    r.check(isinstance(store, dict) and all(isinstance(v, str) for v in store.values()),
            "$.store", "an object of path: file text")
    scripts = r.object(data["scripts"], "$.scripts", ("model", "operator"), optional=("tool",))
    for name in ("model", "operator", "tool"):
        if scripts.get(name) is not None:
            entry = r.object(scripts[name], f"$.scripts.{name}", ("path", "data"))
            r.check(isinstance(entry["path"], str), f"$.scripts.{name}.path", "a string")
    faults = r.object(data["faults"], "$.faults", ("kinds", "budget", "cancel_instants_ns"),
                      optional=("cancel_steps",))
    r.check(_is_int(faults.get("cancel_steps", 0)) and 0 <= faults.get("cancel_steps", 0)
            <= 1_000_000, "$.faults.cancel_steps", "a whole number from 0 to 1000000")
    r.each(faults["kinds"], "$.faults.kinds", "each a fault kind (a string)",
           lambda k: isinstance(k, str))
    r.check(_is_int(faults["budget"]) and 0 <= faults["budget"] <= 1_000_000, "$.faults.budget",
            "a whole number from 0 to 1000000")
    r.each(faults["cancel_instants_ns"], "$.faults.cancel_instants_ns",
           "each a whole number of nanoseconds, at most 1e18",
           lambda t: _is_int(t) and 0 <= t <= int(MAX_SECONDS) * 1_000_000_000)
    expect = r.object(data["expect"], "$.expect", ("invariants", "same_ids", "result"),
                      optional=("schedule_independent", "checks"))
    r.check(isinstance(expect.get("schedule_independent", False), bool),
            "$.expect.schedule_independent", "true or false")
    r.each(expect.get("checks", []), "$.expect.checks", "each a check named module:function",
           lambda c: isinstance(c, str))
    r.check(isinstance(expect["invariants"], bool), "$.expect.invariants", "true or false")
    r.check(isinstance(expect["same_ids"], bool), "$.expect.same_ids", "true or false")
    r.check(expect["result"] is None or isinstance(expect["result"], str), "$.expect.result",
            "null or the expected result string")
    r.check(_is_sha256(data["observation_sha256"]), "$.observation_sha256",
            "the recorded run's sha256, 64 lowercase hex digits")
    # An engine under test (`forge explore --impl`) need not report a trace.
    r.check(data["trace_sha256"] is None or _is_sha256(data["trace_sha256"]), "$.trace_sha256",
            "null (the engine reported no trace) or the recorded trace's sha256, 64 lowercase "
            "hex digits")
    failure = data.get("failure")
    if failure is not None:
        r.object(failure, "$.failure", ("problems",),
                 optional=("outcome", "deviations", "proven_minimal", "faults"))
        r.each(failure["problems"], "$.failure.problems", "each a string",
               lambda p: isinstance(p, str))
    triples = _choices(r, data["choices"])
    return {"choices": [t[2] for t in triples], "triples": triples, "args": run["args"],
            "prompt": prompt["path"], "seed": run["seed"], "record": data}


def load_replay(path: str) -> list[int]:
    """The choice values of a replay file (see `read_replay`)."""
    return read_replay(path)["choices"]


def write_record(record: dict) -> str:
    """A format-1 record as text: sorted keys, one choice a line (diffable)."""
    body = {k: v for k, v in sorted(record.items()) if k != "choices"}
    body["format"] = FORMAT
    head = json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False)
    choices = ",\n".join("  " + json.dumps(list(c), ensure_ascii=False)
                         for c in record["choices"])
    inner = head[:-2] + ',\n "choices": [\n' + choices + "\n ]\n}\n" if choices else \
        head[:-2] + ',\n "choices": []\n}\n'
    return inner


def dump_replay(chooser, **meta) -> str:
    """The legacy shape: `meta` (prompt, args, seed) and the chooser's choices."""
    body = dict(sorted(meta.items()))
    body["choices"] = [c.to_json() for c in chooser.choices]
    return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"
