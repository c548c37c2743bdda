"""The spec-defined equivalence is written once and followed everywhere:
docs/observation.md states it, `forge.conformance.equivalence` implements
it, the observation schema marks each field and event kind with its side
(`x-equivalence`), and the cases' matchers compare values by its rule for
empty tables (kit: equivalence.contract; events.coordinates)."""

from __future__ import annotations

import pathlib
import re

from forge.conformance import equivalence, schemas
from forge.conformance.matchers import compare

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _sides(items) -> tuple[set[str], set[str]]:
    normative = {k for k, v in items if v.get("x-equivalence") == "normative"}
    other = {k for k, v in items if v.get("x-equivalence") == "implementation-defined"}
    return normative, other


def test_the_schema_marks_each_field_and_event_kind_as_the_equivalence_does():
    schema = schemas.schema(schemas.OBSERVATION)
    fields = schema["properties"]
    normative, other = _sides(fields.items())
    assert normative == set(equivalence.FIELDS)
    assert normative | other == set(fields)
    kinds = [(k[len("event_"):], v) for k, v in schema["$defs"].items() if k.startswith("event_")]
    normative, other = _sides(kinds)
    assert normative == set(equivalence.NORMATIVE_EVENTS)
    assert len(normative | other) == len(kinds) == 57


def test_the_page_states_what_the_code_compares():
    page = (ROOT / "docs" / "observation.md").read_text()
    section = page.split("## Equivalence", 1)[1].split("## The fields", 1)[0]
    table = section.split("Normative (compared):", 1)[1].split("Implementation-defined", 1)[0]
    named = {f for row in re.findall(r"^\| (.*?) \|", table, re.M) for f in re.findall(r"`(\w+)`", row)}
    assert named - {"field"} == set(equivalence.FIELDS)
    events_row = next(row for row in table.splitlines() if row.startswith("| `events`"))
    assert set(re.findall(r"`(\w+)`", events_row.split("|")[2])) \
        == set(equivalence.NORMATIVE_EVENTS) | {"section"}


def test_an_empty_table_is_one_value_for_the_matchers_and_the_comparison():
    assert equivalence.same({"a": [], "b": None}, {"a": {}})
    assert compare({"var": []}, {"var": {}}).ok
    assert compare({"var": {"exact": {}}}, {"var": []}).ok
    assert not compare({"var": []}, {"var": [1]}).ok
    ours = {"outcome": "ok", "tasks": {"0.0": {"var": []}}}
    theirs = {"outcome": "ok", "tasks": {"0.0": {"var": {}, "note": None}}}
    assert equivalence.compare(ours, theirs) == []
