"""The Manager's races on the simulator: racing callers as actors, every open
ordering of their steps a choice of the simulator's chooser.

Each actor (a stop, a run ending, a retry, the restart sweep, ...) runs on a
thread of its own, but only one runs at a time: it parks at every *step* - a
store operation and, unless reduced, every call into the host (report
hooks, Continue hook) - and the chooser (``forge.sim.chooser.Chooser``) picks which
parked actor goes next, a decision of kind ``chain`` over labels
``actor:NAME``. A run is therefore a pure function of its choice sequence, so
every strategy of the simulator drives it (random, PCT, exhaustive), replay
is replaying the sequence and shrinking is shrinking it. A wait on the clock
(the stop's look-again) is a step too: granting it means the deadline
passed, so both "the outcome lands during the wait" and "after it" are
explored. Every complete schedule is checked by the oracles (``check_world``).

Reduction: the report hooks and the Continue hook touch only records the
oracles compare as multisets, so they commute with everything the other
actors do; ``reduced=True`` makes only store operations and the calls that
reach the host's run registry (launcher, stopper) steps. The launcher and
the stopper must stay steps: whether a stop finds a run depends on whether
its launch has registered yet. Each step also records its footprint - what
it read and wrote of the shared world (``Turnstile.touch``) - for the
partial-order reduction (``dpor``).

Lives here: the turnstile, the stepped store and clock, the watched Manager
state, ``World`` (one schedule's Managers, store and fake host), the
oracles, ``subject`` (a scenario as a simulator subject) and ``explore``
(every interleaving, or one per class of equivalent ones). Does not live
here: the actions actors perform (``actors``), the scenario file format and
the shipped races (``scenario``), the reduction's search (``dpor``), the
strategies (``sim``), the command (``command``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.lifecycle import liveness, probes
from forge.lifecycle.clock import VirtualClock
from forge.lifecycle.manager import Config, CounterIds, Manager
from forge.lifecycle.records import (
    Continuation,
    RunOutcome,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.store import MemoryStore, NotFound
from forge.sim.chooser import Chooser

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.lifecycle import dpor, sqlite_store
    from forge.sim import exhaustive
else:
    dpor = deferred("forge.lifecycle.dpor")
    sqlite_store = deferred("forge.lifecycle.sqlite_store")
    exhaustive = deferred("forge.sim.exhaustive")

_WRITES = ("create", "finalize", "retry_claim", "release_retry_claim", "advance",
           "mark_input_required", "reclaim_working", "fail_orphans", "delete",
           "delete_session_tree", "settle")
_READS = ("get", "by_child_session", "list_all", "list_by_parent", "list_non_terminal",
          "session_tree", "owed")
#: The decision kind the actors' turns are asked under, as the engine's chains are.
TURN = "chain"


class HostFailure(RuntimeError):
    """The fake host could not start a run (a launch the scenario makes fail)."""


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
        #: What each step touched of the shared world: (mode, area, key) with mode
        #: "r" or "w", from its grant to the actor's next park (``touch``).
        self.footprints: list[set[tuple[str, str, str]]] = []
        #: The actors enabled at each decision, in option order.
        self.offered: list[list[int]] = []
        #: Called with the number of steps taken whenever every actor is parked
        #: or done (each decision point, and the end): the liveness monitors
        #: look at the world there, while nothing runs.
        self.watch: Callable[[int], None] | None = None

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
            self.footprints.append(set())

    def touch(self, mode: str, area: str, key: str = "") -> None:
        """Record that the running actor's current step reads ("r") or writes ("w")
        ``area``/``key`` of the shared world (the reduction's dependence facts)."""
        if self.me() is not None and self.footprints:
            self.footprints[-1].add((mode, area, key))

    def note(self, text: str) -> None:
        """Add what the step just taken did to its label (the steps are a record)."""
        idx = self.me()
        if idx is not None and self.steps and self.steps[-1][0] == idx:
            self.steps[-1] = (idx, self.steps[-1][1] + text)

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
                if self.watch is not None:
                    self.watch(len(self.steps))
                if len(self.done) == len(actors):
                    break
                enabled = [i for i in sorted(self.parked)
                           if self.ready.get(i) is None or self.ready[i]()]
                if not enabled:
                    self.aborted = True
                    self.cond.notify_all()
                    self.deadlock = True
                    break
                self.offered.append(enabled)
                self.turn = enabled[self.choose(enabled)]
                self.cond.notify_all()
        for t in threads:
            t.join()
        return results


class _SteppedStore:
    """A store whose every operation is a step of the calling actor; writes are
    logged with the row before, the answer, and the parent's live count after."""

    def __init__(self, inner: Any, gate: Callable[[str], None], log: list,
                 note: Callable[[str], None], touch: Callable[..., None]) -> None:
        self._inner, self._gate, self._log, self._note = inner, gate, log, note
        self._touch = touch

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in _WRITES + _READS:
            return attr

        def stepped(*args: Any, **kwargs: Any) -> Any:
            # ids, runs and the status name the step; texts and State would only clutter
            self._gate(" ".join([name, *(_short(a) for a in args[:3])]))
            before: Any = None
            if name == "fail_orphans":
                before = {row.id: row for row in self._inner.list_all()}
            elif name in _WRITES and args and isinstance(args[0], str):
                try:
                    before = self._inner.get(args[0])
                except NotFound:
                    before = None
            _touch_store(self._touch, name, args)
            out = attr(*args, **kwargs)
            if name in _WRITES:
                parent = (out.parent_session_id if isinstance(out, Task) else
                          before.parent_session_id if isinstance(before, Task) else None)
                live = len(self._inner.list_non_terminal(parent)) if parent else 0
                self._log.append((name, args, before, out, live))
            self._note(_answer(out) if out is not None or name in _WRITES else " -> none")
            return out
        return stepped


#: Store operations on one task row named by their first argument.
_ONE_ROW = {"get": "r", "finalize": "w", "release_retry_claim": "w",
            "advance": "w", "mark_input_required": "w", "reclaim_working": "w",
            "delete": "w", "settle": "w"}


def _touch_store(touch: Callable[..., None], name: str, args: tuple) -> None:
    """A store operation's footprint: one row by id, or every row ("*"). Any
    write of a row also changes the listings and the parent's live count,
    which the wildcard reads see."""
    if name in _ONE_ROW:
        touch(_ONE_ROW[name], "row", args[0])
    elif name == "create":
        touch("w", "row", args[0].id)
        touch("w", "seq")  # creation order is the listings' order
        touch("r", "row", "*")  # the cap: the parent's live rows, checked after it
    elif name == "retry_claim":
        touch("w", "row", args[0])
        touch("r", "row", "*")
    elif name in ("fail_orphans", "delete_session_tree"):
        touch("w", "row", "*")
    else:  # by_child_session, the listings, session_tree, owed
        touch("r", "row", "*")


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, TaskStatus):
        return value.value
    if isinstance(value, Task):
        return value.id
    return type(value).__name__ if not isinstance(value, (int, float)) else str(value)


