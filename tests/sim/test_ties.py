"""Tie-seeking durations: while a timer is pending, a duration choice can
land the operation on the timer's instant or one nanosecond beside it, so
random, PCT and Hypothesis schedules reach the spec's same-instant tie rules (kit:
explore.ties; tasks.timeouts.tie-member-wins)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, find, settings

from forge import variation
from forge.harness import LATENCY_MENU, TIE_LABELS
from forge.repro import explore_prompt, prepare
from forge.runspec import Expectation, Runner, spec_from_flags
from forge.sim.chooser import Chooser, RandomProvider, ReplayProvider
from forge.sim.explore import check_all
from forge.sim.hypothesis import schedules
from tests.conftest import EXAMPLES

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIE = str(EXAMPLES / "explore" / "watch-tie.md")
MUTANT = "timeouts.tie-goes-to-timeout"


def latency_choices(chooser):
    return [(i, c) for i, c in enumerate(chooser.choices) if c.kind.startswith("latency:")]


def offered(path: str) -> set[tuple[str, ...]]:
    runner = Runner(spec_from_flags(path))
    seen = set()
    for seed in range(30):
        chooser = Chooser(RandomProvider(seed), seed=seed)
        runner.run(chooser)
        seen.update(tuple(chooser.options[i]) for i, _ in latency_choices(chooser))
    return seen


def test_tie_options_are_offered_only_while_a_timer_is_pending():
    menu = tuple(f"x{m}" for m in LATENCY_MENU)
    # Main's timed wait is pending whenever Slow writes ...
    assert offered(TIE) == {menu + TIE_LABELS}
    # ... and the store race has no timer at all.
    assert offered(str(EXAMPLES / "explore" / "store-race.md")) == {menu}


def with_pick(label: str) -> tuple[dict, Chooser]:
    """Watch-tie with Main parked first, its write landing at `label`."""
    runner = Runner(spec_from_flags(TIE))
    chooser = Chooser(ReplayProvider([0]))
    runner.run(chooser)
    i, choice = latency_choices(chooser)[0]
    values = chooser.values()[:i] + [tuple(chooser.options[i]).index(label)]
    replay = Chooser(ReplayProvider(values))
    return runner.run(replay).observation(), replay


@pytest.mark.parametrize(("label", "result", "time"), [
    ("tie", "task", 1.0), ("tie-1ns", "task", 0.999999999), ("tie+1ns", "timeout", 1.000000001)])
def test_a_tie_option_ends_the_operation_on_the_timer_or_beside_it(label, result, time):
    obs, _ = with_pick(label)
    # A member that ends at its timeout's instant wins the tie; a
    # nanosecond later it is too late.
    assert obs["result"] == result
    ended = [e for e in obs["effects"] if e.get("op") == "store"]
    assert ended and ended[0]["due"] == time


@pytest.mark.parametrize("strategy", ["random", "pct", "ties", "portfolio"])
def test_tie_goes_to_timeout_is_found_within_200_schedules(strategy):
    spec = spec_from_flags(TIE)
    with variation.switched(MUTANT):
        outcome = explore_prompt(spec, expect=Expectation(), strategy=strategy, runs=200,
                                 shrink_budget=0)
    report = outcome.report
    assert report.findings and report.runs <= 200
    assert "timeout won the tie" in report.findings[0].problems[0]


@pytest.mark.parametrize("strategy", ["pct", "portfolio"])
def test_a_member_due_after_its_timeout_ties_with_it_in_orders_mode_too(strategy):
    """On watch-liveness.md Impatient's member is due after its timeout.
    Random lands it on the timeout's instant with a `tie` duration; pct (in
    orders mode) reaches the same tie by picking the member right after the
    timeout, so it finds the tie-goes-to-timeout mutant too (it never did)."""
    spec = spec_from_flags(str(EXAMPLES / "explore" / "watch-liveness.md"), concurrency=2)
    with variation.switched(MUTANT):
        outcome = explore_prompt(spec, expect=Expectation(same_ids=False), strategy=strategy,
                                 runs=200, shrink_budget=0)
    report = outcome.report
    assert report.findings and report.runs <= 200
    assert "timeout won the tie" in report.findings[0].problems[0]


def test_hypothesis_schedules_reach_the_tie_and_it_replays():
    """`schedules()` answers the duration choice like any other, tie options
    included, so Hypothesis finds the tie-goes-to-timeout mutant and its
    schedule replays the watcher's finding."""
    runner, _, checks = prepare(spec_from_flags(TIE), Expectation())

    def timeout_won(chooser) -> bool:
        obs, _ = runner.subject(chooser)
        return any("timeout won the tie" in p for p in check_all(obs, checks))

    with variation.switched(MUTANT):
        found = find(schedules(), timeout_won,
                     settings=settings(max_examples=200, database=None, derandomize=True,
                                       suppress_health_check=list(HealthCheck)))
        assert timeout_won(Chooser(ReplayProvider(found.values())))
    assert not timeout_won(Chooser(ReplayProvider(found.values())))


def test_the_reference_passes_every_tie_schedule():
    spec = spec_from_flags(TIE)
    outcome = explore_prompt(spec, expect=Expectation(), strategy="random", runs=200)
    assert not outcome.report.findings


def test_tie_goes_to_timeout_is_found_over_level_2_within_200_schedules(tmp_path):
    """kit: explore-impl.differential"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), FORGE_MUTANT="tie-goes-to-timeout")
    served = f"{sys.executable} -m forge impl-serve --level 2"
    done = subprocess.run([sys.executable, "-m", "forge", "explore", "--impl", served, TIE,
                           "--runs", "200", "--replay-out", str(tmp_path / "r.json"), "--json"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    data = json.loads(done.stdout)
    # No --strategy: the portfolio, whose report names the member that found it.
    assert data["runs"] <= 200 and data["found_by"] in ("random", "ties", "pct depth 1",
                                                        "pct depth 2", "pct depth 3")
