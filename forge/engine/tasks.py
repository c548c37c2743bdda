"""Tasks: the `tasks` namespace, waits, admission, and how tasks end.

What lives here: the `Task` record and its status table, the nine functions
of the `tasks` namespace (`spawn`, `join_any`, `join`, `concurrency`,
`ready`, `status`, `pending`, `note`, `cancel`), waits with and without
timeouts, admission under the concurrency limit, and the four endings of a
task (done, failed, cancelled, abandoned with a reason).  What does not: the
scheduler loop and chain stepping (`run`), and model-started tasks' notices
(`models`, which hooks into `task_ended` through `Task.model_owner`).

Task lifecycle (the `state` field, with `ok` beside it):

    running (queued: not admitted) ──admit──> running (admitted) ──┬─> done, ok=true
                                                                   ├─> done, ok=false  (failed)
                                                                   ├─> cancelled, ok=false
                                                                   └─> abandoned, ok=false (+reason)

Invariant: a task ends exactly once; `delivered` is set only on a `done`
task, by exactly one wait; a task holds a slot only while admitted, live
and not parked on a wait.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from forge.engine import ids
from forge.engine.chain import Chain, Frame
from forge.engine.failures import Failure
from forge.lua.runtime import LuaTable, NotJSON, decode, from_lua_json, typename
from sim.kernel import TIMEOUT, duration_ns

if TYPE_CHECKING:
    from forge.engine.run import Run

#: The phrase the model is told for each abandon reason.
REASON_PHRASES = {
    "owner_returned": "the section ended",
    "owner_failed": "the owner failed",
    "tool_loop_exhausted": "the tool loop was exhausted",
    "owner_aborted": "the owner was aborted",
    "run_terminated": "the run ended",
}


def _t(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def lua_number_text(value: int | float) -> str:
    """A number as Lua's tostring prints it."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "nan" if math.copysign(1.0, value) > 0 else "-nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = "%.14g" % value
    if "." not in text and "e" not in text and "n" not in text:
        text += ".0"
    return text


@attrs.define(eq=False)
class Task:
    run: Run
    id: str
    target: str
    origin: str
    depth: int
    owner: Chain | None
    is_main: bool = False
    chain: Chain | None = None
    state: str = "running"
    ok: bool | None = None
    result: str | None = None
    failure: Failure | None = None
    reason: str | None = None
    note: str | None = None
    turns: int = 0
    delivered: bool = False
    admitted: bool = False
    holds_slot: bool = False
    #: Provenance counter for events this task reports.
    seq: int = 0
    spawned_at_claim: int = 0
    waits: list = attrs.field(factory=list)
    #: A wake-up that waits for a slot: the resume value to hand over.
    pending_resume: Any = None
    #: For a model-started task: the owner's section state that gets notices.
    model_owner: Any = None
    cancelled_value: Any = None

    @classmethod
    def main(cls, run: Run) -> Task:
        return cls(run=run, id="0", target=run.prompt.title, origin="author", depth=0,
                   owner=None, is_main=True)

    @property
    def live(self) -> bool:
        return self.state == "running"

    # ------------------------------------------------------------ status
    def _blocked(self) -> str | None:
        if not self.live:
            return None
        if not self.admitted or self.pending_resume is not None:
            return "queued"
        chain = self.chain
        if chain is None or chain.state in ("new", "running"):
            return None
        if chain.state == "ready":
            return None
        # Inside a called chain the task reads `call`, whatever the callee waits on.
        return chain.blocked

    def _section(self) -> str | None:
        if not self.live or self.chain is None or self.chain.section is None:
            return None
        return self.chain.section.name

    def live_children(self) -> list[Task]:
        if self.chain is None:
            return []
        return [t for t in self.chain.owned if t.live]

    def status_json(self) -> dict:
        out = {
            "target": self.target,
            "origin": self.origin,
            "state": self.state,
            "turns": self.turns,
            "tasks": [t.id for t in self.live_children()],
            "depth": self.depth,
        }
        for key, value in (("ok", self.ok), ("section", self._section()),
                           ("blocked", self._blocked()), ("note", self.note)):
            if value is not None:
                out[key] = value
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@attrs.define(eq=False)
class Wait:
    chain: Chain
    call: str
    members: list[Task]
    every: bool
    timer: Any = None


