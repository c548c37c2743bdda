"""Mutants: deliberately wrong variants of the reference engine.

A suite proves its strength by failing on engines that are wrong.  Each
mutant switches exactly one declared variation site (`forge.variation`):
the rule module that owns a rule names the places it could be got wrong,
and the reference reads the site where the rule is decided.  A mutant thus
reaches every use of its rule, since a rule is written once, and it patches
no private method, so it cannot silently miss.  `forge mutants` runs the
conformance suite and the schedule invariants against each one and prints a
kill matrix.  A mutant the suite does not kill either gets a new case or is
marked `equivalent` here with the reason.

Categories follow the design card's crown jewels - id numbering, races and
delivery, timeout ties, abandon reasons - and then status, concurrency,
errors and the model side.

What lives here: the catalogue (mutant id, category, site; `forge mutants
--list` prints it), looking a mutant up by id (`find`), and the kill
matrix: what kills each mutant, computed in this process or in worker
processes (each switches one site in its own process, so they cannot meet).
What does not: the sites and their wrong variants (each rule module), running
the suite (`runner`), the invariants (`forge.conformance.oracles`), and the command
(`mutants_cli`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs

import forge.engine.run  # noqa: F401 - importing the engine declares its sites
from forge.deferred import deferred
from forge.engine.run import Run, RunConfig, run_prompt
from forge.harness import Harness
import forge.lifecycle.manager  # noqa: F401 - and the lifecycle manager its own
import forge.lifecycle.sqlite_store  # noqa: F401 - and the SQLite store its durability sites
from forge import shipped, variation
from forge.errors import InputError
from forge.pool import Pool
from forge.prompt import load_prompt
from forge.run.options import CONCURRENCY
from forge.sim.chooser import Canonical, Chooser, RandomProvider
from forge.sim.strategies import SEARCH

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import liveness, repro, runspec, verdict
    from forge.conformance import adapters, catalogue, oracles, runner as suite_runner
    from forge.lifecycle import campaign, scenario as lifecycle_scenario
    from forge.sim import explore, fair
else:
    liveness = deferred("forge.liveness")
    repro = deferred("forge.repro")
    runspec = deferred("forge.runspec")
    verdict = deferred("forge.verdict")
    adapters = deferred("forge.conformance.adapters")
    catalogue = deferred("forge.conformance.catalogue")
    oracles = deferred("forge.conformance.oracles")
    suite_runner = deferred("forge.conformance.runner")
    campaign = deferred("forge.lifecycle.campaign")
    lifecycle_scenario = deferred("forge.lifecycle.scenario")
    explore = deferred("forge.sim.explore")
    fair = deferred("forge.sim.fair")


@attrs.frozen
class Mutant:
    id: str
    category: str
    #: The one variation site this mutant switches on.
    site: str
    #: Why the mutant cannot be told apart from the reference, if it cannot.
    equivalent: str | None = None

    @property
    def description(self) -> str:
        return variation.find(self.site).wrong

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        with variation.switched(self.site):
            yield


_SQLITE = ("the SQLite store's own site: the conformance cases run on the memory store; "
           "the store contract's history check kills it (forge.lifecycle.contract, "
           "connections_history_is_linearizable)")
_ROWS = [
    # id numbering
    ("ids-per-section", "ids", "ids.per-section"),
    ("ids-one-based", "ids", "ids.one-based"),
    ("timed-wait-takes-no-index", "ids", "ids.timed-wait-takes-no-index"),
    ("untimed-wait-takes-index", "ids", "ids.untimed-wait-takes-index"),
    ("ids-string-order", "ids", "ids.string-order"),
    ("call-takes-no-index", "ids", "ids.call-takes-no-index"),
    ("taskid-in-call-is-chain", "ids", "ids.taskid-in-call-is-chain"),
    ("h1-takes-no-entry", "ids", "ids.h1-takes-no-entry"),
    ("depth-cap-off-by-one", "ids", "ids.depth-cap-off-by-one"),
    # the walk
    ("task-runs-target-only", "walk", "walk.task-runs-target-only"),
    # races and delivery
    ("double-delivery", "delivery", "delivery.double-delivery"),
    ("join-any-last-ended", "delivery", "delivery.join-any-last-ended"),
    ("cancelled-is-consumed", "delivery", "delivery.cancelled-is-consumed"),
    ("join-duplicates-consume", "delivery", "delivery.join-duplicates-consume"),
    ("no-join-before-delivery", "races", "delivery.no-join-before-delivery"),
    ("writes-land-late", "races", "races.writes-land-late"),
    # timeout ties
    ("tie-goes-to-timeout", "timeouts", "timeouts.tie-goes-to-timeout"),
    ("timeout-cancels-members", "timeouts", "timeouts.expiry-cancels-members"),
    ("timed-join-drops-finished", "timeouts", "timeouts.timed-join-drops-finished"),
    ("timeout-in-milliseconds", "timeouts", "timeouts.in-milliseconds"),
    ("negative-timeout-accepted", "timeouts", "timeouts.negative-accepted"),
    # abandon reasons
    ("failed-owner-says-returned", "abandon", "endings.failed-owner-says-returned"),
    ("nested-run-terminated", "abandon", "endings.nested-run-terminated"),
    ("abandon-recorded-as-cancel", "abandon", "endings.abandon-recorded-as-cancel"),
    ("abandon-also-failed", "abandon", "endings.abandon-also-failed"),
    ("leak-not-reported", "abandon", "endings.leak-not-reported"),
    ("leak-ids-comma", "abandon", "endings.leak-ids-comma"),
    # status
    ("status-ok-false-while-running", "status", "status.ok-false-while-running"),
    ("main-walk-has-status", "status", "status.main-walk-has-status"),
    ("ready-false-when-cancelled", "status", "status.ready-false-when-cancelled"),
    ("pending-includes-ended", "status", "status.pending-includes-ended"),
    ("note-lands-on-owner", "status", "status.note-lands-on-owner"),
    # concurrency
    ("waiting-task-keeps-slot", "concurrency", "admission.waiting-keeps-slot"),
    ("concurrency-not-clamped", "concurrency", "admission.not-clamped"),
    ("admit-newest-first", "concurrency", "admission.newest-first"),
    ("no-concurrency-limit", "concurrency", "admission.no-limit"),
    # liveness: lost wake-ups and a lost cancel (the liveness monitors, forge.liveness)
    ("release-admits-nobody", "liveness", "admission.release-admits-nobody"),
    ("wake-waits-for-slot", "liveness", "admission.wake-waits-for-slot"),
    ("last-end-wakes-nobody", "liveness", "waits.last-end-wakes-nobody"),
    ("cancel-lost-when-parked", "liveness", "endings.cancel-lost-when-parked"),
    ("passed-over-waits-for-idle", "liveness", "kernel.passed-over-waits-for-idle"),
    # errors
    ("spawn-errors-internal", "errors", "errors.spawn-errors-internal"),
    ("wait-raises-cancelled", "errors", "errors.wait-raises-cancelled"),
    ("unknown-id-message", "errors", "errors.unknown-id-message"),
    ("cancel-not-idempotent", "errors", "errors.cancel-not-idempotent"),
    ("reraise-not-rebuilt", "errors", "errors.reraise-not-rebuilt"),
    ("immediate-calls-not-suspending", "errors", "errors.immediate-calls-not-suspending"),
    # model-started tasks
    ("envelope-keeps-angle-brackets", "model", "model.envelope-keeps-angle-brackets"),
    ("notice-cancel-spelling", "model", "model.notice-cancel-spelling"),
    ("model-tasks-leak", "model", "endings.model-tasks-leak"),
    ("model-cancel-queues-notice", "model", "model.cancel-queues-notice"),
    ("notices-delivered-twice", "model", "model.notices-delivered-twice"),
    ("notice-head-without-marks", "model", "model.notice-head-without-marks"),
    # the lifecycle manager: compare-and-set rules and races
    ("finalize-not-run-bound", "lifecycle", "lifecycle.finalize-not-run-bound"),
    ("finalize-overwrites-terminal", "lifecycle", "lifecycle.finalize-overwrites-terminal"),
    ("retry-ceiling-outside-store", "lifecycle", "lifecycle.retry-ceiling-outside-store"),
    ("retry-claim-any-status", "lifecycle", "lifecycle.retry-claim-any-status"),
    ("advance-any-status", "lifecycle", "lifecycle.advance-any-status"),
    ("stop-does-not-chase", "lifecycle", "lifecycle.stop-does-not-chase"),
    ("launch-never-looks-back", "lifecycle", "lifecycle.launch-never-looks-back"),
    ("sweep-reports-nothing", "lifecycle", "lifecycle.sweep-reports-nothing"),
    ("graceful-ignored-on-failure", "lifecycle", "lifecycle.graceful-ignored-on-failure"),
    ("reclaim-any-status", "lifecycle", "lifecycle.reclaim-any-status"),
    ("release-keeps-attempt", "lifecycle", "lifecycle.release-keeps-attempt"),
    ("sweep-fails-paused", "lifecycle", "lifecycle.sweep-fails-paused"),
    ("cap-not-in-store", "lifecycle", "lifecycle.cap-not-in-store"),
    ("status-delivers-working", "lifecycle", "lifecycle.status-delivers-working"),
    # the lifecycle manager's liveness: hot states never left (forge.lifecycle.liveness)
    ("stop-never-chases-run", "lifecycle", "lifecycle.stop-never-chases-run"),
    ("stop-reports-nothing", "lifecycle", "lifecycle.stop-reports-nothing"),
    ("failed-launch-keeps-claim", "lifecycle", "lifecycle.failed-launch-keeps-claim"),
    # the SQLite store's durability: the suite's cases run on the memory store, so
    # these are killed by the store contract's history check instead
    # (tests/lifecycle/test_stores.py, several connections to one file)
    ("ids-from-process-counter", "lifecycle", "lifecycle.ids-from-process-counter", _SQLITE),
    ("sqlite-finalize-check-then-write", "lifecycle",
     "lifecycle.sqlite-finalize-check-then-write", _SQLITE),
    ("sqlite-claim-reads-outside-lock", "lifecycle",
     "lifecycle.sqlite-claim-reads-outside-lock", _SQLITE),
]

CATALOGUE: list[Mutant] = [Mutant(*row) for row in _ROWS]


def by_id() -> dict[str, Mutant]:
    return {m.id: m for m in CATALOGUE}


def find(mutant_id: str, source: str) -> Mutant:
    """The mutant named `mutant_id`.

    Raises:
        InputError: naming `source` (where the id came from), for an id the
            catalogue lacks, with the nearest ids.
    """
    mutant = by_id().get(mutant_id)
    if mutant is None:
        raise InputError(f"no mutant is named {mutant_id[:80]!r}"
                         f"{catalogue.did_you_mean([mutant_id], by_id())}; `forge mutants --list` "
                         "lists them", file=source)
    return mutant


# -- the kill matrix ---------------------------------------------------------------

EXAMPLES = shipped.examples_dir()


def with_fewer_schedules(cases, seeds: int):
    """The cases with at most `seeds` random schedules each (mutants are
    usually killed on the canonical schedule; a few extra catch the rest)."""
    return [attrs.evolve(c, harness=attrs.evolve(c.harness, seeds=min(c.harness.seeds, seeds)))
            for c in cases]


#: The `explore/` prompts the suite's invariants are explored on as well:
#: the ready-chain liveness bound needs chains that keep each other ready,
#: which no top-level example has.
INVARIANT_PROMPTS = ("watch-fairness.md",)


def explore_prompts() -> list:
    """The example prompts the invariants are explored on (those without a
    model, and `INVARIANT_PROMPTS`)."""
    if EXAMPLES is None or not EXAMPLES.is_dir():
        # An install that dropped its data files; scoring without them would
        # let mutants only the invariants kill survive, so say so instead.
        raise InputError(f"forge mutants explores the kit's example prompts and cannot find "
                         f"{EXAMPLES or 'them'}; reinstall the kit (pip install .) or run it from a clone")
    return [(p.name, load_prompt(str(p))) for p in sorted(EXAMPLES.glob("*.md"))
            if not (EXAMPLES / (p.stem + ".model.json")).exists()] + [
        (name, load_prompt(str(EXAMPLES / "explore" / name))) for name in INVARIANT_PROMPTS]


#: The prefix of a killer found by the oracles alone (`oracle_kills`).
ORACLES = "oracles:"
#: How many schedules of each spec the oracles alone also explore fair after
#: a random prefix of `FAIR_PREFIX` chain picks, when no random one failed.
FAIR_SEEDS, FAIR_PREFIX = 5, 4


def oracle_specs() -> list:
    """What the oracles alone explore each mutant over: every example prompt
    (with its model, operator and tool scripts where it has them) and the
    `explore/` prompts made to exercise the watchers and the liveness
    monitors, under a ceiling of 2 (`watch-admission.md`: 1), as `(name, spec)`."""
    assert EXAMPLES is not None      # `explore_prompts` refused a missing folder first
    out = []
    for path in sorted(EXAMPLES.glob("*.md")) + sorted((EXAMPLES / "explore").glob("*.md")):
        scripts = {f"{kind}_script": str(path.with_suffix(f".{ext}.json"))
                   for kind, ext in (("model", "model"), ("operator", "operator"),
                                     ("tool", "tools"))
                   if path.with_suffix(f".{ext}.json").exists()}
        ceiling = 1 if path.name == "watch-admission.md" else 2
        given: dict[str, Any] = {**scripts, CONCURRENCY.name: ceiling}
        out.append((path.name, runspec.spec_from_flags(str(path), **given)))
    return out


def oracle_scenarios() -> list:
    """The lifecycle race scenarios (`examples/lifecycle/`), whose schedules
    the lifecycle manager's own oracles check, as `(name, scenario)`."""
    assert EXAMPLES is not None
    return [(p.name, lifecycle_scenario.load(str(p)))
            for p in sorted((EXAMPLES / "lifecycle").glob("*.scenario.toml"))]


