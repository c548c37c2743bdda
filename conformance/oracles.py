"""Oracles: invariants every schedule of a prompt must satisfy, read off its observation.

Each check takes an observation (the JSON object any implementation reports)
and returns a list of problems, empty when the invariant holds.  They read
only the observation's `events` and `tasks`, so they apply to an alternate
implementation as much as to the reference; they live with the conformance
suite because they state the spec, and take its facts (the abandon reasons)
from the one module that holds them.

- `each_task_ends_once`: one terminal event per task, none before its start.
- `abandon_has_one_reason`: every abandoned task carries exactly one known
  reason, and the reason matches who ended first (a task whose owner task
  was itself stopped is `owner_aborted`).
- `status_matches_events`: the final status table agrees with the terminal
  event.
- `same_ids(reference)`: the set of (id, target, origin) is the same as a
  reference schedule's - ids depend only on each chain's own calls.  Use it
  for prompts that start the same tasks on every schedule.
- `consistent_ids(reference)`: an id present in both schedules names the
  same target and origin (a schedule may start fewer tasks, for example when
  a cancel lands before a worker spawns).
- `schedule_independent(reference)`: the observation equals a reference
  schedule's in everything a schedule may not change (`SCHEDULE_OPEN` lists
  what it may: the order of events and logs, the virtual time, the trace).
"""

from __future__ import annotations

import json

from collections.abc import Callable

from forge.engine.rules.endings import REASONS

TERMINAL = {
    "task_succeeded": ("done", True),
    "task_failed": ("done", False),
    "task_cancelled": ("cancelled", False),
    "task_abandoned": ("abandoned", False),
}


