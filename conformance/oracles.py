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
from typing import TYPE_CHECKING

from forge.deferred import deferred
from forge.engine.rules.endings import REASONS
from forge.engine.rules.ids import DEPTH_CAP

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import difference
else:
    difference = deferred("forge.difference")

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


#: The four shapes a task notice takes (tasks.model.notices.four-shapes),
#: by the task's final state and ok: the text after its head.
_NOTICE_SHAPES = {("done", True): "completed: ", ("done", False): "failed: ",
                  ("cancelled", False): "was canceled: the author cancelled it",
                  ("abandoned", False): "was abandoned: "}


def notices_tell_endings(obs: dict) -> list[str]:
    """Each task notice a model is told is told once, and takes the shape
    of how its task ended, under the head `Task id={task} (## {target})`
    (tasks.model.notices.four-shapes, tasks.model.notices.queued-for-owner)."""
    problems = []
    tasks = obs.get("tasks") or {}
    told: set[str] = set()
    for event in obs.get("events", []):
        if event.get("kind") != "task_notice":
            continue
        task_id, text = str(event.get("task")), str(event.get("text", ""))
        if task_id in told:
            problems.append(f"task {task_id}'s notice was told twice")
        told.add(task_id)
        status = tasks.get(task_id)
        if not isinstance(status, dict):
            continue
        head = f"Task id={task_id} (## {status.get('target')}) "
        shape = _NOTICE_SHAPES.get((status.get("state"), status.get("ok")))
        if not text.startswith(head):
            problems.append(f"task {task_id}'s notice does not start {head.strip()!r}: "
                            f"{text[:60]!r}")
        elif shape is not None and not text[len(head):].startswith(shape):
            problems.append(f"task {task_id} ended {status.get('state')}, but its notice "
                            f"reads {text[len(head):][:50]!r} (expected {shape!r})")
    return problems


DEFAULT_CHECKS = (each_task_ends_once, abandon_has_one_reason, status_matches_events,
                  notices_tell_endings)


#: Observation fields a schedule may change: the interleaving (events, the
#: trace), when things happen (virtual time, and when each harness operation
#: was issued and answered), and the order - not the content - of the log
#: lines and of the model rounds; and which probes a run reached (`forge.probes`).
SCHEDULE_OPEN = ("events", "virtual_time", "trace_sha256", "effects", "probes")


def _fixed(obs: dict) -> dict:
    fixed = {k: v for k, v in obs.items() if k not in SCHEDULE_OPEN}
    fixed["logs"] = sorted(fixed.get("logs") or [])
    if "rounds" in fixed:
        fixed["rounds"] = sorted(fixed["rounds"] or [], key=lambda r: json.dumps(r, sort_keys=True))
    return fixed


def schedule_independent(reference: dict) -> Callable[[dict], list[str]]:
    expected = _fixed(reference)

    def check(obs: dict) -> list[str]:
        got = _fixed(obs)
        for key in sorted(set(expected) | set(got)):
            if expected.get(key) != got.get(key):
                found = difference.first_difference(expected.get(key), got.get(key), f"$.{key}")
                return [difference.problem(f"schedule-dependent {key}: this schedule differs "
                                           "from the canonical one", found, "canonical",
                                           "this run")]
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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"spawn", "task_end", "run_end"})

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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"task_end", "deliver"})

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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"admit"})

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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"spawn", "admit", "task_end"})

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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"wait", "timeout", "task_end"})

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
        # Fed only the records it reads: an instant's timeouts are still
        # forgotten at the first of them at a later instant, since the
        # trace's instants never go back.
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

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"step", "task_end", "run_end"})

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

    #: Every record: an event may be emitted between any two records, and a gap is pinned
    #: to the first record after it.
    SEES = None

    def __init__(self, facts) -> None:
        self.run = facts
        self.seen = 0
        self.next: dict[str, int] = {}
        self.may_skip = getattr(facts, "seq_may_skip", False)

    def see(self, r: dict):
        events = self.run._events
        if len(events) == self.seen:
            return ()           # most records follow no new event
        return self._check(events)

    def _check(self, events):
        for kind, _section, task, seq, _fields in events[self.seen:]:
            want = self.next.get(task, 0)
            if seq < want if self.may_skip else seq != want:
                yield (f"task {task}'s event {kind} has seq {seq}, expected "
                       f"{'at least ' if self.may_skip else ''}{want}")
            self.next[task] = seq + 1
        self.seen = len(events)


class ChildCounter:
    """Each chain numbers its children from one counter starting at 0: a
    spawn and a call take the next index (the child's id is the chain's id,
    a dot and the index), and so does a timed wait that parks; an untimed
    wait takes none (tasks.ids, tasks.timeout-ids.timed-wait-takes-index,
    tasks.timeout-ids.no-index)."""

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"spawn", "call_start", "wait"})

    def __init__(self, facts) -> None:
        self.next: dict[str, int] = {}

    def _child(self, chain: str, child: str, what: str):
        want = f"{chain}.{self.next.get(chain, 0)}"
        if child != want:
            yield (f"chain {chain}'s {what} got id {child}; its child counter gives {want} "
                   "(spawns, calls and timed waits that park each take the next index)")
        head, _, index = child.rpartition(".")
        if head == chain and index.isdigit():
            self.next[chain] = int(index) + 1
        else:
            self.next[chain] = self.next.get(chain, 0) + 1

    def see(self, r: dict):
        what = r["what"]
        if what == "spawn":
            yield from self._child(r["owner"], r["task"], "spawn")
        elif what == "call_start":
            yield from self._child(r["chain"], r["callee"], "call")
        elif what == "wait" and r.get("timeout") is not None:
            self.next[r["chain"]] = self.next.get(r["chain"], 0) + 1


