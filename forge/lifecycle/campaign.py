"""Running a lifecycle scenario under the simulator's strategies, and replaying it.

``run`` explores a scenario with random seeds, PCT (a campaign learning its
horizon) or exhaustively (with partial-order reduction, ``dpor``; with
``--no-reduce`` or a deviation bound, every schedule, ``forge.sim.exhaustive``); the
first failing schedule is
shrunk by ``forge.sim.shrink`` and answered with its schedule spelled out (who did
what, in order) and the recorded choices a replay file holds. ``replay``
runs one recorded schedule again, checking every choice against the record
(``drift`` is where the run first left it). Both answer frozen reports;
printing them is the command's (``command``).

Lives here: ``run``, ``replay``, ``replay_body`` (the replay file's text),
and their reports. Does not live here: the scenario format (``scenario``),
the replay file format (``replayfile``), the actors and oracles
(``explore``), the strategies (``sim``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.lifecycle.explore import Scenario, problems_of, subject
from forge.lifecycle.probes import coverage
from forge.sim.chooser import Chooser, RecordedProvider, ReplayProvider
from forge.sim.strategies import SEARCH, lookup

if TYPE_CHECKING:
    from forge.sim.chooser import Drift

    from forge.lifecycle.replayfile import Recorded

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.lifecycle import dpor, replayfile
    from forge.sim import exhaustive, explore
else:
    dpor = deferred("forge.lifecycle.dpor")
    replayfile = deferred("forge.lifecycle.replayfile")
    exhaustive = deferred("forge.sim.exhaustive")
    explore = deferred("forge.sim.explore")


@attrs.frozen
class Failure:
    """A failing schedule, shrunk: what broke and how to get there again."""

    problems: tuple[str, ...]
    seed: int | None
    #: The choices of the failing run as found, and shrunk.
    found: tuple[int, ...]
    shrunk: tuple[int, ...]
    deviations: int
    proven: bool
    #: The shrunk run's record: (kind, option count, value) per decision.
    record: tuple[tuple[str, int, int], ...]
    #: The shrunk run's steps: (actor, what it did), in order.
    steps: tuple[tuple[str, str], ...]
    provider: dict = attrs.field(factory=dict, eq=False)
    #: The liveness violations (``forge.lifecycle.liveness``): (index of the
    #: step its hot state began at, problem), what the story marks.
    hot: tuple[tuple[int, str], ...] = ()


@attrs.frozen
class Outcome:
    scenario: str
    strategy: str
    reduced: bool
    runs: int
    distinct: int
    complete: bool = True
    pruned: int = 0
    bounded: int = 0
    unfinished: int = 0
    horizon: int | None = None
    failure: Failure | None = None
    #: One schedule per class of equivalent schedules was run (``dpor``).
    por: bool = False
    #: The scenario file's text (``Scenario.text``): what a replay file records.
    text: str | None = attrs.field(default=None, repr=False)
    #: Schedules that reached each race outcome (``forge.lifecycle.probes``),
    #: every probe listed (0: never).
    probes: dict = attrs.field(factory=dict, eq=False)


def _record(scenario: Scenario, reduced: bool, choices: Sequence[int]) -> tuple[tuple, dict]:
    chooser = Chooser(ReplayProvider(choices))
    obs, _ = subject(scenario, reduced)(chooser)
    return tuple((c.kind, c.n, c.value) for c in chooser.choices), obs


def run(scenario: Scenario, strategy: str = SEARCH, runs: int = 200, start_seed: int = 0,
        pct_depth: int = 3, reduced: bool = True,
        max_deviations: int | None = None) -> Outcome:
    """Explore ``scenario`` under a strategy ``forge explore`` offers
    (``forge.sim.strategies.EXPLORING``): a walk of the whole tree, with
    partial-order reduction when ``reduced`` and unbounded, or a search over seeds."""
    subj = subject(scenario, reduced)
    walks = lookup(strategy).walks
    if walks and reduced and max_deviations is None:
        return _run_dpor(scenario, subj, runs, strategy)
    if walks:
        report = exhaustive.exhaustive(subj, [problems_of], limit=runs, reduce=False,
                                       max_deviations=max_deviations, stop_at_first=True)
    else:
        report = explore.explore(subj, range(start_seed, start_seed + runs), [problems_of],
                                 strategy=strategy, pct_depth=pct_depth)
    failure = _failure(scenario, reduced, report.findings[0]) if report.findings else None
    return Outcome(scenario.name, strategy, reduced, report.runs, report.distinct_traces,
                   report.complete, report.pruned, report.bounded, report.unfinished,
                   report.horizon, failure, text=scenario.text,
                   probes=coverage(report.probes))


def _failure(scenario: Scenario, reduced: bool, f: Any) -> Failure:
    record, obs = _record(scenario, reduced, f.shrunk)
    return Failure(tuple(f.problems), f.seed, tuple(f.choices), tuple(f.shrunk),
                   f.deviations, f.proven, record,
                   tuple((a, label) for a, label in obs["steps"]), f.provider,
                   tuple((step, problem) for step, problem in obs["hot"]))


def _run_dpor(scenario: Scenario, subj: Any, runs: int, strategy: str) -> Outcome:
    """Exhaustive with partial-order reduction (``dpor``): one schedule per class
    of equivalent schedules; a failure is shrunk as any other."""
    search = dpor.dpor(lambda provider: subj(Chooser(provider))[0], runs)
    failure = None
    if search.failure is not None:
        chooser = Chooser(ReplayProvider(search.choices))
        obs, _ = subj(chooser)
        found = explore.finding(subj, None, chooser, obs, problems_of(obs), [problems_of], 3000,
                                {"strategy": strategy})
        failure = _failure(scenario, True, found)
    return Outcome(scenario.name, strategy, True, search.runs, search.runs,
                   search.complete or failure is not None, failure=failure, por=True,
                   text=scenario.text, probes=coverage(search.probes))


def replay_body(path: str, outcome: Outcome) -> str:
    """The replay file of ``outcome``'s failure on the scenario file at ``path``
    (``replayfile``): the scenario's text, explored, goes in with the choices."""
    if outcome.text is None:
        raise ValueError("a scenario built in code has no file text for a replay file")
    return replayfile.write(path, outcome.text, outcome)


