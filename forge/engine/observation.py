"""Observation: the events and checkpoints a run records, and the one JSON
object every run produces.

Events are kept as `(kind, section, task id, seq, fields)` tuples while the
run goes on, and built into the dicts the observation shows only when read
(`Observer.events`); each carries its task's provenance counter.  `log`
checkpoints are bounded run-wide as well as per section VM (the spec's
quotas are per VM; with up to `DEFAULT_MAX_TASKS` VMs they would allow
gigabytes).  `observation` puts the whole object together - outcome, result,
error, logs, events, task statuses, model messages and rounds, effects, the
store, virtual time and the trace's hash - the same shape any implementation
under test reports.

What lives here: recording events and logs, building the observation and its
canonical JSON.  What does not: what each event means (its emitter), the
trace (`forge.sim.trace`), the per-VM log quota (`host`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from forge.engine import collection
from forge.engine.rules import ids
from forge.sim.kernel import ns_to_seconds

if TYPE_CHECKING:
    from forge.engine.state import Chain


class Observer:
    """The run's events and `log` checkpoints."""

    def __init__(self, execution: str, max_logs: int, max_log_bytes: int,
                 abort: Callable[[str, str], None]) -> None:
        self.execution = execution
        self.max_logs = max_logs
        self.max_log_bytes = max_log_bytes
        #: Ends the run (as Budget, past the log budget).
        self.abort = abort
        #: Events as (kind, section, task id, seq, fields) tuples: the dicts
        #: the observation shows are built when read (`events`).
        self.raw: list[tuple] = []
        self._built: list[dict] = []
        self.logs: list[str] = []
        self.log_bytes = 0

    def emit(self, chain: Chain, kind: str, section_override: str | None = None,
             **fields: Any) -> None:
        task = chain.task
        self.raw.append((kind, section_override or chain.section_name, task.id, task.seq, fields))
        task.seq += 1

    def emit_pair(self, chain: Chain, first: str, second: str) -> None:
        """Two events of `chain` with no step between them (a teardown's
        start and success; a shared library's load when there is none):
        `emit` twice, in one call."""
        task, section = chain.task, chain.section_name
        seq = task.seq
        self.raw += ((first, section, task.id, seq, {}), (second, section, task.id, seq + 1, {}))
        task.seq = seq + 2

    @property
    def events(self) -> list[dict]:
        """Every event so far, as the observation shows it."""
        built, execution = self._built, self.execution
        built += [{"kind": kind, "execution": execution, "section": section,
                   "provenance": {"task": task, "seq": seq}, **fields}
                  for kind, section, task, seq, fields in self.raw[len(built):]]
        return built

    def log(self, chain: Chain, message: str, nbytes: int) -> bool:
        """Record a checkpoint; False (the run ended as Budget) past the
        run-wide log budget."""
        self.log_bytes += nbytes
        if len(self.logs) >= self.max_logs or self.log_bytes > self.max_log_bytes:
            self.abort("Budget", f"log budget exhausted: the run logged more than "
                                 f"{self.max_logs:,} checkpoints or "
                                 f"{self.max_log_bytes:,} bytes")
            return False
        self.logs.append(message)
        self.emit(chain, "lua", message=message)
        return True


def observation(*, outcome: str | None, result: str | None, error: Any, observer: Observer,
                tasks: dict, models: Any, effects: list[dict], store: Any, now_ns: int,
                trace: Any) -> dict:
    """The observation of a run, built from its live graph (a full pass of
    the collector now would find nothing to free: `collection`)."""
    with collection.deferred():
        statuses = {t.id: t.status_json()
                    for t in sorted(tasks.values(), key=lambda t: ids.id_key(t.id))}
        return {
            "outcome": outcome,
            "result": result,
            "error": error.to_json() if error else None,
            "logs": list(observer.logs),
            "events": list(observer.events),
            "tasks": statuses,
            "messages": models.messages_json(),
            "rounds": models.rounds_json(),
            "effects": [dict(e) for e in effects],
            "store": store.snapshot(),
            "virtual_time": ns_to_seconds(now_ns),
            "trace_sha256": trace.sha256(),
        }


def observation_json(obs: dict) -> str:
    """The observation's canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obs, sort_keys=True, ensure_ascii=False, indent=None, separators=(",", ":"))


__all__ = ["Observer", "observation", "observation_json"]