class WithinDepthCap:
    """No chain is spawned, called or fanned out deeper than the cap of 8
    (tasks.ids: an id has at most nine components, `0` and eight more)."""

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"spawn", "call_start"})

    def __init__(self, facts) -> None:
        self.cap = DEPTH_CAP

    def see(self, r: dict):
        child = r.get("task") if r["what"] == "spawn" else \
            r.get("callee") if r["what"] == "call_start" else None
        if child is not None and str(child).count(".") > self.cap:
            yield (f"chain {child} runs at depth {str(child).count('.')}, past the cap of "
                   f"{self.cap}")


class TimedOutJoinKeepsFinished:
    """A `tasks.join` that times out still delivers every member that had
    ended: only the missing positions are holes (tasks.timeouts.join-timed-out)."""

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"wait", "task_end", "timeout", "deliver", "step"})

    def __init__(self, facts) -> None:
        self.ended: set[str] = set()
        self.waits: dict[str, tuple[str, ...]] = {}
        #: chain -> the ended members its timed-out join still owes.
        self.owed: dict[str, set[str]] = {}

    def see(self, r: dict):
        what = r["what"]
        if what == "wait" and r.get("call") == "tasks.join":
            self.waits[r["chain"]] = tuple(r.get("members", ()))
        elif what == "task_end":
            self.ended.add(r["task"])
        elif what == "timeout" and r["chain"] in self.waits:
            members = self.waits.pop(r["chain"])
            self.owed[r["chain"]] = {m for m in members if m in self.ended}
        elif what == "deliver" and r["chain"] in self.owed:
            self.owed[r["chain"]].discard(r["task"])
        elif what == "step" and r["chain"] in self.owed:
            missing = sorted(self.owed.pop(r["chain"]))
            if missing:
                yield (f"chain {r['chain']}'s timed-out tasks.join dropped the finished "
                       f"member(s) {', '.join(missing)}")


class LeakFailsOwner:
    """A chain that ends normally with tasks it spawned by `tasks.spawn`
    still live fails with `tasks_live`, and those tasks are abandoned as
    `owner_returned` (tasks.leak.tasks-live); live tasks its model started
    are abandoned quietly, failing nothing (tasks.model.owner-end.abandoned-quietly).
    Who started a task and why its owner failed are read off the run."""

    #: The records it reads (`forge.sim.trace.Trace.observe` feeds it no other).
    SEES = frozenset({"step", "task_end", "run_end"})

    def __init__(self, facts) -> None:
        self.run = facts
        #: Tasks abandoned as owner_returned since the last step: (task, origin).
        self.recent: list[tuple[str, str | None]] = []

    def see(self, r: dict):
        what = r["what"]
        if what == "step":
            self.recent = []
        elif what == "task_end":
            task = self.run.tasks.get(r["task"])
            if r["end"] == "task_abandoned" and r.get("reason") == "owner_returned":
                self.recent.append((r["task"], task.origin if task is not None else None))
            elif r["end"] in ("task_succeeded", "task_failed") and task is not None:
                yield from self._ended(r["task"], task.failure)
        elif what == "run_end" and r.get("outcome") in ("ok", "failed"):
            yield from self._ended("0", self.run.error)

    def _ended(self, owner: str, failure):
        leaked = [(t, origin) for t, origin in self.recent if t.rsplit(".", 1)[0] == owner]
        if not leaked:
            return
        authors = [t for t, origin in leaked if origin == "author"]
        said = failure is not None and "tasks_live" in repr(failure)
        if authors and not said:
            yield (f"chain {owner} ended with task(s) {', '.join(authors)} it spawned still "
                   "live, and did not fail with tasks_live")
        elif said and not authors:
            yield (f"chain {owner} failed with tasks_live, but the only live tasks it left "
                   f"({', '.join(t for t, _ in leaked)}) were its model's")


#: The watchers every schedule runs under by default (`watchers`).
WATCHERS = (EndsOnce, DeliveredOnce, WithinLimits, AdmittedInSpawnOrder, TimeoutLosesTies,
            AbandonReasonFits, SeqContiguous, ChildCounter, WithinDepthCap,
            TimedOutJoinKeepsFinished, LeakFailsOwner)


def watchers(run, kinds=WATCHERS) -> tuple:
    """Fresh watchers for one run of the reference engine (`Trace.observe`)."""
    return tuple([kind(run) for kind in kinds])


#: The observation key a run's violations are reported under, present only
#: when a watcher found one.
VIOLATIONS = "violations"


def no_violations(obs: dict) -> list[str]:
    """The problems the watchers found while the run happened."""
    return list(obs.get(VIOLATIONS) or [])
