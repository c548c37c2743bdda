"""Properties of task runs that hold on every schedule (Hypothesis picks both
the workload and the interleaving, and shrinks a failure to a minimal pair)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness, LatencyModel
from forge.prompt import parse_prompt
from forge.conformance import oracles
from forge.sim.chooser import Canonical, Chooser
from forge.sim.hypothesis import HypothesisProvider
from tests.conftest import prompt_text, run_text, section
from tests.strategies import plans

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_plan(text: str, chooser: Chooser, ceiling: int = 3):
    return run_prompt(parse_prompt(text, "plan.md"), Harness(ceiling=ceiling), chooser, RunConfig())


@SETTINGS
@given(plans(), st.data())
def test_invariants_hold_on_every_schedule(text, data):
    """Each task ends exactly once, statuses agree with events, reasons are
    sound, ids agree with the canonical schedule's, the ceiling is never passed
    (tasks.abandon.recorded-once, tasks.concurrency.default-8, kit: conformance.oracles)."""
    canonical = run_plan(text, Chooser(Canonical())).observation()
    run = run_plan(text, Chooser(HypothesisProvider(data)))
    obs = run.observation()
    problems = []
    for check in (*oracles.DEFAULT_CHECKS, oracles.consistent_ids(canonical)):
        problems += check(obs)
    assert not problems, problems
    assert run.admission.peak <= 3
    assert obs["outcome"] == "ok", obs["error"]
    assert obs["result"] == "done"


@SETTINGS
@given(plans(), st.data())
def test_nothing_is_delivered_twice(text, data):
    """On every schedule no finished task's result is delivered twice; cancelled tasks, which
    may be waited on again, are left out (tasks.wait.held-until-taken,
    tasks.consumed.second-wait)."""
    run = run_plan(text, Chooser(HypothesisProvider(data)))
    delivered = [r["task"] for r in run.trace.records if r["what"] == "deliver"]
    cancelled = {t for t, s in run.observation()["tasks"].items() if s["state"] == "cancelled"}
    done = [t for t in delivered if t not in cancelled]
    assert len(done) == len(set(done))


TIE = prompt_text(
    section("Main", """
local t = tasks.spawn('## Slow')
local first, ok, result = tasks.join_any({ t }, { timeout = %s })
if first == nil then
  tasks.join_any({ t })
  return 'timeout'
end
return result
"""),
    section("Slow", "store.write('x', 'y') return 'task'"),
)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 5000))
def test_a_task_ending_at_the_timeout_instant_wins(millis):
    """Store latency pinned to the timeout: the task and the timeout tie
    (tasks.timeouts.tie-member-wins)."""
    seconds = millis / 1000
    harness = Harness(latency_model=LatencyModel(base={"store": seconds}, menu=(1.0,)))
    obs = run_text(TIE % repr(seconds), harness=harness)
    assert obs["result"] == "task"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5000))
def test_a_timeout_before_the_end_returns_nils(millis):
    """A timeout that expires before the member ends makes the timed join_any return nil; a
    later untimed wait still collects it (tasks.timeouts.join-any-nil,
    tasks.timeouts.example-rewait)."""
    seconds = millis / 1000
    harness = Harness(latency_model=LatencyModel(base={"store": seconds + 0.001}, menu=(1.0,)))
    obs = run_text(TIE % repr(seconds), harness=harness)
    assert obs["result"] == "timeout"
