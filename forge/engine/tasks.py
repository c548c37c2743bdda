"""Tasks: the `tasks` namespace, waits on tasks and delivery, and task endings.

What lives here: the nine functions of the `tasks` namespace (`spawn`,
`join_any`, `join`, `concurrency`, `ready`, `status`, `pending`, `note`,
`cancel`) with their argument checks and errors, parking a chain on a `Join`
and waking it when its members end or its timeout fires, delivery (a result
is taken by one wait; a cancelled task's value is not consumed), and the
state changes of a task's end (done, failed, cancelled, abandoned).  What
does not: the Task record and its status table (`state`), the rules the
namespace applies (`rules.ids`, `rules.timeouts`, `rules.admission`,
`rules.endings`), the loop (`kernel`), and model-started tasks' notices
(`modeltasks`, told through `Task.model_owner`).

Task lifecycle (the `state` field, with `ok` beside it):

    running (queued: not admitted) ──admit──> running (admitted) ──┬─> done, ok=true
                                                                   ├─> done, ok=false  (failed)
                                                                   ├─> cancelled, ok=false
                                                                   └─> abandoned, ok=false (+reason)

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol


from forge.engine.rules import endings, ids, timeouts, waits
from forge.engine.rules.endings import AbandonReason
from forge.engine.letgo import let_go
from forge.engine.state import Chain, Frame, Task
from forge.engine.requests import FanoutArms, Join
from forge.engine.quotas import data_size
from forge.variation import declare
from forge.lua.runtime import LuaTable, NotJSON, decode, from_lua_json, typename
from forge.lua.runtime import text as _t

if TYPE_CHECKING:
    from forge.engine.context import Context
    from forge.engine.host import Host


class ArmWaits(Protocol):
    """What a task's end tells a chain waiting on fanout arms (`fanout`)."""

    def arm_ended(self, chain: Chain, request: FanoutArms, task: Task) -> None: ...



# Variation sites of the rules still written in this module: status
# tables, delivery of results, and the tasks functions' own errors.
MAIN_WALK_HAS_STATUS = declare("status.main-walk-has-status", "status",
                               "tasks.status(sys.taskid) works on the main walk")
READY_FALSE_WHEN_CANCELLED = declare("status.ready-false-when-cancelled", "status",
                                     "tasks.ready is false for a cancelled task")
PENDING_INCLUDES_ENDED = declare("status.pending-includes-ended", "status",
                                 "tasks.pending lists tasks that already ended")
NOTE_LANDS_ON_OWNER = declare("status.note-lands-on-owner", "status",
                              "tasks.note sets the owner's note, not the task's own")
DOUBLE_DELIVERY = declare("delivery.double-delivery", "delivery",
                          "a result can be taken by more than one wait")
JOIN_ANY_LAST_ENDED = declare("delivery.join-any-last-ended", "delivery",
                              "join_any delivers the last ended member in set order, not the first")
CANCELLED_IS_CONSUMED = declare("delivery.cancelled-is-consumed", "delivery",
                                "a wait on a cancelled task consumes it")
JOIN_DUPLICATES_CONSUME = declare("delivery.join-duplicates-consume", "delivery",
                                  "a task named twice in one join set is refused as already delivered")
NO_JOIN_BEFORE_DELIVERY = declare("delivery.no-join-before-delivery", "delivery",
                                  "a finished task keeps its store claims after delivery")
SPAWN_ERRORS_INTERNAL = declare("errors.spawn-errors-internal", "errors",
                                "tasks function argument errors have kind internal, not lua")
WAIT_RAISES_CANCELLED = declare("errors.wait-raises-cancelled", "errors",
                                "a wait raises a cancelled task's error instead of returning it")
UNKNOWN_ID_MESSAGE = declare("errors.unknown-id-message", "errors",
                             "an id naming no task is refused with a different message than an "
                             "unowned one")
IMMEDIATE_NOT_SUSPENDING = declare("errors.immediate-calls-not-suspending", "errors",
                                   "tasks functions answered at once do not count as suspending "
                                   "calls")
CANCEL_NOT_IDEMPOTENT = declare("errors.cancel-not-idempotent", "errors",
                                "cancelling an ended task raises an error")


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