def oracle_kills(specs, seeds: int, scenarios=()) -> list[str]:
    """What the oracles alone - the invariants, the watchers and the liveness
    monitors, with no conformance case, no ending expected and no user check -
    find on the canonical schedule and `seeds` random ones of each spec (and
    `FAIR_SEEDS` fair after a random prefix, when none of those failed), and
    the lifecycle manager's oracles on `3 * seeds` random schedules of each
    lifecycle scenario (run under the mutant already switched on):
    `oracles:PROMPT:SCHEDULE`."""
    expect = runspec.Expectation(same_ids=True, ending=verdict.Verdict(allow_failed=True))
    found = []
    for name, spec in specs:
        try:
            runner, canonical, checks = repro.prepare(spec, expect)
            if explore.check_all(runner.subject(Chooser(Canonical()))[0], checks):
                found.append(f"{ORACLES}{name}:canonical")
                continue
            for seed in range(seeds):
                obs, _ = runner.subject(Chooser(RandomProvider(seed), seed=seed))
                if explore.check_all(obs, checks):
                    found.append(f"{ORACLES}{name}:seed {seed}")
                    break
            else:
                # A few schedules fair after a random prefix, which the
                # ready-chain liveness bound is judged under (forge.sim.fair).
                for seed in range(min(seeds, FAIR_SEEDS)):
                    provider = fair.FairProvider(RandomProvider(seed), FAIR_PREFIX)
                    obs, _ = runner.subject(Chooser(provider, seed=seed))
                    if explore.check_all(obs, checks):
                        found.append(f"{ORACLES}{name}:fair seed {seed}")
                        break
        except Exception as e:  # noqa: BLE001 - a mutant that breaks the engine is found
            found.append(f"{ORACLES}{name}: crashed ({type(e).__name__})")

    for name, scenario in scenarios:
        try:
            outcome = campaign.run(scenario, strategy=SEARCH, runs=max(1, 3 * seeds))
        except Exception as e:  # noqa: BLE001 - as above
            found.append(f"{ORACLES}{name}: crashed ({type(e).__name__})")
            continue
        if outcome.failure is not None:
            found.append(f"{ORACLES}{name}:{SEARCH}")
    return found


