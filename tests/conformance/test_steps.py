"""The steps an engine may report for the per-step watchers (docs/protocol.md,
"Steps"): the reference's, as `forge impl-serve` sends them, keep the
schema, agree with its events, and are what the page shows
(kit: explore-impl.watchers)."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from forge.conformance import schemas, stream_watch
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
    assert stream_watch.watch(obs, ceiling=1) == []
    assert stream_watch.not_run(obs) == stream_watch.UNADAPTED


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
