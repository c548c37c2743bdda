"""Exploring a foreign engine's schedules over the pipe (`forge explore --impl`).

An implementation that speaks level 2 of the protocol asks the kit for every
open decision of a run, so a run of it is a *subject* like the reference's
(`forge.sim.explore`): a chooser in, an observation out.  Exploring (random,
PCT, exhaustive), shrinking and replaying then work on it unchanged; only
the story differs, since the kit cannot see a foreign engine's trace - the
shrunk schedule is told as the decisions that differ from canonical.

A replay file written here is the ordinary format-1 record (`forge.run.
record.record`): `forge explore --impl CMD FILE.replay.json` replays it through the
pipe and reports the first drift, and `forge replay FILE` runs the same
schedule on the reference.  A record of the reference's exhaustive search
(orders mode, whose choices pick completions) is refused, as `forge run
--strategy replay:` refuses it (`forge.run.record.FileReplay.check`).

The implementation is untrusted, as under `forge conformance`: a run it
cannot answer (a crash, a timeout, a malformed `choose`) is a failing run
(outcome `errored`), not bad input.  One that fails the canonical schedule
that way is reported there, without exploring (each such run may cost a
timeout); only a hello that breaks the protocol, or a level-1 one, is bad
input, naming `--impl`.  The run sent is `case.HarnessSpec.from_run` of the
flags: the harness a case would send.

Differential by default: every schedule the implementation runs is run
again on the reference engine, in this process, on the very decisions the
implementation asked (`DifferentialSubject`), and the two observations are
compared by the spec's equivalence (`equivalence`).  A difference is a
failure like any other - shrunk, recorded, replayed - told as a readable
diff naming the first differing event and the clauses it touches; an
implementation that asks other decisions than the reference would is told
so.  A known-differences file mutes differences a porter accepts.

What does not live here: the pipe (`adapters.SubprocessAdapter`, `level2`),
the search and the shrinker (`forge.sim`), the equivalence itself
(`equivalence`), the command's flags (`forge.commands.explore`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from forge.conformance.adapters import (
    AdapterError,
    HelloError,
    SubprocessAdapter,
    reference_observation,
)
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.equivalence import (Difference, KnownDifferences, differences, normative,
                                           render)
from forge.conformance.level2 import LEVEL
from forge.deferred import deferred
from forge.errors import InputError
from forge.run.options import CONCURRENCY, FAULTS
from forge.run.record import FileReplay, failure_section, record
from forge.run.spec import RunSpec
from forge.runspec import Expectation
from forge.sim.chooser import CHAIN_KIND, Canonical, Chooser, RecordedProvider, ReplayProvider
from forge.sim.explore import Finding, Report, explore
from forge.sim.strategies import SEARCH, lookup

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import stream_watch
    from forge.sim import exhaustive
else:
    stream_watch = deferred("forge.conformance.stream_watch")
    exhaustive = deferred("forge.sim.exhaustive")

#: The case id runs of an explored prompt carry over the pipe.
CASE_ID = "explore"


def case_of(spec: RunSpec) -> Case:
    """The one-run case that sends `spec` over the pipe.

    Raises:
        InputError: naming --faults: the protocol carries no fault plan.
    """
    if spec.fault_plan:
        raise InputError("faults are not offered over the protocol; explore a foreign engine "
                         "without --faults (`refuse` in a case pins a store fault)",
                         option=FAULTS)
    return Case(id=CASE_ID, path=spec.prompt_path, clauses=("kit:explore",),
                harness=HarnessSpec.from_run(spec), expect={}, prompt=spec.prompt_text)


def check_replayable(path: str, rec: dict, spec: RunSpec) -> None:
    """Refuse a record whose choices the pipe cannot replay: one of the
    reference's exhaustive search (orders mode), as `forge run --strategy
    replay:` refuses one of another mode than its run.

    Raises:
        InputError: naming the file.
    """
    FileReplay(path, rec, []).check(attrs.evolve(spec, orders=False), rec["run"]["seed"])


class PipeSubject:
    """`subject(chooser) -> (observation, sha256)` for a level-2 implementation.

    A run the implementation could not answer (a fault, an error message) is
    the outcome `errored`, so exploring reports it as a failing schedule
    instead of stopping.
    """

    def __init__(self, adapter: SubprocessAdapter, case: Case, steps: bool = False) -> None:
        try:
            level = adapter.level
        except HelloError as e:
            raise InputError(e.reason, file="--impl") from None
        except AdapterError:
            level = LEVEL       # it did not start: the first run errors, saying why
        if level != LEVEL:
            raise InputError(f"`{shlex.join(adapter.argv)}` speaks level 1: its hello has no "
                             '"level": 2, so the kit cannot choose its schedule',
                             file="--impl")
        self.adapter, self.case, self.steps = adapter, case, steps
        #: The latest run's observation and its chain decisions as answered
        #: (each one's options and the index taken), for `picks`.
        self.last: tuple[dict, list[tuple[Sequence[str], int]]] | None = None

    def picks(self, obs: dict) -> list[tuple[Sequence[str], int]] | None:
        """The chain decisions of the run that gave `obs` (the latest run's;
        None for another observation)."""
        return self.last[1] if self.last is not None and self.last[0] is obs else None

    def declared(self) -> frozenset[str]:
        """The optional step kinds the implementation's hello declares (none
        when it did not start: its runs error, saying why)."""
        try:
            return self.adapter.step_kinds()
        except AdapterError:
            return frozenset()

    def __call__(self, chooser: Chooser) -> tuple[dict, str]:
        try:
            obs = self.adapter.run_with(self.case, chooser.seed, chooser, steps=self.steps)
        except AdapterError as e:
            obs = {"outcome": "errored", "error": {"kind": "Adapter", "message": e.render()},
                   "events": [], "tasks": {}, "logs": []}
        self.last = (obs, [(options, c.value) for c, options in zip(chooser.choices,
                                                                    chooser.options)
                           if c.kind == CHAIN_KIND])
        body = json.dumps(obs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return obs, hashlib.sha256(body.encode("utf-8")).hexdigest()


class DifferentialSubject:
    """A `PipeSubject` whose every run is also run on the reference engine,
    on the decisions the implementation asked; `check` reports the
    difference (the search calls it right after the run it judges).

    `last` holds the latest comparison: (the implementation's observation,
    the reference's, the differences, the problems).
    """

    def __init__(self, pipe: PipeSubject, known: KnownDifferences) -> None:
        self.pipe, self.case, self.known = pipe, pipe.case, known
        self.last: tuple[dict, dict | None, list[Difference], list[str]] | None = None

    def __call__(self, chooser: Chooser) -> tuple[dict, str]:
        obs, sha = self.pipe(chooser)
        self.last = (obs, *self._compare(obs, chooser))
        return obs, sha

    def _compare(self, obs: dict, chooser: Chooser) -> tuple[dict | None, list[Difference],
                                                              list[str]]:
        if obs.get("outcome") == "errored":     # `not_errored` tells it
            return None, [], []
        provider = RecordedProvider([(c.kind, c.n, c.value) for c in chooser.choices])
        try:
            ours = reference_observation(self.case.prompt, self.case.harness, chooser.seed,
                                         self.case.path, Chooser(provider, seed=chooser.seed))
        except AdapterError as e:
            return None, [], [f"the reference could not run this schedule: {e.render()}"]
        problems = []
        drift = (Difference("decisions", None, provider.drift.describe())
                 if provider.drift is not None else None)
        if drift is not None and not self.known.mutes(drift):
            problems.append("the implementation asked other decisions than the reference "
                            "does: the reference, given the implementation's answers, "
                            f"left them at {provider.drift.describe()}")
        found = differences(ours, obs, self.known)
        if found:
            problems.append("differs from the reference: " + found[0].line())
        return ours, found, problems

    def check(self, obs: dict) -> list[str]:
        if self.last is not None and self.last[0] is obs:
            return self.last[3]
        return []

    def diff(self) -> list[str]:
        """The latest run's readable diff (empty without a difference)."""
        if self.last is None or self.last[1] is None:
            return []
        obs, ours, found, _ = self.last
        return render(found, ours, obs)


def not_errored(obs: dict) -> list[str]:
    if obs.get("outcome") == "errored":
        return [f"the implementation errored: {obs['error']['message']}"]
    return []


def pipe_checks(expect: Expectation, canonical: dict, ceiling: int = 8,
                declared: frozenset[str] = frozenset(),
                picks: Callable[[dict], Sequence | None] = lambda obs: None) -> list:
    """`expect`'s checks, as one that reports an errored run alone (the
    invariants have nothing to read in it); with the invariants, the
    watchers over the implementation's events and steps too
    (`stream_watch`; `ceiling` is the run's harness concurrency, `declared`
    the optional step kinds the engine's hello declares, `picks(obs)` the
    chain decisions of the run that gave `obs`, `PipeSubject.picks`)."""
    checks = expect.checks(canonical)
    if expect.invariants:
        checks.append(lambda obs: stream_watch.watch(obs, ceiling, declared, picks(obs)))

    def check(obs: dict) -> list[str]:
        return not_errored(obs) or [p for c in checks for p in c(obs)]

    return [check]


#: How a finding on the canonical schedule is drawn (`Finding.provider`):
#: the implementation failed there, and nothing else was explored.
ON_CANONICAL = Canonical().describe()


@attrs.frozen
class ImplExploreOutcome:
    report: Report
    #: The replay record of the shrunk failure, or None.
    record: dict | None = None
    problems: tuple[str, ...] = ()
    #: The shrunk schedule's non-canonical decisions, one line each.
    story: tuple[str, ...] = ()
    #: False when the canonical run errored and no other schedule was tried.
    explored: bool = True
    #: The shrunk run's readable diff from the reference (differential runs).
    diff: tuple[str, ...] = ()
    #: Watchers that could not run on the implementation's reports, and why
    #: (`stream_watch.not_run` of its canonical observation).
    not_run: dict = attrs.field(factory=dict)


def where(found: Finding) -> str:
    """Where a finding showed: `on the canonical schedule`, `on an exhaustive
    schedule`, or `at seed N`."""
    if found.provider == ON_CANONICAL:
        return "on the canonical schedule"
    return "on an exhaustive schedule" if found.seed is None else f"at seed {found.seed}"


def explore_impl(adapter: SubprocessAdapter, spec: RunSpec, *, expect: Expectation,
                 strategy: str = SEARCH, runs: int = 200, start_seed: int = 0,
                 pct_depth: int = 3, max_deviations: int | None = None, reduce: bool = True,
                 shrink_budget: int = 3000,
                 progress: Callable[[int], None] | None = None, differential: bool = True,
                 known: KnownDifferences = KnownDifferences(),
                 pct_horizon: int | None = None) -> ImplExploreOutcome:
    """`forge.repro.explore_prompt`, through the pipe; with `differential`,
    every schedule is also compared with the reference's on the same
    decisions (`DifferentialSubject`), `known` muting accepted differences.

    Raises:
        InputError: a run the protocol cannot carry (faults), or an
            implementation whose hello breaks the protocol or is level 1.
    """
    pipe = PipeSubject(adapter, case_of(spec), steps=expect.invariants)
    subject = DifferentialSubject(pipe, known) if differential else pipe
    first = Chooser(Canonical())
    canonical, _ = subject(first)

    declared = pipe.declared()
    not_run = stream_watch.not_run(canonical, declared, picks=True) if expect.invariants else {}
    errored = tuple(not_errored(canonical))
    if not errored and differential:
        errored = tuple(subject.check(canonical))
    if errored:
        values = tuple(first.values())
        found = Finding(None, errored, values, values, canonical, 0, True, ON_CANONICAL)
        outcomes = {str(canonical.get("outcome")): 1}
        report = Report(1, 1, (found,), outcomes, complete=not lookup(strategy).walks)
        diff = tuple(subject.diff()) if differential else ()
        return ImplExploreOutcome(report, _record(spec, expect, found, first, canonical, errored),
                                  errored, (), explored=False, diff=diff, not_run=not_run)
    checks = pipe_checks(expect, canonical, CONCURRENCY.of(pipe.case.harness), declared,
                         pipe.picks)
    if differential:
        checks.append(subject.check)
    if lookup(strategy).walks:
        report = exhaustive.exhaustive(subject, checks, limit=runs, reduce=reduce,
                                       max_deviations=max_deviations, shrink_budget=shrink_budget)
    else:
        report = explore(subject, range(start_seed, start_seed + runs), checks,
                         strategy=strategy, pct_depth=pct_depth, shrink_budget=shrink_budget,
                         progress=progress, horizon=pct_horizon)
    if not report.findings:
        return ImplExploreOutcome(report, not_run=not_run)
    found = report.findings[0]
    seed = found.seed if found.seed is not None else 0
    chooser = Chooser(ReplayProvider(found.shrunk), seed=seed)
    obs, _ = subject(chooser)
    problems = tuple(p for check in checks for p in check(obs))
    diff = tuple(subject.diff()) if differential else ()
    return ImplExploreOutcome(report, _record(spec, expect, found, chooser, obs, problems),
                              problems, tuple(story(chooser)), diff=diff, not_run=not_run)


def _record(spec: RunSpec, expect: Expectation, found: Finding, chooser: Chooser, obs: dict,
            problems: Sequence[str]) -> dict:
    """The replay record of `found`'s run (made by `chooser`, observed as `obs`)."""
    failure = failure_section(problems, obs.get("outcome"), found.deviations, found.proven)
    # No trace sha256 marks the record as an engine under test's: even one
    # that reports a trace hash ran its own engine, not the reference, so
    # `forge replay` re-checks the expectation instead of comparing bytes.
    # The steps are the watchers' reading, not the observation a replay compares.
    obs = {**{k: v for k, v in obs.items() if k != "steps"}, "trace_sha256": None}
    rec = record(spec, expect, chooser.seed, chooser.choices, obs, failure=failure,
                 strategy=found.provider)
    # What the engine observed, as far as the spec fixes it: `forge replay`
    # compares the reference's run of the same choices with it by the
    # equivalence (docs/observation.md, "Equivalence").
    rec["observation"] = normative(obs)
    return rec


def story(chooser: Chooser) -> list[str]:
    """The decisions of a run that differ from canonical: `#i kind: label (of n)`."""
    return [f"#{i} {c.kind}: {labels[c.value]} (option {c.value} of {c.n}; canonical "
            f"{labels[0]})"
            for i, (c, labels) in enumerate(zip(chooser.choices, chooser.options)) if c.value]


def replay_impl(adapter: SubprocessAdapter, spec: RunSpec, seed: int,
                choices: Sequence[tuple[str, int, int]], expect: Expectation,
                differential: bool = True,
                known: KnownDifferences = KnownDifferences()) -> tuple[list[str], str | None]:
    """Run a recorded schedule through the pipe: (its problems, the first drift or None).
    With `differential`, the run is compared with the reference's on the
    decisions the implementation asked.

    Raises:
        InputError: as `explore_impl`.
    """
    pipe = PipeSubject(adapter, case_of(spec), steps=expect.invariants)
    subject = DifferentialSubject(pipe, known) if differential else pipe
    canonical, _ = pipe(Chooser(Canonical()))
    provider = RecordedProvider(choices)
    obs, _ = subject(Chooser(provider, seed=seed))
    checks = pipe_checks(expect, canonical, CONCURRENCY.of(pipe.case.harness), pipe.declared(),
                         pipe.picks)
    if differential:
        checks.append(subject.check)
    drift = provider.drift.describe() if provider.drift is not None else None
    if drift is None and provider.pos < len(provider.record):
        drift = (f"the run asked for {provider.pos} choices, the record holds "
                 f"{len(provider.record)}")
    return [p for check in checks for p in check(obs)], drift