def kills(mutant: Mutant, cases, prompts, seeds: int) -> list[str]:
    """What kills a mutant: failing case ids, then invariant findings."""
    killers: list[str] = []
    with mutant.applied():
        report = suite_runner.run_suite(cases, adapters.InProcessAdapter, workers=1)
        killers += [r.case_id for r in report.results if r.status in ("failed", "errored")]
        for name, prompt in prompts:
            try:
                canonical = run_prompt(prompt, Harness(ceiling=2), Chooser(Canonical()),
                                       RunConfig()).observation()
                checks = (*oracles.DEFAULT_CHECKS, oracles.same_ids(canonical))
                for seed in range(seeds):
                    # Watched by the liveness monitors: a hot state never left
                    # is an invariant broken in time.
                    run = Run(prompt, Harness(ceiling=2), Chooser(RandomProvider(seed)),
                              RunConfig())
                    run.trace.observe(liveness.monitors(run))
                    run.execute()
                    obs = run.observation()
                    if run.trace.violations or [p for c in checks for p in c(obs)]:
                        killers.append(f"explore:{name}:seed {seed}")
                        break
            except Exception as e:  # a mutant may crash the engine: that kills it too
                killers.append(f"explore:{name}: crashed ({type(e).__name__})")
    return killers


_WORKER: dict = {}


