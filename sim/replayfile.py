"""The replay file's generic format: its version, the kit's, and the choice sequence, as JSON.

Two shapes are read.  Format 1 (written by `forge explore` and by `forge run
--replay-out`, documented in docs/exploring.md) is an object with the
format number (`format`), the version of the kit that wrote it (`kit`) and
every choice as `[kind, n, value]` (`choices`), beside the sections that
say what was run, which are not the simulator's to know: a `RecordShape`
names them and checks them (the prompt engine's is `forge.run.record`).
The legacy shape (no `format` key: the choices beside the keys of the run,
which a `RecordShape` names and reads too) still serves `--strategy replay:FILE`.

What lives here: reading within the limits (`load_json`), checking both
shapes (`read_replay`, with a `Reader` a shape's checks use too), writing
(`write_record`, `dump_replay`).  What does not: what the run sections
mean and how they are checked (`forge.run.record`), and the providers
that answer from a record (`forge.sim.chooser`), or how a replay drifts
(`forge.sim.chooser.Drift`).  Like all of `forge.sim`, this module imports
nothing else of the project.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn

import attrs

from forge.sim.readlimited import NotUTF8, TooLarge, read_text

#: The format number written; a reader refuses any other.
FORMAT = 1
#: The largest replay file read, in bytes; checked before parsing.
MAX_REPLAY_BYTES = 64 * 1024 * 1024
#: The most choices a replay file may hold.
MAX_REPLAY_CHOICES = 10_000_000
_SHAPE = 'a replay file holds {"choices": [[kind, n, value], ...]}'


class ReplayFileError(ValueError):
    """A replay file that cannot be used: names the file, the place and the rule."""

    def __init__(self, path: str, where: str, rule: str, line: int | None = None) -> None:
        self.path, self.where, self.rule, self.line = path, where, rule, line
        self.detail = f"{where}: {rule}" if where else rule
        at = f":{line}" if line else ""
        super().__init__(f"{path}{at}: {self.detail}")


def is_int(value) -> bool:
    """A whole number (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_sha256(value) -> bool:
    """A sha256 as a record writes it: 64 lowercase hex digits."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef"
                                                               for c in value)


def is_number(value) -> bool:
    """A finite int or float."""
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


class Reader:
    """Checks on one replay file's data, each refusal a `ReplayFileError`
    naming the file, the place (`$.run.seed`) and the rule."""

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
    r = Reader(path)
    try:
        text = read_text(path, MAX_REPLAY_BYTES)
    except OSError as e:
        r.bad("", f"cannot read replay file: {e.strerror or e}")
    except TooLarge:
        r.bad("", f"a replay file is at most {MAX_REPLAY_BYTES} bytes")
    except NotUTF8 as e:
        r.bad("", str(e), e.line)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        r.bad("", f"not JSON: {e.msg}", e.lineno)
    except RecursionError:
        r.bad("", "the JSON is nested too deeply")
    except ValueError as e:  # an integer of thousands of digits
        r.bad("", f"not a replay file the kit will read: {e}")
    # Decoded UTF-8 holds no surrogate: one can come only from a `\\uD8xx`
    # escape, so the walk runs only when the text has one.
    if _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(data)
        if where is not None:
            r.bad(where, "a string that is not valid Unicode (a lone surrogate)")
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _lone_surrogate(data: Any) -> str | None:
    """The JSON path of the first string (or key) holding a lone surrogate, or None."""
    stack = [(data, "$")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, where))
                stack.append((item, f"{where}.{key}"))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
    return None


def read_replay(path: str, shape: RecordShape | None = None) -> dict:
    """The checked contents of a replay file:
    `{"choices": [int, ...], "triples": [(kind, n, value), ...], "record": dict | None}`,
    where `record` is the whole format-1 object, its sections beside the
    generic ones checked by `shape` (none checked without one); the legacy
    shape gives `"record": None` and the values `shape.read_legacy` reads
    from its keys beside the choices (`shape.legacy`; none without a shape).

    Raises:
        ReplayFileError: unreadable, too large, not JSON, or not a replay file.
    """
    r = Reader(path)
    data = load_json(path)
    if not isinstance(data, dict):
        r.bad("$", _SHAPE)
    if "format" in data:
        return _read_v1(r, data, shape)
    if shape is not None:
        known = sorted(("choices", *shape.legacy))
        for key in data:
            if key not in known:
                r.bad(f"$.{key}", "unknown key; expected one of " + ", ".join(known))
    triples = _choices(r, data.get("choices"))
    run = shape.read_legacy(r, data) if shape is not None and shape.read_legacy else {}
    return {"choices": [t[2] for t in triples], "triples": triples, **run, "record": None}


def read_choices(path: str, choices: Any) -> list[tuple[str, int, int]]:
    """A replay file's `choices`, checked by the rule every replay file's
    choices follow (a lifecycle race's too).

    Raises:
        ReplayFileError: naming `$.choices` and the rule.
    """
    return _choices(Reader(path), choices)


def _choices(r: Reader, choices: Any) -> list[tuple[str, int, int]]:
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
        if not is_int(n) or not 1 <= n < 2**63:
            r.bad(f"{where}[1]", f"the option count is a whole number from 1 to 2^63-1; {_SHAPE}")
        if not is_int(value) or not 0 <= value < n:
            r.bad(f"{where}[2]", f"the value is a whole number from 0 to n-1 ({n - 1}); {_SHAPE}")
        out.append((kind, n, value))
    return out


@attrs.frozen
class RecordShape:
    """The sections of a format-1 record beside the generic ones: their keys
    (`keys` required, `optional` not) and `check(reader, data)`, which
    refuses what is wrong in them (through the `Reader`); and the keys a
    legacy file may hold beside its choices (`legacy`), with
    `read_legacy(reader, data)`, which refuses what is wrong in them and
    gives their values."""

    keys: tuple[str, ...]
    optional: tuple[str, ...]
    check: Callable[[Reader, dict], None]
    legacy: tuple[str, ...] = ()
    read_legacy: Callable[[Reader, dict], dict] | None = None


def _read_v1(r: Reader, data: dict, shape: RecordShape | None) -> dict:
    if data.get("format") != FORMAT:
        r.bad("$.format", f"this kit reads replay format {FORMAT}, the file is format "
              f"{json.dumps(data.get('format'))[:40]}")
    if shape is None:   # the sections beside are not checked, but the generic ones must be there
        r.object({k: v for k, v in data.items() if k in _GENERIC}, "$", _GENERIC)
    else:
        r.object(data, "$", ("format", "kit", *shape.keys, "choices"), optional=shape.optional)
    r.check(isinstance(data["kit"], str), "$.kit", "the kit version is a string")
    if shape is not None:
        shape.check(r, data)
    triples = _choices(r, data["choices"])
    return {"choices": [t[2] for t in triples], "triples": triples, "record": data}


#: The keys every format-1 record has, whatever it records.
_GENERIC = ("format", "kit", "choices")


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
    """The legacy shape: `meta` (the run's keys a `RecordShape` names) and the chooser's choices."""
    body = dict(sorted(meta.items()))
    body["choices"] = [c.to_json() for c in chooser.choices]
    return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"
