"""Every declared mutant, served over the pipe (`FORGE_MUTANT=ID forge
impl-serve --level 2`) and explored with `forge explore --impl`'s checks,
fails wherever the same mutant fails in process - the watchers' prompts,
the same seeds, no hand-written check (kit: explore-impl.watchers).

In process the per-step watchers read the reference's trace; over the pipe
the ones the event stream allows run on it (`stream_watch`), and the
differential comparison with the reference covers the rest.  The reference
served unmutated fails nowhere (no false alarm).

One pair is a known miss, kept in `UNSEEABLE` with its reason: a mutant
whose wrong step leaves no trace in any observation, so only a watcher that
reads what no event reports could see it.  The test holds that the list is
exactly the misses, and that each such mutant is still caught over the pipe
on a prompt whose observation shows the step (`SHOWN_BY`).
"""

from __future__ import annotations

import pathlib
import sys

import pytest

from forge.conformance import oracles, stream_watch
from forge.conformance.adapters import SubprocessAdapter
from forge.conformance.impl_explore import explore_impl
from forge.conformance.mutants import CATALOGUE
from forge.repro import explore_prompt
from forge.runspec import Expectation, spec_from_values

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVE2 = [sys.executable, "-m", "forge", "impl-serve", "--level", "2"]
RUNS = 30
#: Prompts made for the watchers and liveness monitors that read the trace
#: alone (`forge mutants`' oracle column): over the pipe only the
#: differential comparison could see what they catch, which this test does
#: not claim for them.
TRACE_ONLY = ("watch-ids.md", "watch-depth.md", "watch-liveness.md")
#: The watchers' prompts (docs/exploring.md), with the flags they need.
PROMPTS = [("examples/explore/watch-admission.md", {"concurrency": 1})] + [
    (str(p.relative_to(ROOT)), {}) for p in sorted((ROOT / "examples" / "explore").glob("watch-*.md"))
    if "admission" not in p.name and p.name not in TRACE_ONLY] + [
    ("examples/two-tasks.md", {}),
    ("tests/conformance/differential/first-in-set-order.md", {}),
    ("tests/conformance/differential/tie.md", {}),
    ("tests/conformance/differential/second-join.md", {})]
#: (mutant, prompt) -> why it fails in process and cannot over the pipe.
UNSEEABLE = {
    ("double-delivery", "examples/explore/watch-delivery.md"):
        "the second join's result is swallowed by pcall: the observation is the reference's, "
        "and only DeliveredOnce, reading deliveries no event reports, sees the step",
    ("waiting-task-keeps-slot", "examples/explore/watch-limits.md"):
        "the queued task is admitted a step late but the run ends alike: only the liveness "
        "monitor QueuedWhileSlotFree, reading waits and admissions no event reports, sees it",
}
#: Mutant of `UNSEEABLE` -> a prompt whose observation shows its wrong step.
SHOWN_BY = {"double-delivery": "tests/conformance/differential/second-join.md"}
EXPECT = Expectation(invariants=True)


def spec(path: str, flags: dict):
    return spec_from_values(path, (ROOT / path).read_text(), **flags)


def in_process_failures() -> list[tuple[str, str, dict]]:
    found = []
    for mutant in CATALOGUE:
        if mutant.category == "lifecycle" or mutant.equivalent:
            continue
        for path, flags in PROMPTS:
            with mutant.applied():
                outcome = explore_prompt(spec(path, flags), expect=EXPECT, runs=RUNS,
                                         shrink_budget=50)
            if outcome.report.findings:
                found.append((mutant.id, path, flags))
    return found


def explored_over_the_pipe(argv: list[str], path: str, flags: dict):
    with SubprocessAdapter(argv, timeout=60) as adapter:
        return explore_impl(adapter, spec(path, flags), expect=EXPECT, runs=RUNS,
                            shrink_budget=50)


def test_every_mutant_fails_over_the_pipe_where_it_fails_in_process(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    failures = in_process_failures()
    assert len(failures) >= 8, failures          # the watchers' prompts do catch mutants
    missed = []
    for mutant, path, flags in failures:
        outcome = explored_over_the_pipe(["env", f"FORGE_MUTANT={mutant}", *SERVE2], path, flags)
        if not outcome.report.findings:
            missed.append((mutant, path))
    assert set(missed) == set(UNSEEABLE)
    for mutant in SHOWN_BY:
        outcome = explored_over_the_pipe(["env", f"FORGE_MUTANT={mutant}", *SERVE2],
                                         SHOWN_BY[mutant], {})
        assert outcome.report.findings, mutant


def test_the_reference_over_the_pipe_fails_none_of_the_prompts(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for path, flags in PROMPTS:
        outcome = explored_over_the_pipe(SERVE2, path, flags)
        assert not outcome.report.findings, (path, outcome.problems)


def test_the_watchers_that_cannot_run_on_events_are_named_with_why():
    """Every registered watcher either runs over the event stream or is
    reported with its reason; the two that run do catch a bad stream."""
    names = {kind.__name__ for kind in oracles.WATCHERS}
    assert set(stream_watch.RUNS) <= names
    assert set(stream_watch.not_run()) == names - set(stream_watch.RUNS)
    assert all(why for why in stream_watch.not_run().values())
    started = {"kind": "task_started", "provenance": {"task": "0", "seq": 1}, "task": "0.0"}
    ended = {"kind": "task_succeeded", "provenance": {"task": "0.0", "seq": 2}, "task": "0.0"}
    twice = {"outcome": "ok", "error": None, "events": [started, ended, ended],
             "tasks": {"0.0": {"state": "done", "ok": True}}}
    assert "task 0.0 ended twice (task_succeeded, then task_succeeded)" in stream_watch.watch(twice)
    abandoned = {"kind": "task_abandoned", "provenance": {"task": "0.0", "seq": 1},
                 "task": "0.0", "reason": "owner_failed"}
    wrong = {"outcome": "ok", "error": None, "events": [started, abandoned],
             "tasks": {"0.0": {"state": "abandoned", "ok": False}}}
    assert any("expected owner_returned" in p for p in stream_watch.watch(wrong))
