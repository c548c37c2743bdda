"""Exhaustive search in orders mode (the chooser picks which completion fires
next, `forge.sim.orders`) with sleep sets (`forge.sim.reduction`) sees every
outcome the unreduced tree sees, and every outcome the duration-menu tree
sees, runs far fewer schedules, and says when it did not cover its tree
(kit: exhaustive)."""

from __future__ import annotations

import json

import attrs
import pytest

from forge import variation
from forge.conformance import oracles
from forge.runspec import Runner, spec_from_flags
from forge.sim.chooser import Chooser, ReplayProvider
from forge.sim.exhaustive import exhaustive
from forge.sim.explore import check_all
from forge.sim.shrink import deviations
from forge.sim.orders import GLOBAL
from forge.sim.reduction import independent
from tests.conftest import EXAMPLES
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

# Racing tasks log before and between store writes: the run's one log is
# state they share, and its order depends on the order of steps, which the
# former record-based reduction did not see.
LOG_RACE = """---
name: log-race
description: racing tasks log between store writes
promptforge: 0
---

# Log race

## Main

```lua
local a = tasks.spawn('## Alpha')
local b = tasks.spawn('## Beta')
local c = tasks.spawn('## Gamma')
local got, _, first = tasks.join_any({ a, b, c })
local rest = {}
for _, t in ipairs({ a, b, c }) do
  if t.task ~= got.task then rest[#rest + 1] = t end
end
tasks.join(rest)
return first
```

## Alpha

```lua
log('alpha starts')
store.write('alpha', '1')
log('alpha wrote')
store.write('alpha', '2')
return 'alpha'
```

## Beta

```lua
store.write('beta', '1')
log('beta wrote')
store.write('beta', '2')
return 'beta'
```

## Gamma

```lua
log('gamma starts')
store.write('gamma', '1')
local seen = store.exists('gamma')
store.write('gamma', tostring(seen))
return 'gamma'
```
"""

# Two tasks each draw from the run's one random generator between writes:
# the values each gets depend on who draws first.
RANDOM_RACE = """---
name: random-race
description: racing tasks draw from the run's generator
promptforge: 0
---

# Random race

## Main

```lua
local a = tasks.spawn('## Alpha')
local b = tasks.spawn('## Beta')
local _, _, ra = tasks.join_any({ a })
local _, _, rb = tasks.join_any({ b })
return ra .. ' ' .. rb
```

## Alpha

```lua
store.write('alpha', '1')
local n = math.random(1000)
store.write('alpha', tostring(n))
return tostring(n)
```

## Beta

```lua
store.write('beta', '1')
local n = math.random(1000)
store.write('beta', tostring(n))
return tostring(n)
```
"""

_LEAVES: dict = {}


def leaves_of(name: str, orders: bool = True):
    """Brute force once per subject and mode (it is the slow part)."""
    if (name, orders) not in _LEAVES:
        _LEAVES[name, orders] = brute_force(subject(name, orders))
    return _LEAVES[name, orders]


def subject(name: str, orders: bool = True):
    if name == "store-race":
        return example(STORE_RACE, "1", orders=orders)
    if name == "checked-join":
        return example("checked-join.md", orders=orders)
    if name == "watch-tie":
        return example("explore/watch-tie.md", orders=orders)
    return text(PROMPTS[name], orders=orders)


PROMPTS = {"mixed": MIXED, "barrier": BARRIER, "log-race": LOG_RACE,
           "random-race": RANDOM_RACE}
NAMES = ["barrier", "checked-join", "log-race", "mixed", "random-race", "store-race",
         "watch-tie"]


def behaviours_of(subj, **options):
    seen = set()

    def record(obs):
        seen.add(behaviour(obs))
        return []

    report = exhaustive(subj, [record], limit=100_000, **options)
    return report, seen


@pytest.mark.parametrize("name", NAMES)
def test_reduction_sees_every_outcome_the_unreduced_tree_sees(name):
    leaves = leaves_of(name)
    report, seen = behaviours_of(subject(name))
    assert seen == {behaviour(obs) for obs, _ in leaves.values()}
    assert report.complete and report.unfinished == 0
    assert report.runs <= len(leaves)


