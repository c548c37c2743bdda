"""The per-step watchers and liveness monitors over a foreign engine's reports.

In process, the watchers (`oracles.WATCHERS`) and the liveness monitors
(`forge.liveness.MONITORS`) read the reference engine's trace while it is
written.  A foreign engine has no such trace; what it reports is its
observation: the `events`, and - when the kit asked for them (the run
message's `"steps": true`, docs/protocol.md "Steps") - the optional
`steps`, the scheduling records the watchers read (`steps`).

`watch(obs, ceiling)` runs every one that can over them, in order:

- With `steps`, every watcher and the monitors `QueuedWhileSlotFree` and
  `MetWaitNotWoken` run, and `CancelNotLanded` too when the engine's hello
  declares `cancel` steps (`call_start` steps feed the child counter and the
  depth cap; a task's origin, which `LeakFailsOwner` reads, is its status
  table's; an owner's limit is taken as 1, see `_Owner`).  `SeqContiguous`
  reads the events' `provenance.seq` by the spec's rule (numbers strictly
  increase and may skip), and the steps are held to the events: the tasks
  they start and end, and how, must be the ones the events report
  (`agree`), so an engine cannot satisfy the watchers with steps its
  events belie.  `CancelNotLanded` reads which task a cancel asked to stop,
  the optional `cancel` step: it runs when the engine's hello declares
  that kind (`steps.declared`), each `cancel` step marking its task as
  asked to stop, as `Task.stop_asked` does in process; an engine that
  does not declare it is told the monitor did not run
  (`NEED_CANCEL_STEPS`), since a list without cancels cannot tell "no
  task was cancelled" from "no cancel is reported".  `ReadyChainNotRun`
  reads the chain decisions the kit answered beside the steps (`picks`,
  each pick's options being the ready chains: `_ReadyFromPicks`); without
  them it does not run (`NEED_PICKS`).
- Without them (an engine that ignores the request), `records(obs)` rebuilds
  the few records the events carry - `spawn` from `task_started` (its owner
  is the chain that reported it), `task_end` from a terminal event,
  `run_end` from the outcome - and only `EndsOnce`, `AbandonReasonFits`
  and `SeqContiguous` run (`NEED_STEPS` says why each other cannot).

`not_run(obs, declared, picks)` names each that does not run and why, one
line each, so a report says which could not run; a watcher or monitor registered that this
module does not know yet is reported as not adapted, so adding one never
silently widens the claim.

What does not live here: the watchers and monitors themselves (`oracles`,
`forge.liveness`), the steps' format and the reference's recorder
(`steps`), running the schedules (`impl_explore`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from forge import liveness
from forge.conformance import oracles, steps
from forge.sim.trace import Hot

#: Watchers that run on the events alone.
ON_EVENTS = ("EndsOnce", "AbandonReasonFits", "SeqContiguous")
#: Watchers that run only with steps, and why they cannot without.
NEED_STEPS = {
    "DeliveredOnce": "the events report no deliveries (which wait took which task's result)",
    "WithinLimits": "the events report no admissions, and no owner's limit",
    "AdmittedInSpawnOrder": "the events report no admissions to a concurrency slot",
    "TimeoutLosesTies": "the events report no waits, no timeouts and no instants",
    "ChildCounter": "the events report no calls and no timed waits, which take child indices "
                    "as spawns do",
    "WithinDepthCap": "the events report no calls, which nest chains as spawns do",
    "TimedOutJoinKeepsFinished": "the events report no waits, timeouts or deliveries",
    "LeakFailsOwner": "the events report no failed task's error kind, and no steps to tell "
                      "which abandons a finishing owner left",
}
#: The liveness monitors (`forge.liveness`) that run on steps, and why each
#: cannot without them.
MONITORS_ON_STEPS = {
    "QueuedWhileSlotFree": "the events report no admissions and no waits, which give slots back",
    "MetWaitNotWoken": "the events report no waits and no deliveries",
}
NEED_STEPS.update(MONITORS_ON_STEPS)
#: The monitor that runs on steps only when the engine's hello declares
#: `cancel` steps (`steps.declared`), and why it cannot without them.
NEED_CANCEL_STEPS = {
    "CancelNotLanded": "the engine's hello does not declare `cancel` steps "
                       "(`\"steps\": [\"cancel\"]`), so the steps cannot tell which live task "
                       "a `tasks.cancel` asked to stop",
}
#: The monitor that also reads the engine's chain decisions (at level 2 the
#: kit answers them: each pick's options are the ready chains, in the order
#: they became ready), and why it cannot without them.
NEED_PICKS = {
    "ReadyChainNotRun": "the kit answered no chain decisions (a level-2 run's picks, whose "
                        "options are the ready chains)",
}
#: Every watcher and monitor this module adapts.
ADAPTED = ON_EVENTS + tuple(NEED_STEPS) + tuple(NEED_CANCEL_STEPS) + tuple(NEED_PICKS)
#: Watchers and monitors the steps do not feed, and why (a watcher or
#: monitor registered later is reported as not adapted until this module
#: knows it).
UNADAPTED: dict[str, str] = {}
#: What runs over a foreign engine's reports: the watchers, then the monitors.
KINDS = oracles.WATCHERS + liveness.MONITORS


def not_run(obs: dict | None = None, declared: frozenset[str] = frozenset(),
            picks: bool = False) -> dict[str, str]:
    """Every registered watcher that does not run on `obs` (None: on an
    engine that reports no steps), and why; `declared` is the optional step
    kinds the engine's hello declares (`steps.declared`), `picks` whether the
    kit answered the run's chain decisions (it does at level 2)."""
    with_steps = obs is not None and "steps" in obs and steps.read(obs["steps"])[1] is None
    no_steps = "" if with_steps else " (and the engine reported no `steps`)"
    out = {}
    for kind in KINDS:
        name = kind.__name__
        if name not in ADAPTED:
            out[name] = UNADAPTED.get(name, "not adapted to a foreign engine's reports")
        elif name in NEED_STEPS and not with_steps:
            out[name] = NEED_STEPS[name] + no_steps
        elif name in NEED_CANCEL_STEPS and not (with_steps and "cancel" in declared):
            out[name] = NEED_CANCEL_STEPS[name] + no_steps
        elif name in NEED_PICKS and not (with_steps and picks):
            out[name] = NEED_PICKS[name] + (no_steps if picks else "")
    return out


