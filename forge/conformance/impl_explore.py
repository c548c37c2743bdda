"""Exploring a foreign engine's schedules over the pipe (`forge explore --impl`).

An implementation that speaks level 2 of the protocol asks the kit for every
open decision of a run, so a run of it is a *subject* like the reference's
(`forge.sim.explore`): a chooser in, an observation out.  Exploring (random,
PCT, exhaustive), shrinking and replaying then work on it unchanged; only
the story differs, since the kit cannot see a foreign engine's trace - the
shrunk schedule is told as the decisions that differ from canonical.

A replay file written here is the ordinary format-1 record (`forge.runspec.
record`): `forge explore --impl CMD FILE.replay.json` replays it through the
pipe and reports the first drift, and `forge replay FILE` runs the same
schedule on the reference.

What does not live here: the pipe (`adapters.SubprocessAdapter`, `level2`),
the search and the shrinker (`forge.sim`), the command's flags
(`forge.commands.explore`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Sequence

import attrs

from forge.conformance.adapters import AdapterError, SubprocessAdapter
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.level2 import LEVEL
from forge.errors import InputError
from forge.runspec import Expectation, RunSpec, record
from forge.sim.chooser import Canonical, Chooser, RecordedProvider, ReplayProvider

#: The case id runs of an explored prompt carry over the pipe.
CASE_ID = "explore"


def case_of(spec: RunSpec) -> Case:
    """The one-run case that sends `spec` over the pipe.

    Raises:
        InputError: naming --faults: the protocol carries no fault plan.
    """
    if spec.faults:
        raise InputError("faults are not offered over the protocol; explore a foreign engine "
                         "without --faults (`refuse` in a case pins a store fault)",
                         file="--faults")
    harness = HarnessSpec(args=spec.args, concurrency=spec.concurrency,
                          store=dict(spec.store_files),
                          model_script=spec.model.data if spec.model else None,
                          operator_script=spec.operator.data if spec.operator else None,
                          latency=dict(spec.latency_base), cancel_at=spec.cancel_at)
    return Case(id=CASE_ID, path=spec.prompt_path, clauses=("kit:explore",), harness=harness,
                expect={}, prompt=spec.prompt_text)


class PipeSubject:
    """`subject(chooser) -> (observation, sha256)` for a level-2 implementation.

    A run the implementation could not answer (a fault, an error message) is
    the outcome `errored`, so exploring reports it as a failing schedule
    instead of stopping.
    """

    def __init__(self, adapter: SubprocessAdapter, case: Case) -> None:
        if adapter.level != LEVEL:
            raise InputError(f"`{shlex.join(adapter.argv)}` speaks level 1: its hello has no "
                             '"level": 2, so the kit cannot choose its schedule',
                             file="--impl")
        self.adapter, self.case = adapter, case

    def __call__(self, chooser: Chooser) -> tuple[dict, str]:
        try:
            obs = self.adapter.run_with(self.case, chooser.seed, chooser)
        except AdapterError as e:
            obs = {"outcome": "errored", "error": {"kind": "Adapter", "message": e.render()},
                   "events": [], "tasks": {}, "logs": []}
        body = json.dumps(obs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return obs, hashlib.sha256(body.encode("utf-8")).hexdigest()


def not_errored(obs: dict) -> list[str]:
    if obs.get("outcome") == "errored":
        return [f"the implementation errored: {obs['error']['message']}"]
    return []


def pipe_checks(expect: Expectation, canonical: dict) -> list:
    """`expect`'s checks, as one that reports an errored run alone (the
    invariants have nothing to read in it)."""
    checks = expect.checks(canonical)

    def check(obs: dict) -> list[str]:
        return not_errored(obs) or [p for c in checks for p in c(obs)]

    return [check]


@attrs.frozen
class ImplExploreOutcome:
    report: object
    #: The replay record of the shrunk failure, or None.
    record: dict | None = None
    problems: tuple[str, ...] = ()
    #: The shrunk schedule's non-canonical decisions, one line each.
    story: tuple[str, ...] = ()


def explore_impl(adapter: SubprocessAdapter, spec: RunSpec, *, expect: Expectation,
                 strategy: str = "random", runs: int = 200, start_seed: int = 0,
                 pct_depth: int = 3, max_deviations: int | None = None, reduce: bool = True,
                 shrink_budget: int = 3000,
                 progress: Callable[[int], None] | None = None) -> ImplExploreOutcome:
    """`forge.repro.explore_prompt`, through the pipe."""
    from forge.sim.exhaustive import exhaustive
    from forge.sim.explore import explore

    subject = PipeSubject(adapter, case_of(spec))
    canonical, _ = subject(Chooser(Canonical()))
    if not_errored(canonical):
        raise InputError(not_errored(canonical)[0], file="--impl")
    checks = pipe_checks(expect, canonical)
    if strategy == "exhaustive":
        report = exhaustive(subject, checks, limit=runs, reduce=reduce,
                            max_deviations=max_deviations, shrink_budget=shrink_budget)
    else:
        report = explore(subject, range(start_seed, start_seed + runs), checks,
                         strategy=strategy, pct_depth=pct_depth, shrink_budget=shrink_budget,
                         progress=progress)
    if not report.findings:
        return ImplExploreOutcome(report)
    found = report.findings[0]
    seed = found.seed if found.seed is not None else 0
    chooser = Chooser(ReplayProvider(found.shrunk), seed=seed)
    obs, _ = subject(chooser)
    problems = tuple(p for check in checks for p in check(obs))
    failure = {"problems": list(problems), "outcome": obs.get("outcome"),
               "deviations": found.deviations, "proven_minimal": found.proven, "faults": []}
    obs = {**obs, "trace_sha256": obs.get("trace_sha256") or ""}
    rec = record(spec, expect, seed, chooser.choices, obs, failure=failure,
                 strategy=found.provider)
    return ImplExploreOutcome(report, rec, problems, tuple(story(chooser)))


def story(chooser: Chooser) -> list[str]:
    """The decisions of a run that differ from canonical: `#i kind: label (of n)`."""
    return [f"#{i} {c.kind}: {labels[c.value]} (option {c.value} of {c.n}; canonical "
            f"{labels[0]})"
            for i, (c, labels) in enumerate(zip(chooser.choices, chooser.options)) if c.value]


def replay_impl(adapter: SubprocessAdapter, spec: RunSpec, seed: int,
                choices: Sequence[tuple[str, int, int]], expect: Expectation) -> tuple[
                    list[str], str | None]:
    """Run a recorded schedule through the pipe: (its problems, the first drift or None)."""
    subject = PipeSubject(adapter, case_of(spec))
    canonical, _ = subject(Chooser(Canonical()))
    provider = RecordedProvider(choices)
    obs, _ = subject(Chooser(provider, seed=seed))
    checks = pipe_checks(expect, canonical)
    drift = provider.drift.describe() if provider.drift is not None else None
    if drift is None and provider.pos < len(provider.record):
        drift = (f"the run asked for {provider.pos} choices, the record holds "
                 f"{len(provider.record)}")
    return [p for check in checks for p in check(obs)], drift

