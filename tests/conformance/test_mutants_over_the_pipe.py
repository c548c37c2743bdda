"""Every declared mutant, served over the pipe (`FORGE_MUTANT=ID forge
impl-serve --level 2`) and explored with `forge explore --impl`'s checks,
fails wherever the same mutant fails in process - the watchers' prompts,
the same seeds, no hand-written check (kit: explore-impl.watchers).

In process the per-step watchers and the liveness monitors read the
reference's trace; over the pipe they read the engine's reported events and
steps (`stream_watch`, docs/protocol.md "Steps"), `call_start` steps
included, and `cancel` steps, which `forge impl-serve` declares in its
hello, feed the cancel monitor.  So the claim is held with the differential
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
from forge.conformance.impl_explore import case_of
from forge.runspec import Expectation, spec_from_values
from forge.sim.chooser import Canonical, Chooser
from forge.verdict import Verdict

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVE2 = [sys.executable, "-m", "forge", "impl-serve", "--level", "2"]
RUNS = 30
#: The watchers' prompts (docs/exploring.md), with the flags they need.
PROMPTS = [("examples/explore/watch-admission.md", {"concurrency": 1})] + [
    (str(p.relative_to(ROOT)), {}) for p in sorted((ROOT / "examples" / "explore").glob("watch-*.md"))
    if "admission" not in p.name] + [
    ("examples/two-tasks.md", {}),
    ("tests/conformance/differential/first-in-set-order.md", {}),
    ("tests/conformance/differential/tie.md", {}),
    ("tests/conformance/differential/second-join.md", {})]
#: (mutant, prompt or * for every prompt) -> why it fails in process and
#: cannot over the pipe: only a monitor the reports do not feed sees it
#: (`stream_watch.UNADAPTED`).  None today: the chain decisions the kit
#: answers feed `ReadyChainNotRun`, the last that had no view.
UNSEEABLE: dict[tuple[str, str], str] = {}
EXPECT = Expectation(invariants=True)
#: The mutants of the Tasks chapter (a lifecycle mutant has no prompt to run).
MUTANTS = [m for m in CATALOGUE if m.category != "lifecycle" and not m.equivalent]


def spec(path: str, flags: dict):
    return spec_from_values(path, (ROOT / path).read_text(), **flags)


@functools.cache
def in_process_failures() -> dict[str, list[tuple[str, dict, bool]]]:
    """Mutant -> the prompts (with flags) it fails in process, each with
    whether the mutant broke the reference's own assertions there (then the
    served engine errors, which fails the schedule before any watcher)."""
    found: dict[str, list[tuple[str, dict, bool]]] = {}
    for mutant in MUTANTS:
        for path, flags in PROMPTS:
            try:
                with mutant.applied():
                    outcome = explore_prompt(spec(path, flags), expect=EXPECT, runs=RUNS,
                                             shrink_budget=50)
            except AssertionError:
                found.setdefault(mutant.id, []).append((path, flags, True))
                continue
            if outcome.report.findings:
                found.setdefault(mutant.id, []).append((path, flags, False))
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
    for path, flags, crashed in in_process_failures().get(mutant, ()):
        outcome = explored_over_the_pipe(["env", f"FORGE_MUTANT={mutant}", *SERVE2], path, flags)
        if crashed:
            assert "the implementation errored" in outcome.problems[0], (mutant, path)
            continue
        # Every watcher and monitor ran.
        assert outcome.not_run == stream_watch.UNADAPTED == {}
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
    names = {kind.__name__ for kind in stream_watch.KINDS}
    assert {kind.__name__ for kind in oracles.WATCHERS} <= set(stream_watch.ADAPTED)
    assert set(stream_watch.ADAPTED) | set(stream_watch.UNADAPTED) == names
    assert set(stream_watch.not_run({"events": []})) == set(stream_watch.NEED_STEPS) \
        | set(stream_watch.NEED_CANCEL_STEPS) | set(stream_watch.NEED_PICKS)
    assert all("reported no `steps`" in why for name, why in stream_watch.not_run({}).items()
               if name in stream_watch.NEED_STEPS)
    # Steps from an engine whose hello declares no `cancel` steps (one of
    # before): only the cancel monitor is named; declared, none is.  The
    # ready-chain monitor runs when the kit answered the chain decisions.
    assert stream_watch.not_run({"steps": []}, picks=True) == stream_watch.NEED_CANCEL_STEPS
    assert stream_watch.not_run({"steps": []}, frozenset({"cancel"}), picks=True) == {}
    assert stream_watch.not_run({"steps": []}, frozenset({"cancel"})) == stream_watch.NEED_PICKS
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
    `middle` as the steps between the spawns and the ends (both admitted at
    once, unless `middle` has admissions of its own)."""
    if not any(step["what"] == "admit" for step in middle):
        middle = (_admit("0.0", 1, 1), _admit("0.1", 2, 2), *middle)
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
    nameless = _two_tasks({"what": "call_start", "t": 0, "chain": "0", "callee": 2})
    assert stream_watch.watch(nameless) == [
        "the engine's steps are unusable: steps[5] (call_start): `callee` is not a string"]
    assert stream_watch.watch({**_two_tasks(), "steps": [{"what": "jump", "t": 0}]})[0].startswith(
        "the engine's steps are unusable: steps[0] is not a step (step, spawn, call_start, admit")
    assert stream_watch.not_run({"steps": {}}, frozenset({"cancel"}), picks=True) == {
        name: why + " (and the engine reported no `steps`)"
        for name, why in {**stream_watch.NEED_STEPS, **stream_watch.NEED_CANCEL_STEPS,
                          **stream_watch.NEED_PICKS}.items()}