def records(obs: dict) -> Iterator[dict]:
    """The trace records an observation's events stand for (see the docstring)."""
    for event in obs.get("events") or ():
        if not isinstance(event, dict):
            continue
        kind = event.get("kind")
        provenance = event.get("provenance") if isinstance(event.get("provenance"), dict) else {}
        if kind == "task_started":
            yield {"what": "spawn", "task": event.get("task"), "owner": provenance.get("task"),
                   "t": None}
        elif kind in oracles.TERMINAL:
            yield {"what": "task_end", "task": event.get("task"), "end": kind,
                   "reason": event.get("reason"), "t": None}
    error = obs.get("error")
    yield {"what": "run_end", "outcome": obs.get("outcome"),
           "error": error.get("value_kind") or error.get("kind") if isinstance(error, dict)
           else None, "t": None}


class _Owner:
    """A task's owner as `QueuedWhileSlotFree` reads it.  Steps report an
    owner's limit only at its admissions, and `tasks.concurrency` may lower
    it after the last one, so over a foreign engine's steps the monitor
    takes every owner's limit as 1, the least the spec allows (a positive
    whole number): a queued task is then hot only while its owner holds no
    slot and the ceiling has room - a state no limit excuses."""

    limit = 1
    ceiling = None


class _Task:
    """A task as the watchers read it off the run: its failure and origin,
    and for `CancelNotLanded` whether it is live and a cancel asked it to
    stop (a `cancel` step)."""

    owner = _Owner()

    def __init__(self, failure: str | None, origin: Any, id: str = "") -> None:
        self.failure = failure
        self.origin = origin
        self.id = id
        self.live = True
        self.stop_asked = False


class _Harness:
    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling


class _Facts:
    """What the watchers read off a run, from an observation: the harness's
    ceiling (the kit's own), the run's error, each task's failure and the
    events' numbering, and each task's origin (its status table).  Without
    steps a task's failure is unknown, so a failed owner may have leaked
    (`tasks_live`), which allows `owner_returned` too; with steps each
    failed `task_end` says."""

    seq_may_skip = True

    def __init__(self, obs: dict, ceiling: int, with_steps: bool) -> None:
        error = obs.get("error")
        self.harness = _Harness(ceiling)
        self.error = error.get("value_kind") if isinstance(error, dict) else None
        self.tasks = {task: _Task(None if with_steps else "tasks_live (unknown)",
                                  status.get("origin") if isinstance(status, dict) else None,
                                  task)
                      for task, status in (obs.get("tasks") or {}).items()}
        self._events = [
            (e.get("kind"), e.get("section"), e["provenance"].get("task"),
             e["provenance"].get("seq"), None)
            for e in obs.get("events") or ()
            if isinstance(e, dict) and isinstance(e.get("provenance"), dict)
            and isinstance(e["provenance"].get("seq"), int)]

    def saw(self, r: dict) -> None:
        """Keep what record `r` says of a task (its end and failure, a cancel
        asked of it), before the watchers see it."""
        if r["what"] == "task_end":
            task = self.tasks.setdefault(r["task"], _Task(None, None, r["task"]))
            task.live = False
            if r["end"] == "task_failed":
                task.failure = r.get("error")
        elif r["what"] == "cancel":
            self.tasks.setdefault(r["task"], _Task(None, None, r["task"])).stop_asked = True


