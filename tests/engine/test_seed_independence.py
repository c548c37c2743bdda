"""A run tells whether its seed reached anything it did (kit: runner.reuse):
the seed reaches a run through `math.random` and the nonce only, and
`Run.seed_independent` says a run read neither, which is what lets the
conformance runner reuse one schedule's observation for another."""

from __future__ import annotations

import pathlib

import pytest

from forge.conformance.case import load_case
from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import parse_prompt

CASES = pathlib.Path(__file__).resolve().parents[2] / "conformance" / "cases"


def prompt(body: str) -> str:
    return f"""---
name: seedy
description: reads or leaves the seed
promptforge: 0
---

# Seedy

## Main

```lua
{body}
```
"""


@pytest.mark.parametrize(("body", "independent"), [
    ("return 'plain'", True),
    ("local h = tasks.spawn('### W') tasks.join({h}) return 'x'\n```\n\n### W\n\n```lua\nreturn 1", True),
    ("return tostring(math.random(1, 6))", False),
    ("math.random() return 'drawn, not shown'", False),
    ("math.randomseed(7) return tostring(math.random(1, 6))", False),
    ("math.randomseed() return 'reseeded from the run seed'", False),
    ("local ok = pcall(math.random, 2, 1) return tostring(ok)", False),
])
def test_lua_generator_use_is_seen(body, independent):
    """Any draw from, or reseeding of, Lua's generator makes the run seed-dependent
    (kit: runner.reuse)."""
    run = run_prompt(parse_prompt(prompt(body), "seedy.md"), Harness(), None, RunConfig(seed=3))
    assert run.outcome == "ok", run.error
    assert run.seed_independent() is independent


def test_a_seed_independent_run_is_the_same_under_every_seed():
    """What `seed_independent` promises: another seed gives the same observation
    (kit: runner.reuse)."""
    parsed = parse_prompt(prompt("return 'plain'"), "seedy.md")
    runs = [run_prompt(parsed, Harness(), None, RunConfig(seed=s)) for s in (0, 1, 99)]
    assert runs[0].seed_independent()
    assert all(r.observation() == runs[0].observation() for r in runs)


def test_the_nonce_makes_a_run_seed_dependent():
    """A model task's completion notice carries the nonce, so the run read the seed
    (tasks.model.envelope.only-completed-wrapped, kit: runner.reuse)."""
    from forge.conformance.adapters import _reference_run

    case = load_case(CASES / "model-tasks" / "notices-four-shapes.toml", CASES)
    _, run = _reference_run(case.prompt, case.harness, None, case.path)
    assert run.outcome == "ok" and run._nonce is not None
    assert not run.seed_independent()