def _observed(*steps_: dict, origins: dict | None = None) -> dict:
    """An observation whose events are the ones `steps_` imply (a
    `task_started` per spawn, a terminal event per end), so the steps agree
    with them; `origins` gives tasks' origins (author by default)."""
    events, seq = [], {}

    def event(kind, task, prov, **more):
        seq[prov] = seq.get(prov, -1) + 1
        events.append({"kind": kind, "task": task, "provenance": {"task": prov, "seq": seq[prov]},
                       **more})

    tasks = {}
    for step in steps_:
        if step["what"] == "spawn":
            event("task_started", step["task"], step["owner"])
            tasks[step["task"]] = {"origin": (origins or {}).get(step["task"], "author")}
        elif step["what"] == "task_end":
            event(step["end"], step["task"], step["task"],
                  **({"reason": step["reason"]} if step["reason"] else {}))
    end = steps_[-1]
    return {"outcome": end["outcome"], "error": {"kind": "Lua", "value_kind": end["error"]}
            if end["error"] else None, "tasks": tasks, "events": events, "steps": list(steps_)}


def _step(what: str, t: int = 0, **fields) -> dict:
    return {"what": what, "t": t, **fields}


def _end(task: str, end: str = "task_succeeded", reason=None, error=None, t: int = 0) -> dict:
    return _step("task_end", t, task=task, end=end, reason=reason, error=error)


RUN_OK = _step("run_end", outcome="ok", error=None)


