"""Mutants: deliberately wrong variants of the reference engine.

A suite proves its strength by failing on engines that are wrong.  Each
mutant here patches one rule of the reference engine (a method, a constant,
a message) for the duration of a `with mutant.applied():` block; `forge
mutants` runs the conformance suite and the schedule invariants against each
one and prints a kill matrix.  A mutant the suite does not kill either gets
a new case or is marked `equivalent` here with the reason.

Categories follow the design card's crown jewels - id numbering, races and
delivery, timeout ties, abandon reasons - and then status, concurrency and
errors.

What does not live here: running the suite (`runner`) and the invariants
(`sim.invariants`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import attrs

from forge.engine import chain as chain_mod
from forge.engine import ids as ids_mod
from forge.engine import run as run_mod
from forge.engine import tasks as tasks_mod
from forge.engine.run import Run
from forge.engine.tasks import TasksAPI
from sim import kernel as kernel_mod


@attrs.frozen
class Mutant:
    id: str
    category: str
    description: str
    patch: Callable[[contextlib.ExitStack], None] = attrs.field(repr=False)
    #: Why the mutant cannot be told apart from the reference, if it cannot.
    equivalent: str | None = None

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            self.patch(stack)
            yield


def _set(stack: contextlib.ExitStack, owner, name: str, value) -> None:
    original = getattr(owner, name)
    setattr(owner, name, value)
    stack.callback(setattr, owner, name, original)


def _wrap(stack, owner, name, make):
    _set(stack, owner, name, make(getattr(owner, name)))


CATALOGUE: list[Mutant] = []


def mutant(id: str, category: str, description: str, equivalent: str | None = None):
    def register(patch):
        CATALOGUE.append(Mutant(id, category, description, patch, equivalent))
        return patch

    return register


# ---------------------------------------------------------------- id numbering

@mutant("ids-per-section", "ids", "the child counter restarts at each section entry")
def _(stack):
    def make(original):
        def enter_section(self, chain, index):
            chain.child_counter = 0
            return original(self, chain, index)
        return enter_section
    _wrap(stack, Run, "enter_section", make)


@mutant("ids-one-based", "ids", "child indexes start at 1 instead of 0")
def _(stack):
    def next_child(self):
        self.child_counter += 1
        return self.child_counter
    _set(stack, chain_mod.Chain, "next_child", next_child)


@mutant("timed-wait-takes-no-index", "ids", "a timed wait that waits takes no child index")
def _(stack):
    def make(original):
        def _wait(self, chain, call, args):
            before = chain.child_counter
            result = original(self, chain, call, args)
            chain.child_counter = before
            return result
        return _wait
    _wrap(stack, TasksAPI, "_wait", make)


@mutant("untimed-wait-takes-index", "ids", "every wait that parks takes a child index")
def _(stack):
    def make(original):
        def _wait(self, chain, call, args):
            result = original(self, chain, call, args)
            if result is run_mod.PARK:
                wait = chain.parked_on
                if getattr(wait, "timer", None) is None:
                    chain.next_child()
            return result
        return _wait
    _wrap(stack, TasksAPI, "_wait", make)


@mutant("ids-string-order", "ids", "spawn order compares ids as strings (0.10 before 0.9)")
def _(stack):
    _set(stack, ids_mod, "id_key", lambda task_id: task_id)

    def make(original):
        def _pending(self, filt=None, *rest):
            result = original(self, filt, *rest)
            if result[0] and filt is None:
                live = sorted(t.id for t in self.run.current.owned if t.live)
                return (True, self.lua.seq([{"task": i} for i in live]))
            return result
        return _pending
    _wrap(stack, TasksAPI, "_pending", make)


@mutant("call-takes-no-index", "ids", "call does not take an index from the child counter")
def _(stack):
    from forge.engine import host as host_mod

    def make(original):
        def _call(self, chain, *args):
            result = original(self, chain, *args)
            if result is run_mod.PARK and chain.callee is not None:
                chain.child_counter -= 1
            return result
        return _call
    _wrap(stack, host_mod.Host, "_call", make)


@mutant("taskid-in-call-is-chain", "ids", "sys.taskid inside a called chain names the called chain")
def _(stack):
    from forge.engine import host as host_mod

    def make(original):
        def section_env(self, chain, entry):
            if chain.kind == "call":
                real = chain.task
                chain.task = _Renamed(real, chain.id)
                try:
                    return original(self, chain, entry)
                finally:
                    chain.task = real
            return original(self, chain, entry)
        return section_env
    _wrap(stack, host_mod.Host, "section_env", make)


class _Renamed:
    """A stand-in task with another id, for one environment build."""

    def __init__(self, task, new_id):
        self._task, self.id = task, new_id

    def __getattr__(self, name):
        return getattr(self._task, name)


@mutant("h1-takes-no-entry", "ids", "a prompt without an H1 pass starts its walk at entry 0.0")
def _(stack):
    from forge.engine import host as host_mod

    def make(original):
        def begin_root(self, root):
            original(self, root)
            if not self.run.prompt.h1_has_pass:
                root.entry_counter = 0
        return begin_root
    _wrap(stack, host_mod.Host, "begin_root", make)


# ---------------------------------------------------------------- races and delivery

@mutant("double-delivery", "delivery", "a result can be taken by more than one wait")
def _(stack):
    def make(original):
        def _outcome(self, task, waiter):
            result = original(self, task, waiter)
            task.delivered = False
            return result
        return _outcome
    _wrap(stack, TasksAPI, "_outcome", make)


@mutant("join-any-last-ended", "delivery",
        "join_any delivers the last ended member in set order, not the first")
def _(stack):
    def make(original):
        def _deliver(self, wait, timed_out):
            if not wait.every and not timed_out:
                wait.members = list(reversed(wait.members))
            return original(self, wait, timed_out)
        return _deliver
    _wrap(stack, TasksAPI, "_deliver", make)


@mutant("cancelled-is-consumed", "delivery", "a wait on a cancelled task consumes it")
def _(stack):
    def make(original):
        def _outcome(self, task, waiter):
            result = original(self, task, waiter)
            if task.state == "cancelled":
                task.delivered = True
            return result
        return _outcome
    _wrap(stack, TasksAPI, "_outcome", make)


@mutant("join-duplicates-consume", "delivery",
        "a task named twice in one join set is refused as already delivered")
def _(stack):
    def make(original):
        def _wait(self, chain, call, args):
            members = args[0] if args else None
            if call == "tasks.join" and members is not None and hasattr(members, "values"):
                seen = set()
                for value in members.values():
                    key = value[b"task"] if hasattr(value, "values") else value
                    if key in seen:
                        text = key.decode() if isinstance(key, bytes) else str(key)
                        return self._err(f"task `{text}` was already delivered: a task's result "
                                         "is taken by one wait", "task_consumed", task=text)
                    seen.add(key)
            return original(self, chain, call, args)
        return _wait
    _wrap(stack, TasksAPI, "_wait", make)


@mutant("writes-land-late", "races",
        "a store write answers at once and lands later, so a delivery does not join it")
def _(stack):
    def make(original):
        def store_call(self, chain, op, path, run_op, direct=False):
            if op in ("write", "append") and not direct:
                delay = self.harness.latency.draw(self.chooser, "store") + 1
                self.kernel.schedule(delay, kernel_mod.COMPLETE, ("late_write", run_op))
                return (True,)
            return original(self, chain, op, path, run_op, direct)
        return store_call
    _wrap(stack, Run, "store_call", make)

    def make_handle(original):
        def _handle(self, event):
            if event[0] == "late_write":
                event[1]()
                return None
            return original(self, event)
        return _handle
    _wrap(stack, Run, "_handle", make_handle)


@mutant("no-join-before-delivery", "races",
        "a finished task keeps its store claims after delivery")
def _(stack):
    def make(original):
        def release(self, identity):
            if "." in identity:
                return None
            return original(self, identity)
        return release
    from forge.engine.store import Claims
    _wrap(stack, Claims, "release", make)


# ---------------------------------------------------------------- timeout ties

@mutant("tie-goes-to-timeout", "timeouts",
        "a timeout expiring at the same instant a task ends wins the tie")
def _(stack):
    # Timeouts sort before harness completions at the same instant.
    _set(stack, kernel_mod, "TIMEOUT", -10)
    _set(stack, tasks_mod, "TIMEOUT", -10)


@mutant("timeout-cancels-members", "timeouts", "an expired timeout cancels the members")
def _(stack):
    def make(original):
        def timeout_fired(self, chain, wait):
            for t in wait.members:
                if t.live:
                    self.cancel(t)
            return original(self, chain, wait)
        return timeout_fired
    _wrap(stack, TasksAPI, "timeout_fired", make)


@mutant("timed-join-drops-finished", "timeouts",
        "a timed-out join returns no entries at all, even for finished members")
def _(stack):
    def make(original):
        def _deliver(self, wait, timed_out):
            result = original(self, wait, timed_out)
            if wait.every and timed_out:
                return (True, self.lua.lua.table(), True)
            return result
        return _deliver
    _wrap(stack, TasksAPI, "_deliver", make)


@mutant("timeout-in-milliseconds", "timeouts", "timeouts are read as milliseconds")
def _(stack):
    def make(original):
        def _timeout(self, call, opts):
            ns, err = original(self, call, opts)
            return (ns // 1000 if ns is not None else None), err
        return _timeout
    _wrap(stack, TasksAPI, "_timeout", make)


@mutant("negative-timeout-accepted", "timeouts", "a negative timeout is treated as zero")
def _(stack):
    def make(original):
        def _timeout(self, call, opts):
            ns, err = original(self, call, opts)
            if err is not None and "non-negative finite" in str(err[1][b"message"]):
                return 0, None
            return ns, err
        return _timeout
    _wrap(stack, TasksAPI, "_timeout", make)


# ---------------------------------------------------------------- abandon reasons

@mutant("failed-owner-says-returned", "abandon",
        "tasks of a failing owner are abandoned as owner_returned")
def _(stack):
    def make(original):
        def settle_owned(self, chain, reason):
            return original(self, chain, "owner_returned" if reason == "owner_failed" else reason)
        return settle_owned
    _wrap(stack, Run, "settle_owned", make)


@mutant("nested-run-terminated", "abandon",
        "tasks nested under a stopped task are abandoned as run_terminated, not owner_aborted")
def _(stack):
    def make(original):
        def settle_owned(self, chain, reason):
            return original(self, chain, "run_terminated" if reason == "owner_aborted" else reason)
        return settle_owned
    _wrap(stack, Run, "settle_owned", make)


@mutant("abandon-recorded-as-cancel", "abandon", "an abandoned task reads state cancelled")
def _(stack):
    def make(original):
        def abandon(self, task, reason):
            original(self, task, reason)
            if task.state == "abandoned":
                task.state = "cancelled"
        return abandon
    _wrap(stack, TasksAPI, "abandon", make)


@mutant("abandon-also-failed", "abandon", "an abandoned task is also recorded as failed")
def _(stack):
    def make(original):
        def abandon(self, task, reason):
            was_live = task.live
            original(self, task, reason)
            if was_live:
                self._terminal_event(task, "task_failed")
        return abandon
    _wrap(stack, TasksAPI, "abandon", make)


@mutant("leak-not-reported", "abandon", "a chain ending with live tasks ends cleanly")
def _(stack):
    def make(original):
        def end_chain(self, chain, ok, value):
            if ok:
                for t in chain.owned:
                    if t.live:
                        self.tasks_api.abandon(t, "owner_returned")
            return original(self, chain, ok, value)
        return end_chain
    _wrap(stack, Run, "end_chain", make)


@mutant("leak-ids-comma", "abandon", "tasks_live joins the leaked ids with ',' instead of ', '")
def _(stack):
    def make(original):
        def error_value(self, kind, message, chain=None, **fields):
            if kind == "tasks_live":
                fields["tasks"] = fields["tasks"].replace(", ", ",")
                message = message.replace(", ", ",")
            return original(self, kind, message, chain, **fields)
        return error_value
    _wrap(stack, Run, "error_value", make)


# ---------------------------------------------------------------- status

@mutant("status-ok-false-while-running", "status", "a running task reads ok = false")
def _(stack):
    def make(original):
        def status_json(self):
            out = original(self)
            if self.live:
                out["ok"] = False
            return out
        return status_json
    _wrap(stack, tasks_mod.Task, "status_json", make)


@mutant("main-walk-has-status", "status", "tasks.status(sys.taskid) works on the main walk")
def _(stack):
    def make(original):
        def owned(self, chain, task_id, allow_self=False):
            if allow_self and task_id == "0":
                fake = tasks_mod.Task(run=self.run, id="0", target="main", origin="author",
                                      depth=0, owner=chain)
                return fake, None
            return original(self, chain, task_id, allow_self)
        return owned
    _wrap(stack, TasksAPI, "owned", make)


@mutant("ready-false-when-cancelled", "status", "tasks.ready is false for a cancelled task")
def _(stack):
    def make(original):
        def _ready(self, task=None, *rest):
            result = original(self, task, *rest)
            if result[0] and result[1]:
                t = self.run.tasks.get(self.task_arg("tasks.ready", task)[0])
                if t is not None and t.state == "cancelled":
                    return (True, False)
            return result
        return _ready
    _wrap(stack, TasksAPI, "_ready", make)


@mutant("pending-includes-ended", "status", "tasks.pending lists tasks that already ended")
def _(stack):
    def make(original):
        def _pending(self, filt=None, *rest):
            result = original(self, filt, *rest)
            if result[0] and filt is None:
                chain = self.run.current
                return (True, self.lua.seq([{"task": t.id} for t in chain.owned]))
            return result
        return _pending
    _wrap(stack, TasksAPI, "_pending", make)


@mutant("note-lands-on-owner", "status", "tasks.note sets the owner's note, not the task's own")
def _(stack):
    def make(original):
        def _note(self, text=None, *rest):
            chain = self.run.current
            result = original(self, text, *rest)
            task = chain.task
            if result[0] and not task.is_main:
                value, task.note = task.note, None
                owner_task = task.owner.task if task.owner is not None else None
                if owner_task is not None and not owner_task.is_main:
                    owner_task.note = value
            return result
        return _note
    _wrap(stack, TasksAPI, "_note", make)


# ---------------------------------------------------------------- concurrency

@mutant("waiting-task-keeps-slot", "concurrency", "a task parked on a wait keeps its slot")
def _(stack):
    keeping = []

    def make_wait(original):
        def _wait(self, chain, call, args):
            keeping.append(True)
            try:
                return original(self, chain, call, args)
            finally:
                keeping.pop()
        return _wait

    def make_release(original):
        def release_slot(self, task):
            if keeping:
                return None
            return original(self, task)
        return release_slot
    _wrap(stack, TasksAPI, "_wait", make_wait)
    _wrap(stack, TasksAPI, "release_slot", make_release)


@mutant("concurrency-not-clamped", "concurrency", "tasks.concurrency(n) is not clamped to the parent")
def _(stack):
    def make(original):
        def _concurrency(self, n=None, *rest):
            result = original(self, n, *rest)
            if result[0] and isinstance(n, int) and not isinstance(n, bool) and n >= 1:
                self.run.current.limit = n
                return (True, n)
            return result
        return _concurrency
    _wrap(stack, TasksAPI, "_concurrency", make)


@mutant("admit-newest-first", "concurrency", "queued tasks are admitted newest first")
def _(stack):
    def admit(self):
        self.admit_in_order(list(reversed(self.run.queue)))
    _set(stack, TasksAPI, "admit", admit)


@mutant("no-concurrency-limit", "concurrency", "the harness ceiling is ignored")
def _(stack):
    def make(original):
        def _slot_free(self, task):
            return True
        return _slot_free
    _wrap(stack, TasksAPI, "_slot_free", make)
    _set(stack, TasksAPI, "_ceiling_reached", lambda self: False)


# ---------------------------------------------------------------- errors

@mutant("spawn-errors-internal", "errors", "spawn argument errors have kind internal, not lua")
def _(stack):
    def make(original):
        def _err(self, message, kind="lua", **fields):
            return original(self, message, "internal" if kind == "lua" else kind, **fields)
        return _err
    _wrap(stack, TasksAPI, "_err", make)


@mutant("wait-raises-cancelled", "errors", "a wait raises a cancelled task's error instead of returning it")
def _(stack):
    def make(original):
        def _deliver(self, wait, timed_out):
            result = original(self, wait, timed_out)
            if not wait.every and not timed_out and result[2] is False:
                task = next((t for t in wait.members if not t.live), None)
                if task is not None and task.state == "cancelled":
                    return (False, result[3])
            return result
        return _deliver
    _wrap(stack, TasksAPI, "_deliver", make)


@mutant("unknown-id-message", "errors",
        "an id naming no task is refused with a different message than an unowned one")
def _(stack):
    def make(original):
        def owned(self, chain, task_id, allow_self=False):
            if task_id not in self.run.tasks:
                return None, self._err(f"task `{task_id}` does not exist", "task_not_owned",
                                       task=task_id)
            return original(self, chain, task_id, allow_self)
        return owned
    _wrap(stack, TasksAPI, "owned", make)


@mutant("depth-cap-off-by-one", "errors", "tasks may nest to depth 9")
def _(stack):
    def make(original):
        def _spawn(self, target=None, opts=None, *rest):
            chain = self.run.current
            chain.depth -= 1
            try:
                return original(self, target, opts, *rest)
            finally:
                chain.depth += 1
        return _spawn
    _wrap(stack, TasksAPI, "_spawn", make)


@mutant("cancel-not-idempotent", "errors", "cancelling an ended task raises an error")
def _(stack):
    def make(original):
        def _cancel(self, task=None, *rest):
            task_id, error = self.task_arg("tasks.cancel", task)
            t = self.run.tasks.get(task_id) if task_id else None
            if t is not None and not t.live and t.owner is self.run.current:
                return self._err(f"task `{task_id}` already ended")
            return original(self, task, *rest)
        return _cancel
    _wrap(stack, TasksAPI, "_cancel", make)


# ---------------------------------------------------------------- model-started tasks

@mutant("envelope-keeps-angle-brackets", "model", "the untrusted envelope does not escape `<`")
def _(stack):
    from forge.engine import envelope

    def make(original):
        def encode(text, nonce):
            return original(text.replace("<", "\x00"), nonce).replace("\x00", "<")
        return encode
    _wrap(stack, envelope, "encode", make)


@mutant("notice-cancel-spelling", "model", "a cancelled model task's notice says `was cancelled`")
def _(stack):
    from forge.engine import modeltasks

    def make(original):
        def notice(task, nonce):
            return original(task, nonce).replace(" was canceled: ", " was cancelled: ")
        return notice
    _wrap(stack, modeltasks, "notice", make)


@mutant("model-tasks-leak", "model", "a live model task makes its owner fail with tasks_live")
def _(stack):
    def make(original):
        def end_chain(self, chain, ok, value):
            if ok:
                for t in chain.owned:
                    if t.live and t.origin == "model":
                        t.origin = "author"
            return original(self, chain, ok, value)
        return end_chain
    _wrap(stack, Run, "end_chain", make)


@mutant("model-cancel-queues-notice", "model", "the model's own task_cancel also queues a notice")
def _(stack):
    from forge.engine import modeltasks

    def make(original):
        def task_ended(self, state, task):
            state.silenced.discard(task.id)
            return original(self, state, task)
        return task_ended
    _wrap(stack, modeltasks.ModelTasks, "task_ended", make)


@mutant("notices-delivered-twice", "model", "a notice taken by a round stays queued for the next")
def _(stack):
    from forge.engine import modeltasks

    def make(original):
        def _take(self, state):
            kept = list(state.notices)
            taken = original(self, state)
            state.notices = kept
            return taken
        return _take
    _wrap(stack, modeltasks.ModelTasks, "_take", make)


@mutant("notice-head-without-marks", "model", "the notice head names the target without `## `")
def _(stack):
    from forge.engine import modeltasks

    _set(stack, modeltasks, "_head", lambda task: f"Task id={task.id} ({task.target})")


def by_id() -> dict[str, Mutant]:
    return {m.id: m for m in CATALOGUE}
