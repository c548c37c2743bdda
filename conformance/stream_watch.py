"""The per-step watchers over a foreign engine's event stream.

In process, the watchers (`oracles.WATCHERS`) read the reference engine's
trace while it is written.  A foreign engine has no such trace; what it
reports is its observation's `events`.  `records(obs)` turns that stream
into the trace records a watcher reads - `spawn` from `task_started` (its
owner is the chain that reported it), `task_end` from a terminal event,
`run_end` from the outcome - and `watch(obs)` runs every watcher those
records are enough for, over them, in order.

Some watchers need what no event carries: which wait took which result, the
admissions and the limits, the waits, their timeouts and the instants.  They
cannot run on a foreign engine, and `CANNOT_RUN` says why, one line each; a
report lists them (`not_run`).  A watcher registered in `oracles.WATCHERS`
that this module does not know yet is reported the same way, as not
adapted, so adding one never silently widens the claim.  What those
watchers would catch, differential exploration still compares
(`impl_explore.DifferentialSubject`).

What does not live here: the watchers themselves (`oracles`), running the
schedules (`impl_explore`).
"""

from __future__ import annotations

from collections.abc import Iterator

from forge.conformance import oracles

#: Watchers whose every record the event stream carries.
RUNS = ("EndsOnce", "AbandonReasonFits")
#: Watcher -> why it cannot run over an event stream.
CANNOT_RUN = {
    "DeliveredOnce": "the events report no deliveries (which wait took which task's result)",
    "WithinLimits": "the events report no admissions, and no owner's limit",
    "AdmittedInSpawnOrder": "the events report no admissions to a concurrency slot",
    "TimeoutLosesTies": "the events report no waits, no timeouts and no instants",
    "SeqContiguous": "seq numbering is implementation-defined: an engine may skip numbers",
    "ChildCounter": "the events report no calls and no timed waits, which take indices too",
    "WithinDepthCap": "the events report no calls, which nest chains too",
    "TimedOutJoinKeepsFinished": "the events report no waits, no timeouts and no deliveries",
    "LeakFailsOwner": "the events report a failure's kind only for the run, not each task's",
}


def not_run() -> dict[str, str]:
    """Every registered watcher that does not run on a foreign engine, and why."""
    out = {}
    for kind in oracles.WATCHERS:
        name = kind.__name__
        if name not in RUNS:
            out[name] = CANNOT_RUN.get(name, "not adapted to a foreign engine's event stream")
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


class _Facts:
    """What `AbandonReasonFits` reads off a run, from an observation: the run's
    error, and per task a failure the events cannot tell apart - so a failed
    owner may have leaked (`tasks_live`), which allows `owner_returned` too."""

    def __init__(self, obs: dict) -> None:
        error = obs.get("error")
        self.error = error.get("value_kind") if isinstance(error, dict) else None
        self.tasks = {task: _Task("tasks_live (unknown)") for task in obs.get("tasks") or {}}


def watch(obs: dict) -> list[str]:
    """The problems the watchers that can run find in `obs`'s event stream."""
    facts = _Facts(obs)
    running = [kind(facts) for kind in oracles.WATCHERS if kind.__name__ in RUNS]
    problems: list[str] = []
    for record in records(obs):
        for watcher in running:
            problems.extend(watcher.see(record))
    return problems
