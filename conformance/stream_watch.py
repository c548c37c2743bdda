"""The per-step watchers over a foreign engine's reports.

In process, the watchers (`oracles.WATCHERS`) read the reference engine's
trace while it is written.  A foreign engine has no such trace; what it
reports is its observation: the `events`, and - when the kit asked for them
(the run message's `"steps": true`, docs/protocol.md "Steps") - the
optional `steps`, the scheduling records the watchers read (`steps`).

`watch(obs, ceiling)` runs every watcher over them, in order:

- With `steps`, all of them run.  `SeqContiguous` reads the events'
  `provenance.seq` by the spec's rule (numbers strictly increase and may
  skip), and the steps are held to the events: the tasks they start and
  end, and how, must be the ones the events report (`agree`), so an
  engine cannot satisfy the watchers with steps its events belie.
- Without them (an engine that ignores the request), `records(obs)` rebuilds
  the few records the events carry - `spawn` from `task_started` (its owner
  is the chain that reported it), `task_end` from a terminal event,
  `run_end` from the outcome - and only `EndsOnce`, `AbandonReasonFits`
  and `SeqContiguous` run; `not_run(obs)` names the others and why, one
  line each, so a report says which could not run.

A watcher registered in `oracles.WATCHERS` that this module does not know
yet is reported as not adapted, so adding one never silently widens the
claim.

What does not live here: the watchers themselves (`oracles`), the steps'
format and the reference's recorder (`steps`), running the schedules
(`impl_explore`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from forge.conformance import oracles, steps

#: Watchers that run on the events alone.
ON_EVENTS = ("EndsOnce", "AbandonReasonFits", "SeqContiguous")
#: Watchers that run only with steps, and why they cannot without.
NEED_STEPS = {
    "DeliveredOnce": "the events report no deliveries (which wait took which task's result)",
    "WithinLimits": "the events report no admissions, and no owner's limit",
    "AdmittedInSpawnOrder": "the events report no admissions to a concurrency slot",
    "TimeoutLosesTies": "the events report no waits, no timeouts and no instants",
}
#: Every watcher this module adapts.
ADAPTED = ON_EVENTS + tuple(NEED_STEPS)


def not_run(obs: dict | None = None) -> dict[str, str]:
    """Every registered watcher that does not run on `obs` (None: on an
    engine that reports no steps), and why."""
    with_steps = obs is not None and "steps" in obs and steps.read(obs["steps"])[1] is None
    out = {}
    for kind in oracles.WATCHERS:
        name = kind.__name__
        if name not in ADAPTED:
            out[name] = "not adapted to a foreign engine's reports"
        elif name in NEED_STEPS and not with_steps:
            out[name] = NEED_STEPS[name] + " (and the engine reported no `steps`)"
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


class _Task:
    def __init__(self, failure: str | None) -> None:
        self.failure = failure


class _Harness:
    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling


class _Facts:
    """What the watchers read off a run, from an observation: the harness's
    ceiling (the kit's own), the run's error, each task's failure and the
    events' numbering.  Without steps a task's failure is unknown, so a
    failed owner may have leaked (`tasks_live`), which allows
    `owner_returned` too; with steps each failed `task_end` says."""

    seq_may_skip = True

    def __init__(self, obs: dict, ceiling: int, with_steps: bool) -> None:
        error = obs.get("error")
        self.harness = _Harness(ceiling)
        self.error = error.get("value_kind") if isinstance(error, dict) else None
        self.tasks = {task: _Task(None if with_steps else "tasks_live (unknown)")
                      for task in obs.get("tasks") or {}}
        self._events = [
            (e.get("kind"), e.get("section"), e["provenance"].get("task"),
             e["provenance"].get("seq"), None)
            for e in obs.get("events") or ()
            if isinstance(e, dict) and isinstance(e.get("provenance"), dict)
            and isinstance(e["provenance"].get("seq"), int)]

    def saw(self, r: dict) -> None:
        """Keep what record `r` says of a failure, before the watchers see it."""
        if r["what"] == "task_end" and r["end"] == "task_failed":
            self.tasks.setdefault(r["task"], _Task(None)).failure = r.get("error")


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


def watch(obs: dict, ceiling: int = 8) -> list[str]:
    """The problems the watchers that can run find in `obs`'s reports;
    `ceiling` is the harness's concurrency the run was sent."""
    with_steps = "steps" in obs
    if with_steps:
        found, broken = steps.read(obs["steps"])
        if broken is not None:
            return [f"the engine's steps are unusable: {broken}"]
        problems = agree(found, obs)
        if problems:
            return problems
        feed: Any = found
        names = ADAPTED
    else:
        problems, feed, names = [], records(obs), ON_EVENTS
    facts = _Facts(obs, ceiling, with_steps)
    running = [kind(facts) for kind in oracles.WATCHERS if kind.__name__ in names]
    for record in feed:
        facts.saw(record)
        for watcher in running:
            problems.extend(watcher.see(record))
    return problems
