"""A host cancel is a chooser decision that may land before any scheduling
step (kit: cancel-at-any-step): `fault:cancel` says whether, `fault:cancel_step`
before which step, within the fault budget; shrinking moves it earliest or
drops it."""

from __future__ import annotations

import attrs

from forge.harness import FaultPlan
from forge.repro import explore_prompt
from forge.runspec import Expectation, Runner, spec_from_flags
from forge.sim.chooser import Canonical, Chooser, ReplayProvider
from tests.conftest import EXAMPLES

TWO = str(EXAMPLES / "two-tasks.md")


def cancel_spec():
    return spec_from_flags(TWO, faults="cancel", fault_budget=1)


def test_the_plan_offers_every_step_of_the_canonical_run():
    spec = cancel_spec()
    quiet = Runner(spec_from_flags(TWO)).run(Chooser(Canonical()))
    assert spec.fault_plan.cancel_steps == quiet.scheduler.steps == 4
    assert spec.fault_plan.cancel_instants_ns == ()


def test_a_cancel_lands_before_the_step_it_names_even_inside_one_instant():
    runner = Runner(cancel_spec())
    outcomes = set()
    for k in range(4):
        run, crash = runner.attempt(Chooser(ReplayProvider([1, k])))
        assert crash is None and run.outcome == "cancelled"
        records = run.trace.records
        at = next(r["i"] for r in records if r.get("event") == "host_cancel")
        assert records[at]["step"] == k + 1 and records[at]["t"] == 0
        assert sum(r["what"] == "step" for r in records[:at]) == k
        assert run.trace.violations == []
        outcomes.add(tuple(sorted((i, s["state"]) for i, s in run.observation()["tasks"].items())))
    # before the spawns, between them and the tasks, and after one task ended:
    # the instants of the canonical run (only t=0 here) could not tell these apart
    assert len(outcomes) >= 3


def test_no_cancel_decision_once_the_budget_is_spent_or_zero():
    spec = spec_from_flags(TWO, faults="cancel", fault_budget=0)
    chooser = Chooser(Canonical())
    Runner(spec).attempt(chooser)
    assert not any(c.kind.startswith("fault:") for c in chooser.choices)


def test_a_cancel_bug_shrinks_to_the_earliest_cancel():
    spec = cancel_spec()
    out = explore_prompt(spec, expect=Expectation(result="alpha text + beta text"), runs=50)
    assert out.failure is not None
    found = out.report.findings[0]
    # [1] and then canonical: a cancel before step 1 (a missing choice reads as 0)
    assert found.shrunk[0] == 1 and not any(found.shrunk[1:]) and found.deviations == 1
    assert found.proven


def test_a_replay_record_keeps_the_steps_and_an_old_plan_keeps_its_instants():
    from forge.run.record import record, spec_from_record

    spec = cancel_spec()
    run = Runner(spec).run(Chooser(ReplayProvider([1, 2])))
    rec = record(spec, Expectation(), 0, run.chooser.choices, run.observation())
    assert rec["faults"]["cancel_steps"] == 4
    assert spec_from_record(rec, "x.replay.json").fault_plan == spec.fault_plan
    old = attrs.evolve(spec, fault_plan=FaultPlan(("cancel",), 1, (0, 5)))
    assert "cancel_steps" not in record(old, Expectation(), 0, (), run.observation())["faults"]
