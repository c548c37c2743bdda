"""Exhaustive exploration of the Manager's races: racing callers as actors, every
interleaving of their store operations enumerated.

Each actor (a stop, a run ending, a retry, the restart sweep, ...) runs on a
thread of its own, but only one runs at a time: it parks at every *step* - a
store operation and, unless reduced, every call into the host (launcher,
stopper, hooks) - and a depth-first chooser decides which parked actor goes
next. A wait on the clock (the stop's look-again) is a step too: granting
it means the deadline passed, so both "the outcome lands during the wait"
and "after it" are explored. Every complete schedule is checked by the
oracles; the first failing one is reported with its choices (replayable).

Reduction: the report hooks and the Continue hook touch only records the
oracles compare as multisets, so they commute with everything the other
actor does; ``reduced=True`` makes only store operations and the calls that
reach the host's run registry (launcher, stopper) steps. The launcher and
the stopper must stay steps: whether a stop finds a run depends on whether
its launch has registered yet.

Lives here: ``Scenario``, ``explore`` (the DFS), ``Exploration`` (counts and
the first failure), the oracles, and ``RACES`` (the two-actor races of the
notes). Does not live here: the Manager, the stores, ``forge explore`` (the
simulator's explorer; a lifecycle scenario format for it is not built).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs

from forge.lifecycle.clock import VirtualClock
from forge.lifecycle.errors import TaskError
from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import (
    Continuation,
    RunOutcome,
    SpawnRequest,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.store import MemoryStore, NotFound

_WRITES = ("create", "finalize", "retry_claim", "release_retry_claim", "advance",
           "mark_input_required", "reclaim_working", "fail_orphans", "delete",
           "delete_session_tree", "settle")
_READS = ("get", "by_child_session", "list_all", "list_by_parent", "list_non_terminal",
          "session_tree", "owed")


class _Abort(BaseException):
    """Unwinds a parked actor when a schedule is abandoned."""


class Turnstile:
    """Lets exactly one actor run; the rest are parked at a step."""

    def __init__(self, choose: Callable[[list[int]], int]) -> None:
        self.cond = threading.Condition()
        self.choose = choose
        self.turn: int | None = None
        self.parked: dict[int, str] = {}
        self.ready: dict[int, Callable[[], bool] | None] = {}
        self.done: set[int] = set()
        self.local = threading.local()
        self.aborted = False
        self.deadlock = False
        self.steps: list[tuple[int, str]] = []

    def me(self) -> int | None:
        return getattr(self.local, "idx", None)

    def step(self, label: str, ready: Callable[[], bool] | None = None) -> None:
        """Park here until chosen; ``ready`` (if given) must hold to be chosen."""
        idx = self.me()
        if idx is None:
            return  # setup and checks run outside the actors, unscheduled
        with self.cond:
            self.parked[idx] = label
            self.ready[idx] = ready
            self.turn = None
            self.cond.notify_all()
            while self.turn != idx:
                if self.aborted:
                    raise _Abort()
                self.cond.wait()
            del self.parked[idx]
            self.steps.append((idx, label))

    def run(self, actors: list[Callable[[], Any]]) -> list[Any]:
        results: list[Any] = [None] * len(actors)

        def body(i: int) -> None:
            self.local.idx = i
            try:
                self.step("start")
                results[i] = ("ok", actors[i]())
            except _Abort:
                return
            except BaseException as e:  # noqa: BLE001 - an actor's failure is its result
                results[i] = ("raised", e)
            finally:
                with self.cond:
                    self.done.add(i)
                    self.turn = None
                    self.cond.notify_all()

        threads = [threading.Thread(target=body, args=(i,), daemon=True)
                   for i in range(len(actors))]
        for t in threads:
            t.start()
        with self.cond:
            while True:
                # wait until nobody runs: every actor is parked or done
                while not (self.turn is None and
                           len(self.parked) + len(self.done) == len(actors)):
                    self.cond.wait()
                if len(self.done) == len(actors):
                    break
                enabled = [i for i in sorted(self.parked)
                           if self.ready.get(i) is None or self.ready[i]()]
                if not enabled:
                    self.aborted = True
                    self.cond.notify_all()
                    self.deadlock = True
                    break
                self.turn = enabled[self.choose(enabled)]
                self.cond.notify_all()
        for t in threads:
            t.join()
        return results


class _SteppedStore:
    """A store whose every operation is a step of the calling actor."""

    def __init__(self, inner: Any, gate: Callable[[str], None], log: list) -> None:
        self._inner, self._gate, self._log = inner, gate, log

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in _WRITES + _READS:
            return attr

        def stepped(*args: Any, **kwargs: Any) -> Any:
            self._gate(name)
            before = None
            if name in _WRITES and args and isinstance(args[0], str):
                try:
                    before = self._inner.get(args[0])
                except NotFound:
                    before = None
            out = attr(*args, **kwargs)
            if name in _WRITES:
                self._log.append((name, args, before, out))
            return out
        return stepped


class _StepClock(VirtualClock):
    """A wait is one step: granting it means the deadline passed."""

    def __init__(self, gate: Callable[[str], None]) -> None:
        super().__init__()
        self._gate = gate

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        if ready():
            return True
        self._gate("wait")
        self._now += timeout
        return ready()


@attrs.frozen
class Scenario:
    """A race: ``setup(world)`` builds the task(s) (unscheduled), ``actors(world)``
    the racing callers; ``check(world, results)`` adds scenario oracles."""

    name: str
    setup: Callable[[World], None]
    actors: Callable[[World], list[Callable[[], Any]]]
    check: Callable[[World, list], None] = lambda world, results: None
    config: dict = attrs.field(factory=dict)


class World:
    """One schedule's Manager, store, fake host and records."""

    def __init__(self, gate: Callable[[str], None], reduced: bool, config: dict,
                 store_factory: Callable[[], Any]) -> None:
        self.writes: list = []
        self.store = _SteppedStore(store_factory(), gate, self.writes)
        self.reports: list[tuple[str, Task]] = []
        self.launches: list = []
        self.stops: list = []
        self.stop_answers: dict[str, StopOutcome] = {}
        self.continuations: list[Continuation | None] = []
        self.task: Task | None = None
        host_gate = (lambda _label: None) if reduced else gate
        self.holders: dict[str, list] = {}  # parent -> [actor, depth]

        self.events: list[tuple[str, str]] = []  # ("launch" | "stop", run id), in order

        def launcher(req: Any) -> None:
            gate("launcher")
            self.launches.append(req)
            self.events.append(("launch", req.run_id))

        def stopper(run_id: str, graceful: bool) -> StopOutcome:
            gate("stopper")
            self.stops.append((run_id, graceful))
            self.events.append(("stop", run_id))
            # an honest host: it cannot stop a run it has not started yet; a graceful
            # stop of a running run is taken after the turn
            if run_id not in {r.run_id for r in self.launches}:
                return StopOutcome.UNKNOWN_RUN
            default = StopOutcome.AFTER_TURN if graceful else StopOutcome.CANCELLED
            return self.stop_answers.get(run_id, default)

        def report(kind: str) -> Callable[[Task], None]:
            def hook(task: Task) -> None:
                host_gate(kind)
                self.reports.append((kind, task))
            return hook

        def cont(task: Task, out: RunOutcome) -> Continuation | None:
            host_gate("continue")
            return self.continuations.pop(0) if self.continuations else None

        settings = dict(config)
        wants_continue = settings.pop("continue_hook", False)

        def manager() -> Manager:
            return Manager(Config(
                store=self.store, launcher=launcher, stopper=stopper,
                on_finished=report("finished"), on_result_delivered=report("delivered"),
                continue_hook=cont if wants_continue else None, clock=_StepClock(gate),
                **settings))
        self.mgr = manager()
        # a second process over the same store: its own locks, its own memory
        self.other = manager()
        self.other.recovered = True

    def install_lock(self, turnstile: Turnstile) -> None:
        """The Manager's per-parent lock, as a scheduled step: an actor that finds
        it held parks until it is free (a real lock would block the scheduler)."""
        from contextlib import contextmanager

        @contextmanager
        def parent_lock(parent: str):
            me = turnstile.me()
            held = self.holders.get(parent)
            if held is not None and held[0] != me:
                turnstile.step("lock", lambda: self.holders.get(parent) is None)
            entry = self.holders.setdefault(parent, [me, 0])
            entry[1] += 1
            try:
                yield
            finally:
                entry[1] -= 1
                if entry[1] == 0:
                    del self.holders[parent]
        self.mgr._parent_lock = parent_lock

    # helpers for scenarios
    def spawn(self) -> Task:
        self.task = self.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a",
                                                input="go"))
        return self.task

    def end(self, status: TaskStatus, run_id: str | None = None, **kw: Any) -> Any:
        row = self.task
        return self.mgr.on_run_finished(row.child_session_id, RunOutcome(
            status=status, run_id=row.run_id if run_id is None else run_id, **kw))

    def row(self) -> Task:
        return self.store._inner.get(self.task.id)


