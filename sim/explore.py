"""Exploring schedules: many choice sequences of one run, checked and shrunk.

`explore` runs a subject under a strategy per seed (random, or PCT learning
its horizon across the seeds, `forge.sim.pct`) and checks every result with the
checks it is given; the first failing schedule is shrunk to a local
minimum (`forge.sim.shrink`) and reported with its deviations from canonical.
`exhaustive` (`forge.sim.exhaustive`) walks the choice tree with partial-order
reduction.

A *subject* is any callable `subject(chooser) -> (observation, trace_sha)`:
the explorer knows nothing about prompts, which is why the lifecycle
manager's workloads can use it too.

What does not live here: the providers (`forge.sim.chooser`, `forge.sim.pct`), the
shrink passes (`forge.sim.shrink`), the reduction (`forge.sim.reduction`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from forge.sim import shrink as shrinking
from forge.sim.chooser import Chooser, Provider, ReplayProvider
from forge.sim.fair import FairProvider
from forge.sim.strategies import SEARCH, lookup

Subject = Callable[[Chooser], tuple[dict, str]]
Check = Callable[[dict], list[str]]

#: The observation key a subject lists the probes its run reached under
#: (the run domain's names, `forge.probes`): the searches only count them.
PROBES = "probes"


@attrs.frozen
class Finding:
    """A failing schedule: what broke, and the choices that reproduce it."""

    seed: int | None
    problems: tuple[str, ...]
    choices: tuple[int, ...]
    shrunk: tuple[int, ...]
    observation: dict = attrs.field(eq=False, repr=False)
    #: Choices of `shrunk` that differ from canonical (option 0).
    deviations: int = 0
    #: Every one-step neighbour of `shrunk` was run and passes.
    proven: bool = False
    #: How the failing run was drawn (`Provider.describe()`), so that
    #: `forge run --strategy` can draw it again.
    provider: dict = attrs.field(factory=dict, eq=False)
    #: The run was in orders mode (`Chooser.orders`): its provider's wish
    #: (PCT's), which a subject's spec may not say.
    orders: bool = False


@attrs.frozen
class Report:
    runs: int
    distinct_traces: int
    findings: tuple[Finding, ...]
    outcomes: dict
    #: False when the search stopped at its budget before covering its tree
    #: (exhaustive) - then `unfinished` subtrees were never run.
    complete: bool = True
    #: Subtrees skipped because an equivalent schedule is run (reduction).
    pruned: int = 0
    #: Subtrees skipped by the deviation bound.
    bounded: int = 0
    #: Subtrees still waiting when the budget ran out.
    unfinished: int = 0
    #: Runs whose schedule turned out equivalent to one already run.
    redundant: int = 0
    #: PCT's learned horizon (real decisions) at the end, if PCT ran.
    horizon: int | None = None
    #: Faults fired over all runs, by kind (`Chooser.faults_fired`).
    faults_fired: dict = attrs.field(factory=dict)
    #: Runs that reached each probe, by name (`PROBES`); a probe no run
    #: reached is absent.
    probes: dict = attrs.field(factory=dict)

    @property
    def explored(self) -> int:
        return self.runs


def tally(counts: dict[str, int], names: Iterable[str]) -> None:
    """Count each of `names` into `counts` (outcomes, faults fired, probes reached)."""
    for name in names:
        counts[name] = counts.get(name, 0) + 1


def run_once(subject: Subject, provider: Provider) -> tuple[dict, str, list[int]]:
    chooser = Chooser(provider)
    obs, sha = subject(chooser)
    return obs, sha, chooser.values()


def check_all(obs: dict, checks: Sequence[Check]) -> list[str]:
    problems: list[str] = []
    for check in checks:
        problems.extend(check(obs))
    return problems


def shrink_result(subject: Subject, chooser: Chooser, fails: Callable[[dict], bool],
                  budget: int = 3000) -> shrinking.ShrinkResult:
    """Shrink the failing run recorded in `chooser` (see `forge.sim.shrink`)."""

    def run(candidate: Sequence[int]):
        replay = Chooser(ReplayProvider(candidate), seed=chooser.seed, orders=chooser.orders)
        obs, _ = subject(replay)
        return fails(obs), replay.values(), [c.n for c in replay.choices]

    return shrinking.shrink(run, chooser.values(), [c.n for c in chooser.choices], budget)


def shrink(subject: Subject, choices: Sequence[int], fails: Callable[[dict], bool],
           budget: int = 3000, seed: int = 0) -> tuple[int, ...]:
    """The shrunk form of a failing choice sequence (see `shrink_result`)."""
    chooser = Chooser(ReplayProvider(choices), seed=seed)
    subject(chooser)
    return shrink_result(subject, chooser, fails, budget).choices


def finding(subject: Subject, seed: int | None, chooser: Chooser, obs: dict,
            problems: Sequence[str], checks: Sequence[Check], shrink_budget: int,
            provider: dict) -> Finding:
    def fails(o: dict) -> bool:
        return bool(check_all(o, checks))

    small = shrink_result(subject, chooser, fails, shrink_budget)
    return Finding(seed, tuple(problems), tuple(chooser.values()), small.choices, obs,
                   small.deviations, small.proven, provider, chooser.orders)


def explore(subject: Subject, seeds: Iterable[int], checks: Sequence[Check],
            strategy: str = SEARCH, pct_depth: int = 3, stop_at_first: bool = True,
            shrink_budget: int = 3000, progress: Callable[[int], None] | None = None,
            horizon: int | None = None, fair: int | None = None) -> Report:
    """Run one schedule per seed; PCT seeds share one campaign (its horizon,
    learned from the first run, or starting at `horizon` if given: a
    failure's seed then draws the schedule it drew in its campaign).  With
    `fair`, each schedule is the strategy's for its first `fair` chain picks
    and fair after them (`forge.sim.fair`)."""
    findings: list[Finding] = []
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    faults: dict[str, int] = {}
    probes: dict[str, int] = {}
    campaign = lookup(strategy).campaign(pct_depth, horizon)
    runs = 0
    for seed in seeds:
        drawn = provider = campaign.provider(seed)
        if fair is not None:
            provider = FairProvider(drawn, fair)
        # The run's own seed is the schedule's: seed N here is `forge run --seed N`.
        chooser = Chooser(provider, seed=seed)
        obs, sha = subject(chooser)
        # Described once run: a coverage-guided run spells the choices it made.
        described = provider.describe()
        campaign.learn(drawn, obs)
        runs += 1
        traces.add(sha)
        tally(outcomes, (str(obs.get("outcome")),))
        tally(faults, chooser.faults_fired())
        tally(probes, obs.get(PROBES, ()))
        problems = check_all(obs, checks)
        if progress:
            progress(runs)
        if problems:
            findings.append(finding(subject, seed, chooser, obs, problems, checks,
                                    shrink_budget, described))
            if stop_at_first:
                break
    return Report(runs, len(traces), tuple(findings), dict(sorted(outcomes.items())),
                  horizon=campaign.horizon,
                  faults_fired=dict(sorted(faults.items())), probes=dict(sorted(probes.items())))
