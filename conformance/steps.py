"""Steps: the scheduling records an engine may report, for the per-step watchers.

The watchers (`oracles.WATCHERS`) read what no observation event carries:
which wait took which task's result, each admission to a concurrency slot
with the counts after it, the waits and their timeouts, and the virtual
instant of each.  An implementation asked for them (the run message's
`"steps": true`, docs/protocol.md "Steps") adds them to its observation as
the optional top-level list `steps`, in the order they happened:

    {"what": "step", "t": 0, "chain": "0.1"}                 a chain runs
    {"what": "spawn", "t": 0, "task": "0.1", "owner": "0"}   a task is started
    {"what": "call_start", "t": 0, "chain": "0", "callee": "0.2"}  a `call` starts
    {"what": "admit", "t": 0, "task": "0.1", "owner": "0",
     "running": 2, "busy": 2, "limit": 8, "parent_limit": null}
    {"what": "wait", "t": 0, "chain": "0", "call": "tasks.join",
     "members": ["0.0", "0.1"], "timeout": 10000000}
    {"what": "timeout", "t": 10000000, "chain": "0"}
    {"what": "deliver", "t": 0, "chain": "0", "task": "0.1"}
    {"what": "cancel", "t": 0, "chain": "0", "task": "0.1"}     a cancel asks a live task to stop
    {"what": "task_end", "t": 0, "task": "0.1", "end": "task_failed",
     "reason": null, "error": "tasks_live"}
    {"what": "run_end", "t": 0, "outcome": "ok", "error": null}

`t` is the virtual instant in integer nanoseconds.  `owner` is the chain
that spawned the task (its limit applies); `running` is how many tasks hold
a slot after the admission, `busy` how many of the owner's, `limit` the
owner's own limit as set (`tasks.concurrency`, or the default), and
`parent_limit` the limit of the chain that owns the owner (null for the
main walk): the kit applies the clamp itself.  `callee` is the id of the
chain a `call` starts (it takes its caller's next child index, as a spawn
does, but is not a task).  `error` is the value kind
of a failed task's or run's error.

`cancel` is the one kind an engine may leave out: it reports a
`tasks.cancel` that asked a still-live task to stop (a cancel of an ended
task reports none), before whatever that cancel made happen.  An engine
that reports it says so in its hello (`"steps": ["cancel"]`, `OPTIONAL`),
so the kit can tell "no task was cancelled" from "no cancel is reported"
and runs the cancel monitor only on the first (`stream_watch`).

What lives here: the kinds and their fields (`FIELDS`), the reference's
recorder (`Recorder`, a trace watcher that writes the steps while the
reference runs, for `forge impl-serve`), the optional kinds a hello
declares (`declared`), and reading a foreign list (`read`).  What does not: the watchers (`oracles`), feeding them
(`stream_watch`).
"""

from __future__ import annotations

from typing import Any

#: Each step kind and the fields it carries besides `what` and `t`.
FIELDS: dict[str, tuple[str, ...]] = {
    "step": ("chain",),
    "spawn": ("task", "owner"),
    "call_start": ("chain", "callee"),
    "admit": ("task", "owner", "running", "busy", "limit", "parent_limit"),
    "wait": ("chain", "call", "members", "timeout"),
    "timeout": ("chain",),
    "deliver": ("chain", "task"),
    "cancel": ("chain", "task"),
    "task_end": ("task", "end", "reason", "error"),
    "run_end": ("outcome", "error"),
}

#: The run message's field that asks for the steps, and the hello's field
#: that lists the optional kinds an engine reports.
ASK = "steps"
#: The step kinds an engine reports only when its hello lists them.
OPTIONAL = ("cancel",)


def declared(hello: dict) -> frozenset[str]:
    """The optional step kinds `hello` says its engine reports (docs/protocol.md
    "Steps"); a hello of before (no such field) declares none."""
    kinds = hello.get(ASK)
    return frozenset(k for k in kinds if k in OPTIONAL) if isinstance(kinds, list) else frozenset()


