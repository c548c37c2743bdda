"""The JSON Schemas of the harness scripts, and a script checked against one.

The schemas (Draft 2020-12) ship in `forge/schema/` and are the machine-
readable half of docs/scripts.md:

    model-script.schema.json     a model script (`--model-script`)
    operator-script.schema.json  an operator script (`--operator-script`)
    tool-script.schema.json      a tool script (`--tool-script`)

`check(name, data, source)` raises one `InputError` naming the file, the
entry as a JSON pointer (`/rounds/3/reply`) and the rule, for the first
violation in document order.  A schema words a rule no generic message
says well in an `errorMessage` beside it (the convention of ajv-errors).

The limits of `forge.limits` (size before parsing, nesting, 64-bit
integers, finite numbers, valid Unicode) are checked before the schema, by
the script readers in `forge.scripts`, so no input costs the validator
unbounded work.

What does not live here: building the run's script objects from checked
data (`forge.scripts`, `forge.toolscript`), the conformance kit's schemas
(`forge.conformance.schemas`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forge.errors import InputError
from forge.schemawording import JSON_TYPE_NAMES, Remembered, Shelf, describe, pointer

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
#: The script schemas, each read and compiled once (`forge.schemawording.Shelf`).
SHELF = Shelf(SCHEMA_DIR)
path_of, schema, validator = SHELF.path_of, SHELF.schema, SHELF.validator
MODEL = "model-script"
OPERATOR = "operator-script"
TOOL = "tool-script"
NAMES = (MODEL, OPERATOR, TOOL)


def problem(name: str, data: Any) -> tuple[str, str] | None:
    """(JSON pointer, rule) of the first violation of schema `name` in
    document order, or None when `data` is valid."""
    key = _key(name, data)
    if key in _VALID:
        return None
    # The most relevant first (jsonschema's ranking), then the first in the file.
    found = SHELF.errors(name, data)
    if not found:
        _VALID.add(key)
        return None
    # The fault itself, not what it breaks around it: an error with another
    # beneath it (`/default/echo` is not a boolean, so `/default` is not a
    # reply) gives way to that one; and a key that failed its own rule also
    # counts as unevaluated, which is not the rule to show.
    shown = [e for e in found
             if not any(_below(o.absolute_path, e.absolute_path) for o in found)
             and (e.validator != "unevaluatedProperties"
                  or not any(o is not e and list(o.absolute_path) == list(e.absolute_path)
                             for o in found))]
    first = min(shown, key=lambda e: _document_order(data, e.absolute_path))
    path, message, _ = describe(first, schema(name), JSON_TYPE_NAMES)
    if "propertyNames" in first.relative_schema_path:
        path += (first.instance,)     # the key at fault, not its object
    custom = first.schema.get("errorMessage") if isinstance(first.schema, dict) else None
    if custom is not None:
        message = custom
    return pointer(path), message


#: Scripts found valid, by kind and JSON text: a conformance case builds its
#: scripts again for every schedule it runs, and validating one costs about
#: 50 times building it.
_VALID = Remembered(10_000)


def _key(name: str, data: Any) -> str:
    return name + "\n" + json.dumps(data, separators=(",", ":"))


def check(name: str, data: Any, source: str) -> None:
    """Raise `InputError` naming `source`, the entry and the rule, unless
    `data` is a valid script of kind `name`."""
    found = problem(name, data)
    if found is not None:
        where, rule = found
        raise InputError(f"{where}: {rule}", file=source)


def _below(path, prefix) -> bool:
    """Whether `path` lies strictly beneath `prefix`."""
    path, prefix = list(path), list(prefix)
    return len(path) > len(prefix) and path[: len(prefix)] == prefix


def _document_order(data: Any, path) -> list[int]:
    """Where `path` sits in `data`, as positions within each container, so
    the violation met first when reading the file sorts first."""
    out, here = [], data
    for part in path:
        if isinstance(here, dict):
            keys = list(here)
            out.append(keys.index(part) if part in here else len(keys))
            here = here.get(part)
        elif isinstance(here, list) and isinstance(part, int) and part < len(here):
            out.append(part)
            here = here[part]
        else:
            break
    return out


__all__ = ["MODEL", "NAMES", "OPERATOR", "TOOL", "check", "path_of", "problem", "schema"]
