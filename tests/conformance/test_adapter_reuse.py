"""The in-process adapter reuses an observation only where a run could not
tell the schedules apart (conformance.adapters.InProcessAdapter): same case,
same choices, a run the seed never reached, the same variation sites."""

from __future__ import annotations

import pytest

import forge.conformance.adapters as adapters
from forge.conformance.adapters import InProcessAdapter, reference_observation
from forge.conformance.case import Case, HarnessSpec
from forge.variation import declared, switched

SEEDS = (None, 1, 2, 3, 4, 5)


def case(body: str) -> Case:
    prompt = f"""---
name: reuse
description: one case, many schedules
promptforge: 0
---

# Reuse

## Main

```lua
{body}
```

### W

```lua
return 'w'
```
"""
    return Case(id="g/reuse", path="g/reuse.toml", clauses=("c",), harness=HarnessSpec(),
                expect={}, prompt=prompt)


@pytest.fixture
def engine_runs(calls_of):
    # The engine's `run_prompt` where the in-process adapter calls it.
    return calls_of(adapters, "run_prompt")


def test_one_run_serves_every_schedule_with_nothing_to_choose(engine_runs):
    """One chain at a time: every schedule makes the canonical choices, so one run serves all."""
    c = case("return 'plain'")
    adapter = InProcessAdapter()
    observed = [adapter.run(c, seed) for seed in SEEDS]
    assert len(engine_runs) == 1
    assert all(o == reference_observation(c.prompt, c.harness, s, c.path)
               for o, s in zip(observed, SEEDS))


def test_schedules_that_choose_otherwise_run_afresh(engine_runs):
    """Two tasks ready at once: a seed that picks the other one is a run of its own."""
    c = case("local a, b = tasks.spawn('### W'), tasks.spawn('### W')\n"
             "local r = tasks.join_any({a, b}) return 'first'")
    adapter = InProcessAdapter()
    observed = [adapter.run(c, seed) for seed in SEEDS]
    fresh = [reference_observation(c.prompt, c.harness, s, c.path) for s in SEEDS]
    assert observed == fresh
    assert 1 < len(engine_runs) - len(SEEDS) < len(SEEDS)   # some runs reused, not all


def test_a_run_that_draws_a_random_number_is_never_reused(engine_runs):
    """math.random reads the seed: each schedule runs, and the results differ by seed."""
    c = case("return tostring(math.random(1, 1000000))")
    adapter = InProcessAdapter()
    observed = [adapter.run(c, seed) for seed in SEEDS]
    assert len(engine_runs) == len(SEEDS)
    assert len({o["result"] for o in observed}) > 1


def test_a_mutant_runs_where_its_site_is_read(engine_runs):
    """A mutant whose site the run reads is a run of its own; the reference
    run is made once (sites off) and serves the mutants whose sites it never
    read."""
    from forge.conformance import adapters

    adapters._REFERENCE.clear()
    c = case("local h = tasks.spawn('### W') tasks.join({h}) return 'spawned'")
    adapter = InProcessAdapter()
    reference = adapter.run(c, None)
    assert len(engine_runs) == 1
    read_site = next(s for s in declared() if s.name == "ids.one-based")
    unread_site = next(s for s in declared() if s.name == "model.notice-head-without-marks")
    with switched(read_site.name):
        mutant = adapter.run(c, None)            # the reference run is had: the mutant's only
    assert len(engine_runs) == 2 and mutant != reference
    with switched(unread_site.name):
        assert adapter.run(c, None) == reference  # read by no run: no run of its own
        assert adapter.run(c, None) == reference_observation(c.prompt, c.harness, None, c.path)
    assert len(engine_runs) == 3                  # the fresh reference_observation only
    adapters._REFERENCE.clear()
