"""The steps an engine may report for the per-step watchers (docs/protocol.md,
"Steps"): the reference's, as `forge impl-serve` sends them, keep the
schema, agree with its events, and are what the page shows
(kit: explore-impl.watchers)."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from forge.conformance import schemas, steps, stream_watch
from forge.conformance.adapters import reference_observation
from forge.conformance.case import HarnessSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROMPTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "explore").glob("watch-*.md"))


@pytest.mark.parametrize("path", [*PROMPTS, "examples/two-tasks.md",
                                  "tests/conformance/steps/one-task.md"])
@pytest.mark.parametrize("seed", [None, 1, 2])
def test_the_references_steps_keep_the_schema_and_agree_with_its_events(path, seed):
    obs = reference_observation((ROOT / path).read_text(), HarnessSpec(concurrency=1), seed,
                                steps=True)
    assert obs["steps"]
    assert schemas.violations(schemas.OBSERVATION, obs) == []
    every = frozenset(steps.OPTIONAL)
    assert stream_watch.watch(obs, ceiling=1, declared=every) == []
    # With the chain decisions the kit answered, every one runs.
    assert stream_watch.not_run(obs, every, picks=True) == stream_watch.UNADAPTED == {}
    # A hello of before, with no optional kinds: the cancel monitor is named.
    assert stream_watch.not_run(obs, picks=True) == stream_watch.NEED_CANCEL_STEPS


def test_a_cancel_of_a_live_task_is_a_step_before_what_it_made_happen():
    """watch-liveness.md's Main cancels its Waiter while it waits: one
    `cancel` step, then the Waiter's chain stops and it ends cancelled
    (tasks.cancel.marks-cancelled); a cancel of an ended task is none."""
    obs = reference_observation((ROOT / "examples/explore/watch-liveness.md").read_text(),
                                HarnessSpec(), None, steps=True)
    cancels = [s for s in obs["steps"] if s["what"] == "cancel"]
    assert cancels == [{"what": "cancel", "t": cancels[0]["t"], "chain": "0", "task": "0.3"}]
    at = obs["steps"].index(cancels[0])
    assert {"what": "task_end", "t": cancels[0]["t"], "task": "0.3", "end": "task_cancelled",
            "reason": None, "error": None} in obs["steps"][at:]
    ended = reference_observation((ROOT / "tests/conformance/steps/cancel-ended.md").read_text(),
                                  HarnessSpec(), None, steps=True)
    assert ended["outcome"] == "ok"
    assert [s for s in ended["steps"] if s["what"] == "cancel"] == []


def test_a_hello_declares_the_optional_kinds_and_one_of_before_declares_none():
    assert steps.declared({"type": "hello", "features": []}) == frozenset()
    assert steps.declared({"type": "hello", "features": [], "steps": ["cancel"]}) == {"cancel"}
    assert steps.declared({"type": "hello", "features": [], "steps": "cancel"}) == frozenset()
    assert schemas.errors(schemas.PROTOCOL, {"type": "hello", "features": [], "steps": ["cancel"]},
                          definition="implementation_hello") == []
    assert schemas.errors(schemas.PROTOCOL, {"type": "hello", "features": [], "steps": ["jump"]},
                          definition="implementation_hello") != []


def test_without_the_request_the_observation_has_no_steps():
    obs = reference_observation((ROOT / "examples/two-tasks.md").read_text(), HarnessSpec(), None)
    assert "steps" not in obs


def test_the_pages_steps_are_the_references():
    page = (ROOT / "docs" / "protocol.md").read_text()
    shown = re.search(r"tests/conformance/steps/one-task\.md`, canonical schedule\):\n\n```text\n"
                      r"(.*?)```", page, re.S).group(1)
    obs = reference_observation((ROOT / "tests/conformance/steps/one-task.md").read_text(),
                                HarnessSpec(), None, steps=True)
    assert [json.loads(line) for line in shown.splitlines()] == obs["steps"]


def test_the_pages_cancel_steps_are_the_references():
    page = (ROOT / "docs" / "protocol.md").read_text()
    shown = re.search(r"examples/explore/watch-liveness\.md`, canonical schedule\), `forge\n"
                      r"impl-serve` reports:\n\n```text\n(.*?)```", page, re.S).group(1)
    obs = reference_observation((ROOT / "examples/explore/watch-liveness.md").read_text(),
                                HarnessSpec(), None, steps=True)
    lines = [json.loads(line) for line in shown.splitlines()]
    at = obs["steps"].index(lines[0])
    assert obs["steps"][at:at + len(lines)] == lines