def test_calls_timed_joins_leaks_and_lost_wake_ups_are_read_off_the_steps():
    """The watchers the steps feed since `call_start` (ChildCounter,
    WithinDepthCap), the timed-out join's kept members, the leak rule (a
    task's origin from its status table, its failure from its end) and the
    two liveness monitors, each on steps that break its rule."""
    spawn = _step("spawn", task="0.0", owner="0")
    admit = _admit("0.0", 1, 1)
    called = _observed(spawn, admit, _step("call_start", chain="0", callee="0.2"),
                       _end("0.0"), RUN_OK)
    assert stream_watch.watch(called) == [
        "chain 0's call got id 0.2; its child counter gives 0.1 (spawns, calls and timed "
        "waits that park each take the next index)"]
    deep = "0" + ".0" * 8
    assert stream_watch.watch(_observed(_step("call_start", chain=deep, callee=deep + ".0"),
                                        RUN_OK)) == [
        f"chain {deep}.0 runs at depth 9, past the cap of 8"]
    dropped = _observed(spawn, admit, _step("spawn", task="0.1", owner="0"), _admit("0.1", 2, 2),
                        _step("wait", chain="0", call="tasks.join", members=["0.0", "0.1"],
                              timeout=5),
                        _end("0.0", t=1), _step("timeout", 5, chain="0"),
                        _step("step", 5, chain="0"), _end("0.1", t=6), RUN_OK)
    assert stream_watch.watch(dropped) == [
        "chain 0's timed-out tasks.join dropped the finished member(s) 0.0"]
    leak = _observed(spawn, admit, _step("step", chain="0.0"),
                     _step("spawn", task="0.0.0", owner="0.0"), _admit("0.0.0", 2, 1),
                     _end("0.0.0", "task_abandoned", "owner_returned"), _end("0.0"), RUN_OK)
    assert stream_watch.watch(leak) == [
        "chain 0.0 ended with task(s) 0.0.0 it spawned still live, and did not fail with "
        "tasks_live"]
    quiet = _observed(*leak["steps"], origins={"0.0.0": "model"})
    assert stream_watch.watch(quiet) == []
    queued = _observed(spawn, _step("step", chain="0"), _step("step", chain="0"),
                       _end("0.0", "task_abandoned", "run_terminated"), RUN_OK)
    assert "task 0.0 stayed queued while a slot was free for it" in stream_watch.watch(queued)
    asleep = _observed(spawn, admit, _step("wait", chain="0", call="tasks.join", members=["0.0"],
                                           timeout=None),
                       _step("step", chain="0.0"), _end("0.0"), _step("step", chain="0.0"),
                       RUN_OK)
    assert "chain 0 stayed parked on its tasks.join of 0.0 after they ended" in \
        stream_watch.watch(asleep)


#: Any ending passes, so only the watchers and monitors judge (the lost
#: cancel otherwise also fails the run's ending).
ANY_END = Expectation(same_ids=False, ending=Verdict(allow_failed=True))
LIVENESS = "examples/explore/watch-liveness.md"
LOST_CANCEL = "task 0.3 was cancelled by its owner and never ended cancelled (it ended " \
              "task_abandoned)"


def test_a_mutant_only_the_cancel_monitor_sees_fails_over_the_pipe_too(monkeypatch):
    """`cancel-lost-when-parked` (a cancel of a parked task that never
    lands): in process only `CancelNotLanded` sees it; over the pipe the
    `cancel` steps `forge impl-serve` declares feed it, with the same words
    (tasks.cancel.marks-cancelled)."""
    mutant = next(m for m in MUTANTS if m.id == "cancel-lost-when-parked")
    with mutant.applied():
        inside = explore_prompt(spec(LIVENESS, {}), expect=ANY_END, runs=RUNS, shrink_budget=50)
    assert inside.failure is not None
    assert [p.split(" (hot from")[0] for p in inside.failure.problems] == [LOST_CANCEL]
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with SubprocessAdapter(["env", f"FORGE_MUTANT={mutant.id}", *SERVE2], timeout=60) as adapter:
        assert adapter.step_kinds() == {"cancel"}
        outcome = explore_impl(adapter, spec(LIVENESS, {}), expect=ANY_END, runs=RUNS,
                               shrink_budget=50, differential=False)
        assert outcome.not_run == {}
        assert outcome.report.findings
        assert list(outcome.problems) == [LOST_CANCEL]
        # The same reports from an engine whose hello declares no `cancel`
        # steps: the monitor does not run, and says so.
        obs = adapter.run_with(case_of(spec(LIVENESS, {})), 0, Chooser(Canonical()), steps=True)
    assert LOST_CANCEL in stream_watch.watch(obs, declared=frozenset({"cancel"}))
    assert stream_watch.watch(obs) == []
    assert stream_watch.not_run(obs, picks=True) == stream_watch.NEED_CANCEL_STEPS