class TasksAPI:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.lua = run.lua

    # ------------------------------------------------------------ namespace
    def build_namespace(self, suspending: dict):
        L = self.lua
        ns = L.lua.table()
        for name in ("spawn", "concurrency", "ready", "status", "pending", "note", "cancel"):
            ns[name.encode()] = L.host(getattr(self, "_" + name))
        ns[b"join_any"] = L.suspender("tasks.join_any")
        ns[b"join"] = L.suspender("tasks.join")
        suspending["tasks.join_any"] = lambda c, *a: self._wait(c, "tasks.join_any", a)
        suspending["tasks.join"] = lambda c, *a: self._wait(c, "tasks.join", a)
        return ns

    def _err(self, message: str, kind: str = "lua", **fields: str):
        return (False, self.run.error_value(kind, message, self.run.current, **fields))

    def handle(self, task_id: str):
        return self.lua.table({"task": task_id})

    # ------------------------------------------------------------ task args
    def task_arg(self, call: str, value: Any) -> tuple[str | None, Any]:
        """A handle or bare id -> the id text, or an error tuple."""
        if isinstance(value, LuaTable):
            inner = value[b"task"]
            if isinstance(inner, bytes):
                value = inner
            else:
                return None, self._err(f"{call} expects a Task handle or task id, got table")
        if not isinstance(value, bytes):
            return None, self._err(f"{call} expects a Task handle or task id, got {typename(value)}")
        text = decode(value)
        if text is None or not ids.is_task_id(text):
            return None, self._err(ids.not_an_id_message(value.decode("utf-8", "replace")))
        return text, None

    def owned(self, chain: Chain, task_id: str, allow_self: bool = False) -> tuple[Task | None, Any]:
        task = self.run.tasks.get(task_id)
        if task is not None and task.owner is chain:
            return task, None
        if allow_self and task is not None and task is chain.task and not task.is_main:
            return task, None
        return None, self._err(f"task `{task_id}` is not a task this chain owns",
                               "task_not_owned", task=task_id)

    # ------------------------------------------------------------ spawn
    def _spawn(self, target=None, opts=None, *rest):
        run = self.run
        chain = run.current
        index, error = run.host.check_worker(chain, target)
        if error:
            return error
        if chain.depth + 1 > 8:
            return self._err("call recursion exceeded cap of 8")
        seeds, error = self.spawn_options(opts)
        if error:
            return error
        task = self.start_task(chain, index, "author", seeds)
        if isinstance(task, tuple):
            return task
        return (True, self.handle(task.id))

    def spawn_options(self, opts: Any) -> tuple[dict | None, Any]:
        seeds: dict = {}
        if opts is None:
            return seeds, None
        if not isinstance(opts, LuaTable):
            return None, self._err(f"tasks.spawn opts must be a table, got {typename(opts)}")
        input_ = opts[b"input"]
        if input_ is not None:
            if not isinstance(input_, bytes):
                return None, self._err(f"input must be a string, got {typename(input_)}")
            if decode(input_) is None:
                return None, self._err("input must be a valid UTF-8 string")
            seeds["input"] = input_
        item = opts[b"item"]
        if item is not None:
            kind = typename(item)
            if kind in ("function", "userdata", "thread"):
                return None, self._err(f"item must be JSON data, got {kind}")
            try:
                seeds["item_data"] = from_lua_json(item)
            except NotJSON:
                # Only a value that is itself a function, userdata or thread
                # gets the "got {type}" form; anything nested is "representable".
                return None, self._err("item must be a JSON-representable value")
            seeds["item"] = self.lua.deep_copy(item)
        index = opts[b"index"]
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                return None, self._err(f"index must be a non-negative integer, got {typename(index)}")
            if index < 0:
                return None, self._err(f"index must be a non-negative integer, got {index}")
            seeds["index"] = index
        return seeds, None

    def start_task(self, owner: Chain, index: int, origin: str, seeds: dict):
        """Create a task running section `index`, owned by `owner`.

        Returns the Task, or an error tuple when set-up fails.
        """
        run = self.run
        if not run.host.read_back_var(owner):
            return self._err("the `var` global was reassigned; write `var.<field>` instead")
        if len(run.tasks) >= run.config.max_tasks:
            run._abort("Budget", f"task budget exhausted: the run started more than "
                                 f"{run.config.max_tasks:,} tasks (unbounded spawning?)")
            return self._err("task budget exhausted")
        if self.lua.memory_tight():
            run._abort("Budget", "Lua memory exhausted: too much state for one run")
            return self._err("Lua memory exhausted")
        if run.harness.refuses("spawn", "*"):
            return self._err("store operation failed", "store", reason="refused")
        section = run.prompt.sections[index]
        task_id = ids.child(owner.id, owner.next_child())
        task = Task(run=run, id=task_id, target=section.name, origin=origin,
                    depth=owner.depth + 1, owner=owner)
        input_ = seeds.get("input")
        args = input_ if input_ is not None else owner.args
        argv = run.host.initial_argv(decode(input_)) if input_ is not None else owner.argv
        chain = Chain(
            run=run, id=task_id, kind="task", task=task, parent=owner, depth=owner.depth + 1,
            args=args, argv=argv, var=self.lua.deep_copy(owner.var), limit=owner.limit,
            claim_identity=task_id,
        )
        chain.ceiling = owner.limit
        siblings = run.prompt.siblings(index)
        chain.frames = [Frame(siblings, siblings.index(index), once=True)]
        if "item" in seeds:
            chain.first_item, chain.has_item = seeds["item"], True
        chain.first_index = seeds.get("index")
        chain.on_end = self._chain_ended
        task.chain = chain
        task.spawned_at_claim = run.claims.now()
        owner.owned.append(task)
        run.tasks[task_id] = task
        var_data = from_lua_json(owner.var)
        run.emit(owner, "task_started", task=task_id, target=section.name, origin=origin,
                 input=decode(input_) if input_ is not None else None,
                 item=seeds.get("item_data"), index=seeds.get("index"), var=var_data)
        run.trace.emit(run.kernel.now, "spawn", owner=owner.id, task=task_id, target=section.name)
        run.queue.add(task)
        self.admit()
        return task

    # ------------------------------------------------------------ admission
    def _ceiling_reached(self) -> bool:
        return self.run.running_tasks >= self.run.harness.ceiling

    def _slot_free(self, task: Task) -> bool:
        return not self._ceiling_reached() and task.owner.busy < task.owner.limit

    def admit(self) -> None:
        """Admit queued tasks in spawn order (the queue's order) while slots are free."""
        self.admit_in_order(list(self.run.queue))

    def admit_in_order(self, candidates: list[Task]) -> None:
        run = self.run
        for task in candidates:
            if self._ceiling_reached():
                return      # nothing more can start; the rest stay queued in order
            if not task.live:
                run.queue.discard(task)
                continue
            if not self._slot_free(task):
                continue
            run.queue.discard(task)
            task.holds_slot = True
            task.owner.busy += 1
            run.running_tasks += 1
            run.peak_running = max(run.peak_running, run.running_tasks)
            run.trace.emit(run.kernel.now, "admit", task=task.id)
            if not task.admitted:
                task.admitted = True
                run.make_ready(task.chain, None)
            else:
                chain, value = task.pending_resume
                task.pending_resume = None
                run.make_ready(chain, value)

    def release_slot(self, task: Task) -> None:
        if task.holds_slot:
            task.holds_slot = False
            task.owner.busy -= 1
            self.run.running_tasks -= 1

    def wake(self, chain: Chain, value: Any) -> None:
        """Resume a chain parked on a wait, re-taking its task's slot first."""
        task = chain.task
        if task.is_main or task.holds_slot:
            self.run.make_ready(chain, value)
            return
        chain.parked_on = "slot"
        chain.blocked = "queued"
        task.pending_resume = (chain, value)
        self.run.queue.add(task)
        self.admit()

    # ------------------------------------------------------------ endings
    def _chain_ended(self, chain: Chain, ok: bool, value: Any) -> None:
        task = chain.task
        if ok:
            task.state, task.ok, task.result = "done", True, value if value is not None else ""
            self._terminal_event(task, "task_succeeded")
        else:
            task.state, task.ok, task.failure = "done", False, value
            self._terminal_event(task, "task_failed")
        self.task_ended(task)

    def _terminal_event(self, task: Task, kind: str, **fields: Any) -> None:
        chain = task.chain
        self.run.emit(chain, kind, section_override=task.target, task=task.id, **fields)
        self.run.trace.emit(self.run.kernel.now, "task_end", task=task.id, end=kind)

    def task_ended(self, task: Task) -> None:
        run = self.run
        self.release_slot(task)
        run.queue.discard(task)
        for wait in list(task.waits):
            if isinstance(wait, Wait):
                self._maybe_wake(wait)
            else:
                run.fanout.arm_ended(wait, task)
        if task.model_owner is not None:
            task.model_owner.task_ended(task)
        self.admit()

    def joined(self, task: Task) -> None:
        """A delivery (or the owner's end) joins the task: its store work is
        now ordered before the joiner's next step, so its claims go."""
        if task.chain is not None:
            self.run.claims.release(task.chain.claim_identity)

    def cancel(self, task: Task) -> None:
        if not task.live:
            return
        run = self.run
        if task.chain is not None:
            run.stop_chain(task.chain)
        task.state, task.ok = "cancelled", False
        self._terminal_event(task, "task_cancelled")
        self.task_ended(task)

    def abandon(self, task: Task, reason: str) -> None:
        if not task.live:
            return
        run = self.run
        if task.chain is not None:
            run.stop_chain(task.chain)
        task.state, task.ok, task.reason = "abandoned", False, reason
        self._terminal_event(task, "task_abandoned", reason=reason)
        self.task_ended(task)

    # ------------------------------------------------------------ immediate calls
    def _concurrency(self, n=None, *rest):
        chain = self.run.current
        ceiling = chain.ceiling or self._parent_limit(chain)
        if n is None:
            return (True, chain.limit)
        whole = isinstance(n, int) and not isinstance(n, bool) and n >= 1
        if isinstance(n, float) and n.is_integer() and n >= 1:
            whole, n = True, int(n) if n < 2**62 else 2**62
        if not whole:
            return self._err(f"tasks.concurrency limit must be a positive whole number, got {typename(n)}")
        chain.limit = min(n, ceiling)
        self.admit()
        return (True, chain.limit)

    def _parent_limit(self, chain: Chain) -> int:
        parent = chain.parent
        return parent.limit if parent is not None else self.run.harness.ceiling

    def _ready(self, task=None, *rest):
        chain = self.run.current
        task_id, error = self.task_arg("tasks.ready", task)
        if error:
            return error
        t, error = self.owned(chain, task_id, allow_self=True)
        if error:
            return error
        return (True, not t.live)

    def _status(self, task=None, *rest):
        chain = self.run.current
        task_id, error = self.task_arg("tasks.status", task)
        if error:
            return error
        t, error = self.owned(chain, task_id, allow_self=True)
        if error:
            return error
        status = t.status_json()
        status.pop("reason", None)
        table = self.lua.table({k: v for k, v in status.items() if k != "tasks"})
        table[b"tasks"] = self.lua.seq(status["tasks"])
        return (True, table)

    def _pending(self, filt=None, *rest):
        chain = self.run.current
        origin = None
        if filt is not None:
            if not isinstance(filt, LuaTable):
                return self._err(f"tasks.pending filter must be a table, got {typename(filt)}")
            raw = filt[b"origin"]
            if raw is not None:
                if not isinstance(raw, bytes):
                    return self._err(f"pending filter origin must be a string, got {typename(raw)}")
                origin = decode(raw)
                if origin is None:
                    return self._err("pending filter origin must be a valid UTF-8 string")
                if origin not in ("author", "model"):
                    return self._err(f"pending filter origin must be `author` or `model`, got `{origin}`")
        live = [t for t in chain.owned if t.live and (origin is None or t.origin == origin)]
        return (True, self.lua.seq([{"task": t.id} for t in live]))

    def _note(self, text=None, *rest):
        chain = self.run.current
        if not isinstance(text, bytes):
            return self._err(f"tasks.note text must be a string, got {typename(text)}")
        value = decode(text)
        if value is None:
            return self._err("text must be a valid UTF-8 string")
        if not chain.task.is_main:
            chain.task.note = value
        return (True,)

    def _cancel(self, task=None, *rest):
        chain = self.run.current
        task_id, error = self.task_arg("tasks.cancel", task)
        if error:
            return error
        t, error = self.owned(chain, task_id)
        if error:
            return error
        self.cancel(t)
        return (True,)

    # ------------------------------------------------------------ waits
    def _wait(self, chain: Chain, call: str, args: tuple):
        args = args + (None,) * (2 - len(args))
        members_arg, opts = args[0], args[1]
        if not isinstance(members_arg, LuaTable):
            return self._err(f"{call} expects a set of tasks, got {typename(members_arg)}")
        count = len(members_arg)
        if count == 0:
            return self._err(f"{call} requires at least one task")
        member_ids = []
        for i in range(1, count + 1):
            task_id, error = self.task_arg(call, members_arg[i])
            if error:
                return error
            member_ids.append(task_id)
        timeout_ns, error = self._timeout(call, opts)
        if error:
            return error
        members = []
        for task_id in member_ids:
            t, error = self.owned(chain, task_id)
            if error:
                return error
            if t.delivered:
                return self._err(
                    f"task `{task_id}` was already delivered: a task's result is taken by one wait",
                    "task_consumed", task=task_id)
            members.append(t)
        wait = Wait(chain, call, members, every=(call == "tasks.join"))
        if self._satisfied(wait):
            return self._deliver(wait, timed_out=False)
        run = self.run
        if timeout_ns is not None:
            chain.next_child()     # a timed wait that waits takes one child index
            wait.timer = run.kernel.schedule(timeout_ns, TIMEOUT, ("timeout", chain, wait))
        for t in dict.fromkeys(members):
            t.waits.append(wait)
        if not chain.task.is_main and chain.task.holds_slot:
            self.release_slot(chain.task)
            self.admit()
        run.trace.emit(run.kernel.now, "wait", chain=chain.id, call=call,
                       members=[t.id for t in members], timeout=timeout_ns)
        return run.park(chain, "tasks", wait)

    def _timeout(self, call: str, opts: Any) -> tuple[int | None, Any]:
        if opts is None:
            return None, None
        if not isinstance(opts, LuaTable):
            return None, self._err(f"{call} opts must be a table, got {typename(opts)}")
        seconds = opts[b"timeout"]
        if seconds is None:
            return None, None
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            return None, self._err(f"{call} timeout must be a number, got {typename(seconds)}")
        ns = duration_ns(seconds)
        if ns is None:
            return None, self._err(
                f"timeout must be a non-negative finite number of seconds, got {lua_number_text(seconds)}")
        return ns, None

    def _satisfied(self, wait: Wait) -> bool:
        ended = [not t.live for t in wait.members]
        return all(ended) if wait.every else any(ended)

    def _maybe_wake(self, wait: Wait) -> None:
        chain = wait.chain
        if chain.parked_on is not wait or not chain.live:
            return
        if not self._satisfied(wait):
            return
        self._unregister(wait)
        self.wake(chain, self._deliver(wait, timed_out=False))

    def _unregister(self, wait: Wait) -> None:
        if wait.timer is not None:
            self.run.kernel.cancel(wait.timer)
        for t in wait.members:
            if wait in t.waits:
                t.waits.remove(wait)

    def timeout_fired(self, chain: Chain, wait: Wait) -> None:
        self._unregister(wait)
        self.run.trace.emit(self.run.kernel.now, "timeout", chain=chain.id)
        self.wake(chain, self._deliver(wait, timed_out=True))

    def drop_wait(self, chain: Chain) -> None:
        """A stopped chain's wait goes away with its timer."""
        if isinstance(chain.parked_on, Wait):
            self._unregister(chain.parked_on)

    def _outcome(self, task: Task, waiter: Chain):
        """(ok, result-or-error) for an ended member, marking a result taken."""
        if task.state == "cancelled":
            if task.cancelled_value is None:
                task.cancelled_value = self.run.error_value(
                    "cancelled", f"task `{task.id}` was cancelled", None, task=task.id)
            # Re-raising the value right after this wait is the prompt's own
            # failure; after another suspending call it ends the run cancelled.
            self.lua.E.stamp(task.cancelled_value, waiter.suspends)
            self.joined(task)
            return False, task.cancelled_value
        task.delivered = True
        self.joined(task)
        if task.ok:
            return True, (task.result or "").encode("utf-8")
        if task.failure is not None:
            return False, self.run.as_error_value(task.failure)
        return False, self.run.error_value("lua", f"task `{task.id}` was abandoned")

    def _deliver(self, wait: Wait, timed_out: bool):
        run = self.run
        if not wait.every:
            if timed_out:
                return (True, None, None, None)
            for t in wait.members:
                if not t.live:
                    ok, value = self._outcome(t, wait.chain)
                    run.trace.emit(run.kernel.now, "deliver", chain=wait.chain.id, task=t.id)
                    return (True, self.handle(t.id), ok, value)
            raise AssertionError("a satisfied join_any has an ended member")
        results = self.lua.lua.table()
        taken: dict[str, tuple] = {}
        for position, t in enumerate(wait.members, 1):
            if t.live:
                continue
            if t.id not in taken:
                taken[t.id] = self._outcome(t, wait.chain)
                run.trace.emit(run.kernel.now, "deliver", chain=wait.chain.id, task=t.id)
            ok, value = taken[t.id]
            entry = self.lua.table({"task": t.id, "ok": ok})
            entry[b"result"] = value
            results[position] = entry
        return (True, results, timed_out)
