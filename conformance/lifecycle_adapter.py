"""Lifecycle cases: a list of `operations` applied to the reference lifecycle manager.

A lifecycle case has no prompt. Its `operations` are calls, in order, on the
Manager (`forge.lifecycle.manager`) or on the scripted fake host around it;
`lifecycle_observation` applies them and answers the observation (see
docs/cases.md, "Lifecycle cases"):
    {"outcome": "ok" | "failed",
     "results": [one JSON value per top-level operation],
     "tasks":   {alias: {status, attempt, run, runs, summary, result, ...}},
     "reports": [every host function call, in order],
     "error":   null | {"kind", "message", "operation"}}

Tasks are named by the alias the spawning operation gives them (`as`), runs
by their 1-based number within their task (in launch order), sessions by the
case's own parent names or `<alias>/session` for a task's hidden session, so
an observation never depends on how the implementation spells ids. A racing
party is an operation nested inside a host call (`during_launch`,
`during_stop`, `during_wait`, a continuation's `during`); the results of
nested operations are carried by the report of the call they ran in.

A malformed operation raises `InputError` naming the operation's index and
the rule it breaks. A refused Manager call (TaskError, an unknown task, a
scripted launch failure) is that operation's result, `{"error": text}`; any
other exception ends the sequence with outcome `failed`.

What does not live here: the Manager itself, matching (`matchers`), and the
choice of adapter (`adapters`).
"""

from __future__ import annotations

from typing import Any

import attrs

from forge.errors import InputError
from forge.lifecycle.cards import tool_result
from forge.lifecycle.clock import VirtualClock
from forge.lifecycle.manager import Config, CounterIds, Manager, TaskError
from forge.lifecycle.notices import format_notification
from forge.lifecycle.records import (Continuation, Info, RunOutcome, SpawnRequest, Spec,
                                     StopOutcome, TaskStatus)
from forge.lifecycle.sessions import MemorySessions, Session, SessionNotFound
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore, NotFound
from forge.lifecycle.tools import ToolContext, retry_in_hand

#: Config keys (only in a `config` operation, which must come first).
CONFIG_KEYS = ("max_attempts_per_task", "max_concurrent_per_parent", "max_depth",
               "max_continuations", "max_status_wait", "stop_settle_wait", "summary_limit")
#: Config keys naming the fake host's choices rather than the Manager's numbers.
HOST_KEYS = ("agents", "continue_hook", "store", "sessions", "describe_state",
             "record_updates")
STORES = ("memory", "sqlite")
SESSION_REPOS = ("plain", "cascading")
TOOL_SETS = ("all", "spawn_tool", "task_tools")
STOP_ANSWERS = ("cancelled", "after_turn", "already_finished", "unknown_run", "raises")

# op -> (required keys, optional keys)
_OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "config": ((), CONFIG_KEYS + HOST_KEYS),
    "spawn": (("as",), ("parent", "from_task", "agent", "input", "label", "kind", "state",
                        "parent_run_id", "launch_error", "during_launch")),
    "run_completes": (("task",), ("result", "run", "graceful_stop", "launch_error",
                                  "during_launch")),
    "run_fails": (("task",), ("error", "result", "run", "graceful_stop", "launch_error",
                              "during_launch")),
    "run_cancelled": (("task",), ("result", "run")),
    "run_pauses": (("task",), ("run",)),
    "stop": (("task",), ("graceful", "stopper", "during_stop", "during_wait")),
    "stop_tree": ((), ("parent", "from_task", "stopper")),
    "retry": (("task",), ("via", "launch_error", "during_launch")),
    "recover": ((), ()),
    "continue_with": (("task",), ("input", "state", "err", "raise", "during")),
    "get": (("task",), ()),
    "list": ((), ("parent", "from_task")),
    "meta_for": ((), ("parent", "from_task")),
    "notices": ((), ("tasks",)),
    "delete_tree": ((), ("parent", "from_task")),
    "store_retry_claim": (("task",), ("max_attempts", "max_live")),
    "store_rewrite_state": (("task",), ("state",)),
    "tools": ((), ("only",)),
    "tool": (("name",), ("args", "parent", "from_task", "no_session", "tool_call_id",
                         "parent_run_id", "as")),
    "card": (("task",), ("agent",)),
    "status": (("task",), ("wait",)),
    "later": (("seconds", "operations"), ()),
    "advance": (("seconds",), ()),
    "clock": ((), ()),
    "model_has_result": (("task",), ("status", "attempt")),
    "resume": (("task",), ("run",)),
    "delete_row": (("task",), ()),
    "sessions": ((), ("include_hidden",)),
    "delete_session": ((), ("parent", "from_task")),
    "owed": ((), ()),
    "break_lookup": (("error",), ()),
}
_NESTED = ("during_launch", "during_stop", "during_wait", "during", "operations")
_STRINGS = ("as", "parent", "from_task", "agent", "input", "label", "kind", "parent_run_id",
            "launch_error", "task", "result", "error", "err", "raise", "name", "tool_call_id",
            "agent", "status")
