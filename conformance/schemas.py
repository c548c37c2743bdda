"""The JSON Schemas shipped in `conformance/schema/`, and violations read as one line each.

The schemas (Draft 2020-12) are the machine-readable half of
docs/observation.md, docs/protocol.md, docs/cases.md and docs/report.md:

    case.schema.json                   a case file (after TOML parsing)
    observation.schema.json            the observation of one prompt run
    lifecycle-observation.schema.json  the observation of one lifecycle case
    protocol.schema.json               every protocol message, both directions
    report.schema.json                 the JSON report of `forge conformance --json`

`violations(name, instance)` lists what breaks a schema as
`/json/pointer: rule` lines, the shallowest first, each error worded by
`forge.schemawording.describe` (`case` uses it for case files too).

What does not live here: what the runner does with a violation (`runner`),
the JUnit XSD (`schema/junit.xsd`, used by the tests only).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import relevance

from forge.schemawording import Remembered, Shelf, describe, pointer

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
#: The conformance kit's schemas, each read and compiled once, `$ref`s
#: between them resolved (`forge.schemawording.Shelf`).
SHELF = Shelf(SCHEMA_DIR)
path_of, schema, validator, errors = SHELF.path_of, SHELF.schema, SHELF.validator, SHELF.errors
CASE = "case"
OBSERVATION = "observation"
LIFECYCLE_OBSERVATION = "lifecycle-observation"
PROTOCOL = "protocol"
REPORT = "report"
#: Violations listed per observation; the count of the rest is given.
SHOW_VIOLATIONS = 10


def violations(name: str, instance: Any, limit: int | None = SHOW_VIOLATIONS) -> list[str]:
    """`/pointer: rule` for each error (at most `limit`, then a count of the rest)."""
    return _lines(errors(name, instance), schema(name), limit)


def _lines(found: list, root: dict, limit: int | None) -> list[str]:
    """The errors `found`, the most relevant first, as lines: the first
    `limit` of them in document order, then a count of the rest."""
    shown = sorted(found if limit is None else found[:limit],
                   key=lambda e: [str(p) for p in e.absolute_path])
    lines = [f"{pointer(path)}: {message}"
             for path, message, _ in (describe(e, root) for e in shown)]
    if limit is not None and len(found) > limit:
        lines.append(f"... and {len(found) - limit} more schema violations")
    return lines


def observation_violations(observation: Any, limit: int | None = SHOW_VIOLATIONS) -> list[str]:
    """`violations(OBSERVATION, observation)`, an order of magnitude faster.

    The schema picks an event's rules with one `if kind == K` per kind, and
    jsonschema tries all 57 on every event (1.4 ms an event).  This checks
    the observation without its events, then each event against its own
    kind's definition (`event_<kind>`) plus the coordinates; an event whose
    kind is unknown goes through the whole event schema, which names the
    kinds it allows; an event already found valid (the same JSON text) is
    not checked again.  tests/conformance/test_observation_schema.py checks
    that both ways find the same violations.
    """
    if not isinstance(observation, dict) or not isinstance(observation.get("events"), list):
        return violations(OBSERVATION, observation, limit)
    shell = {k: v for k, v in observation.items() if k != "events"}
    shell_key = _key(shell)
    if shell_key is not None and shell_key in _VALID:
        found = []
    else:
        found = list(_shell_validator().iter_errors(shell))
        if not found and shell_key is not None:
            _VALID.add(shell_key)
    for i, event in enumerate(observation["events"]):
        key = _key(event)
        if key is not None and key in _VALID:
            continue
        kind = event.get("kind") if isinstance(event, dict) else None
        check = _event_validators().get(kind) if isinstance(kind, str) else None
        if check is None:
            check = _event_validators()[None]
        clean = True
        for error in check.iter_errors(event):
            error.path.extendleft(reversed(("events", i)))
            found.append(error)
            clean = False
        if clean and key is not None:
            _VALID.add(key)
    found.sort(key=relevance, reverse=True)
    return _lines(found, schema(OBSERVATION), limit)


#: Events, and observations without their events, found valid, by their
#: JSON text: the schedules of one case repeat most of them exactly, so a
#: suite checks each only once.
_VALID = Remembered(200_000)


def _key(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None


@functools.cache
def _shell_validator() -> jsonschema.Draft202012Validator:
    root = schema(OBSERVATION)
    shell = {**root, "properties": {**root["properties"], "events": {"type": "array"}},
             "required": [k for k in root["required"] if k != "events"]}
    return validator(OBSERVATION).evolve(schema=shell)


@functools.cache
def _event_validators() -> dict:
    root = schema(OBSERVATION)
    event = root["$defs"]["event"]
    coordinates = {k: v for k, v in event.items() if k != "allOf"}
    base = validator(OBSERVATION)
    out: dict = {None: base.evolve(schema={**_defs_of(root), "$ref": "#/$defs/event"})}
    for kind in event["properties"]["kind"]["enum"]:
        out[kind] = base.evolve(schema={**_defs_of(root), **coordinates,
                                        "$ref": f"#/$defs/event_{kind}"})
    return out


def _defs_of(root: dict) -> dict:
    return {"$schema": root["$schema"], "$id": root["$id"], "$defs": root["$defs"]}