def _answer(out: Any) -> str:
    """A store answer in a few words: lost, or the row it left."""
    if out is None:
        return " -> lost"
    if isinstance(out, Task):
        return f" -> {out.status.value} {out.run_id} attempt {out.attempt}"
    if isinstance(out, list):
        return f" -> {len(out)} rows"
    return f" -> {out}" if isinstance(out, bool) else ""


class _StepClock(VirtualClock):
    """A wait is one step: granting it means the deadline passed."""

    def __init__(self, gate: Callable[[str], None], touch: Callable[[], None]) -> None:
        super().__init__()
        self._gate, self._touch = gate, touch

    def wait_for(self, ready: Callable[[], bool], timeout: float) -> bool:
        if ready():
            return True
        self._gate("wait")
        self._touch()
        self._now += timeout
        return ready()


class _WatchedDict(dict):
    """The Manager's launch-window table, its reads and writes recorded."""

    def __init__(self, touch: Callable[[str], None]) -> None:
        super().__init__()
        self._touch = touch

    def __contains__(self, key: object) -> bool:
        self._touch("r")
        return super().__contains__(key)

    def __getitem__(self, key: Any) -> Any:
        self._touch("r")
        return super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._touch("w")
        super().__setitem__(key, value)

    def pop(self, *args: Any) -> Any:
        self._touch("w")
        return super().pop(*args)


