"""Every declared mutant, served over the pipe (`FORGE_MUTANT=ID forge
impl-serve --level 2`) and explored with `forge explore --impl`'s checks,
fails wherever the same mutant fails in process - the watchers' prompts,
the same seeds, no hand-written check (kit: explore-impl.watchers).

In process the per-step watchers read the reference's trace; over the pipe
they read the engine's reported events and steps (`stream_watch`,
docs/protocol.md "Steps").  So the claim is held with the differential
comparison turned off: the watchers alone, on what the engine reports,
catch every mutant where they catch it in process - one test per mutant.
The reference served unmutated fails nowhere (no false alarm), and an
engine that reports no steps is told which watchers could not run.
"""

from __future__ import annotations

import functools
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
#: (mutant, prompt or * for every prompt) -> why it fails in process and
#: cannot over the pipe.
UNSEEABLE = {
    ("ids-one-based", "*"):
        "only ChildCounter, which the steps do not feed, reads the numbering it breaks "
        "(the differential comparison, off here, sees the ids differ)",
    ("waiting-task-keeps-slot", "examples/explore/watch-limits.md"):
        "the queued task is admitted a step late but the run ends alike: only the liveness "
        "monitor QueuedWhileSlotFree, which the steps do not feed, sees it",
}
EXPECT = Expectation(invariants=True)
#: The mutants of the Tasks chapter (a lifecycle mutant has no prompt to run).
MUTANTS = [m for m in CATALOGUE if m.category != "lifecycle" and not m.equivalent]


def spec(path: str, flags: dict):
    return spec_from_values(path, (ROOT / path).read_text(), **flags)


@functools.cache
def in_process_failures() -> dict[str, list[tuple[str, dict]]]:
    """Mutant -> the prompts (with flags) it fails in process."""
    found: dict[str, list[tuple[str, dict]]] = {}
    for mutant in MUTANTS:
        for path, flags in PROMPTS:
            with mutant.applied():
                outcome = explore_prompt(spec(path, flags), expect=EXPECT, runs=RUNS,
                                         shrink_budget=50)
            if outcome.report.findings:
                found.setdefault(mutant.id, []).append((path, flags))
    return found


def explored_over_the_pipe(argv: list[str], path: str, flags: dict, differential: bool = False):
    with SubprocessAdapter(argv, timeout=60) as adapter:
        return explore_impl(adapter, spec(path, flags), expect=EXPECT, runs=RUNS,
                            shrink_budget=50, differential=differential)


def test_the_watchers_prompts_catch_mutants_in_process():
    assert sum(map(len, in_process_failures().values())) >= 8
    assert "admit-newest-first" in in_process_failures()


