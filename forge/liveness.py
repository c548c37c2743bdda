"""Liveness monitors: hot states a run must leave within a bound, checked as it happens.

A lost wake-up, a cancel that never lands or a wait nobody ends breaks no
safety invariant: the run just stops making progress, and ends in a
deadlock, a budget error blamed on the prompt, or an abandonment.  Each
monitor here names a *hot* state - one the engine must leave - and turns
"never left" into a violation reported like any watcher's, pinned to the
record where the state turned hot (`forge.sim.trace.Hot`), so the story and
the timeline mark the hot suffix:

- `QueuedWhileSlotFree`: a live task queued for a slot while one is free
  for it (tasks.concurrency.admit-spawn-order: queued tasks are admitted
  as slots become free);
- `MetWaitNotWoken`: a chain still parked on a `tasks.join` or
  `tasks.join_any` whose members have ended (tasks.wait.join-any-parks-or-returns,
  tasks.immediate.ended-wait-at-once);
- `CancelNotLanded`: a task its owner cancelled still live
  (tasks.cancel.marks-cancelled, tasks.immediate.checks-answered-at-once);
- `ReadyChainNotRun`: a ready chain not run within a bound under fair
  scheduling, or still ready when the clock moves on
  (tasks.glance.owner-keeps-running: the owner keeps running *while* its
  task works, so neither may starve the other;
  tasks.spawn.every-function-suspends: each suspension is a turn for the
  others).

The bounds: a hot state may last at most `STEPS` scheduling steps and
`SECONDS` of virtual time, and must not be hot when the run ends (before
its ending abandons what is left).  The engine leaves each of these states
eagerly, before its next step, so the bounds are tight; the run loop runs
every ready chain before time moves, which is the fairness they assume.
`ReadyChainNotRun` has bounds of its own: in steps, as many as chains were
ready when its fair stretch began (`forge.sim.fair`), and in virtual time,
none (a ready chain runs before the next event).

Like the watchers (`forge.conformance.oracles`), the monitors read the
reference engine's trace while it is written and a few facts off the run
(the admission queue, a cancel asked for); they watch every explored
schedule that runs (one repeating a watched run takes what they found
there, `forge.watched`), each fed only the records it declares (`SEES`).
What does not live here: the safety watchers, the probes (`forge.probes`).
"""

from __future__ import annotations

import heapq
from typing import Any

from forge.sim.trace import Hot

#: The most scheduling steps a hot state may outlast (0: it must be left before the next step).
STEPS = 0
#: The most virtual nanoseconds a hot state may last.
SECONDS_NS = 1_000_000_000
SECONDS = SECONDS_NS / 1e9


class _Monitor:
    """Tracks hot states by key: when each turned hot (record, instant,
    steps so far), and reports one that outlives its bound once.

    The hot states are brought up to date at every record a monitor reads
    (`UPDATES`), and judged at each step, each event and the run's end: a
    state turns hot mid-step (an end frees a slot, meets a wait) and the
    engine leaves it before the step is over."""

    UPDATES = ("step", "event", "run_end", "task_end", "admit", "wait", "deliver", "timeout",
               "spawn")
    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no
    #: other): those that update its hot states, and any more its `model` follows.
    SEES = frozenset(UPDATES)

    def __init__(self, facts: Any) -> None:
        self.run = facts
        self.hot: dict[str, tuple[int, int, int, str]] = {}   # key -> (record, t, steps, problem)
        self.told: set[str] = set()
        self.steps = 0
        #: The hot states as the run's ending began (its first abandonment
        #: or a host cancel since the last step): what its end judges.
        self.at_ending: dict[str, tuple[int, int, int, str]] | None = None

    def model(self, r: dict) -> None:
        """Follow one record (a monitor's own bookkeeping)."""

    def hot_now(self) -> dict[str, str]:
        """The hot states now, by key, each with its problem."""
        raise NotImplementedError

    def see(self, r: dict) -> list[Hot] | tuple[()]:
        # A list, not a generator: it is called for most records of every
        # watched run, and most calls find nothing.
        what = r["what"]
        if what == "step":
            self.steps += 1
            self.at_ending = None
        elif what == "event" and r.get("event") != "host_cancel":
            self.at_ending = None
        elif self.at_ending is None and (
                (what == "task_end" and r["end"] == "task_abandoned")
                or (what == "event" and r.get("event") == "host_cancel")):
            self.at_ending = dict(self.hot)
        self.model(r)
        if what == "run_end":
            ending = self.at_ending if self.at_ending is not None else self.hot
            told = []
            for key, (i, t, _, problem) in ending.items():
                if key not in self.told:
                    self.told.add(key)
                    told.append(Hot(problem, i, t))
            return told
        if what not in self.UPDATES:
            return ()
        now, hot = self.hot_now(), self.hot
        if not now:             # most records: nothing is hot, and nothing was
            if hot:
                hot.clear()
            return ()
        for key in [k for k in hot if k not in now]:
            del hot[key]
        told = []
        for key, problem in now.items():
            i, t, steps, _ = hot.setdefault(key, (r["i"], r["t"], self.steps, problem))
            if what in ("step", "event") and key not in self.told and (
                    self.steps - steps > STEPS or r["t"] - t > SECONDS_NS):
                self.told.add(key)
                told.append(Hot(problem, i, t))
        return told


