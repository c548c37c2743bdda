"""The shrinker reaches a local minimum, proves it, and - on a three-task
race - reaches the fewest deviations a brute-force search can find."""

from __future__ import annotations

from forge.sim.chooser import Chooser, RandomProvider, ReplayProvider
from forge.sim.explore import explore, shrink_result
from forge.sim.shrink import deviations, shrink, trim
from tests.sim.subjects import fewest_deviations, text

# Alpha writes once, Beta twice, Gamma three times: on the canonical
# schedule Gamma ends last.  The planted bug: Gamma ends first.
RACE3 = """---
name: race3
description: three writers
promptforge: 0
---

# Race3

## Main

```lua
local a = tasks.spawn('## Alpha')
local b = tasks.spawn('## Beta')
local c = tasks.spawn('## Gamma')
local first = tasks.join_any({ a, b, c })
tasks.join(tasks.pending())
return first.task
```

## Alpha

```lua
store.write('a', '1')
return 'alpha'
```

## Beta

```lua
store.write('b', '1')
store.write('b', '2')
return 'beta'
```

## Gamma

```lua
store.write('c', '1')
store.write('c', '2')
store.write('c', '3')
return 'gamma'
```
"""


def gamma_first(obs):
    return [] if obs["result"] != "0.2" else ["Gamma ended first"]


def failing_runs(subject, seeds):
    for seed in seeds:
        chooser = Chooser(RandomProvider(seed))
        obs, _ = subject(chooser)
        if gamma_first(obs):
            yield seed, chooser


def replay_fails(subject, values):
    obs, _ = subject(Chooser(ReplayProvider(values)))
    return bool(gamma_first(obs))


def test_shrunk_race_is_a_proven_local_minimum_checked_independently():
    subject = text(RACE3)
    seed, chooser = next(failing_runs(subject, range(200)))
    result = shrink_result(subject, chooser, lambda o: bool(gamma_first(o)))
    assert result.proven
    assert replay_fails(subject, result.choices)
    best = list(result.choices)
    # Every single deletion and every single lowering passes.
    for i in range(len(best)):
        assert not replay_fails(subject, best[:i] + best[i + 1:]), f"deleting {i} still fails"
        for lower in range(best[i]):
            assert not replay_fails(subject, best[:i] + [lower] + best[i + 1:]), \
                f"lowering choice {i} to {lower} still fails"


def test_shrinking_reaches_the_fewest_deviations_found_by_brute_force():
    subject = text(RACE3)
    minimum = fewest_deviations(subject, lambda o: bool(gamma_first(o)), up_to=2)
    assert minimum is not None
    shrunk = [shrink_result(subject, chooser, lambda o: bool(gamma_first(o)))
              for _, chooser in list(failing_runs(subject, range(150)))[:4]]
    assert len(shrunk) == 4
    assert all(r.deviations == minimum and r.proven for r in shrunk), \
        [(r.choices, r.deviations) for r in shrunk]


def test_explore_reports_deviations_of_the_shrunk_schedule():
    report = explore(text(RACE3), range(200), [gamma_first])
    finding = report.findings[0]
    assert finding.deviations == sum(1 for v in finding.shrunk if v)
    assert finding.deviations < sum(1 for v in finding.choices if v)
    assert finding.proven


def test_a_small_budget_says_the_result_is_not_proven():
    subject = text(RACE3)
    _, chooser = next(failing_runs(subject, range(200)))
    result = shrink_result(subject, chooser, lambda o: bool(gamma_first(o)), budget=3)
    assert not result.proven and result.runs == 3
    assert replay_fails(subject, result.choices)


def _table_runner(arity, fails):
    """A synthetic subject: fixed option counts, values past them clamp to 0."""
    def run(candidate):
        used = [v if v < n else 0 for v, n in zip(list(candidate) + [0] * len(arity), arity)]
        return fails(used), used, list(arity)

    return run


def test_shrink_order_prefers_fewer_deviations_then_shortlex():
    arity = [5] * 6

    # Fails when the values at positions 1 and 4 sum to at least 5, or any
    # three positions are non-zero: two large deviations beat three small.
    def fails(v):
        return v[1] + v[4] >= 5 or deviations(v) >= 3

    result = shrink(_table_runner(arity, fails), [1, 1, 1, 1, 1, 1], arity)
    brute = min((trim(v) for v in _all(arity) if fails(list(v))),
                key=lambda t: (deviations(t), len(t), t))
    assert result.choices == brute and result.proven


def _all(arity):
    import itertools

    return itertools.product(*(range(n) for n in arity))