class _Watched(Manager):
    """A Manager whose in-memory shared state (the launch-window table, the
    recovered flag) records who touched it; every rule is the Manager's own."""

    def __init__(self, process: str, touch: Callable[..., None], config: Config) -> None:
        self._touch_flag = lambda mode: touch(mode, "recovered", process)
        super().__init__(config)
        self._launching = _WatchedDict(lambda mode: touch(mode, "launching", process))

    @property
    def recovered(self) -> bool:
        self._touch_flag("r")
        return self._recovered

    @recovered.setter
    def recovered(self, value: bool) -> None:
        self._touch_flag("w")
        self._recovered = value


class _WatchedSessions:
    """A session repository whose every call is recorded as a write."""

    def __init__(self, inner: Any, touch: Callable[[], None]) -> None:
        self._inner, self._touch = inner, touch

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def watched(*args: Any, **kwargs: Any) -> Any:
            self._touch()
            return attr(*args, **kwargs)
        return watched


@attrs.frozen
class Host:
    """How the fake host answers: the Continue hook's queue, the stopper's
    manner, and which launches fail (``spawn``, ``retry``, ``continuation``)."""

    continuations: tuple[Continuation, ...] = ()
    stopper: str = "honest"  # honest | already_finished | failing | none
    launch_fails: frozenset[str] = frozenset()


@attrs.frozen
class Scenario:
    """A race: ``setup(world)`` builds the task(s) (unscheduled), ``actors(world)``
    the racing callers as (name, callable); ``check(world, results)`` adds the
    scenario's own oracles (raising AssertionError)."""

    name: str
    setup: Callable[[World], None]
    actors: Callable[[World], list[tuple[str, Callable[[], Any]]]]
    check: Callable[[World, list], None] = lambda world, results: None
    config: dict = attrs.field(factory=dict)
    host: Host = Host()
    #: Which store the race runs on: "memory" or "sqlite" (in memory).
    store: str = "memory"
    #: The scenario file's text (what a replay file records), or None for a
    #: race built in code.
    text: str | None = attrs.field(default=None, repr=False)
    #: What reading the file noticed and the user should hear (old spellings).
    notes: tuple[str, ...] = ()