class Recorder:
    """A watcher on the reference's trace (`Trace.observe`) that keeps each
    record a watcher reads as a step, with the run's counts where the
    trace does not carry them.  The trace's own bytes are untouched."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.steps: list[dict] = []
        #: Tasks started and not ended, that no cancel has asked to stop yet.
        self.live: dict[str, None] = {}

    def see(self, r: dict):
        what = r["what"]
        if self.live:
            self._cancels(r["t"])
        if what not in FIELDS:
            return ()
        step = {"what": what, "t": r["t"]}
        if what == "spawn":
            self.live[r["task"]] = None
        elif what == "task_end":
            self.live.pop(r["task"], None)
        if what == "admit":
            task = self.run.tasks[r["task"]]
            owner = task.owner
            step.update(task=r["task"], owner=owner.id, running=self.run.admission.running,
                        busy=owner.busy, limit=owner.limit, parent_limit=owner.ceiling or None)
        elif what == "task_end":
            failure = self.run.tasks[r["task"]].failure if r["end"] == "task_failed" else None
            step.update(task=r["task"], end=r["end"], reason=r.get("reason"),
                        error=getattr(failure, "kind", None))
        elif what == "run_end":
            error = self.run.error
            step.update(outcome=r["outcome"],
                        error=None if error is None else
                        error.fields.get("value_kind") or error.kind)
        else:
            step.update((name, r.get(name)) for name in FIELDS[what])
            if what == "wait":
                step["members"] = list(step["members"] or ())
        self.steps.append(step)
        return ()

    def _cancels(self, t: int) -> None:
        """The `cancel` steps since the last record.  `tasks.cancel` answers
        at once and leaves no trace record (only calls that suspend do), so a
        cancel shows as a live task's `stop_asked` (set only on a live task)
        at the first record after it, before what the cancel made happen.
        Only the task's owner may cancel it, so it is the chain reported."""
        for task_id in [t_id for t_id in self.live if self.run.tasks[t_id].stop_asked]:
            del self.live[task_id]
            self.steps.append({"what": "cancel", "t": t, "chain": self.run.tasks[task_id].owner.id,
                               "task": task_id})


def read(steps: Any) -> tuple[list[dict], str | None]:
    """A foreign engine's `steps` as records the watchers read, and why the
    list is unusable (None when it is fine).  The kit reads only the fields
    `FIELDS` names, so an extra field is harmless; a missing or mistyped one
    stops the watchers rather than the kit."""
    if not isinstance(steps, list):
        return [], "`steps` is not a list"
    out = []
    for i, step in enumerate(steps):
        what = step.get("what") if isinstance(step, dict) else None
        if what not in FIELDS:
            return out, f"steps[{i}] is not a step ({', '.join(FIELDS)})"
        t = step.get("t")
        if isinstance(t, bool) or not isinstance(t, int):
            return out, f"steps[{i}] ({what}) has no integer `t`"
        record = {"what": what, "t": t}
        for name in FIELDS[what]:
            value = step.get(name)
            problem = _problem(name, value)
            if problem:
                return out, f"steps[{i}] ({what}): `{name}` {problem}"
            record[name] = value
        out.append(record)
    return out, None


_STRINGS = ("chain", "callee", "task", "owner", "call", "end", "outcome")
_COUNTS = ("running", "busy", "limit")


def _problem(name: str, value: Any) -> str | None:
    if name in _STRINGS:
        return None if isinstance(value, str) else "is not a string"
    if name in _COUNTS:
        return None if isinstance(value, int) and not isinstance(value, bool) else \
            "is not an integer"
    if name == "parent_limit" or name == "timeout":
        return None if value is None or (isinstance(value, int) and not isinstance(value, bool)) \
            else "is not an integer or null"
    if name == "members":
        return None if isinstance(value, list) and all(isinstance(m, str) for m in value) else \
            "is not a list of task ids"
    return None if value is None or isinstance(value, str) else "is not a string or null"