@pytest.mark.parametrize("name", ["barrier", "mixed", "store-race", "watch-tie"])
def test_orders_mode_reaches_every_outcome_of_the_duration_tree(name):
    naive = {behaviour(obs) for obs, _ in leaves_of(name, orders=False).values()}
    _, seen = behaviours_of(subject(name))
    assert naive <= seen, len(naive - seen)


def test_the_reduction_prunes_and_the_racing_logs_keep_their_orders():
    leaves = leaves_of("log-race")
    report, seen = behaviours_of(subject("log-race"))
    assert report.pruned > 0 and report.runs < len(leaves)
    logs = {tuple(json.loads(b)[5]) for b in seen}
    # Lines logged at one instant (chain picks) and after completions
    # (completion picks) are seen in both orders.
    for one, other in (("alpha starts", "gamma starts"), ("alpha wrote", "beta wrote")):
        assert any(log.index(one) < log.index(other) for log in logs)
        assert any(log.index(other) < log.index(one) for log in logs)
    assert {json.loads(b)[1] for b in seen} == {"alpha", "beta", "gamma"}
    assert {json.loads(b)[0] for b in seen} == {"ok"}


def test_a_run_that_draws_random_numbers_is_not_reduced():
    leaves = leaves_of("random-race")
    report, seen = behaviours_of(subject("random-race"))
    assert len({json.loads(b)[1] for b in seen}) == 2
    assert report.pruned == 0 and report.runs == len(leaves)


def test_a_tenth_of_the_naive_tree_on_a_store_race():
    naive = leaves_of("store-race", orders=False)
    report, seen = behaviours_of(subject("store-race"))
    assert report.complete
    assert {behaviour(obs) for obs, _ in naive.values()} <= seen and len(seen) >= 6
    assert report.runs * 10 <= len(naive), (report.runs, len(naive))


def test_a_member_ending_at_its_timeout_wins_the_tie_in_every_order():
    """(tasks.timeouts.tie-member-wins, tasks.timeouts.join-any-nil) The timer
    keeps its instant: picking it first times the wait out; a completion
    picked ahead of it wins, even when it fires at the timer's instant, and
    the watchers (the tie among them) hold on every schedule."""
    spec = attrs.evolve(spec_from_flags(str(EXAMPLES / "explore" / "watch-tie.md")), orders=True)
    results = {}
    for obs, record in brute_force(Runner(spec).subject).values():
        assert oracles.no_violations(obs) == []
        assert check_all(obs, oracles.DEFAULT_CHECKS) == []
        results[obs["result"]] = record
    assert set(results) == {"task", "timeout"}
    assert [c.kind for c in results["timeout"] if c.value] == ["complete"]


def test_independence_reads_paths_as_a_tree():
    a = frozenset({"chain:0.0", "path:a"})
    assert independent(a, frozenset({"chain:0.1", "path:b"}))
    assert not independent(a, frozenset({"chain:0.1", "path:a/x"}))
    assert not independent(a, frozenset({"chain:0.1", "path:*"}))
    assert not independent(a, frozenset({"chain:0.0"}))
    assert not independent(a, frozenset({GLOBAL}))


def test_the_bound_keeps_every_outcome_of_the_bounded_tree():
    leaves = leaves_of("store-race")
    # The bound counts non-canonical choices other than chain picks.
    wanted = set()
    for obs, record in leaves.values():
        if sum(1 for c in record if c.value and c.kind != "chain") <= 1:
            wanted.add(behaviour(obs))
    _, seen = behaviours_of(subject("store-race"), max_deviations=1, reduce=False)
    assert seen == wanted


def test_a_search_that_hits_its_budget_says_so():
    subj = subject("store-race")
    report = exhaustive(subj, oracles.DEFAULT_CHECKS, limit=5)
    assert report.runs == 5 and not report.complete and report.unfinished > 0
    full = exhaustive(subj, oracles.DEFAULT_CHECKS, limit=100_000)
    assert full.complete and full.unfinished == 0 and full.runs > 5


def test_exhaustive_failures_are_shrunk():
    subj = subject("store-race")

    def gamma_first(obs):
        return ["gamma first"] if obs["result"].startswith("gamma") else []

    report = exhaustive(subj, [gamma_first], limit=100_000, stop_at_first=True)
    finding = report.findings[0]
    assert finding.proven and finding.deviations == deviations(finding.shrunk)
    obs, _ = subj(Chooser(ReplayProvider(finding.shrunk)))
    assert gamma_first(obs)
    assert not report.complete