@attrs.frozen
class Replayed:
    problems: tuple[str, ...]
    steps: tuple[tuple[str, str], ...]
    rows: tuple[tuple, ...]
    #: Where the run first asked for a choice other than the recorded one
    #: (its kind or option count), or for one past the record's end; None if
    #: it took the recorded choices.
    drift: Drift | None = None
    #: The liveness violations, as ``Failure.hot``.
    hot: tuple[tuple[int, str], ...] = ()


def replay(scenario: Scenario, recorded: Recorded) -> Replayed:
    """Run the schedule a replay file recorded (``replayfile.read``) on ``scenario``."""
    provider = RecordedProvider(recorded.choices)
    obs, _ = subject(scenario, recorded.reduced)(Chooser(provider))
    return Replayed(tuple(problems_of(obs)), tuple((a, s) for a, s in obs["steps"]),
                    tuple(tuple(r) for r in obs["rows"]), provider.drift,
                    tuple((step, problem) for step, problem in obs["hot"]))


def story(steps: Sequence[tuple[str, str]], hot: Sequence[tuple[int, str]]) -> list[str]:
    """A schedule step by step, each liveness violation's hot suffix marked:
    ``HOT from here`` before the step its state turned hot in, and the
    violation after the last step (the schedule's end, by which it had to be
    left)."""
    lines = []
    for i, (actor, what) in enumerate(steps):
        lines.extend(f"  {'':>12}  HOT from here: {problem}" for step, problem in hot
                     if step == i)
        lines.append(f"  {actor:>12}  {what}")
    lines.extend(f"  {'':>12}  VIOLATION at the end of the schedule: {problem}"
                 for _, problem in hot)
    return lines
