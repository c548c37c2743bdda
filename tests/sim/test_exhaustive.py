"""Exhaustive search with reduction sees every outcome brute force sees,
runs far fewer schedules, and says when it did not cover its tree."""

from __future__ import annotations

import json

import pytest

from forge.conformance import oracles
from forge.sim.chooser import Chooser, ReplayProvider
from forge.sim.exhaustive import exhaustive
from forge.sim.shrink import deviations
from tests.sim.subjects import behaviour, brute_force, example, text

STORE_RACE = "explore/store-race.md"

# Gamma checks its path before writing it: two operations, the second issued
# when the first completes, racing Alpha's single write.
MIXED = """---
name: mixed
description: a writer and a checker-then-writer race
promptforge: 0
---

# Mixed

## Main

```lua
local a = tasks.spawn('## Alpha')
local c = tasks.spawn('## Gamma')
local first = tasks.join_any({ a, c })
tasks.join(tasks.pending())
return first.task
```

## Alpha

```lua
store.write('a', '1')
return 'alpha'
```

## Gamma

```lua
local ok = store.exists('c')
store.write('c', tostring(ok))
return 'gamma'
```
"""


# Alpha starts a child before it writes: its step is not simple (the next
# decision offers a chain that was not ready), so nothing commutes past it.
BARRIER = """---
name: barrier
description: a racing task spawns a child before it writes
promptforge: 0
---

# Barrier

## Main

```lua
local a = tasks.spawn('## Alpha')
local b = tasks.spawn('## Beta')
local first = tasks.join_any({ a, b })
tasks.join(tasks.pending())
return first.task
```

## Alpha

```lua
local c = tasks.spawn('### Child')
store.write('a', '1')
local _, ok, r = tasks.join_any({ c })
return 'alpha ' .. tostring(r)
```

### Child

```lua
store.write('c', '1')
return 'child'
```

## Beta

```lua
store.write('b', '1')
return 'beta'
```
"""

_LEAVES: dict = {}


def leaves_of(name: str, subject):
    """Brute force once per subject (it is the slow part)."""
    if name not in _LEAVES:
        _LEAVES[name] = brute_force(subject)
    return _LEAVES[name]


SUBJECTS = {
    "store-race": example(STORE_RACE, "1"),
    "mixed": text(MIXED),
    "barrier": text(BARRIER),
    "checked-join": example("checked-join.md"),
}


def behaviours_of(subject, **options):
    seen = set()

    def record(obs):
        seen.add(behaviour(obs))
        return []

    report = exhaustive(subject, [record], limit=100_000, **options)
    return report, seen


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_reduction_sees_every_outcome_brute_force_sees(name):
    subject = SUBJECTS[name]
    leaves = leaves_of(name, subject)
    report, seen = behaviours_of(subject)
    assert seen == {behaviour(obs) for obs, _ in leaves.values()}
    assert report.complete and report.unfinished == 0
    assert report.runs + report.pruned >= 1 and report.runs <= len(leaves)


def test_reduction_and_a_bound_run_a_tenth_of_the_tree_on_a_store_race():
    subject = SUBJECTS["store-race"]
    leaves = leaves_of("store-race", subject)
    report, seen = behaviours_of(subject, max_deviations=1)
    assert report.complete
    # Every finishing order brute force reaches, in a tenth of the runs.
    assert {obs["result"] for obs, _ in leaves.values()} == \
        {json.loads(b)[1] for b in seen} and len(seen) >= 6
    assert report.runs * 10 <= len(leaves), (report.runs, len(leaves))


def test_the_bound_keeps_every_outcome_of_the_bounded_tree():
    subject = SUBJECTS["store-race"]
    leaves = leaves_of("store-race", subject)
    # The bound counts non-canonical choices other than chain picks.
    wanted = set()
    for obs, record in leaves.values():
        if sum(1 for c in record if c.value and c.kind != "chain") <= 1:
            wanted.add(behaviour(obs))
    _, seen = behaviours_of(subject, max_deviations=1)
    assert seen == wanted


def test_a_search_that_hits_its_budget_says_so():
    subject = SUBJECTS["store-race"]
    report = exhaustive(subject, oracles.DEFAULT_CHECKS, limit=20)
    assert report.runs == 20 and not report.complete and report.unfinished > 0
    full = exhaustive(subject, oracles.DEFAULT_CHECKS, limit=100_000)
    assert full.complete and full.unfinished == 0 and full.runs > 20


def test_exhaustive_failures_are_shrunk():
    subject = SUBJECTS["store-race"]

    def gamma_first(obs):
        return ["gamma first"] if obs["result"].startswith("gamma") else []

    report = exhaustive(subject, [gamma_first], limit=100_000, stop_at_first=True)
    finding = report.findings[0]
    assert finding.proven and finding.deviations == deviations(finding.shrunk)
    obs, _ = subject(Chooser(ReplayProvider(finding.shrunk)))
    assert gamma_first(obs)
    assert not report.complete
