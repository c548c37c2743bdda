"""The oracles that check a run while it happens (`forge.conformance.oracles`
watchers, fed by `forge.sim.trace.Trace.observe`): the reference passes them
on every schedule tried, and each one kills a mutant the end-of-run checks
let through, naming the trace record where the rule broke
(kit: in-run-oracles)."""

from __future__ import annotations

import pathlib

import attrs
import pytest

from forge import variation
from forge.conformance import oracles
from forge.engine.run import Run, RunConfig
from forge.harness import Harness, LatencyModel
from forge.prompt import load_prompt
from forge.sim.chooser import Canonical, Chooser, RandomProvider
from forge.sim.trace import Trace


EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "explore"


def example(name: str):
    return load_prompt(str(EXAMPLES / name))


def watched(prompt, harness=None, seed=None):
    chooser = Chooser(Canonical() if seed is None else RandomProvider(seed))
    run = Run(prompt, harness or Harness(ceiling=2), chooser, RunConfig())
    run.trace.observe(oracles.watchers(run))
    run.execute()
    obs = run.observation()
    end_of_run = [p for check in oracles.DEFAULT_CHECKS for p in check(obs)]
    return run.trace.violations, end_of_run, obs


TWICE = example("watch-delivery.md")
THREE = example("watch-admission.md")
TIE = example("watch-tie.md")
FAILING_OWNER = example("watch-abandon.md")
LIMITS = example("watch-limits.md")

PROMPTS = [(TWICE, Harness(ceiling=2)), (THREE, Harness(ceiling=1)),
           (TIE, Harness(latency_model=LatencyModel(base={"store": 1.0}, menu=(1.0,)))),
           (FAILING_OWNER, Harness(ceiling=2)), (LIMITS, Harness(ceiling=8))]


@pytest.mark.parametrize("n", range(len(PROMPTS)))
def test_the_reference_passes_every_watcher_on_every_schedule_tried(n):
    prompt, harness = PROMPTS[n]
    for seed in [None, *range(8)]:
        violations, end_of_run, _ = watched(prompt, harness, seed)
        assert violations == [] and end_of_run == []


@pytest.mark.parametrize(("site", "n", "watcher"), [
    ("delivery.double-delivery", 0, "DeliveredOnce"),
    ("admission.no-limit", 1, "WithinLimits"),
    ("admission.newest-first", 1, "AdmittedInSpawnOrder"),
    ("timeouts.tie-goes-to-timeout", 2, "TimeoutLosesTies"),
    ("endings.failed-owner-says-returned", 3, "AbandonReasonFits"),
    ("admission.not-clamped", 4, "WithinLimits"),
])
def test_each_watcher_kills_a_mutant_the_end_of_run_checks_miss(site, n, watcher):
    prompt, harness = PROMPTS[n]
    with variation.switched(site):
        violations, end_of_run, _ = watched(prompt, harness)
    assert end_of_run == []
    assert watcher in {v.by for v in violations}
    first = violations[0]
    assert "trace record" in first.text() and first.i >= 0


def test_a_violation_is_pinned_to_the_record_that_shows_it():
    with variation.switched("delivery.double-delivery"):
        violations, _, _ = watched(TWICE)
    run = Run(TWICE, Harness(ceiling=2), Chooser(Canonical()), RunConfig())
    with variation.switched("delivery.double-delivery"):
        run.execute()
    record = run.trace.records[violations[0].i]
    assert record["what"] == "deliver" and record["task"] == "0.0"
    delivers = [r["i"] for r in run.trace.records if r["what"] == "deliver"]
    assert violations[0].i == delivers[1]


def test_ends_once_and_seq_contiguous_read_what_they_are_fed():
    """No variation site changes how ends are recorded once or how `seq` is
    numbered (one line each, in `tasks` and `Run.emit`): a fed trace shows
    that the watchers would see it."""
    @attrs.define
    class Facts:
        _events: list

    facts = Facts([("a", "S", "0", 0, {}), ("b", "S", "0", 2, {})])
    trace = Trace()
    trace.observe(oracles.watchers(facts, (oracles.EndsOnce, oracles.SeqContiguous)))
    trace.emit(0, "spawn", owner="0", task="0.0", target="A")
    trace.emit(0, "task_end", task="0.0", end="task_succeeded")
    trace.emit(0, "task_end", task="0.0", end="task_failed")
    problems = [v.problem for v in trace.violations]
    assert "task 0's event b has seq 2, expected 1" in problems
    assert "task 0.0 ended twice (task_succeeded, then task_failed)" in problems


def test_an_unobserved_trace_keeps_its_plain_emit():
    trace = Trace()
    trace.observe(())
    assert "emit" not in vars(trace)
    trace.observe(oracles.watchers(None, (oracles.EndsOnce,)))
    assert "emit" in vars(trace)


def test_the_story_shows_the_violation_after_the_step_that_showed_it():
    from forge.repro import explore_prompt
    from forge.runspec import Expectation, spec_from_flags

    spec = spec_from_flags(str(EXAMPLES / "watch-delivery.md"))
    with variation.switched("delivery.double-delivery"):
        out = explore_prompt(spec, expect=Expectation(), runs=3)
    story = list(out.failure.story)
    at = next(i for i, line in enumerate(story) if "VIOLATION" in line)
    assert "delivered twice" in story[at] and "reaches chain 0" in story[at - 1]
    assert any("delivered twice (to chain 0, then to chain 0) (trace record" in p
               for p in out.failure.problems)


def test_a_watched_run_leaves_no_cyclic_garbage():
    """The watchers hold the run and the trace holds them: once the run has
    executed the trace lets go of them (`Trace.unobserve`), so an explored
    schedule is freed by reference counting, as a plain run is."""
    import gc

    from forge.runspec import Runner, spec_from_flags

    runner = Runner(spec_from_flags(str(EXAMPLES / "watch-delivery.md")))
    runner.subject(Chooser(RandomProvider(0), seed=0))
    gc.collect()
    gc.disable()
    try:
        for seed in range(5):
            runner.subject(Chooser(RandomProvider(seed), seed=seed))
        assert gc.collect() == 0
    finally:
        gc.enable()