def _terminal_events(obs: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for event in obs.get("events", []):
        if event.get("kind") in TERMINAL:
            out.setdefault(event.get("task"), []).append(event)
    return out


def each_task_ends_once(obs: dict) -> list[str]:
    problems = []
    ends = _terminal_events(obs)
    started = [e.get("task") for e in obs.get("events", []) if e.get("kind") == "task_started"]
    for task_id in obs.get("tasks", {}):
        count = len(ends.get(task_id, []))
        if count != 1:
            problems.append(f"task {task_id} ended {count} times")
    if len(started) != len(set(started)):
        problems.append("a task was started twice")
    return problems


def abandon_has_one_reason(obs: dict) -> list[str]:
    problems = []
    tasks = obs.get("tasks", {})
    for task_id, events in _terminal_events(obs).items():
        for event in events:
            if event.get("kind") != "task_abandoned":
                continue
            reason = event.get("reason")
            if reason not in REASONS:
                problems.append(f"task {task_id} abandoned with unknown reason {reason!r}")
                continue
            parent = task_id.rsplit(".", 1)[0]
            owner_state = tasks.get(parent, {}).get("state")
            if owner_state in ("cancelled", "abandoned") and reason != "owner_aborted":
                problems.append(
                    f"task {task_id} abandoned as {reason} but its owner task {parent} "
                    f"was {owner_state} first (expected owner_aborted)"
                )
    return problems


def status_matches_events(obs: dict) -> list[str]:
    problems = []
    ends = _terminal_events(obs)
    for task_id, status in obs.get("tasks", {}).items():
        events = ends.get(task_id)
        if not events:
            continue
        state, ok = TERMINAL[events[0]["kind"]]
        if status.get("state") != state or status.get("ok") != ok:
            problems.append(
                f"task {task_id} status {status.get('state')}/{status.get('ok')} but event "
                f"{events[0]['kind']}"
            )
    return problems


def same_ids(reference: dict) -> Callable[[dict], list[str]]:
    def key(obs: dict) -> list[tuple]:
        return sorted((i, s.get("target"), s.get("origin")) for i, s in obs.get("tasks", {}).items())

    expected = key(reference)

    def check(obs: dict) -> list[str]:
        got = key(obs)
        if got != expected:
            return [f"task ids differ from the canonical schedule: {got} != {expected}"]
        return []

    return check


def consistent_ids(reference: dict) -> Callable[[dict], list[str]]:
    expected = {i: (s.get("target"), s.get("origin")) for i, s in reference.get("tasks", {}).items()}

    def check(obs: dict) -> list[str]:
        problems = []
        for i, s in obs.get("tasks", {}).items():
            if i in expected and expected[i] != (s.get("target"), s.get("origin")):
                problems.append(f"task {i} is {s.get('target')} here but {expected[i][0]} "
                                "on the canonical schedule")
        return problems

    return check


DEFAULT_CHECKS = (each_task_ends_once, abandon_has_one_reason, status_matches_events)


#: Observation fields a schedule may change: the interleaving (events, the
#: trace), when things happen (virtual time, and when each harness operation
#: was issued and answered), and the order - not the content - of the log
#: lines and of the model rounds.
SCHEDULE_OPEN = ("events", "virtual_time", "trace_sha256", "effects")


def _fixed(obs: dict) -> dict:
    fixed = {k: v for k, v in obs.items() if k not in SCHEDULE_OPEN}
    fixed["logs"] = sorted(fixed.get("logs") or [])
    if "rounds" in fixed:
        fixed["rounds"] = sorted(fixed["rounds"] or [], key=lambda r: json.dumps(r, sort_keys=True))
    return fixed


def schedule_independent(reference: dict) -> Callable[[dict], list[str]]:
    expected = _fixed(reference)

    def check(obs: dict) -> list[str]:
        from forge.difference import first_difference, problem

        got = _fixed(obs)
        for key in sorted(set(expected) | set(got)):
            if expected.get(key) != got.get(key):
                found = first_difference(expected.get(key), got.get(key), f"$.{key}")
                return [problem(f"schedule-dependent {key}: this schedule differs from the "
                                "canonical one", found, "canonical", "this run")]
        return []

    return check


# -- during the run ------------------------------------------------------------------
#
# The checks above read a finished observation.  The watchers below read the
# reference engine's trace while it is being written (`forge.sim.trace`'s
# `observe`), so a violation is pinned to the record - the step - that shows
# it, and they see what no final observation shows: each delivery, each
# admission, each timeout.  A few facts the trace does not carry (the
# admission counters, the owners' limits, the events' `seq`) are read off the
# run at the record that needs them.

_STOPPED = ("task_cancelled", "task_abandoned")


def _ancestors(task_id: str):
    parts = task_id.split(".")
    return [".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


class EndsOnce:
    """Each task starts once and ends exactly once, after it started."""

    def __init__(self, facts) -> None:
        self.started: set[str] = set()
        self.ended: dict[str, str] = {}

    def see(self, r: dict):
        what = r["what"]
        if what == "spawn":
            if r["task"] in self.started:
                yield f"task {r['task']} was started twice"
            self.started.add(r["task"])
        elif what == "task_end":
            task = r["task"]
            if task not in self.started:
                yield f"task {task} ended before it started"
            if task in self.ended:
                yield f"task {task} ended twice ({self.ended[task]}, then {r['end']})"
            self.ended.setdefault(task, r["end"])
        elif what == "run_end":
            live = [t for t in sorted(self.started, key=_id_key) if t not in self.ended]
            if live:
                yield f"the run ended with task(s) {', '.join(live)} never ended"


def _id_key(task_id: str):
    return tuple(int(p) if p.isdigit() else -1 for p in task_id.split("."))


class DeliveredOnce:
    """A finished task's result is delivered at most once, and only after it
    ended (a cancelled task's error may be read by every wait that names it)."""

    def __init__(self, facts) -> None:
        self.ended: dict[str, str] = {}
        self.delivered: dict[str, int] = {}

    def see(self, r: dict):
        what = r["what"]
        if what == "task_end":
            self.ended.setdefault(r["task"], r["end"])
        elif what == "deliver":
            task = r["task"]
            end = self.ended.get(task)
            if end is None:
                yield f"task {task} was delivered to chain {r['chain']} before it ended"
            elif end != "task_cancelled":
                if task in self.delivered:
                    yield (f"task {task}'s result was delivered twice (to chain "
                           f"{self.delivered[task]}, then to chain {r['chain']})")
                self.delivered.setdefault(task, r["chain"])


class WithinLimits:
    """At every admission: no more tasks hold a slot than the ceiling, and no
    owner's tasks more than its limit clamped to its parent's (read off the
    run: the trace does not carry the counters or the limits)."""

    def __init__(self, facts) -> None:
        self.run = facts

    def see(self, r: dict):
        if r["what"] != "admit":
            return
        ceiling = self.run.harness.ceiling
        # A foreign engine's step carries the counts (`steps`); in process
        # they are read off the run at this record.
        counts = r if "running" in r else self._counts(r["task"])
        running, owner = counts["running"], counts["owner"]
        if running > ceiling:
            yield (f"admitting task {r['task']} made {running} tasks run at once, "
                   f"above the ceiling {ceiling}")
        limit = min(counts["limit"], counts["parent_limit"] or ceiling, ceiling)
        if counts["busy"] > limit:
            yield (f"admitting task {r['task']} made {counts['busy']} tasks of chain {owner} run "
                   f"at once, above its limit {limit}")

    def _counts(self, task_id: str) -> dict:
        owner = self.run.tasks[task_id].owner
        return {"running": self.run.admission.running, "owner": owner.id, "busy": owner.busy,
                "limit": owner.limit, "parent_limit": owner.ceiling or None}


class AdmittedInSpawnOrder:
    """An owner's queued tasks take their first slot in spawn order (their
    limit is the same, so an earlier one is never passed over)."""

    def __init__(self, facts) -> None:
        self.queued: dict[str, list[str]] = {}       # owner chain -> never admitted, in order
        self.owner: dict[str, str] = {}

    def see(self, r: dict):
        what = r["what"]
        if what == "spawn":
            self.queued.setdefault(r["owner"], []).append(r["task"])
            self.owner[r["task"]] = r["owner"]
        elif what in ("admit", "task_end"):
            task = r["task"]
            queue = self.queued.get(self.owner.get(task, ""), [])
            if task not in queue:
                return          # a re-admission after a wait, or not queued
            if what == "admit" and queue[0] != task:
                yield (f"task {task} was admitted before task {queue[0]}, spawned earlier by "
                       f"the same owner")
            queue.remove(task)


class TimeoutLosesTies:
    """A timed wait's timeout never wins over a member that ends at the same
    instant: when it fires, the wait is not yet met, and no member ends
    normally at that instant afterwards (timers sort last in their instant)."""

    def __init__(self, facts) -> None:
        self.ended: set[str] = set()
        self.waits: dict[str, tuple[str, tuple[str, ...]]] = {}
        #: Timeouts fired at the current instant: (chain, every, members).
        self.fired: list[tuple[str, bool, tuple[str, ...]]] = []
        self.now = -1

    def _met(self, every: bool, members) -> bool:
        ended = [m in self.ended for m in members]
        return all(ended) if every else any(ended)

    def see(self, r: dict):
        if r["t"] != self.now:
            self.now, self.fired = r["t"], []
        what = r["what"]
        if what == "wait" and r.get("call") in ("tasks.join", "tasks.join_any"):
            self.waits[r["chain"]] = (r["call"], tuple(r["members"]))
        elif what == "timeout" and r["chain"] in self.waits:
            call, members = self.waits.pop(r["chain"])
            every = call == "tasks.join"
            if self._met(every, members):
                yield f"chain {r['chain']}'s {call} timed out although it was met"
            self.fired.append((r["chain"], every, members))
        elif what == "task_end":
            self.ended.add(r["task"])
            if r["end"] in _STOPPED:
                return      # a stop may follow from the timeout itself
            for chain, every, members in self.fired:
                if r["task"] in members and self._met(every, members):
                    yield (f"chain {chain}'s timeout won the tie with task {r['task']}, "
                           "which ended at the same instant")


class AbandonReasonFits:
    """Every abandon has the one reason that who ended first gives: a task
    under a stopped task is `owner_aborted`; the tasks a finishing owner
    abandons in the same step say how it finished."""

    def __init__(self, facts) -> None:
        self.run = facts
        self.stopped: set[str] = set()
        #: Abandons since the last step: (task, reason).
        self.recent: list[tuple[str, str]] = []

    def _expect(self, owner: str, end: str | None, error: str | None):
        if end in _STOPPED:
            return {"owner_aborted"}
        if end == "task_succeeded" or (end is None and error is None):
            return {"owner_returned"}
        if end == "task_failed" or end is None:
            # a leak (tasks_live) fails the owner, but abandons as owner_returned
            failure = self.run.tasks[owner].failure if owner in self.run.tasks else self.run.error
            leaked = "tasks_live" in repr(failure)
            return {"owner_failed", "tool_loop_exhausted"} | ({"owner_returned"} if leaked else set())
        return set(REASONS)

    def see(self, r: dict):
        what = r["what"]
        if what == "step":
            self.recent = []
        elif what == "task_end":
            task = r["task"]
            if r["end"] == "task_abandoned":
                reason = r.get("reason")
                if reason not in REASONS:
                    yield f"task {task} was abandoned with unknown reason {reason!r}"
                gone = [a for a in _ancestors(task) if a in self.stopped]
                if gone and reason != "owner_aborted":
                    yield (f"task {task} was abandoned as {reason} under task {gone[0]}, "
                           "stopped first (expected owner_aborted)")
                self.recent.append((task, reason))
            if r["end"] in _STOPPED:
                self.stopped.add(task)
            yield from self._finished(task, r["end"], None)
        elif what == "run_end" and r.get("outcome") in ("ok", "failed"):
            yield from self._finished("0", None, r.get("error"))

    def _finished(self, owner: str, end: str | None, error: str | None):
        allowed = self._expect(owner, end, error)
        for task, reason in self.recent:
            if task.rsplit(".", 1)[0] != owner or reason not in REASONS:
                continue
            if end in _STOPPED or reason in allowed or reason == "run_terminated":
                if end in _STOPPED and reason != "owner_aborted":
                    yield (f"task {task} was abandoned as {reason} when its owner task "
                           f"{owner} was stopped (expected owner_aborted)")
                continue
            yield (f"task {task} was abandoned as {reason}, but its owner {owner} "
                   f"{'ended ' + end if end else 'returned' if error is None else 'failed'} "
                   f"(expected {' or '.join(sorted(allowed))})")


class SeqContiguous:
    """Each task's events are numbered 0, 1, 2, ... with no gap or repeat.

    Over a foreign engine's events (`facts.seq_may_skip`) the spec's own
    rule: a task's numbers strictly increase, and may skip (docs/observation.md)."""

    def __init__(self, facts) -> None:
        self.run = facts
        self.seen = 0
        self.next: dict[str, int] = {}
        self.may_skip = getattr(facts, "seq_may_skip", False)

    def see(self, r: dict):
        events = self.run._events
        for kind, _section, task, seq, _fields in events[self.seen:]:
            want = self.next.get(task, 0)
            if seq < want if self.may_skip else seq != want:
                yield (f"task {task}'s event {kind} has seq {seq}, expected "
                       f"{'at least ' if self.may_skip else ''}{want}")
            self.next[task] = seq + 1
        self.seen = len(events)


#: The watchers every schedule runs under by default (`watchers`).
WATCHERS = (EndsOnce, DeliveredOnce, WithinLimits, AdmittedInSpawnOrder, TimeoutLosesTies,
            AbandonReasonFits, SeqContiguous)


def watchers(run, kinds=WATCHERS) -> tuple:
    """Fresh watchers for one run of the reference engine (`Trace.observe`)."""
    return tuple(kind(run) for kind in kinds)


#: The observation key a run's violations are reported under, present only
#: when a watcher found one.
VIOLATIONS = "violations"


def no_violations(obs: dict) -> list[str]:
    """The problems the watchers found while the run happened."""
    return list(obs.get(VIOLATIONS) or [])