class World:
    """One schedule's Managers, store, fake host and records."""

    def __init__(self, gate: Callable[[str], None], reduced: bool, config: dict,
                 host: Host, store_factory: Callable[[], Any],
                 note: Callable[[str], None] = lambda _text: None,
                 touch: Callable[..., None] = lambda *_a: None) -> None:
        self.writes: list = []
        self.touch = touch
        self.inner = store_factory()
        self.store = _SteppedStore(self.inner, gate, self.writes, note, touch)
        self.reports: list[tuple[str, Task]] = []
        self.launches: list = []
        self.stops: list = []
        self.continuations: list[Continuation] = list(host.continuations)
        self.tasks: list[str] = []  # task ids in spawn order
        self.setup_runs: dict[str, str] = {}  # task id -> its run when setup ended
        #: (actor, action, row before, result) of every action an actor took
        self.actions: list[tuple[str, str, Task | None, Any]] = []
        self.events: list[tuple[str, str]] = []  # ("launch" | "stop", run id), in order
        #: What the host's run registry knows beyond launches, for the liveness
        #: monitors (``forge.lifecycle.liveness``): run id -> how the stopper last
        #: answered for it, and the runs that reported their own ending.
        self.stop_answers: dict[str, StopOutcome] = {}
        self.reported_runs: set[str] = set()
        #: The non-graceful stops asked, in order: (actor, task id, its attempt then).
        self.stop_requests: list[tuple[str, str, int]] = []
        #: The action each actor is performing (a status read's deliveries are
        #: reads, not the report of an ending).
        self.acting = threading.local()
        host_gate = (lambda _label: None) if reduced else gate
        settings = dict(config)
        wants_continue = settings.pop("continue_hook", bool(host.continuations))

        def launcher(req: Any) -> None:
            gate("launcher")
            kind = ("retry" if req.retry else
                    "continuation" if any(r.task_id == req.task_id for r in self.launches)
                    else "spawn")
            note(f" {kind} {req.run_id}")
            touch("w", "host")  # the host's runs and the order of launches and stops
            if kind in host.launch_fails:
                raise HostFailure(f"the host could not start the {kind} run")
            self.launches.append(req)
            self.events.append(("launch", req.run_id))

        def stopper(run_id: str, graceful: bool) -> StopOutcome:
            gate("stopper")
            self.stops.append((run_id, graceful))
            note(f" {run_id}")
            touch("w", "host")
            self.events.append(("stop", run_id))
            # an honest host: it cannot stop a run it has not started yet; a graceful
            # stop of a running run is taken after the turn
            if run_id not in {r.run_id for r in self.launches}:
                answer = StopOutcome.UNKNOWN_RUN
            elif host.stopper == "failing":
                raise RuntimeError("the stopper failed")
            elif host.stopper == "already_finished":
                answer = StopOutcome.ALREADY_FINISHED
            else:
                answer = StopOutcome.AFTER_TURN if graceful else StopOutcome.CANCELLED
            self.stop_answers[run_id] = answer
            return answer

        def report(kind: str) -> Callable[[Task], None]:
            def hook(task: Task) -> None:
                host_gate(kind)
                # a task_status read or a tool settling what it hands the model
                reading = getattr(self.acting, "action", None) in ("status", "in_hand")
                self.reports.append(("read" if reading else kind, task))
            return hook

        def cont(task: Task, out: RunOutcome) -> Continuation | None:
            host_gate("continue")
            touch("w", "continuations")
            return self.continuations.pop(0) if self.continuations else None

        def manager(prefix: str = "") -> Manager:
            ids = CounterIds()
            process = prefix or "main"

            def new_id(kind: str) -> str:
                touch("w", "ids", process)  # one counter per process: draw order matters
                return prefix + ids(kind)

            made = _Watched(process, touch, Config(
                new_id=new_id,
                store=self.store, launcher=launcher,
                stopper=None if host.stopper == "none" else stopper,
                on_finished=report("finished"), on_result_delivered=report("delivered"),
                continue_hook=cont if wants_continue else None,
                clock=_StepClock(gate, lambda: touch("w", "clock", process)),
                **settings))
            made.sessions = _WatchedSessions(made.sessions, lambda: touch("w", "sessions",
                                                                          process))
            return made
        self.mgr = manager()
        # a second process over the same store: its own locks, its own memory
        self.other = manager("o")  # its ids are its own (a real one draws unique ids)
        self.other.recovered = True
        self.cap = self.mgr.cap()
        self.ceiling = self.mgr.c.max_attempts_per_task

    def install_locks(self, turnstile: Turnstile) -> None:
        """Each Manager's per-parent lock, as a scheduled step: an actor that finds
        it held parks until it is free (a real lock would block the scheduler)."""
        for process, mgr in (("main", self.mgr), ("other", self.other)):
            mgr._parent_lock = _scheduled_lock(turnstile, {}, lambda: self.touch(
                "w", "lock", process))

    def manager(self, process: str) -> Manager:
        return self.other if process == "other" else self.mgr

    def task_id(self, index: int) -> str:
        self.touch("r", "tasks")
        return self.tasks[index - 1]

    def add_task(self, task_id: str) -> None:
        self.touch("w", "tasks")
        self.tasks.append(task_id)

    def launched_runs(self, task_id: str) -> list[str]:
        self.touch("r", "host")
        return [r.run_id for r in self.launches if r.task_id == task_id]

    def row(self, index: int = 1) -> Task:
        return self.inner.get(self.task_id(index))


def _scheduled_lock(turnstile: Turnstile, holders: dict[str, list],
                    touch: Callable[[], None]) -> Callable:
    @contextmanager
    def parent_lock(parent: str):
        me = turnstile.me()
        touch()
        held = holders.get(parent)
        if held is not None and held[0] != me:
            turnstile.step("lock", lambda: holders.get(parent) is None)
            touch()
        entry = holders.setdefault(parent, [me, 0])
        entry[1] += 1
        try:
            yield
        finally:
            touch()
            entry[1] -= 1
            if entry[1] == 0:
                del holders[parent]
    return parent_lock


# -- oracles -------------------------------------------------------------------