class QueuedWhileSlotFree(_Monitor):
    """No live task stays queued while a slot is free for it.  The slots are
    followed on the trace (`spawn`, `admit`, a `wait` gives its task's slot
    back, a delivery or timeout queues it for one again, an end frees it);
    the limits are read off the run."""

    SEES = _Monitor.SEES | {"call_start"}

    def __init__(self, facts: Any) -> None:
        super().__init__(facts)
        self.queued: dict[str, None] = {}          # in the order they queued
        self.owner: dict[str, str] = {}            # task -> owner chain
        self.holding: dict[str, set[str]] = {}     # owner chain -> tasks holding a slot
        self.held: set[str] = set()
        self.gave_back: set[str] = set()
        self.caller: dict[str, str] = {}           # called chain -> its caller

    def _task(self, chain: str) -> str:
        while chain in self.caller:
            chain = self.caller[chain]
        return chain

    def model(self, r: dict) -> None:
        what = r["what"]
        if what == "spawn":
            self.owner[r["task"]] = r["owner"]
            self.queued[r["task"]] = None
        elif what == "call_start":
            self.caller[r["callee"]] = r["chain"]
        elif what == "admit":
            task = r["task"]
            self.queued.pop(task, None)
            self.gave_back.discard(task)
            self.held.add(task)
            self.holding.setdefault(self.owner.get(task, ""), set()).add(task)
        elif what == "wait" and r.get("call") in ("tasks.join", "tasks.join_any"):
            task = self._task(r["chain"])
            if task in self.held:
                self._free(task)
                self.gave_back.add(task)
        elif what in ("deliver", "timeout"):
            task = self._task(r["chain"])
            if task in self.gave_back and task not in self.held:
                self.queued[task] = None
        elif what == "task_end":
            task = r["task"]
            self._free(task)
            self.queued.pop(task, None)
            self.gave_back.discard(task)

    def _free(self, task: str) -> None:
        self.held.discard(task)
        self.holding.get(self.owner.get(task, ""), set()).discard(task)

    def hot_now(self) -> dict[str, str]:
        run = self.run
        ceiling = run.harness.ceiling
        if not self.queued or len(self.held) >= ceiling:
            return {}
        out = {}
        for task in list(self.queued)[:64]:
            owner = run.tasks[task].owner if task in run.tasks else None
            if owner is None:
                continue
            limit = min(owner.limit, owner.ceiling or ceiling, ceiling)
            if len(self.holding.get(self.owner[task], ())) < limit:
                out[task] = f"task {task} stayed queued while a slot was free for it"
        return out


class MetWaitNotWoken(_Monitor):
    """A chain parked on a join whose members have ended is woken (read off
    the trace alone: its `wait`, the members' ends, its delivery)."""

    def __init__(self, facts: Any) -> None:
        super().__init__(facts)
        self.ended: set[str] = set()
        #: chain -> (call, members) of its open wait.
        self.waits: dict[str, tuple[str, tuple[str, ...]]] = {}

    def model(self, r: dict) -> None:
        what = r["what"]
        if what == "wait" and r.get("call") in ("tasks.join", "tasks.join_any"):
            self.waits[r["chain"]] = (r["call"], tuple(r.get("members", ())))
        elif what in ("deliver", "timeout") or (what == "step" and r["chain"] in self.waits):
            self.waits.pop(r["chain"], None)
        elif what == "task_end":
            self.ended.add(r["task"])
            self.waits.pop(r["task"], None)     # the waiter's own task ended

    def hot_now(self) -> dict[str, str]:
        out = {}
        for chain, (call, members) in self.waits.items():
            done = [m in self.ended for m in members]
            if members and (all(done) if call == "tasks.join" else any(done)):
                out[chain] = (f"chain {chain} stayed parked on its {call} of "
                              f"{', '.join(members)} after "
                              f"{'they' if call == 'tasks.join' else 'one'} ended")
        return out