_BOOLS = ("graceful_stop", "graceful", "continue_hook", "describe_state", "record_updates",
          "no_session", "include_hidden")
_SECONDS = ("seconds", "wait")


def _bad(where: str, rule: str) -> InputError:
    return InputError(f"{where}: {rule}", kind="operations")


def validate(operations: Any, where: str = "operations", top: bool = True) -> None:
    """Check the shape of every operation (aliases are checked as they are used).

    Raises:
        InputError: naming the operation's index and the broken rule.
    """
    if not isinstance(operations, list) or (top and not operations):
        raise _bad(where, "is a non-empty list of operation tables" if top
                   else "is a list of operation tables")
    for i, op in enumerate(operations):
        at = f"{where}[{i}]"
        if not isinstance(op, dict):
            raise _bad(at, "an operation is a table")
        name = op.get("op")
        if not isinstance(name, str) or name not in _OPS:
            raise _bad(at, f"unknown op {name!r}; known: {', '.join(_OPS)}")
        at = f"{at} ({name})"
        required, optional = _OPS[name]
        for key in required:
            if key not in op:
                raise _bad(at, f"needs `{key}`")
        for key in op:
            if key != "op" and key not in required and key not in optional:
                raise _bad(at, f"unknown key `{key}`")
        if name == "config" and (not top or i != 0):
            raise _bad(at, "`config` may only be the first top-level operation")
        if "parent" in op and "from_task" in op:
            raise _bad(at, "give `parent` or `from_task`, not both")
        for key in _STRINGS:
            if key in op and not isinstance(op[key], str):
                raise _bad(at, f"`{key}` is a string")
        for key in _BOOLS:
            if key in op and not isinstance(op[key], bool):
                raise _bad(at, f"`{key}` is a boolean")
        for key in _SECONDS:
            if key in op and (isinstance(op[key], bool) or not isinstance(op[key], (int, float))
                              or op[key] < 0):
                raise _bad(at, f"`{key}` is a non-negative number of seconds")
        for key, allowed in (("store", STORES), ("sessions", SESSION_REPOS),
                             ("only", TOOL_SETS)):
            if key in op and op[key] not in allowed:
                raise _bad(at, f"`{key}` is one of {', '.join(allowed)}")
        if op.get("op") == "model_has_result" and "status" in op and op["status"] not in (
                "working", "input_required", "completed", "failed", "cancelled"):
            raise _bad(at, "`status` is a task status")
        if "args" in op and not isinstance(op["args"], dict):
            raise _bad(at, "`args` is a table of the tool's arguments")
        if "attempt" in op and (isinstance(op["attempt"], bool)
                                or not isinstance(op["attempt"], int) or op["attempt"] < 1):
            raise _bad(at, "`attempt` is a positive integer")
        for key in CONFIG_KEYS + ("max_attempts", "max_live"):
            if key in op and (isinstance(op[key], bool) or not isinstance(op[key], int)
                              or op[key] < 0):
                raise _bad(at, f"`{key}` is a non-negative integer")
        if "run" in op and op["run"] != "none" and (
                isinstance(op["run"], bool) or not isinstance(op["run"], int) or op["run"] < 1):
            raise _bad(at, '`run` is a run number (1 = the first) or "none"')
        if "via" in op and op["via"] not in ("tool", "host"):
            raise _bad(at, '`via` is "tool" or "host"')
        if "stopper" in op:
            answers = op["stopper"] if isinstance(op["stopper"], list) else [op["stopper"]]
            if not answers or any(a not in STOP_ANSWERS for a in answers):
                raise _bad(at, f"`stopper` is one of {', '.join(STOP_ANSWERS)} or a "
                               "non-empty list of them")
        if "agents" in op:
            agents = op["agents"]
            if not isinstance(agents, dict) or not all(
                    isinstance(v, dict) and set(v) <= {"display_name", "inherit"}
                    for v in agents.values()):
                raise _bad(at, "`agents` maps agent names to { display_name, inherit }")
        if "tasks" in op and (not isinstance(op["tasks"], list)
                              or not all(isinstance(t, str) for t in op["tasks"])):
            raise _bad(at, "`tasks` is a list of task aliases")
        for key in _NESTED:
            if key in op:
                validate(op[key], f"{at}.{key}", top=False)


