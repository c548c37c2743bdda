"""Reachability probes: named behaviours a schedule may or may not reach, each tied to a clause.

A green campaign that never cancelled a waiting task, never tied a timeout
with a member's end or never abandoned a task as `owner_failed` looks the
same as one that did; the probes say which of those it reached.  Each
`Probe` of `CATALOGUE` names one behaviour and the clause it exercises; a
run's hits are read once, after the run, off its trace records, its
observation's events and the faults that fired (`hits`).  The searches
tally the names a run hit (`forge.sim.explore.PROBES`: the observation key
they are carried under, outside the engine's observation sha256), and every
report lists each probe's count and those never reached (`coverage`).

A user's probe is a Python function named `module:function` (`--probe`),
like a `--check`: it takes the observation's JSON data and is hit when it
returns a true value (`forge.runspec.load_probe` loads one).  `--require NAME` turns "never
reached" into a failed campaign (`unreached`).

What does not live here: the safety oracles (`forge.conformance.oracles`),
the liveness monitors (`forge.liveness`), tallying and reporting
(`forge.sim.explore`, `forge.commands.explore_report`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from forge.engine.rules.endings import AbandonReason
from forge.errors import InputError
from forge.harness import FAULT_KINDS
from forge.watched import own_copy


@attrs.frozen
class Probe:
    """One named behaviour: `name` (what reports and `--require` say), the
    clause id it exercises, and what reaching it means."""

    name: str
    clause: str
    says: str
    #: Whether an observation's events alone show it (`observed`), so that
    #: a conformance run of any implementation can count it.
    events: bool = False


def _abandon(reason: AbandonReason) -> Probe:
    return Probe(f"abandon-{reason.value.replace('_', '-')}",
                 f"tasks.reasons.{reason.value.replace('_', '-')}",
                 f"a task was abandoned as {reason.value}", events=True)


def _fault(kind: str) -> Probe:
    clause = {"cancel": "tasks.reasons.host-cancel"}.get(kind, "tasks.cancel.harness-wait-safe"
                                                         if kind == "store" else
                                                         "errors.reraise-later-rebuilt")
    return Probe(f"fault-{kind}", clause, f"a {kind} fault fired")


#: Every built-in probe, in the order reports list them.
CATALOGUE: tuple[Probe, ...] = (
    Probe("timeout-tie", "tasks.timeouts.tie-member-wins",
          "a member of a timed wait ended at the instant its timeout expired"),
    Probe("timeout-fired", "tasks.timeouts.join-any-nil",
          "a timed wait's timeout expired before it was met"),
    Probe("join-any-same-instant", "tasks.wait.join-any-parks-or-returns",
          "two members of one parked join_any ended at the same instant"),
    Probe("task-queued", "tasks.concurrency.queued",
          "a spawned task waited for a concurrency slot"),
    Probe("cancel-queued", "tasks.stop.unstarted-never-runs",
          "a task was cancelled while queued for a slot", events=True),
    Probe("cancel-running", "tasks.cancel.stops-returns-nothing",
          "a task was cancelled while it was ready or running"),
    Probe("cancel-in-harness", "tasks.cancel.harness-wait-safe",
          "a task was cancelled while it waited on the harness"),
    Probe("cancel-waiting", "tasks.cancel.marks-cancelled",
          "a task was cancelled while it waited on its own tasks"),
    *(_abandon(r) for r in AbandonReason),
    Probe("notice-delivered", "tasks.model.notices.queued-for-owner",
          "a task notice was delivered to a model", events=True),
    *(_fault(k) for k in FAULT_KINDS),
)
_BY_NAME = {p.name: p for p in CATALOGUE}


class _Scan:
    """One pass over a run's trace records, collecting the probes they show."""

    def __init__(self) -> None:
        self.hit: set[str] = set()
        #: chain -> (call, members, deadline ns or None, record index) of its open wait.
        self.waits: dict[str, tuple[str, tuple[str, ...], int | None, int]] = {}
        #: Waits closed at the current instant, with their chains (a tie's
        #: first finisher or the timeout may close them first).
        self.closed: list[tuple[str, tuple[str, tuple[str, ...], int | None, int]]] = []
        #: join_any wait (its record index) -> member -> the instant it ended.
        self.any_ends: dict[int, dict[str, int]] = {}
        self.spawned: set[str] = set()
        self.admitted: set[str] = set()
        #: chain -> where it is: ready, harness or waiting.
        self.where: dict[str, str] = {}
        #: The task spawned by the record before, if it is not admitted yet:
        #: a task that gets a slot is admitted by the very next record.
        self.just_spawned: str | None = None
        self.now = -1

    def see(self, r: dict) -> None:
        what, t = r["what"], r["t"]
        if t != self.now:
            self.now, self.closed = t, []
        if self.just_spawned is not None and not (what == "admit"
                                                   and r["task"] == self.just_spawned):
            self.hit.add("task-queued")
        self.just_spawned = None
        if what == "spawn":
            self.spawned.add(r["task"])
            self.just_spawned = r["task"]
        elif what == "admit":
            self.admitted.add(r["task"])
            self.where[r["task"]] = "ready"
        elif what == "step":
            self.where[r["chain"]] = "ready"
        elif what == "harness":
            self.where[r["chain"]] = "harness"
        elif what == "wait":
            deadline = t + r["timeout"] if r.get("timeout") is not None else None
            self.waits[r["chain"]] = (r.get("call", ""), tuple(r.get("members", ())), deadline,
                                      r["i"])
            self.where[r["chain"]] = "waiting"
        elif what in ("deliver", "timeout"):
            wait = self.waits.pop(r["chain"], None)
            if wait is not None:
                self.closed.append((r["chain"], wait))
            if what == "timeout":
                self.hit.add("timeout-fired")
        elif what == "task_end":
            self._ended(r, t)

    def _ended(self, r: dict, t: int) -> None:
        task, end = r["task"], r["end"]
        # The waits this end may tie in: the open ones, and those a timeout or
        # the first finisher closed at this same instant.
        for _chain, (call, members, deadline, opened) in [*self.waits.items(), *self.closed]:
            if task not in members:
                continue
            if deadline == t:
                self.hit.add("timeout-tie")
            if call == "tasks.join_any":
                ends = self.any_ends.setdefault(opened, {})
                ends[task] = t
                if sum(1 for when in ends.values() if when == t) >= 2:
                    self.hit.add("join-any-same-instant")
        if end == "task_cancelled":
            if task not in self.admitted:
                self.hit.add("cancel-queued")
            else:
                self.hit.add({"harness": "cancel-in-harness", "waiting": "cancel-waiting"}
                             .get(self.where.get(task, "ready"), "cancel-running"))
        elif end == "task_abandoned" and r.get("reason"):
            self.hit.add(f"abandon-{str(r['reason']).replace('_', '-')}")