def _start_worker(cases, seeds: int) -> None:
    _WORKER.update(cases=cases, prompts=explore_prompts(), seeds=seeds, specs=oracle_specs(),
                   scenarios=oracle_scenarios())


def _kill_in_worker(mutant_id: str) -> list[str]:
    mutant = by_id()[mutant_id]
    found = kills(mutant, _WORKER["cases"], _WORKER["prompts"], _WORKER["seeds"])
    with mutant.applied():
        return found + oracle_kills(_WORKER["specs"], _WORKER["seeds"], _WORKER["scenarios"])


def kill_matrix(mutants: Sequence[Mutant], cases, seeds: int, workers: int = 1,
                progress=None) -> list[list[str]]:
    """The killers of each mutant, in the order given, whatever `workers` is:
    the suite's (failing cases, then invariant findings), then those of the
    oracles alone (`oracle_kills`, each starting `ORACLES`).

    With more than one worker, each mutant runs in a worker process of the
    campaigns' pool (`forge.pool`; one worker is this process); the rows come
    back in catalogue order, so the matrix is the one a single process computes.
    """
    explore_prompts()  # a missing examples/ is refused here, not in each worker
    with Pool(workers, _start_worker, (cases, seeds)) as pool:
        futures = [pool.submit(_kill_in_worker, m.id) for m in mutants]
        rows = []
        for n, (m, future) in enumerate(zip(mutants, futures), 1):
            rows.append(future.result())
            if progress:
                progress(n, m)
        return rows