def _attempt(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return fn()
        except TaskError as e:
            return e
    return run


# -- oracles -------------------------------------------------------------------

def check_world(world: World, ceiling: int) -> None:
    """Every schedule: one finisher per attempt, terminal rows are final except
    for a retry claim, the attempt ceiling, and every ending reported once."""
    endings: list[tuple[str, str, str]] = []
    for name, args, before, out in world.writes:
        if name == "fail_orphans":
            for row in out:
                endings.append((row.id, row.run_id, row.status.value))
            continue
        if out is None or not isinstance(out, Task):
            continue
        if before is not None and before.status.terminal and out != before:
            assert name == "retry_claim" and before.status is TaskStatus.FAILED, (
                f"a terminal row was overwritten by {name}: {before} -> {out}")
        assert out.attempt <= ceiling, f"attempt {out.attempt} over the ceiling {ceiling}"
        if out.status.terminal and (before is None or not before.status.terminal):
            endings.append((out.id, out.run_id, out.status.value))
    per_attempt: dict[tuple[str, str], int] = {}
    for tid, run, _status in endings:
        per_attempt[(tid, run)] = per_attempt.get((tid, run), 0) + 1
    assert all(n == 1 for n in per_attempt.values()), f"two finishers: {per_attempt}"
    reported = sorted((t.id, t.run_id, t.status.value) for _k, t in world.reports)
    assert reported == sorted(endings), (
        f"endings {sorted(endings)} were reported as {reported}")
    for kind, t in world.reports:
        assert not (kind == "finished" and t.status is TaskStatus.CANCELLED), (
            "a cancellation was reported as finished")
    # a run launched for a task a stop had already ended is stopped after its launch
    rows = world.store._inner.list_all()
    for row in rows:
        if row.status is not TaskStatus.CANCELLED:
            continue
        launched = [i for i, e in enumerate(world.events) if e == ("launch", row.run_id)]
        if launched:
            assert ("stop", row.run_id) in world.events[launched[-1]:], (
                f"run {row.run_id} was launched for a cancelled task and never stopped")


@attrs.frozen
class Exploration:
    scenario: str
    reduced: bool
    interleavings: int
    failure: str | None = None
    choices: tuple = ()


def explore(scenario: Scenario, reduced: bool = True, store_factory: Callable[[], Any] =
            MemoryStore, limit: int = 100_000) -> Exploration:
    """Run every interleaving of the scenario's actors (depth first)."""
    prefix: list[int] = []
    count = 0
    ceiling = scenario.config.get("max_attempts_per_task", 3)
    while True:
        made: list[tuple[int, int]] = []  # (choice, options) per decision

        def choose(enabled: list[int]) -> int:
            k = len(made)
            pick = prefix[k] if k < len(prefix) else 0
            made.append((pick, len(enabled)))
            return pick

        gate_box: list[Turnstile] = []
        world = World(lambda label: gate_box[0].step(label), reduced, scenario.config,
                      store_factory)
        turnstile = Turnstile(choose)
        gate_box.append(turnstile)
        world.install_lock(turnstile)
        scenario.setup(world)
        actors = scenario.actors(world)
        results = turnstile.run(actors)
        count += 1
        try:
            assert not turnstile.deadlock, "the actors deadlocked"
            for r in results:
                if r is not None and r[0] == "raised":
                    raise AssertionError(f"an actor raised {r[1]!r}")
            check_world(world, ceiling)
            scenario.check(world, [r[1] if r else None for r in results])
        except AssertionError as e:
            return Exploration(scenario.name, reduced, count, str(e),
                               tuple(c for c, _ in made))
        # next prefix: bump the deepest decision that has an untried option
        while made and made[-1][0] + 1 >= made[-1][1]:
            made.pop()
        if not made or count >= limit:
            return Exploration(scenario.name, reduced, count)
        prefix = [c for c, _ in made[:-1]] + [made[-1][0] + 1]


# -- the two-actor races ----------------------------------------------------------

F, C, X, W = (TaskStatus.FAILED, TaskStatus.COMPLETED, TaskStatus.CANCELLED,
              TaskStatus.WORKING)


def _fail_first(world: World) -> None:
    world.mgr.recover()
    world.spawn()
    world.end(F, err="boom")


def _spawned(world: World) -> None:
    world.mgr.recover()
    world.spawn()


def _stop_outcome_matches(world: World, results: list) -> None:
    row = world.row()
    assert row.status in (C, X), f"a completion raced by a stop left {row.status.value}"


def _graceful_setup(world: World) -> None:
    world.mgr.recover()
    world.spawn()
    world.continuations.append(Continuation(input="one more step"))


def _graceful_check(world: World, results: list) -> None:
    row = world.row()
    assert row.status.terminal, "a graceful stop and a last turn left the task running"
    assert len(world.launches) == 1, "a stopped task started another run"


def _one_retry(world: World, results: list) -> None:
    won = [r for r in results if isinstance(r, Task)]
    assert len(won) == 1, f"{len(won)} retries won"
    assert [r.retry for r in world.launches] == [False, True]


def _continuation_setup(world: World) -> None:
    world.mgr.recover()
    world.spawn()
    world.continuations.append(Continuation(input="next", state={"step": 2}))


def _continuation_check(world: World, results: list) -> None:
    row = world.row()
    assert row.status.terminal, "a stopped continuation left the task running"
    assert row.status is X or row.status is F, row.status
    if row.run_id != world.task.run_id and row.status is X:
        launched = [r.run_id for r in world.launches]
        assert row.run_id in launched


def _sweep_check(world: World, results: list) -> None:
    row = world.row()
    assert row.status in (F, W), row.status


RACES: dict[str, Scenario] = {s.name: s for s in (
    Scenario("completion-vs-stop", _spawned, lambda w: [
        lambda: w.end(C, text="done"), _attempt(lambda: w.mgr.stop(w.task.id))],
        _stop_outcome_matches),
    Scenario("retry-vs-stop", _fail_first, lambda w: [
        _attempt(lambda: w.mgr.retry(w.task.id)), _attempt(lambda: w.mgr.stop(w.task.id))]),
    # two processes, each with its own Manager (own locks) over one store
    Scenario("two-retries", _fail_first, lambda w: [
        _attempt(lambda: w.mgr.retry(w.task.id)), _attempt(lambda: w.other.retry(w.task.id))],
        _one_retry),
    Scenario("continuation-vs-stop", _continuation_setup, lambda w: [
        lambda: w.end(C, text="step 1"), _attempt(lambda: w.mgr.stop(w.task.id))],
        _continuation_check, {"continue_hook": True}),
    Scenario("sweep-vs-retry", _fail_first, lambda w: [
        lambda: w.mgr.recover(), _attempt(lambda: w.mgr.retry(w.task.id))], _sweep_check),
    Scenario("graceful-stop-vs-failing-turn", _graceful_setup, lambda w: [
        _attempt(lambda: w.mgr.stop(w.task.id, graceful=True)),
        lambda: w.end(F, err="last turn failed", graceful_stop=True)],
        _graceful_check, {"continue_hook": True}),
)}


def main() -> None:
    """Print every race's interleaving counts, before and after reduction."""
    for name, scenario in RACES.items():
        full, reduced = explore(scenario, reduced=False), explore(scenario, reduced=True)
        verdict = "ok" if full.failure is None and reduced.failure is None else (
            f"FAILED: {full.failure or reduced.failure}")
        print(f"{name:32} {full.interleavings:6} interleavings, {reduced.interleavings:5} "
              f"after reduction  {verdict}")


if __name__ == "__main__":
    main()