@pytest.mark.parametrize("mutant", [m.id for m in MUTANTS])
def test_the_mutant_fails_over_the_pipe_where_it_fails_in_process(mutant, monkeypatch):
    """The watchers alone (no differential comparison) on the engine's
    reports catch the mutant wherever they catch it in process."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for path, flags in in_process_failures().get(mutant, ()):
        outcome = explored_over_the_pipe(["env", f"FORGE_MUTANT={mutant}", *SERVE2], path, flags)
        # The watchers the steps do not feed yet are named, and no other.
        assert set(outcome.not_run) == set(stream_watch.UNADAPTED)
        if (mutant, path) in UNSEEABLE or (mutant, "*") in UNSEEABLE:
            assert not outcome.report.findings, "seen now: drop it from UNSEEABLE"
        else:
            assert outcome.report.findings, (mutant, path)


def test_the_reference_over_the_pipe_fails_none_of_the_prompts(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for path, flags in PROMPTS:
        outcome = explored_over_the_pipe(SERVE2, path, flags)
        assert not outcome.report.findings, (path, outcome.problems)


def test_without_steps_the_watchers_that_cannot_run_are_named_with_why():
    """An engine that ignores the request for steps: the watchers the events
    carry run, and every other one is reported with its reason."""
    names = {kind.__name__ for kind in oracles.WATCHERS}
    assert set(stream_watch.ADAPTED) | set(stream_watch.UNADAPTED) == names
    assert set(stream_watch.not_run({"events": []})) == \
        set(stream_watch.NEED_STEPS) | set(stream_watch.UNADAPTED)
    assert all("reported no `steps`" in why for name, why in stream_watch.not_run({}).items()
               if name in stream_watch.NEED_STEPS)
    assert stream_watch.not_run({"steps": []}) == stream_watch.UNADAPTED
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
    backwards = {"outcome": "ok", "error": None, "events": [
        {"kind": "lua", "message": "a", "provenance": {"task": "0", "seq": 4}},
        {"kind": "lua", "message": "b", "provenance": {"task": "0", "seq": 4}}], "tasks": {}}
    assert stream_watch.watch(backwards) == [
        "task 0's event lua has seq 4, expected at least 5"]


def _two_tasks(*middle: dict) -> dict:
    """An observation of Main starting 0.0 and 0.1 and joining both, with
    `middle` as the steps between the spawns and the ends."""
    def event(kind, task, prov, seq):
        return {"kind": kind, "task": task, "provenance": {"task": prov, "seq": seq}}

    return {"outcome": "ok", "error": None, "tasks": {"0.0": {}, "0.1": {}},
            "events": [event("task_started", "0.0", "0", 0), event("task_started", "0.1", "0", 1),
                       event("task_succeeded", "0.0", "0.0", 0),
                       event("task_succeeded", "0.1", "0.1", 0)],
            "steps": [{"what": "step", "t": 0, "chain": "0"},
                      {"what": "spawn", "t": 0, "task": "0.0", "owner": "0"},
                      {"what": "spawn", "t": 0, "task": "0.1", "owner": "0"},
                      *middle,
                      {"what": "task_end", "t": 5, "task": "0.0", "end": "task_succeeded",
                       "reason": None, "error": None},
                      {"what": "task_end", "t": 5, "task": "0.1", "end": "task_succeeded",
                       "reason": None, "error": None},
                      {"what": "run_end", "t": 5, "outcome": "ok", "error": None}]}


def _admit(task: str, running: int, busy: int, limit: int = 8) -> dict:
    return {"what": "admit", "t": 0, "task": task, "owner": "0", "running": running,
            "busy": busy, "limit": limit, "parent_limit": None}


def test_with_steps_every_watcher_reads_the_engines_steps():
    ok = _two_tasks(_admit("0.0", 1, 1), _admit("0.1", 2, 2))
    assert stream_watch.watch(ok) == []
    assert stream_watch.watch(ok, ceiling=1) == [
        "admitting task 0.1 made 2 tasks run at once, above the ceiling 1",
        "admitting task 0.1 made 2 tasks of chain 0 run at once, above its limit 1"]
    assert stream_watch.watch(_two_tasks(_admit("0.0", 1, 1), _admit("0.1", 2, 2, limit=1))) == [
        "admitting task 0.1 made 2 tasks of chain 0 run at once, above its limit 1"]
    assert stream_watch.watch(_two_tasks(_admit("0.1", 1, 1), _admit("0.0", 2, 2))) == [
        "task 0.1 was admitted before task 0.0, spawned earlier by the same owner"]
    early = _two_tasks({"what": "deliver", "t": 0, "chain": "0", "task": "0.0"})
    assert stream_watch.watch(early) == ["task 0.0 was delivered to chain 0 before it ended"]
    tie = _two_tasks({"what": "wait", "t": 0, "chain": "0", "call": "tasks.join_any",
                      "members": ["0.0"], "timeout": 5},
                     {"what": "step", "t": 5, "chain": "0.1"},
                     {"what": "timeout", "t": 5, "chain": "0"})
    assert stream_watch.watch(tie) == [
        "chain 0's timeout won the tie with task 0.0, which ended at the same instant"]


def test_steps_the_events_belie_or_that_are_malformed_are_refused():
    lying = _two_tasks()
    lying["steps"] = [s for s in lying["steps"] if s.get("task") != "0.1"]
    assert stream_watch.watch(lying) == [
        "the steps start tasks [0.0] but the events start [0.0, 0.1]",
        "the steps end tasks [('0.0', 'task_succeeded')] but the events end "
        "[('0.0', 'task_succeeded'), ('0.1', 'task_succeeded')]"]
    broken = _two_tasks({"what": "admit", "t": 0, "task": "0.0"})
    assert stream_watch.watch(broken) == [
        "the engine's steps are unusable: steps[3] (admit): `owner` is not a string"]
    assert stream_watch.watch({**_two_tasks(), "steps": [{"what": "jump", "t": 0}]})[0].startswith(
        "the engine's steps are unusable: steps[0] is not a step (step, spawn, admit")
    assert stream_watch.not_run({"steps": {}}) == {
        **stream_watch.UNADAPTED,
        **{name: why + " (and the engine reported no `steps`)"
           for name, why in stream_watch.NEED_STEPS.items()}}