class _Run:
    """One application of a list of operations on a fresh manager and fake host."""

    def __init__(self, config: dict) -> None:
        self.alias: dict[str, str] = {}  # task id -> alias
        self.ids: dict[str, str] = {}  # alias -> task id
        self.runs: dict[str, list[str]] = {}  # task id -> its run ids in launch order
        self.reports: list[dict] = []
        self.owed: dict[str, Any] = {}  # task id -> snapshot owed to the parent
        self.continuations: dict[str, list[dict]] = {}  # task id -> queued answers
        self.stop_answers: list[list[str]] = []  # stack, one entry per open stop op
        self.launch_script: dict | None = None  # one-shot: during_launch / launch_error
        self.stop_script: list | None = None  # one-shot: during_stop
        self.wait_script: list | None = None  # one-shot: during_wait
        self.pending_alias: str | None = None
        self._child: dict[str, str] = {}  # task id -> its hidden session id
        self._ids = CounterIds()
        self.agents = config.get("agents", {})

        def resolver(parent: str, name: str) -> Spec:
            agent = self.agents.get(name, {})
            self.reports.append({"hook": "resolver", "parent": self.session(parent),
                                 "agent": name})
            return Spec(display_name=agent.get("display_name", name),
                        inherit=agent.get("inherit"))

        kwargs = {k: config[k] for k in CONFIG_KEYS if k in config}
        self.store = SqliteStore(":memory:") if config.get("store") == "sqlite" else MemoryStore()
        cascading = config.get("sessions") == "cascading"
        if isinstance(self.store, SqliteStore):
            self.repo = self.store.sessions() if cascading else MemorySessions()
        else:
            self.repo = MemorySessions(self.store if cascading else None)
        self.clock = VirtualClock()
        self.record_updates = bool(config.get("record_updates"))
        self.lookup_error: str | None = None
        self.mgr = Manager(Config(
            store=self.store, launcher=self._launch, resolver=resolver, stopper=self._stop,
            on_finished=self._on_finished, on_result_delivered=self._on_delivered,
            continue_hook=self._continue if config.get("continue_hook") else None,
            await_outcome=self._await, new_id=self._new_id, clock=self.clock,
            sessions=self.repo, on_task_update=self._on_update,
            describe_state=self._describe if config.get("describe_state") else None,
            **kwargs))
        real_lookup = self.store.by_child_session

        def lookup(session_id: str) -> Any:
            if self.lookup_error is not None:
                raise RuntimeError(self.lookup_error)
            return real_lookup(session_id)
        self.store.by_child_session = lookup

    # -- naming ------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        value = self._ids(prefix)
        if prefix == "t" and self.pending_alias is not None:
            self.alias[value], self.ids[self.pending_alias] = self.pending_alias, value
            self.pending_alias = None
        return value

    def session(self, session_id: str) -> str:
        for task_id, child in self._child.items():
            if child == session_id:
                return f"{self.alias.get(task_id, task_id)}/session"
        return session_id

    def run_no(self, task_id: str, run_id: str) -> int | str:
        runs = self.runs.get(task_id, [])
        return runs.index(run_id) + 1 if run_id in runs else run_id

    def view(self, t: Any) -> dict:
        return {"status": t.status.value, "attempt": t.attempt,
                "run": self.run_no(t.id, t.run_id), "runs": len(self.runs.get(t.id, [])),
                "summary": t.summary, "result": t.result, "label": t.label, "kind": t.kind,
                "state": t.state, "depth": t.depth, "parent": self.session(t.parent_session_id),
                "parent_run_id": t.parent_run_id, "inherit": t.inherit,
                "continuations": t.continuations}

    def task_id(self, alias: str, where: str) -> str:
        if alias not in self.ids:
            raise _bad(where, f"unknown task alias {alias!r} (no spawn bound it)")
        return self.ids[alias]

    def parent_of(self, op: dict, where: str) -> str:
        if "from_task" in op:
            return self.store_child(self.task_id(op["from_task"], where), where)
        return op.get("parent", "p")

    def store_child(self, task_id: str, where: str) -> str:
        if task_id not in self._child:
            raise _bad(where, "that task has no session")
        return self._child[task_id]

    # -- the fake host -------------------------------------------------------------
    def _launch(self, req: Any) -> None:
        self._child[req.task_id] = req.session_id
        self.runs.setdefault(req.task_id, [])
        if req.run_id not in self.runs[req.task_id]:
            self.runs[req.task_id].append(req.run_id)
        if req.retry:
            self.owed.pop(req.task_id, None)  # the retried task owes no old ending
        report = {"hook": "launcher", "task": self.alias.get(req.task_id, req.task_id),
                  "run": self.run_no(req.task_id, req.run_id),
                  "session": self.session(req.session_id), "input": req.input,
                  "kind": req.kind, "state": req.state, "inherit": req.inherit,
                  "retry": req.retry}
        self.reports.append(report)
        script, self.launch_script = self.launch_script, None
        if script:
            if script.get("during_launch") is not None:
                report["during"] = self.apply_all(script["during_launch"], script["where"]
                                                  + ".during_launch")
            if script.get("launch_error") is not None:
                report["error"] = script["launch_error"]
                raise _LaunchError(script["launch_error"])

    def _stop(self, run_id: str, graceful: bool) -> Any:
        owner = next((tid for tid, runs in self.runs.items() if run_id in runs), None)
        answer = "cancelled"
        if self.stop_answers and self.stop_answers[-1]:
            queue = self.stop_answers[-1]
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        report = {"hook": "stopper", "task": self.alias.get(owner, owner),
                  "run": self.run_no(owner, run_id) if owner else run_id,
                  "graceful": graceful, "answer": answer}
        self.reports.append(report)
        script, self.stop_script = self.stop_script, None
        if script is not None:
            report["during"] = self.apply_all(script[0], script[1] + ".during_stop")
        if answer == "raises":
            raise RuntimeError("the stopper failed")
        return StopOutcome(answer)

    def _await(self, task: Any) -> None:
        report = {"hook": "await_outcome", "task": self.alias.get(task.id, task.id),
                  "run": self.run_no(task.id, task.run_id)}
        self.reports.append(report)
        script, self.wait_script = self.wait_script, None
        if script is not None:
            report["during"] = self.apply_all(script[0], script[1] + ".during_wait")

    def _snapshot_report(self, hook: str, snap: Any) -> dict:
        return {"hook": hook, "task": self.alias.get(snap.id, snap.id),
                "run": self.run_no(snap.id, snap.run_id), "status": snap.status.value,
                "attempt": snap.attempt, "summary": snap.summary, "result": snap.result,
                "state": snap.state}

    def _on_finished(self, snap: Any) -> None:
        self.reports.append(self._snapshot_report("on_finished", snap))
        self.owed.pop(snap.id, None)
        self.owed[snap.id] = snap

    def _on_delivered(self, snap: Any) -> None:
        self.reports.append(self._snapshot_report("on_result_delivered", snap))
        self.owed.pop(snap.id, None)
        self.store.settle(snap.id, snap.run_id)  # a durable host drops the debt row

    def _on_update(self, snap: Any) -> None:
        if self.record_updates:
            report = self._snapshot_report("on_task_update", snap)
            report["label"] = snap.label
            self.reports.append(report)

    @staticmethod
    def _describe(kind: str, state: Any) -> str:
        # The fake host's DescribeState: a job's State may carry its own progress line.
        return str(state.get("progress", "")) if isinstance(state, dict) else ""

    def ensure_session(self, session_id: str) -> None:
        """Parent sessions the case names exist in the repository (visible)."""
        if session_id in self._child.values():
            return
        try:
            self.repo.get(session_id)
        except SessionNotFound:
            self.repo.create(Session(id=session_id, title=session_id))

    def names(self, text: str) -> str:
        """A text with the implementation's task and session ids as the case's names."""
        import re

        def swap(m: Any) -> str:
            word = m.group(0)
            if word in self.alias:
                return self.alias[word]
            named = self.session(word)
            return named if named != word else word
        return re.sub(r"\b[ts]\d+\b", swap, text)

    def tool_view(self, r: Any) -> dict:
        details = r.details
        if isinstance(details, dict):
            details = {k: (self.alias.get(v, v) if k == "task_id" else v)
                       for k, v in details.items()}
        return {"text": self.names(r.text), "is_error": r.is_error, "display": r.display,
                "details": details}

    def _continue(self, task: Any, out: Any) -> Any:
        report = {"hook": "continue", "task": self.alias.get(task.id, task.id),
                  "run": self.run_no(task.id, out.run_id), "status": out.status.value,
                  "state": task.state, "continuations": task.continuations}
        self.reports.append(report)
        queue = self.continuations.get(task.id, [])
        if not queue:
            report["answer"] = None
            return None
        entry, where = queue.pop(0)
        if "during" in entry:
            report["during"] = self.apply_all(entry["during"], where + ".during")
        if "raise" in entry:
            report["answer"] = {"raise": entry["raise"]}
            raise RuntimeError(entry["raise"])
        answer = Continuation(input=entry.get("input", ""), state=entry.get("state"),
                              err=entry.get("err", ""))
        report["answer"] = {k: entry[k] for k in ("input", "state", "err") if k in entry}
        return answer

    # -- operations ----------------------------------------------------------------
    def apply_all(self, operations: list, where: str) -> list:
        return [self.apply(op, f"{where}[{i}]") for i, op in enumerate(operations)]

    def apply(self, op: dict, where: str) -> Any:
        where = f"{where} ({op['op']})"
        saved = (self.launch_script, self.stop_script, self.wait_script)
        if "during_launch" in op or "launch_error" in op:
            self.launch_script = {"during_launch": op.get("during_launch"),
                                  "launch_error": op.get("launch_error"), "where": where}
        if "during_stop" in op:
            self.stop_script = (op["during_stop"], where)
        if "during_wait" in op:
            self.wait_script = (op["during_wait"], where)
        pushed = "stopper" in op
        if pushed:
            answers = op["stopper"]
            self.stop_answers.append(list(answers) if isinstance(answers, list) else [answers])
        try:
            return getattr(self, "op_" + op["op"])(op, where)
        except (TaskError, NotFound, _LaunchError) as e:
            return {"error": str(e)}
        finally:
            if pushed:
                self.stop_answers.pop()
            self.launch_script, self.stop_script, self.wait_script = saved

    def op_config(self, op: dict, where: str) -> None:
        return None  # applied when the manager was built

    def op_spawn(self, op: dict, where: str) -> dict:
        if op["as"] in self.ids:
            raise _bad(where, f"alias {op['as']!r} is already bound")
        parent = self.parent_of(op, where)
        self.ensure_session(parent)
        self.pending_alias = op["as"]
        try:
            row = self.mgr.spawn(SpawnRequest(
                parent_session_id=parent, agent_name=op.get("agent", "agent"),
                input=op.get("input", ""), label=op.get("label", ""),
                parent_run_id=op.get("parent_run_id", ""), kind=op.get("kind", ""),
                state=op.get("state")))
        finally:
            self.pending_alias = None
        return self.view(row)

    def _outcome(self, op: dict, where: str, status: str, **fields: Any) -> dict | None:
        task_id = self.task_id(op["task"], where)
        row = self.store.get(task_id)
        run = op.get("run")
        if run is None:
            run_id = row.run_id
        elif run == "none":
            run_id = ""
        else:
            runs = self.runs.get(task_id, [])
            if run > len(runs):
                raise _bad(where, f"task {op['task']!r} has no run {run}")
            run_id = runs[run - 1]
        snap = self.mgr.on_run_finished(row.child_session_id, RunOutcome(
            status=TaskStatus(status), run_id=run_id, **fields))
        return None if snap is None else self.view(snap)

    def op_run_completes(self, op: dict, where: str) -> dict | None:
        return self._outcome(op, where, "completed", text=op.get("result", ""),
                             graceful_stop=op.get("graceful_stop", False))

    def op_run_fails(self, op: dict, where: str) -> dict | None:
        return self._outcome(op, where, "failed", err=op.get("error", ""),
                             text=op.get("result", ""),
                             graceful_stop=op.get("graceful_stop", False))

    def op_run_cancelled(self, op: dict, where: str) -> dict | None:
        return self._outcome(op, where, "cancelled", text=op.get("result", ""))

    def op_run_pauses(self, op: dict, where: str) -> dict | None:
        return self._outcome(op, where, "input_required")

    def op_stop(self, op: dict, where: str) -> dict:
        snap = self.mgr.stop(self.task_id(op["task"], where), graceful=op.get("graceful", False))
        return self.view(snap)

    def op_stop_tree(self, op: dict, where: str) -> list:
        return [self.alias.get(t.id, t.id) for t in self.mgr.stop_tree(self.parent_of(op, where))]

    def op_retry(self, op: dict, where: str) -> dict:
        task_id = self.task_id(op["task"], where)
        if op.get("via") == "tool":  # the model's path: what it is handed is settled
            return self.view(retry_in_hand(self.mgr, task_id))
        return self.view(self.mgr.retry(task_id))

    def op_recover(self, op: dict, where: str) -> list:
        return [self.alias.get(t.id, t.id) for t in self.mgr.recover()]

    def op_continue_with(self, op: dict, where: str) -> None:
        if self.mgr.c.continue_hook is None:
            raise _bad(where, "needs `continue_hook = true` in the first (config) operation")
        task_id = self.task_id(op["task"], where)
        self.continuations.setdefault(task_id, []).append((op, where))

    def op_get(self, op: dict, where: str) -> dict:
        return self.view(self.store.get(self.task_id(op["task"], where)))

    def op_list(self, op: dict, where: str) -> list:
        return [self.alias.get(t.id, t.id)
                for t in self.store.list_by_parent(self.parent_of(op, where))]

    def op_meta_for(self, op: dict, where: str) -> dict:
        row, is_task = self.mgr.meta_for(self.parent_of(op, where))
        return {"is_task": is_task, "task": self.alias.get(row.id, row.id) if row else None}

    def op_notices(self, op: dict, where: str) -> str | None:
        if "tasks" in op:
            snaps = [self.store.get(self.task_id(a, where)) for a in op["tasks"]]
        else:
            snaps, self.owed = list(self.owed.values()), {}
        if not snaps:
            return None
        # Aliases stand in for task ids in the text, as everywhere else.
        return format_notification([attrs.evolve(s, id=self.alias.get(s.id, s.id))
                                    for s in snaps])

    def op_delete_tree(self, op: dict, where: str) -> list:
        return [self.alias.get(t, t) for t in self.store.delete_session_tree(
            self.parent_of(op, where))]

    def op_store_retry_claim(self, op: dict, where: str) -> dict | None:
        task_id = self.task_id(op["task"], where)
        cap = op.get("max_attempts", self.mgr.c.max_attempts_per_task)
        snap = self.store.retry_claim(task_id, self._new_id("r"), cap,
                                      max_live=op.get("max_live", 0))
        if snap is not None:
            self.runs.setdefault(task_id, []).append(snap.run_id)
        return None if snap is None else self.view(snap)

    def op_store_rewrite_state(self, op: dict, where: str) -> dict | None:
        task_id = self.task_id(op["task"], where)
        row = self.store.get(task_id)
        snap = self.store.advance(task_id, row.run_id, row.run_id, op.get("state"))
        return None if snap is None else self.view(snap)


    # -- tools, reads, the clock, sessions and debts ------------------------------
    def op_tools(self, op: dict, where: str) -> list:
        chosen = {"all": self.mgr.tools, "task_tools": self.mgr.task_tools,
                  "spawn_tool": lambda: [self.mgr.spawn_tool()]}[op.get("only", "all")]()
        return [{"name": t.name, "summary": t.summary, "description": t.description,
                 "parameters": t.parameters} for t in chosen]

    def op_tool(self, op: dict, where: str) -> dict:
        session = "" if op.get("no_session") else self.parent_of(op, where)
        if op["name"] == "spawn_task" and session:
            self.ensure_session(session)
        args = dict(op.get("args", {}))
        if isinstance(args.get("task_id"), str) and args["task_id"] in self.ids:
            args["task_id"] = self.ids[args["task_id"]]
        tool = {t.name: t for t in self.mgr.tools()}.get(op["name"])
        if tool is None:
            raise _bad(where, f"unknown tool {op['name']!r}")
        if "as" in op:
            if op["as"] in self.ids:
                raise _bad(where, f"alias {op['as']!r} is already bound")
            self.pending_alias = op["as"]
        try:
            result = tool.call(ToolContext(session_id=session,
                                           tool_call_id=op.get("tool_call_id", ""),
                                           parent_run_id=op.get("parent_run_id", "")), args)
        finally:
            self.pending_alias = None
        return self.tool_view(result)

    def op_card(self, op: dict, where: str) -> dict:
        info = Info.of(self.store.get(self.task_id(op["task"], where)), op.get("agent", ""))
        return self.tool_view(tool_result(info, self.mgr.progress(info)))

    def op_status(self, op: dict, where: str) -> dict:
        return self.view(self.mgr.status(self.task_id(op["task"], where), op.get("wait", 0)))

    def op_later(self, op: dict, where: str) -> None:
        def fire() -> None:
            report = {"hook": "clock", "at": self.clock.now()}
            self.reports.append(report)
            report["during"] = self.apply_all(op["operations"], where + ".operations")
        self.clock.call_later(op["seconds"], fire)

    def op_advance(self, op: dict, where: str) -> float:
        self.clock.advance(op["seconds"])
        return self.clock.now()

    def op_clock(self, op: dict, where: str) -> float:
        return self.clock.now()

    def op_model_has_result(self, op: dict, where: str) -> None:
        row = self.store.get(self.task_id(op["task"], where))
        info = Info.of(row)
        if "status" in op:
            info = attrs.evolve(info, status=TaskStatus(op["status"]))
        if "attempt" in op:
            info = attrs.evolve(info, attempt=op["attempt"])
        self.mgr.model_has_result(info)

    def op_resume(self, op: dict, where: str) -> dict | None:
        task_id = self.task_id(op["task"], where)
        run = op.get("run")
        run_id = ""
        if isinstance(run, int):
            runs = self.runs.get(task_id, [])
            if run > len(runs):
                raise _bad(where, f"task {op['task']!r} has no run {run}")
            run_id = runs[run - 1]
        snap = self.mgr.resume_after_approval(task_id, run_id)
        return None if snap is None else self.view(snap)

    def op_delete_row(self, op: dict, where: str) -> None:
        self.store.delete(self.task_id(op["task"], where))

    def op_sessions(self, op: dict, where: str) -> list:
        return [{"id": self.session(s.id), "hidden": s.hidden,
                 "parent": self.session(s.parent_id) if s.parent_id else "",
                 "title": s.title}
                for s in self.repo.list(include_hidden=op.get("include_hidden", False))]

    def op_delete_session(self, op: dict, where: str) -> list:
        return [self.session(sid) for sid in self.repo.delete(self.parent_of(op, where))]

    def op_owed(self, op: dict, where: str) -> list:
        return [{"task": self.alias.get(d.task_id, d.task_id),
                 "run": self.run_no(d.task_id, d.run_id), "status": d.status.value,
                 "summary": d.summary} for d in self.store.owed()]

    def op_break_lookup(self, op: dict, where: str) -> None:
        self.lookup_error = op["error"]


class _LaunchError(RuntimeError):
    """A launch failure the case scripted (`launch_error`)."""


def lifecycle_observation(operations: list, harness: Any = None) -> dict:
    """Apply `operations` to a fresh reference Manager; the observation as JSON data.

    `harness` (the case's HarnessSpec) is accepted for symmetry with prompt
    cases; no harness field applies to the lifecycle manager.

    Raises:
        InputError: an operation is malformed (its index and the rule).
    """
    validate(operations)
    config = operations[0] if operations[0].get("op") == "config" else {}
    run = _Run(config)
    results: list = []
    error = None
    for i, op in enumerate(operations):
        try:
            results.append(run.apply(op, f"operations[{i}]"))
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - the manager broke: the sequence fails
            error = {"kind": type(e).__name__, "message": str(e), "operation": i}
            break
    tasks = {run.alias.get(t.id, t.id): run.view(t) for t in run.store.list_all()}
    return {"outcome": "ok" if error is None else "failed", "results": results,
            "tasks": tasks, "reports": run.reports, "error": error}