@pytest.mark.parametrize("name", ["checked-join", "log-race", "store-race", "watch-tie"])
def test_the_canonical_order_is_the_canonical_schedule(name):
    """Orders mode changes what is chosen, not the canonical run: option 0 of
    every `complete` decision is the event queue's own order."""
    obs, sha = subject(name)(Chooser(ReplayProvider(())))
    plain, plain_sha = subject(name, orders=False)(Chooser(ReplayProvider(())))
    assert obs == plain and sha == plain_sha


def test_orders_mode_catches_a_timeout_that_wins_its_tie():
    """(tasks.timeouts.tie-member-wins) With the timer sorting first at its
    instant (the tie-goes-to-timeout mutant), a completion the timer
    overtook ends at the timer's instant, and the watcher sees the timeout
    win; the correct engine never shows that tie (above)."""
    spec = attrs.evolve(spec_from_flags(str(EXAMPLES / "explore" / "watch-tie.md")), orders=True)
    with variation.switched("timeouts.tie-goes-to-timeout"):
        problems = [p for obs, _ in brute_force(Runner(spec).subject).values()
                    for p in oracles.no_violations(obs)]
    assert any("timeout won the tie" in p for p in problems)


def test_orders_mode_reaches_a_tie_whose_completion_is_due_after_the_timer():
    """(tasks.timeouts.tie-member-wins) On watch-liveness.md, Impatient's
    member is due 0.01 s after its 0.001 s timeout starts.  Random's `tie`
    duration lands it on the timeout's instant, where the tie-goes-to-timeout
    mutant lets the timeout win (random finds it in a median of 4 runs,
    benchmarks/strategies.py).  Orders mode used to fire it a nanosecond
    before the timer when picked first and at its own instant when picked
    after, so the walk covered the tree in 4 runs and found nothing; a
    completion picked right after a timer the engine sorts first at its
    instant now fires on that instant."""
    from forge.conformance.mutants import oracle_specs
    from forge.repro import prepare
    from forge.runspec import Expectation
    from forge.verdict import Verdict

    spec = attrs.evolve(dict(oracle_specs())["watch-liveness.md"], orders=True)
    with variation.switched("timeouts.tie-goes-to-timeout"):
        runner, _, checks = prepare(spec, Expectation(same_ids=True,
                                                      ending=Verdict(allow_failed=True)))
        report = exhaustive(runner.subject, [lambda obs: check_all(obs, checks)],
                            limit=10_000)
    assert report.complete
    assert any("timeout won the tie" in p for f in report.findings for p in f.problems)


@pytest.mark.parametrize("args, most", [("1", 9), ("2", 39), ("3", 111)])
def test_independent_chain_steps_at_one_instant_are_run_in_one_order(args, most):
    """Three tasks writing their own paths: their first steps at one instant
    commute, so the reduced walk of `store-race.md --args 2` runs at most a
    fifth of the 216 schedules it ran when chain picks were not reduced, and
    sees every outcome and behaviour of the unreduced tree of orders."""
    subj = example(STORE_RACE, args, orders=True)
    reduced, seen = behaviours_of(subj)
    if args != "3":     # the unreduced tree of --args 3 has 10,080 schedules
        unreduced, every = behaviours_of(subj, reduce=False)
        assert seen == every and unreduced.runs > 3 * reduced.runs
    assert len({json.loads(b)[1] for b in seen}) == 6
    assert reduced.complete and reduced.runs <= most and reduced.redundant > 0


def test_a_deviation_bound_keeps_every_chain_order_in_reach():
    """The bound does not count chain picks, so under it only completion
    picks are reduced: the bounded walk sees what the unreduced bounded walk
    sees, however few deviations it allows."""
    subj = example(STORE_RACE, "2", orders=True)
    for bound in (0, 1):
        _, seen = behaviours_of(subj, max_deviations=bound)
        _, every = behaviours_of(subj, max_deviations=bound, reduce=False)
        assert seen == every and len(every) == 6