def hits(records: Iterable[dict], obs: dict, fired: Iterable[str] = ()) -> set[str]:
    """The built-in probes one run reached: its trace `records`, its
    observation `obs` and the kinds of the faults that `fired`."""
    scan = _Scan()
    for r in records:
        scan.see(r)
    found = scan.hit
    for event in obs.get("events", ()):
        if event.get("kind") == "task_notice":
            found.add("notice-delivered")
    found.update(f"fault-{kind}" for kind in fired)
    return found & _BY_NAME.keys()


def observed(obs: Any) -> set[str]:
    """The probes an observation's events alone show (`Probe.events`): what
    a conformance run counts for any implementation, in process or over the
    pipe.  A task cancelled before any event of its own section was queued."""
    found: set[str] = set()
    events = obs.get("events") if isinstance(obs, dict) else None
    if not isinstance(events, list):
        return found
    started: set[str] = set()
    for event in events:
        if not isinstance(event, dict):
            continue
        kind, task = event.get("kind"), event.get("task")
        if kind == "section_started":
            started.add(str((event.get("provenance") or {}).get("task")))
        elif kind == "task_cancelled" and task not in started:
            found.add("cancel-queued")
        elif kind == "task_abandoned" and isinstance(event.get("reason"), str):
            found.add(f"abandon-{event['reason'].replace('_', '-')}")
        elif kind == "task_notice":
            found.add("notice-delivered")
    return found & _BY_NAME.keys()


#: The probes a conformance report counts (`observed`).
OBSERVED: tuple[str, ...] = tuple(p.name for p in CATALOGUE if p.events)


# -- users' probes -----------------------------------------------------------------------------

@attrs.frozen
class UserProbe:
    """A user's probe: hit when `fn(observation data)` returns a true value
    (a copy of the data, its own: `forge.watched.own_copy`; the Python
    API's `adapt` the data to an `Observation` instead).  A probe
    that raises is not hit (a probe measures; it never fails a run)."""

    fn: Any
    name: str
    adapt: Any = None

    def __call__(self, obs: dict) -> bool:
        try:
            return bool(self.fn(own_copy(obs) if self.adapt is None else self.adapt(obs)))
        except Exception:  # noqa: BLE001 - a probe that cannot tell was not reached
            return False


def names(user: Sequence[str] = ()) -> tuple[str, ...]:
    """Every probe a campaign reports: the catalogue's, then the user's by
    name, sorted (so a merged report of shards lists them as a serial one does)."""
    return tuple(p.name for p in CATALOGUE) + tuple(sorted(set(user) - _BY_NAME.keys()))


def check_required(required: Sequence[str], user: Sequence[str] = (),
                   where: str = "--require") -> None:
    """Refuse a `--require` that names no probe.

    Raises:
        InputError: naming `where`, listing the probes there are.
    """
    known = names(user)
    for name in required:
        if name not in known:
            raise InputError(f"no probe is called {name[:60]!r}; the probes are "
                             f"{', '.join(known)}", file=where)


def coverage(counts: dict[str, int], user: Sequence[str] = ()) -> dict[str, int]:
    """Each probe's count of runs that reached it, every probe listed (0: never)."""
    return {name: counts.get(name, 0) for name in names(user)}


def unreached(counts: dict[str, int], required: Sequence[str]) -> list[str]:
    """The required probes that no run reached, in the order given."""
    return [name for name in required if not counts.get(name)]


def clause_of(name: str) -> str | None:
    """The clause a built-in probe exercises (None: a user's probe)."""
    probe = _BY_NAME.get(name)
    return probe.clause if probe else None
