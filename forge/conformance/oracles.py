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
#: trace), when things happen (virtual time), and the order - not the
#: content - of the log lines.
SCHEDULE_OPEN = ("events", "virtual_time", "trace_sha256")


def _fixed(obs: dict) -> dict:
    fixed = {k: v for k, v in obs.items() if k not in SCHEDULE_OPEN}
    fixed["logs"] = sorted(fixed.get("logs") or [])
    return fixed


def schedule_independent(reference: dict) -> Callable[[dict], list[str]]:
    expected = _fixed(reference)

    def check(obs: dict) -> list[str]:
        got = _fixed(obs)
        for key in sorted(set(expected) | set(got)):
            if expected.get(key) != got.get(key):
                return [f"schedule-dependent {key}: {_short(got.get(key))} here, "
                        f"{_short(expected.get(key))} on the canonical schedule"]
        return []

    return check


def _short(value, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