def agree(found: list[dict], obs: dict) -> list[str]:
    """Where the steps and the events disagree on which tasks started, and
    which ended how (each list in the order reported)."""
    events = [e for e in obs.get("events") or () if isinstance(e, dict)]
    started = [e.get("task") for e in events if e.get("kind") == "task_started"]
    ended = [(e.get("task"), e.get("kind")) for e in events if e.get("kind") in oracles.TERMINAL]
    problems = []
    spawns = [r["task"] for r in found if r["what"] == "spawn"]
    ends = [(r["task"], r["end"]) for r in found if r["what"] == "task_end"]
    if sorted(spawns) != sorted(started):
        problems.append(f"the steps start tasks {_brief(spawns)} but the events start "
                        f"{_brief(started)}")
    if sorted(ends) != sorted(ended):
        problems.append(f"the steps end tasks {_brief(ends)} but the events end {_brief(ended)}")
    return problems


def _brief(items: list[Any]) -> str:
    shown = ", ".join(str(i) for i in items[:8])
    return f"[{shown}{', ...' if len(items) > 8 else ''}]"


class _ReadyFromPicks:
    """`ReadyChainNotRun` over a foreign engine's steps and the chain
    decisions the kit answered for it.

    In process the monitor reads the kernel's ready list at each step.  Over
    the pipe each `step` follows one `chain` decision (docs/protocol.md), and
    that pick's options are the chains the engine offers, in the order they
    became ready; the ready list is those and the chains offered before that
    have neither run since nor ended - so a chain an engine keeps ready but
    stops offering stays on it, as the kernel's hidden chain does.  A chain
    leaves it when it runs, or when its task ends (a `task_end` of that task
    or of a task it runs inside: a cancel or an abandon stops the task's
    chain and its calls).  The monitor's virtual-time bound reads an event
    record; the steps have none, so one stands at each step whose instant is
    later than the last step's (the clock moved on), before it - what is
    ready then was left behind.  A step its decision does not name, or more
    steps than decisions, is reported and ends the monitor's run."""

    def __init__(self, picks: Sequence[tuple[Sequence[str], int]]) -> None:
        self.picks = iter(picks)
        self.scheduler = self
        self.chooser = self
        #: What the monitor reads: the ready chains, the last chain decision's answer.
        self.ready: list[str] = []
        self.last = 0
        self.monitor = liveness.ReadyChainNotRun(self)
        self.t: int | None = None
        self.done = False

    def last_value(self) -> int:
        """The answer to the latest chain decision (`Chooser.last_value`)."""
        return self.last

    def see(self, r: dict) -> Iterator[Any]:
        if self.done:
            return
        if r["what"] == "task_end":
            task = r["task"]
            self.ready = [label for label in self.ready
                          if not _runs_inside(label.partition(":")[2], task)]
            return
        if r["what"] != "step":
            return
        pick = next(self.picks, None)
        if pick is None:
            self.done = True
            yield (f"step {r['i']} runs chain {r['chain']}, but the engine asked no chain "
                   "decision for it (a step follows each `chain` decision)")
            return
        options, value = pick
        label = options[value]
        kind, _, chain = label.partition(":")
        if chain != r["chain"]:
            self.done = True
            yield (f"step {r['i']} runs chain {r['chain']}, but the chain decision before it "
                   f"took {label}")
            return
        if self.t is not None and r["t"] > self.t and self.ready:
            yield from self.monitor.see({"what": "event", "i": r["i"], "t": r["t"]})
        self.t = r["t"]
        offered = set(options)
        self.ready = [*options, *(x for x in self.ready if x not in offered)]
        self.last = value
        yield from self.monitor.see({**r, "kind": kind})
        self.ready = [x for x in self.ready if x != label]


def _runs_inside(chain: str, task: str) -> bool:
    """Whether chain `chain` is task `task`'s own or runs inside it (a call
    it made, at any depth: ids extend their owner's)."""
    return chain == task or chain.startswith(task + ".")


def watch(obs: dict, ceiling: int = 8, declared: frozenset[str] = frozenset(),
          picks: Sequence[tuple[Sequence[str], int]] | None = None) -> list[str]:
    """The problems the watchers that can run find in `obs`'s reports;
    `ceiling` is the harness's concurrency the run was sent, `declared` the
    optional step kinds the engine's hello declares, `picks` the run's chain
    decisions as the kit answered them (each one's options and the index
    taken; None: not known, and `ReadyChainNotRun` does not run)."""
    with_steps = "steps" in obs
    if with_steps:
        found, broken = steps.read(obs["steps"])
        if broken is not None:
            return [f"the engine's steps are unusable: {broken}"]
        problems = agree(found, obs)
        if problems:
            return problems
        feed: Any = found
        names = tuple(n for n in ADAPTED
                      if (n not in NEED_CANCEL_STEPS or "cancel" in declared)
                      and (n not in NEED_PICKS or picks is not None))
    else:
        problems, feed, names = [], records(obs), ON_EVENTS
    facts = _Facts(obs, ceiling, with_steps)
    running = [_ReadyFromPicks(picks) if kind is liveness.ReadyChainNotRun else kind(facts)
               for kind in KINDS if kind.__name__ in names]
    for i, record in enumerate(feed):
        record["i"] = i
        facts.saw(record)
        if record["what"] == "spawn":
            facts.tasks.setdefault(record["task"], _Task(None, None, record["task"]))
        for watcher in running:
            problems.extend(p.problem if isinstance(p, Hot) else p for p in watcher.see(record))
    return problems