def check_world(world: World) -> list[str]:
    """The oracles every schedule must pass; the problems found, as text."""
    problems: list[str] = []
    endings: list[tuple[str, str, str]] = []
    for name, args, before, out, live in world.writes:
        if name == "fail_orphans":
            for row in out:
                endings.append((row.id, row.run_id, row.status.value))
                if before[row.id].status is not TaskStatus.WORKING:
                    problems.append(f"the restart sweep failed {row.id}, which was "
                                    f"{before[row.id].status.value}, not working")
            continue
        if out is None or not isinstance(out, Task):
            continue
        if before is not None and before.status.terminal and out != before:
            if not (name == "retry_claim" and before.status is TaskStatus.FAILED):
                problems.append(f"a terminal row was overwritten by {name}: "
                                f"{before.status.value} -> {out.status.value}")
        if name == "finalize" and before is not None and args[1] != before.run_id:
            problems.append(f"a finalize naming the stale run {args[1]} won over "
                            f"{before.run_id}")
        if name == "advance" and before is not None and (
                before.status is not TaskStatus.WORKING or args[1] != before.run_id):
            problems.append(f"a continuation from run {args[1]} advanced a row that was "
                            f"{before.status.value} on run {before.run_id}")
        if out.attempt > world.ceiling:
            problems.append(f"attempt {out.attempt} over the ceiling {world.ceiling}")
        if name in ("create", "retry_claim") and live > world.cap:
            problems.append(f"{live} live tasks under one parent, over the cap {world.cap}")
        if out.status.terminal and (before is None or not before.status.terminal):
            endings.append((out.id, out.run_id, out.status.value))
    per_attempt: dict[tuple[str, str], int] = {}
    for tid, run, _status in endings:
        per_attempt[(tid, run)] = per_attempt.get((tid, run), 0) + 1
    twice = sorted(k for k, n in per_attempt.items() if n > 1)
    if twice:
        problems.append(f"two finishers for one attempt: {twice}")
    reported = sorted((t.id, t.run_id, t.status.value) for k, t in world.reports
                      if k != "read")
    for kind, t in world.reports:
        if kind == "read" and not t.status.terminal:
            problems.append(f"a status read of {t.id} while {t.status.value} was reported "
                            "as delivered")
    if reported != sorted(endings):
        problems.append(f"endings {sorted(endings)} were reported as {reported}")
    for kind, t in world.reports:
        if kind == "finished" and t.status is TaskStatus.CANCELLED:
            problems.append("a cancellation was reported as finished")
    # a run launched for a task a stop had already ended is stopped after its launch
    for row in world.inner.list_all():
        if row.status is not TaskStatus.CANCELLED:
            continue
        launched = [i for i, e in enumerate(world.events) if e == ("launch", row.run_id)]
        if launched and ("stop", row.run_id) not in world.events[launched[-1]:]:
            problems.append(f"run {row.run_id} was launched for a cancelled task and "
                            "never stopped")
    # a stop chases one attempt: it returns an ended row unless two attempts passed
    for actor, action, before, result in world.actions:
        if action == "stop" and isinstance(result, Task) and not result.status.terminal:
            if before is None or result.attempt - before.attempt < 2:
                problems.append(f"the stop of {actor} returned while attempt "
                                f"{result.attempt} was still {result.status.value}")
    return problems


# -- a scenario as a simulator subject --------------------------------------------

