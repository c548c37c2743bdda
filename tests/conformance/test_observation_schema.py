"""The shipped JSON Schemas (conformance/schema, conformance.schemas) and what the
runner does with an observation that breaks one.

Every observation the reference produces for the suite validates: here each
case on the canonical schedule in process, and the whole suite on every
schedule over the pipe in test_impl_serve (the runner checks every
observation an implementation process sends, and errors a case whose
observation breaks the schema; that suite must pass).  Every example prompt under examples/,
run with its model script, validates too.  The runner's fast path (one
event kind's rules at a time) is checked against plain jsonschema on the
same observations, valid and broken.
"""

from __future__ import annotations

import copy
import json
import pathlib

import jsonschema
import pytest
from click.testing import CliRunner

from forge.conformance import schemas
from forge.conformance.adapters import InProcessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, Case, HarnessSpec, load_cases
from forge.conformance.runner import run_case
from forge.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.md"))
CASES = load_cases(DEFAULT_CASES_DIR)


@pytest.fixture(scope="module")
def suite_observations() -> list[tuple[Case, dict]]:
    adapter = InProcessAdapter()
    return [(case, adapter.run(case, None)) for case in CASES]


def example_observation(path: pathlib.Path) -> dict:
    args = ["run", str(path), "--json"]
    script = path.with_suffix(".model.json")
    if script.exists():
        args += ["--model-script", str(script)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_every_shipped_schema_is_a_valid_draft_2020_12_schema():
    names = sorted(p.name.removesuffix(".schema.json")
                   for p in schemas.SCHEMA_DIR.glob("*.schema.json"))
    assert names == ["case", "lifecycle-observation", "observation", "protocol", "report"]
    for name in names:
        jsonschema.Draft202012Validator.check_schema(schemas.schema(name))


def test_the_event_schema_names_the_57_kinds_of_the_events_chapter():
    kinds = schemas.schema("observation")["$defs"]["event"]["properties"]["kind"]["enum"]
    assert len(kinds) == len(set(kinds)) == 57
    boundary = [k for k in kinds if "required" not in
                schemas.schema("observation")["$defs"][f"event_{k}"]]
    assert len(boundary) == 42


def test_every_observation_the_reference_gives_for_the_suite_validates(suite_observations):
    prompts = lifecycle = 0
    for case, observation in suite_observations:
        if case.operations is not None:
            lifecycle += 1
            assert schemas.violations("lifecycle-observation", observation) == [], case.id
        else:
            prompts += 1
            assert schemas.observation_violations(observation) == [], case.id
    assert prompts + lifecycle == len(CASES) > 300 and lifecycle > 0


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_observation_validates(path):
    observation = example_observation(path)
    assert schemas.violations("observation", observation, limit=None) == []


def test_the_fast_path_finds_what_plain_jsonschema_finds(suite_observations):
    """Valid observations of every event kind the suite shows, then broken ones."""
    sample = [o for c, o in suite_observations if c.operations is None][::7]
    broken = copy.deepcopy(sample[:4])
    broken[0]["events"][1]["provenance"]["task"] = 3
    broken[0]["events"][2]["kind"] = "task-started"
    broken[1]["events"][0]["surplus"] = True
    broken[1]["tasks"]["0.x"] = {"state": "bogus"}
    broken[2]["error"] = {"kind": "Nope", "message": 1}
    broken[2]["events"].append({"kind": "task_started", "execution": "run-1", "section": "S",
                                "provenance": {"task": "0", "seq": 99}, "origin": "robot"})
    broken[3]["events"] = "none"
    del broken[3]["store"]
    for observation in sample + broken:
        fast = schemas.observation_violations(observation, limit=None)
        plain = schemas.violations("observation", observation, limit=None)
        assert sorted(fast) == sorted(plain)
    assert all(schemas.observation_violations(o) for o in broken)


def test_violations_name_the_field_by_json_pointer(suite_observations):
    observation = copy.deepcopy(next(o for c, o in suite_observations if c.id == "examples/two-tasks"))
    started = next(i for i, e in enumerate(observation["events"]) if e["kind"] == "task_started")
    observation["events"][started]["provenance"]["task"] = 0
    observation["events"][started + 1]["kind"] = "task-started"
    observation["tasks"]["0.0"]["reason"] = "bored"
    assert schemas.observation_violations(observation) == [
        f"/events/{started}/provenance/task: expected a string, got 0",
        f"/events/{started + 1}/kind: must be one of the 57 names the schema lists, "
        'got "task-started"',
        '/tasks/0.0/reason: must be one of `owner_returned`, `owner_failed`, '
        '`tool_loop_exhausted`, `owner_aborted`, `run_terminated`, got "bored"',
    ]


class Answer:
    """An adapter answering every run with one observation."""

    def __init__(self, observation):
        self.observation = observation

    def skip_reason(self, case):
        return None

    def run(self, case, seed):
        return self.observation


def test_the_runner_errors_a_case_whose_observation_breaks_the_schema(suite_observations):
    """The case errors (it is not judged), and each violation names its field."""
    case, observation = next((c, o) for c, o in suite_observations if c.id == "examples/two-tasks")
    observation = copy.deepcopy(observation)
    observation["events"][0]["provenance"] = {"task": "0"}
    observation["virtual_time"] = -1
    result = run_case(Answer(observation), case)
    assert result.status == "errored"
    assert result.problems == (
        "the observation breaks observation.schema.json at /events/0/provenance: "
        "missing required field `seq`",
        "the observation breaks observation.schema.json at /virtual_time: "
        "must be at least 0, got -1",
    )


def test_a_lifecycle_observation_is_held_to_its_own_schema():
    case = Case(id="l/a", path="l/a.toml", clauses=("c",), harness=HarnessSpec(),
                expect={"outcome": "ok"}, features=("lifecycle",), operations=[{"op": "get"}])
    result = run_case(Answer({"outcome": "ok", "results": [], "tasks": {"a": {"status": "odd"}},
                              "reports": [], "error": None}), case)
    assert result.status == "errored"
    assert result.problems[0].startswith(
        "the observation breaks lifecycle-observation.schema.json at /tasks/a/status: "
        "must be one of `working`")


def test_protocol_messages_validate_both_ways(suite_observations):
    """What the kit sends and what impl-serve answers are protocol messages."""
    case, observation = next((c, o) for c, o in suite_observations if c.id == "examples/two-tasks")
    messages = [
        {"type": "hello", "protocol": 1},
        {"type": "run", "id": case.id, "prompt": case.prompt, "harness": case.harness.to_json(),
         "seed": None},
        {"type": "bye"},
        {"type": "hello", "protocol": 1, "name": "forge-reference", "features": ["language", "tasks"]},
        {"type": "observation", "id": case.id, "observation": observation},
        {"type": "error", "id": case.id, "message": "no fanout here"},
    ]
    for message in messages:
        assert schemas.violations("protocol", message) == [], message
    assert schemas.violations("protocol", {"type": "run", "id": "x", "harness": {}, "seed": None})
    assert schemas.violations("protocol", {"type": "observation", "id": "x",
                                           "observation": {"outcome": "maybe"}})