class TasksAPI:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lua = ctx.lua
        #: Collaborators the composition root hands over once they exist.
        self.host: Host = None      # type: ignore[assignment]
        self.fanout: ArmWaits = None     # type: ignore[assignment]

    def let_go(self) -> None:
        """The run has ended: let go of the context and the collaborators."""
        let_go(self, "ctx", "host", "fanout")

    def count(self) -> None:
        """An immediate tasks function is called: count it as a suspending call.

        "Every tasks function is a suspending call", even those answered at
        once: a caught error value raised again after one of them counts as
        raised again later, exactly as after a store call or a wait.
        """
        if not IMMEDIATE_NOT_SUSPENDING.on:
            self.ctx.scheduler.current.suspends += 1

    def err(self, message: str, kind: str = "lua", **fields: str):
        if SPAWN_ERRORS_INTERNAL.on and kind == "lua":
            kind = "internal"
        return (False, self.ctx.errors.error_value(kind, message, self.ctx.scheduler.current, **fields))

    def handle(self, task_id: str):
        return self.lua.fn.task_handle(task_id.encode("utf-8"))

    # ------------------------------------------------------------ task args
    def task_arg(self, call: str, value: Any) -> tuple[str | None, Any]:
        """A handle or bare id -> the id text, or an error tuple."""
        if isinstance(value, LuaTable):
            inner = self.lua.index(value, b"task")      # the prompt's table, maybe
            if isinstance(inner, bytes):
                value = inner
            else:
                return None, self.err(f"{call} expects a Task handle or task id, got table")
        if not isinstance(value, bytes):
            return None, self.err(f"{call} expects a Task handle or task id, got {typename(value)}")
        text = decode(value)
        if text is None or not ids.is_task_id(text):
            return None, self.err(ids.not_an_id_message(value.decode("utf-8", "replace")))
        return text, None

    def owned(self, chain: Chain, task_id: str, allow_self: bool = False) -> tuple[Task | None, Any]:
        task = self.ctx.tasks.get(task_id)
        if task is not None and task.owner is chain:
            return task, None
        if allow_self and task is not None and task is chain.task and not task.is_main:
            return task, None
        if MAIN_WALK_HAS_STATUS.on and allow_self and task_id == "0":
            return self.ctx.main_task, None
        if UNKNOWN_ID_MESSAGE.on and task is None:
            return None, self.err(f"task `{task_id}` does not exist", "task_not_owned",
                                   task=task_id)
        return None, self.err(f"task `{task_id}` is not a task this chain owns",
                               "task_not_owned", task=task_id)

    # ------------------------------------------------------------ spawn
    def spawn(self, target=None, opts=None, *rest):
        ctx = self.ctx
        chain = ctx.scheduler.current
        index, error = self.host.check_worker(chain, target)
        if error:
            return error
        refusal = ids.depth_refusal(chain, "call")
        if refusal:
            return self.err(refusal)
        seeds, error = self.spawn_options(opts)
        if error:
            return error
        task = self.start_task(chain, index, "author", seeds)
        if isinstance(task, tuple):
            return task
        return (True, task.id.encode("utf-8"))     # the library entry makes the handle

    def spawn_options(self, opts: Any) -> tuple[dict | None, Any]:
        seeds: dict = {}
        if opts is None:
            return seeds, None
        if not isinstance(opts, LuaTable):
            return None, self.err(f"tasks.spawn opts must be a table, got {typename(opts)}")
        input_ = self.lua.index(opts, b"input")
        if input_ is not None:
            if not isinstance(input_, bytes):
                return None, self.err(f"input must be a string, got {typename(input_)}")
            if decode(input_) is None:
                return None, self.err("input must be a valid UTF-8 string")
            seeds["input"] = input_
        item = self.lua.index(opts, b"item")
        if item is not None:
            kind = typename(item)
            if kind in ("function", "userdata", "thread"):
                return None, self.err(f"item must be JSON data, got {kind}")
            try:
                seeds["item_data"] = from_lua_json(item)
            except NotJSON:
                # Only a value that is itself a function, userdata or thread
                # gets the "got {type}" form; anything nested is "representable".
                return None, self.err("item must be a JSON-representable value")
            seeds["item"] = self.lua.fn.deep_copy(item)
        index = self.lua.index(opts, b"index")
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                return None, self.err(f"index must be a non-negative integer, got {typename(index)}")
            if index < 0:
                return None, self.err(f"index must be a non-negative integer, got {index}")
            seeds["index"] = index
        return seeds, None

    def start_task(self, owner: Chain, index: int, origin: str, seeds: dict):
        """Create a task running section `index`, owned by `owner`.

        Returns the Task, or an error tuple when set-up fails.
        """
        ctx = self.ctx
        if not self.host.read_back_var(owner):
            return self.err("the `var` global was reassigned; write `var.<field>` instead")
        if len(ctx.tasks) >= ctx.config.max_tasks:
            ctx.budget.abort("Budget", f"task budget exhausted: the run started more than "
                                 f"{ctx.config.max_tasks:,} tasks (unbounded spawning?)")
            return self.err("task budget exhausted")
        if self.lua.memory_tight():
            ctx.budget.abort("Budget", "Lua memory exhausted: too much state for one run")
            return self.err("Lua memory exhausted")
        if ctx.harness.refuses("spawn", "*"):
            return self.err("store operation failed", "store", reason="refused")
        # The `task_started` event keeps a copy of the owner's `var`.
        var_data = from_lua_json(owner.var)
        input_ = seeds.get("input")
        if not ctx.budget.keep(data_size((input_, seeds.get("item_data"), var_data)),
                        "the input, item and var a task starts with"):
            return self.err("result budget exhausted")     # the run has ended as Budget
        section = ctx.prompt.sections[index]
        task_id = ids.take(owner)
        task = Task(id=task_id, target=section.name, origin=origin,
                    depth=owner.depth + 1, owner=owner)
        args = input_ if input_ is not None else owner.args
        argv = self.host.initial_argv(decode(input_)) if input_ is not None else owner.argv
        chain = Chain(
            title=ctx.prompt.title, id=task_id, kind="task", task=task, parent=owner, depth=owner.depth + 1,
            args=args, argv=argv, var=self.lua.fn.deep_copy(owner.var), limit=owner.limit,
            claim_identity=task_id,
        )
        chain.ceiling = owner.limit
        siblings = ctx.prompt.siblings(index)
        chain.frames = [Frame(siblings, siblings.index(index))]
        if "item" in seeds:
            chain.first_item, chain.has_item = seeds["item"], True
        chain.first_index = seeds.get("index")
        chain.on_end = self._chain_ended
        task.chain = chain
        task.spawned_at_claim = ctx.claims.now()
        owner.owned.append(task)
        ctx.tasks[task_id] = task
        ctx.events.emit(owner, "task_started", task=task_id, target=section.name, origin=origin,
                 input=decode(input_) if input_ is not None else None,
                 item=seeds.get("item_data"), index=seeds.get("index"), var=var_data)
        ctx.trace.emit(ctx.clock.now, "spawn", owner=owner.id, task=task_id, target=section.name)
        ctx.admission.enqueue(task)
        return task

    # ------------------------------------------------------------ endings
    def _chain_ended(self, chain: Chain, ok: bool, value: Any) -> None:
        task = chain.task
        assert task.live, f"task {task.id} ends twice"
        if ok:
            task.state, task.ok, task.result = "done", True, value if value is not None else ""
            self._terminal_event(task, "task_succeeded")
        else:
            task.state, task.ok, task.failure = "done", False, value
            self._terminal_event(task, "task_failed")
        self.task_ended(task)

    def _terminal_event(self, task: Task, kind: str, **fields: Any) -> None:
        chain = task.chain
        self.ctx.events.emit(chain, kind, section_override=task.target, task=task.id, **fields)
        # An abandon's reason goes in the trace too, so a trace alone tells
        # why each task ended (the timeline draws it).
        reason = {"reason": fields["reason"]} if "reason" in fields else {}
        self.ctx.trace.emit(self.ctx.clock.now, "task_end", task=task.id, end=kind, **reason)

    def task_ended(self, task: Task) -> None:
        ctx = self.ctx
        ctx.admission.ended(task)
        # The run's end strands its waiters too: a waiter is not handed a
        # member the end abandoned, since it never resumes.
        for waiter in ([] if ctx.chains.ending else list(task.waiters)):
            request = waiter.parked_on
            if isinstance(request, Join):
                self._maybe_wake(waiter, request)
            else:
                self.fanout.arm_ended(waiter, request, task)
        if task.model_owner is not None:
            task.model_owner.task_ended(task)
        ctx.admission.after_end()

    def joined(self, task: Task) -> None:
        """A delivery (or the owner's end) joins the task: its store work is
        now ordered before the joiner's next step, so its claims go."""
        if task.chain is not None and not NO_JOIN_BEFORE_DELIVERY.on:
            self.ctx.claims.release(task.chain.claim_identity)

    def cancel(self, task: Task) -> None:
        if not task.live:
            return
        if (endings.CANCEL_LOST_WHEN_PARKED.on and task.chain is not None
                and task.chain.state == "parked"):
            return
        ctx = self.ctx
        if task.chain is not None:
            ctx.chains.stop_chain(task.chain)
        assert task.result is None and task.failure is None
        task.state, task.ok = "cancelled", False
        for kind in endings.terminal_events("cancelled"):
            self._terminal_event(task, kind)
        self.task_ended(task)

    def abandon(self, task: Task, reason: AbandonReason) -> None:
        if not task.live:
            return
        ctx = self.ctx
        if task.chain is not None:
            ctx.chains.stop_chain(task.chain)
        assert task.result is None and task.failure is None and task.reason is None
        task.state, task.ok, task.reason = endings.abandoned_state(), False, reason
        for kind in endings.terminal_events("abandoned"):
            self._terminal_event(task, kind, reason=reason.value)
        self.task_ended(task)

    # ------------------------------------------------------------ immediate calls
    def concurrency(self, n=None, *rest):
        chain = self.ctx.scheduler.current
        ceiling = chain.ceiling or self._parent_limit(chain)
        if n is None:
            return (True, chain.limit)
        whole = isinstance(n, int) and not isinstance(n, bool) and n >= 1
        if isinstance(n, float) and n.is_integer() and n >= 1:
            whole, n = True, int(n) if n < 2**62 else 2**62
        if not whole:
            return self.err(f"tasks.concurrency limit must be a positive whole number, got {typename(n)}")
        chain.limit = self.ctx.admission.clamp(n, ceiling)
        self.ctx.admission.admit()
        return (True, chain.limit)

    def _parent_limit(self, chain: Chain) -> int:
        parent = chain.parent
        return parent.limit if parent is not None else self.ctx.harness.ceiling

    def _looked_at(self, call, task):
        """The task a read (`tasks.ready`, `tasks.status`) names: one the
        calling chain owns, or its own; else an error tuple."""
        task_id, error = self.task_arg(call, task)
        if error:
            return None, error
        return self.owned(self.ctx.scheduler.current, task_id, allow_self=True)

    def ready(self, task=None, *rest):
        t, error = self._looked_at("tasks.ready", task)
        if error:
            return error
        if READY_FALSE_WHEN_CANCELLED.on and t.state == "cancelled":
            return (True, False)
        return (True, not t.live)

    def status(self, task=None, *rest):
        t, error = self._looked_at("tasks.status", task)
        if error:
            return error
        # What status shows of a task (note, blocked, section) changes in that
        # task's own steps: a footprint read, for partial-order reduction.
        self.ctx.trace.read(f"task:{t.id}")
        status = t.status_json()
        status.pop("reason", None)
        table = self.lua.table({k: v for k, v in status.items() if k != "tasks"})
        table[b"tasks"] = self.lua.seq(status["tasks"])  # lua: own table
        return (True, table)

    def pending(self, filt=None, *rest):
        chain = self.ctx.scheduler.current
        origin = None
        if filt is not None:
            if not isinstance(filt, LuaTable):
                return self.err(f"tasks.pending filter must be a table, got {typename(filt)}")
            raw = self.lua.index(filt, b"origin")
            if raw is not None:
                if not isinstance(raw, bytes):
                    return self.err(f"pending filter origin must be a string, got {typename(raw)}")
                origin = decode(raw)
                if origin is None:
                    return self.err("pending filter origin must be a valid UTF-8 string")
                if origin not in ("author", "model"):
                    return self.err(f"pending filter origin must be `author` or `model`, got `{origin}`")
        live = sorted((t for t in chain.owned
                       if (t.live or PENDING_INCLUDES_ENDED.on) and (origin is None or t.origin == origin)),
                      key=lambda t: ids.id_key(t.id))
        return (True, self.lua.seq([{"task": t.id} for t in live]))

    def note(self, text=None, *rest):
        chain = self.ctx.scheduler.current
        if not isinstance(text, bytes):
            return self.err(f"tasks.note text must be a string, got {typename(text)}")
        if not self.ctx.budget.keep(len(text), f"a note of {len(text):,} bytes"):
            return self.err("result budget exhausted")     # the run has ended as Budget
        value = decode(text)
        if value is None:
            return self.err("text must be a valid UTF-8 string")
        noted = chain.task
        if NOTE_LANDS_ON_OWNER.on and not noted.is_main:
            noted = noted.owner.task
        if not noted.is_main:
            noted.note = value
        return (True,)

    def cancel_by_id(self, task=None, *rest):
        chain = self.ctx.scheduler.current
        task_id, error = self.task_arg("tasks.cancel", task)
        if error:
            return error
        t, error = self.owned(chain, task_id)
        if error:
            return error
        if CANCEL_NOT_IDEMPOTENT.on and not t.live:
            return self.err(f"task `{task_id}` already ended")
        if t.live:
            t.stop_asked = True     # what the liveness monitors hold the cancel to (forge.liveness)
        self.cancel(t)
        return (True,)

    # ------------------------------------------------------------ waits
    def join(self, chain: Chain, *args):
        """`tasks.join(set, opts?)`: every member's outcome, in set order."""
        return self._wait(chain, "tasks.join", args)

    def join_any(self, chain: Chain, *args):
        """`tasks.join_any(set, opts?)`: the first member to end."""
        return self._wait(chain, "tasks.join_any", args)

    def _wait(self, chain: Chain, call: str, args: tuple):
        args = args + (None,) * (2 - len(args))
        members_arg, opts = args[0], args[1]
        if not isinstance(members_arg, LuaTable):
            return self.err(f"{call} expects a set of tasks, got {typename(members_arg)}")
        count = len(members_arg)
        if count == 0:
            return self.err(f"{call} requires at least one task")
        member_ids = []
        for i in range(1, count + 1):
            task_id, error = self.task_arg(call, self.lua.index(members_arg, i))
            if error:
                return error
            if JOIN_DUPLICATES_CONSUME.on and call == "tasks.join" and task_id in member_ids:
                return self.err(f"task `{task_id}` was already delivered: a task's result "
                                 "is taken by one wait", "task_consumed", task=task_id)
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
                return self.err(
                    f"task `{task_id}` was already delivered: a task's result is taken by one wait",
                    "task_consumed", task=task_id)
            members.append(t)
        join = Join(call, tuple(members), every=(call == "tasks.join"),
                    timed=timeout_ns is not None)
        if self._satisfied(join):
            return self._deliver(chain, join, timed_out=False)
        ctx = self.ctx
        return waits.park(ctx.scheduler, ctx.admission, chain, join, members, call=call,
                          shown=[t.id for t in members], timeout_ns=timeout_ns,
                          expire=lambda: self.timeout_fired(chain, join))

    def _timeout(self, call: str, opts: Any) -> tuple[int | None, Any]:
        if opts is None:
            return None, None
        if not isinstance(opts, LuaTable):
            return None, self.err(f"{call} opts must be a table, got {typename(opts)}")
        seconds = self.lua.index(opts, b"timeout")
        if seconds is None:
            return None, None
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            return None, self.err(f"{call} timeout must be a number, got {typename(seconds)}")
        ns = timeouts.duration(seconds)
        if ns is None:
            return None, self.err(
                f"timeout must be a non-negative finite number of seconds, got {lua_number_text(seconds)}")
        return ns, None

    def _satisfied(self, join: Join) -> bool:
        ended = [not t.live for t in join.members]
        return all(ended) if join.every else any(ended)

    def _maybe_wake(self, chain: Chain, join: Join) -> None:
        """A member of `join` ended.  Only live members are registered, once
        each, so a join of every member is met when the count of those still
        live reaches zero, and a join_any at the first end."""
        assert chain.live and chain.parked_on is join
        chain.join_left -= 1
        if join.every and chain.join_left > 0:
            return
        if join.every and waits.LAST_END_WAKES_NOBODY.on:
            return
        self.unregister(chain)
        self.ctx.admission.wake(chain, self._deliver(chain, join, timed_out=False))

    def unregister(self, chain: Chain) -> None:
        """`chain` stops waiting on its request's members, and its timer goes."""
        request = chain.parked_on
        members = (request.members if isinstance(request, Join)
                   else request.arms if isinstance(request, FanoutArms) else ())
        waits.leave(chain, members, self.ctx.clock)

    def timeout_fired(self, chain: Chain, join: Join) -> None:
        if timeouts.EXPIRY_CANCELS_MEMBERS.on:
            for t in join.members:
                self.cancel(t)
        chain.timer = None          # it fired
        self.unregister(chain)
        self.ctx.trace.emit(self.ctx.clock.now, "timeout", chain=chain.id)
        self.ctx.admission.wake(chain, self._deliver(chain, join, timed_out=True))

    def _outcome(self, task: Task, waiter: Chain):
        """(ok, result-or-error) for an ended member, marking a result taken."""
        if task.state == "cancelled":
            if task.cancelled_value is None:
                task.cancelled_value = self.ctx.errors.error_value(
                    "cancelled", f"task `{task.id}` was cancelled", None, task=task.id)
            # Re-raising the value right after this wait is the prompt's own
            # failure; after another suspending call it ends the run cancelled.
            self.lua.fn.stamp(task.cancelled_value, waiter.suspends)
            self.joined(task)
            if CANCELLED_IS_CONSUMED.on:
                task.delivered = True
            return False, task.cancelled_value
        assert task.state == "done" and (not task.delivered or DOUBLE_DELIVERY.on), \
            f"task {task.id} delivered twice"
        task.delivered = not DOUBLE_DELIVERY.on
        self.joined(task)
        if task.ok:
            return True, (task.result or "").encode("utf-8")
        if task.failure is not None:
            return False, self.ctx.errors.as_error_value(task.failure, waiter)
        return False, self.ctx.errors.error_value("lua", f"task `{task.id}` was abandoned")

    def _deliver(self, chain: Chain, join: Join, timed_out: bool):
        ctx = self.ctx
        size = sum(len(t.result or "") for t in join.members if not t.live)
        if not ctx.budget.room_for(size, "delivering the joined results"):
            return (True, None, None, None)       # the run has ended; nothing resumes
        if not join.every:
            if timed_out:
                return (True, None, None, None)
            members = reversed(join.members) if JOIN_ANY_LAST_ENDED.on else join.members
            for t in members:
                if not t.live:
                    ok, value = self._outcome(t, chain)
                    ctx.trace.emit(ctx.clock.now, "deliver", chain=chain.id, task=t.id)
                    if WAIT_RAISES_CANCELLED.on and t.state == "cancelled":
                        return (False, value)
                    return (True, self.handle(t.id), ok, value)
            raise AssertionError("a satisfied join_any has an ended member")
        entries: list = []        # (position, task id, ok, result) of each member delivered
        taken: dict[str, tuple] = {}
        for position, t in enumerate(join.members, 1):
            if t.live or (timed_out and timeouts.TIMED_JOIN_DROPS_FINISHED.on):
                continue
            if t.id not in taken:
                taken[t.id] = self._outcome(t, chain)
                ctx.trace.emit(ctx.clock.now, "deliver", chain=chain.id, task=t.id)
            entries += (position, t.id.encode("utf-8"), *taken[t.id])
        return (True, self.lua.fn.join_results(*entries), timed_out)