def test_cancel_steps_feed_the_cancel_monitor():
    spawn = _step("spawn", task="0.0", owner="0")
    cancelled = _step("cancel", chain="0", task="0.0")
    lost = _observed(spawn, _admit("0.0", 1, 1), cancelled,
                     _end("0.0", "task_abandoned", "owner_returned"), RUN_OK)
    cancels = frozenset({"cancel"})
    never = "task 0.0 was cancelled by its owner and never ended cancelled (it ended " \
            "task_abandoned)"
    assert never in stream_watch.watch(lost, declared=cancels)
    assert never not in stream_watch.watch(lost)
    landed = _observed(spawn, _admit("0.0", 1, 1), cancelled, _end("0.0", "task_cancelled"),
                       RUN_OK)
    assert stream_watch.watch(landed, declared=cancels) == []


MS = 10_000_000


def _hidden_run(*, cancelled: bool) -> tuple[dict, list]:
    """Main spawns 0.0 and 0.1; 0.0 runs first.  With `cancelled`, 0.0 ends,
    Main (woken by its join) is picked over 0.1 and cancels it, then waits
    on the store; else 0.0 waits on the store and the engine stops offering
    0.1 - the next pick, 10 ms later, offers 0.0 alone."""
    spawns = [_step("spawn", task="0.0", owner="0"), _admit("0.0", 1, 1),
              _step("spawn", task="0.1", owner="0"), _admit("0.1", 2, 2)]
    if cancelled:
        steps_ = [_step("step", chain="0"), *spawns,
                  _step("wait", chain="0", call="tasks.join", members=["0.0"], timeout=None),
                  _step("step", chain="0.0"), _end("0.0"), _step("deliver", chain="0", task="0.0"),
                  _step("step", chain="0"), _step("cancel", chain="0", task="0.1"),
                  _end("0.1", "task_cancelled"), _step("step", MS, chain="0"), RUN_OK]
        picks = [(["root:0"], 0), (["task:0.0", "task:0.1"], 0), (["task:0.1", "root:0"], 1),
                 (["root:0"], 0)]
    else:
        steps_ = [_step("step", chain="0"), *spawns,
                  _step("wait", chain="0", call="tasks.join", members=["0.0", "0.1"],
                        timeout=None),
                  _step("step", chain="0.0"), _step("step", MS, chain="0.0"), _end("0.0", t=MS),
                  _step("deliver", MS, chain="0", task="0.0"), _step("step", MS, chain="0.1"),
                  _end("0.1", t=MS), _step("deliver", MS, chain="0", task="0.1"),
                  _step("step", MS, chain="0"), _step("run_end", MS, outcome="ok", error=None)]
        picks = [(["root:0"], 0), (["task:0.0", "task:0.1"], 0), (["task:0.0"], 0),
                 (["task:0.1"], 0), (["root:0"], 0)]
    return _observed(*steps_), picks


def test_the_chain_decisions_feed_the_ready_chain_monitor():
    """Over the pipe a pick's options are the ready chains: a chain offered
    once and then no longer, though it neither ran nor ended, is still ready
    when the clock moves on - the kernel runs every ready chain before the
    next event (kit: liveness.ready-chain).  A chain whose task ended (a
    cancel) left the list; a step its decision does not name is reported."""
    hidden, picks = _hidden_run(cancelled=False)
    assert stream_watch.watch(hidden, declared=frozenset({"cancel"}), picks=picks) == [
        "chain 0.1 was still ready when the clock moved on to the next event (at t=0.01s)"]
    # Without the decisions the monitor does not run, and is named.
    assert stream_watch.watch(hidden, declared=frozenset({"cancel"})) == []
    assert set(stream_watch.not_run(hidden, frozenset({"cancel"}))) == {"ReadyChainNotRun"}
    cancelled, picks = _hidden_run(cancelled=True)
    assert stream_watch.watch(cancelled, declared=frozenset({"cancel"}), picks=picks) == []
    assert stream_watch.watch(cancelled, declared=frozenset({"cancel"}),
                              picks=[picks[0], (["task:0.0", "task:0.1"], 1), *picks[2:]]) == [
        "step 6 runs chain 0.0, but the chain decision before it took task:0.1"]
    assert stream_watch.watch(cancelled, declared=frozenset({"cancel"}), picks=picks[:2]) == [
        "step 9 runs chain 0, but the engine asked no chain decision for it (a step follows "
        "each `chain` decision)"]
