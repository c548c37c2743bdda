"""The lifecycle manager's liveness monitors: hot states a race must leave before it is over.

A stop that never ends its task, a task left working on a run that is gone,
or an ending the host is never told of breaks no compare-and-set rule: the
store stays legal, and the race just ends with a task nobody will finish or
a wake-up nobody will send. Each monitor here names such a *hot* state - one
the Manager must leave - and turns "never left" into a violation, pinned to
the step where the state turned hot, so the schedule's story marks the hot
suffix (``HOT from here``):

- ``WorkingWithNoRun``: a task working on a run the host does not run - one
  never launched, one that reported its own ending, or one the stopper
  stopped or said had already finished (lifecycle.stop.lost-outcome-recorded:
  "so no task becomes impossible to stop"; lifecycle.retry.launch-failure-reverts);
- ``StopNotEnded``: a non-graceful stop asked of a live task, and the task
  never ended after it (lifecycle.stop.chases-current-run,
  lifecycle.stop.lost-outcome-recorded). A graceful stop answered
  StopAfterTurn leaves the ending to the run (lifecycle.stop.after-turn-finishes-call),
  and a stop that saw two retries replace its attempt may return the row as
  it stands (the Manager's two passes), so neither is held to it;
- ``EndingNotReported``: a terminal transition the store wrote (a finalize,
  a released retry claim, the restart sweep) whose ending was never
  reported through OnFinished or OnResultDelivered
  (lifecycle.report.claimed-snapshot, lifecycle.report.cancel-is-delivered,
  lifecycle.restart.fails-working).

The bound is fairness itself: a race's schedule ends only when every actor
has returned, whatever order the strategy chose (the turnstile never ends a
schedule while an actor can still run), so the end of the schedule is the
point by which each hot state must have been left; the monitors look at the
world at every decision point (``Turnstile.watch``), while no actor runs, to
learn where each state turned hot. Virtual time plays no part here: the
Manager's only waits (the stop's look-again, a status read) are steps of
their own, and a state must be left whenever they end.

What does not live here: the safety oracles (``explore.check_world``), the
engine's liveness monitors (``forge.liveness``), the probes (``probes``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from forge.lifecycle.records import StopOutcome, Task, TaskStatus
from forge.lifecycle.store import NotFound

#: What a problem says of where its hot state began and how long it lasted.
HOT = "(hot from step {step}, to the end of the schedule)"


class _Monitor:
    """Tracks hot states by key: the step during which each turned hot, and
    its problem; ``verdict`` answers those still hot at the end."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.hot: dict[Any, tuple[int, str]] = {}

    def hot_now(self) -> dict[Any, str]:
        """The hot states now, by key, each with its problem."""
        raise NotImplementedError

    def look(self, steps: int) -> None:
        """Bring the hot states up to date after ``steps`` steps of the schedule."""
        now = self.hot_now()
        for key in [k for k in self.hot if k not in now]:
            del self.hot[key]
        for key, problem in now.items():
            # it turned hot during the step just taken (before any: in the setup)
            self.hot.setdefault(key, (max(steps - 1, 0), problem))

    def excused(self, key: Any) -> bool:
        return False

    def verdict(self) -> list[tuple[int, str]]:
        return [(step, problem) for key, (step, problem) in self.hot.items()
                if not self.excused(key)]


class WorkingWithNoRun(_Monitor):
    """No task stays working on a run the host does not run."""

    def hot_now(self) -> dict[Any, str]:
        world = self.world
        launched = {r.run_id for r in world.launches}
        out = {}
        for row in world.inner.list_all():
            if row.status is not TaskStatus.WORKING:
                continue
            run = row.run_id
            answer = world.stop_answers.get(run)
            why = ("was never launched" if run not in launched else
                   "reported its own ending" if run in world.reported_runs else
                   "the host stopped" if answer is StopOutcome.CANCELLED else
                   "the host said had already finished"
                   if answer is StopOutcome.ALREADY_FINISHED else None)
            if why is not None:
                out[(row.id, run)] = f"task {row.id} stayed working on run {run}, which {why}"
        return out


class StopNotEnded(_Monitor):
    """A non-graceful stop ends its task: the task is seen ended after it was asked."""

    def __init__(self, world: Any) -> None:
        super().__init__(world)
        self.ended: set[int] = set()

    def hot_now(self) -> dict[Any, str]:
        out = {}
        for n, (actor, task_id, _attempt) in enumerate(self.world.stop_requests):
            if n in self.ended:
                continue
            try:
                row = self.world.inner.get(task_id)
            except NotFound:
                row = None
            if row is None or row.status.terminal:
                self.ended.add(n)
                continue
            out[n] = f"the stop of task {task_id} by {actor} was asked and the task never ended"
        return out

    def excused(self, key: Any) -> bool:
        """The stop returned the row as it stood after two retries replaced
        the attempt it was asked of (the Manager's two passes)."""
        actor, _task, attempt = self.world.stop_requests[key]
        mine = [n for n, r in enumerate(self.world.stop_requests) if r[0] == actor]
        returned = [result for who, did, _before, result in self.world.actions
                    if who == actor and did == "stop"]
        k = mine.index(key)
        result = returned[k] if k < len(returned) else None
        return isinstance(result, Task) and result.attempt - attempt >= 2


class EndingNotReported(_Monitor):
    """Every ending the store wrote is reported to the host (a status read's
    delivery is the model's, not the ending's report)."""

    def hot_now(self) -> dict[Any, str]:
        owed = Counter(endings(self.world.writes)) - Counter(
            (t.id, t.run_id, t.status.value) for kind, t in self.world.reports if kind != "read")
        return {(task, run, status, k): (f"the ending of task {task} ({status}, run {run}) "
                                         "was never reported to the host")
                for (task, run, status), n in sorted(owed.items()) for k in range(n)}


def endings(writes: list) -> list[tuple[str, str, str]]:
    """(task, run, status) of each terminal transition in the store's write log."""
    out = []
    for name, _args, before, after, _live in writes:
        if name == "fail_orphans":
            out.extend((row.id, row.run_id, row.status.value) for row in after)
        elif (isinstance(after, Task) and after.status.terminal
              and (before is None or not before.status.terminal)):
            out.append((after.id, after.run_id, after.status.value))
    return out


#: The monitors every schedule of a race runs under.
MONITORS = (WorkingWithNoRun, StopNotEnded, EndingNotReported)


def monitors(world: Any, kinds=MONITORS) -> tuple[_Monitor, ...]:
    """Fresh monitors for one schedule's world."""
    return tuple(kind(world) for kind in kinds)


def verdict(watching: tuple[_Monitor, ...]) -> list[tuple[int, str]]:
    """The violations at the end of a schedule: (step index where the state
    turned hot, problem naming it), by step."""
    out = [(step, f"{problem} {HOT.format(step=step + 1)}")
           for m in watching for step, problem in m.verdict()]
    return sorted(out)
