"""Every case declares every feature it uses (kit: case-features).

`forge.conformance.features.needs` reads a case's prompt and harness; a
shipped case that uses a feature it does not declare would run against an
engine that lacks it and fail there instead of being skipped.
"""

import json

import pytest

from forge.conformance import schemas
from forge.conformance.adapters import InProcessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.conformance.features import FEATURES, needs

CASES = load_cases(DEFAULT_CASES_DIR)


def _needs(case):
    return needs(case.prompt, case.harness.to_json(), lifecycle=case.operations is not None)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_case_declares_what_it_uses(case):
    """(kit: case-features)"""
    missing = sorted(_needs(case) - set(case.features))
    assert not missing, f"{case.path} uses {missing} but declares {list(case.features)}"


@pytest.mark.parametrize("prompt, harness, expected", [
    ("```lua\nreturn 1\n```", {}, {"language"}),
    ("```lua\nlocal t = tasks.spawn('## A')\n```", {}, {"language", "tasks"}),
    ("```lua\nlocal ok = pcall(tasks.spawn, 1)\n```", {}, {"language", "tasks"}),
    ("```lua\nstore.write('a', 'b')\n```", {}, {"language", "store"}),
    ("```lua\nreturn 1\n```", {"store": {"a.md": "x"}}, {"language", "store"}),
    ("```lua\nreturn 1\n```", {"refuse": {"write": ["a"]}}, {"language", "store"}),
    ("```lua\nlocal r = pcall(fanout, '### W', {})\n```", {}, {"language", "fanout"}),
    ("---\nmodels:\n  w: {}\n---\n", {}, {"language", "models"}),
    ("```lua\nreturn input.ask('q')\n```", {"operator_script": ["y"]}, {"language", "operator"}),
    ("```lua\ntools.add_local('x', {})\n```", {}, {"language", "tools"}),
    ("```lua\ntools.allow_tasks()\n```", {}, {"language", "tasks-model"}),
    ("x", {"model_script": {"rounds": [{"reply": {"tool_calls": [
        {"name": "task", "arguments": {"target": "## A"}}]}}]}},
     {"language", "models", "tasks-model"}),
    ("x", {"model_script": {"rounds": [{"reply": {"text": "task"}}]}}, {"language", "models"}),
])
def test_needs_reads_calls_values_frontmatter_and_the_harness(prompt, harness, expected):
    """(kit: case-features)"""
    assert needs(prompt, harness) == expected


def test_prose_that_names_a_clause_is_not_a_use():
    """A clause id in a prompt's prose (`tasks.spawn.returns-handle`) is not a
    call; a dotted word followed by more of a dotted name is not a built-in.
    (kit: case-features)"""
    assert needs("See tasks.spawn.returns-handle and store.write-refused.", {}) == {"language"}


def test_lifecycle_cases_need_only_the_lifecycle_manager():
    """(kit: case-features)"""
    assert needs(None, {}, lifecycle=True) == {"lifecycle"}


def test_the_features_are_one_list_in_code_schema_and_reference():
    """The case schema's enum, the protocol schema's hello enum, the
    reference's hello and the catalogue of names agree, so a feature is named
    in one place. (kit: case-features)"""
    schema = json.loads(schemas.path_of(schemas.CASE).read_text(encoding="utf-8"))
    assert schema["properties"]["features"]["items"]["enum"] == list(FEATURES)
    protocol = json.loads(schemas.path_of(schemas.PROTOCOL).read_text(encoding="utf-8"))
    assert protocol["$defs"]["hello"]["properties"]["features"]["items"]["enum"] == list(FEATURES)
    assert InProcessAdapter().features() == frozenset(FEATURES)


def test_an_engine_without_a_store_skips_exactly_the_store_cases():
    """The split is usable: an engine declaring everything but `store` runs
    every case that needs no store and is told why the others are skipped.
    (kit: case-features)"""
    have = frozenset(FEATURES) - {"store"}

    class NoStore(InProcessAdapter):
        def features(self):
            return have

    adapter = NoStore()
    reasons = {case.id: adapter.skip_reason(case) for case in CASES}
    store_cases = {case.id for case in CASES if "store" in case.features}
    assert store_cases and len(store_cases) < len(CASES)
    assert {i for i, r in reasons.items() if r} == store_cases
    assert set(reasons[i] for i in store_cases) == {"implementation lacks feature `store`"}