def subject(scenario: Scenario, reduced: bool = True,
            store_factory: Callable[[], Any] | None = None) -> Callable:
    """``subject(chooser) -> (observation, trace sha)``, the shape ``forge.sim.explore``
    and ``forge.sim.exhaustive`` drive: one schedule of the race per call."""

    make_store = store_factory or store_of(scenario)

    def run(chooser: Any) -> tuple[dict, str]:
        names: list[str] = []

        def choose(enabled: list[int]) -> int:
            return chooser.choose(TURN, [f"actor:{names[i]}" for i in enabled])

        turnstile = Turnstile(choose)
        # a provider that steers by what the steps so far touched (``dpor``'s
        # sleep sets) is handed the record as it grows
        attach = getattr(chooser.provider, "attach", None)
        if attach is not None:
            attach(turnstile)
        world = World(turnstile.step, reduced, scenario.config, scenario.host, make_store,
                      turnstile.note, turnstile.touch)
        world.install_locks(turnstile)
        scenario.setup(world)
        world.setup_runs = {r.id: r.run_id for r in world.inner.list_all()}
        named = scenario.actors(world)
        names.extend(name for name, _ in named)
        watching = liveness.monitors(world)
        turnstile.watch = lambda steps: [m.look(steps) for m in watching]
        results = turnstile.run([fn for _, fn in named])
        hot = liveness.verdict(watching)
        problems: list[str] = []
        if turnstile.deadlock:
            problems.append("the actors deadlocked")
        for name, r in zip(names, results):
            if r is not None and r[0] == "raised":
                problems.append(f"actor {name} raised {r[1]!r}")
        problems.extend(check_world(world))
        try:
            scenario.check(world, [r[1] if r else None for r in results])
        except AssertionError as e:
            problems.append(str(e))
        problems.extend(problem for _, problem in hot)
        steps = [[names[i], label] for i, label in turnstile.steps]
        end = [[list(attrs.astuple(t, recurse=False))[:9] for t in world.inner.list_all()],
               sorted([k, t.id, t.run_id, t.status.value, t.summary] for k, t in world.reports),
               # the oracles read actions per actor, never their order across actors
               sorted(json.dumps([names.index(a) if a in names else -1, did, _outcome(r)],
                                 default=str) for a, did, _b, r in world.actions),
               world.events,
               # each row's history and the cap's counts: what the oracles read of
               # the order of writes (steps on one row are dependent, so it is the
               # same for every schedule of one class)
               _histories(world.writes)]
        rows = [[t.id, t.run_id, t.status.value, t.attempt] for t in world.inner.list_all()]
        obs = {"outcome": "failed" if problems else "ok", "problems": problems,
               "steps": steps, "rows": rows,
               "end": json.dumps(end, sort_keys=True, default=str),
               # the liveness monitors' violations, each with the step its hot
               # state began at (``liveness``; also among the problems)
               "hot": [[step, problem] for step, problem in hot],
               # the race outcomes it reached (``probes``), under the key the
               # searches tally (``forge.sim.explore.PROBES``)
               "probes": sorted(probes.hits(world)),
               # what the reduction (``dpor``) reads: per decision, who was offered,
               # who went, and what that step touched
               "decisions": [(offered, i, sorted(fp)) for offered, (i, _), fp in
                             zip(turnstile.offered, turnstile.steps, turnstile.footprints)]}
        sha = hashlib.sha256(json.dumps([steps, rows], separators=(",", ":"))
                             .encode()).hexdigest()
        return obs, sha

    return run


def _histories(writes: list) -> dict[str, list]:
    def view(row: Any) -> Any:
        return [row.status.value, row.run_id, row.attempt] if isinstance(row, Task) else None

    out: dict[str, list] = {}
    for name, args, before, after, live in writes:
        if name == "fail_orphans":
            for row in after:
                out.setdefault(row.id, []).append([name, view(before[row.id]), view(row)])
            continue
        key = args[0].id if name == "create" else str(args[0])
        counted = live if name in ("create", "retry_claim") else None
        out.setdefault(key, []).append([name, view(before), view(after), counted])
    return out


def _outcome(result: Any) -> Any:
    if isinstance(result, Task):
        return [result.id, result.run_id, result.status.value, result.attempt]
    if isinstance(result, list):
        return [_outcome(r) for r in result]
    return None if result is None else str(result)


def problems_of(obs: dict) -> list[str]:
    """The one check a lifecycle observation carries: its oracles' problems."""
    return list(obs["problems"])


@attrs.frozen
class Exploration:
    scenario: str
    reduced: bool
    interleavings: int
    failure: str | None = None
    choices: tuple = ()
    complete: bool = True


def store_of(scenario: Scenario) -> Callable[[], Any]:
    """A fresh store of the kind the scenario names, per schedule."""
    if scenario.store == "sqlite":
        return lambda: sqlite_store.SqliteStore(":memory:")
    return MemoryStore


def explore(scenario: Scenario, reduced: bool = True,
            store_factory: Callable[[], Any] | None = None, limit: int = 100_000,
            por: bool | None = None) -> Exploration:
    """Run every interleaving of the scenario's actors. ``reduced``: only store
    operations, the launcher and the stopper are steps; ``por`` (default: as
    ``reduced``): one schedule per class of equivalent ones (``dpor``),
    otherwise every one (``forge.sim.exhaustive``, whose first failure is shrunk)."""
    subj = subject(scenario, reduced, store_factory)
    if por if por is not None else reduced:
        search = dpor.dpor(lambda provider: subj(Chooser(provider))[0], limit)
        failure = search.failure
        return Exploration(scenario.name, reduced, search.runs,
                           "; ".join(failure["problems"]) if failure else None,
                           search.choices, search.complete or failure is not None)
    report = exhaustive.exhaustive(subj, [problems_of], limit=limit, reduce=False,
                                   stop_at_first=True)
    found = report.findings[0] if report.findings else None
    return Exploration(scenario.name, reduced, report.runs,
                       "; ".join(found.problems) if found else None,
                       found.shrunk if found else (), report.complete)