class CancelNotLanded:
    """A task its owner cancelled (`Task.stop_asked`, set by `tasks.cancel`
    on a live task) ends cancelled, and at once: not left live, and not
    ended later some other way (abandoned with its owner)."""

    def __init__(self, facts: Any) -> None:
        self.run = facts
        self.pending: list[Any] = []
        self.scan = False

    def see(self, r: dict):
        what = r["what"]
        if what == "call" and r.get("op") == "tasks.cancel":
            self.scan = True
            return
        if self.scan:
            # The cancel returned: the next record is the first that may show it.
            self.scan = False
            self.pending += [t for t in self.run.tasks.values()
                             if t.stop_asked and t.live and t not in self.pending]
        if what == "task_end":
            task = self.run.tasks.get(r["task"])
            if task is not None and task.stop_asked and r["end"] != "task_cancelled":
                yield Hot(f"task {task.id} was cancelled by its owner and never ended "
                          f"cancelled (it ended {r['end']})", r["i"], r["t"])
        elif what in ("step", "run_end"):
            for task in [t for t in self.pending if t.live]:
                self.pending.remove(task)
                yield Hot(f"task {task.id} was cancelled by its owner and was still live "
                          "at the next step", r["i"], r["t"])
            self.pending = [t for t in self.pending if t.live]


class ReadyChainNotRun:
    """A ready chain runs within a bound.

    In steps, under fair scheduling: a pick is fair when it takes the chain
    that has been ready longest of those offered - the reference offers the
    ready chains in the order they became ready, so option 0, which every
    pick of a fair scheduler (`forge.sim.fair`) and of the canonical
    schedule takes.  From the first fair pick after an unfair one (the end
    of an unfair prefix), a chain ready at a step must run within as many
    steps as chains were ready there: only chains ready before it may go
    first.  A chain the engine keeps ready but does not offer outlives that
    bound.  An unfair pick starts the stretch again.

    In virtual time, under any schedule: the kernel runs every ready chain
    before it handles the next event, so a chain still ready when an event
    is handled was left behind by the clock.

    It reads the kernel's ready list and the chooser's last pick off the run,
    at each step and event record."""

    SEES = frozenset({"step", "event"})

    def __init__(self, facts: Any) -> None:
        self.run = facts
        #: label -> (last step it may still be ready at, its bound, record,
        #: instant) of each ready chain, since the fair stretch began.
        self.due: dict[str, tuple[int, int, int, int]] = {}
        #: (last step, label) of each due chain, the soonest first (entries
        #: of chains run since are skipped when they come up).
        self.order: list[tuple[int, str]] = []
        self.steps = 0
        self.told = False
        #: The step or event record the clock last stood at.
        self.last = (0, 0)

    def see(self, r: dict):
        if self.told:
            return
        ready = self.run.scheduler.ready
        if r["what"] == "event":
            if ready and r.get("event") != "host_cancel":
                self.told = True
                yield Hot(f"chain {ready[0].partition(':')[2]} was still ready when the clock "
                          f"moved on to the next event (at t={r['t'] / 1e9:g}s)", *self.last)
            self.last = (r["i"], r["t"])
            return
        self.last = (r["i"], r["t"])
        self.steps += 1
        if self.run.chooser.last_value() != 0:
            if self.due:
                self.due, self.order = {}, []   # an unfair pick: the stretch starts again
            return
        due, steps, n = self.due, self.steps, len(ready)
        due.pop(f"{r['kind']}:{r['chain']}", None)          # the chain this step runs
        # Chains become ready at the list's end, so the new ones are a tail of
        # it; a chain that left it otherwise (it ended while ready) is found
        # by the count, and the list is read whole then.
        k = n
        while k > 0 and ready[k - 1] not in due:
            k -= 1
        for label in ready[k:]:
            due[label] = (steps + n - 1, n, r["i"], r["t"])
            heapq.heappush(self.order, (steps + n - 1, label))
        if len(due) != n:
            labels = set(ready[:])
            for label in [x for x in due if x not in labels]:
                del due[label]
            for label in labels - due.keys():
                due[label] = (steps + n - 1, n, r["i"], r["t"])
                heapq.heappush(self.order, (steps + n - 1, label))
        order = self.order
        while order and (order[0][1] not in due or due[order[0][1]][0] != order[0][0]):
            heapq.heappop(order)            # run, or left the list, since
        if order and steps > order[0][0]:
            self.told = True
            label = order[0][1]
            _, bound, i, t = due[label]
            yield Hot(f"chain {label.partition(':')[2]} stayed ready through {bound} fair "
                      f"step{'s' * (bound != 1)} without running ({bound} "
                      f"chain{'s, itself included, were' if bound != 1 else ' was'} "
                      "ready when its fair stretch began)", i, t)


#: The monitors every explored schedule runs under.
MONITORS = (QueuedWhileSlotFree, MetWaitNotWoken, CancelNotLanded, ReadyChainNotRun)


def monitors(run: Any, kinds=MONITORS) -> tuple:
    """Fresh monitors for one run of the reference engine (`Trace.observe`)."""
    return tuple(kind(run) for kind in kinds)
