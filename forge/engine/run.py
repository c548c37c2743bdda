"""A run: the root chain, every chain it starts, and the one scheduler loop.

The loop (`Run._loop`) is the whole scheduler:

    ┌─> any chain ready? ── yes ──> chooser picks one ──> step it until it
    │        │                      parks or ends (spawns, status reads and
    │        no                     other immediate calls never leave `step`)
    │        v
    │   admit queued tasks while slots are free
    │        v
    │   next event in the kernel? ── no ──> run over (or deadlock)
    │        │ yes
    │        v
    └── advance the clock, handle the event (a harness answer, a timeout,
        a host fault), which makes chains ready

Because every ready chain runs before the next event is popped, and timeouts
sort last among events at one instant, a task that ends at the same instant a
wait's timeout expires is always delivered before the timeout fires.

What lives here: the loop, stepping a chain's coroutine, the walk (sections,
blocks, jump, the scalar return rule), call, harness operations, events, and
the observation.  What does not: the tasks namespace and task lifetimes
(`tasks`), the section VM globals (`host`), the store's rules (`store`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs

from forge.engine.rules import endings, ids
from forge.engine.rules.endings import AbandonReason
from forge.engine.rules.admission import Admission
from forge.engine import fanout, host, models, tasks
from forge.engine.parking import PARK
from forge.engine.chain import Chain, Frame
from forge.engine.failures import Failure, RunError, classify
from forge.engine.store import WRITES, Claims, StoreFailure
from forge.errors import ForgeInternalError
from forge.variation import declare
from forge.harness import Harness
from forge.lua.runtime import DEFAULT_MAX_INSTRUCTIONS, LuaError, LuaRuntime, typename
from forge.prompt.headings import HeadingError, resolve
from forge.prompt.model import Prompt
from sim.chooser import Chooser
from sim.kernel import COMPLETE, FAULT, Kernel, ns_to_seconds, seconds_to_ns
from sim.trace import Trace

#: Scheduling steps after which a run is declared runaway (a prompt that
#: spawns or waits forever without ever ending).
DEFAULT_MAX_STEPS = 200_000
#: Tasks one run may start; breadth is otherwise unbounded (depth is capped at 8).
DEFAULT_MAX_TASKS = 10_000
#: Section entries one run may make (an endless jump loop runs no Lua loop).
DEFAULT_MAX_ENTRIES = 50_000


WRITES_LAND_LATE = declare("races.writes-land-late", "races",
                           "a store write answers at once and lands later, so a delivery does "
                           "not join it")

_POSITION = re.compile(r'\[string "(?P<loc>[^"]*)"\]:(?P<line>\d+):')


@attrs.frozen
class RunConfig:
    args: str = ""
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    max_steps: int = DEFAULT_MAX_STEPS
    max_tasks: int = DEFAULT_MAX_TASKS
    max_entries: int = DEFAULT_MAX_ENTRIES
    execution: str = "run-1"
    seed: int = 0


def _tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class Run:
    """Everything one run of one prompt owns."""

    def __init__(
        self,
        prompt: Prompt,
        harness: Harness | None = None,
        chooser: Chooser | None = None,
        config: RunConfig | None = None,
    ) -> None:
        self.prompt = prompt
        self.harness = harness or Harness()
        self.chooser = chooser or Chooser()
        self.config = config or RunConfig()
        self.kernel = Kernel()
        self.trace = Trace()
        self.lua = LuaRuntime(max_instructions=self.config.max_instructions,
                              random_seed=self.config.seed)
        self.claims = Claims()
        self.ready: list[Chain] = []
        self.current: Chain | None = None
        self.logs: list[str] = []
        self.events: list[dict] = []
        self.tasks: dict[str, Any] = {}          # id -> Task, every task of the run
        self.admission = Admission(self, self.harness.ceiling)
        self.outcome: str | None = None
        self.result: str | None = None
        self.error: RunError | None = None
        self.steps = 0
        self.entries = 0
        self.nonce = hashlib.sha256(f"forge-nonce:{self.config.seed}".encode()).hexdigest()[:32]
        self.tasks_api = tasks.TasksAPI(self)
        self.models = models.ModelsAPI(self)
        self.fanout = fanout.Fanout(self)
        self.host = host.Host(self)
        self.main_task = tasks.Task.main(self)
        self.root: Chain | None = None

    # ------------------------------------------------------------------ API
    def execute(self) -> Run:
        """Run to the end and return self (read `observation()`)."""
        try:
            self._start()
            if self.outcome is None:
                self._loop()
        except ForgeInternalError:
            raise
        except LuaError as e:  # pragma: no cover - a bug in the bridge
            raise ForgeInternalError(f"internal error in the engine: {e}") from e
        return self

    # ------------------------------------------------------------ the loop
    def _start(self) -> None:
        self.trace.emit(0, "run_start", prompt=self.prompt.name, args=self.config.args)
        version = self.prompt.promptforge
        if version is None:
            self._finish_run("failed", None, RunError(
                "Parse", "not a promptforge prompt: no promptforge version"))
            return
        if version != 0:
            self._finish_run("failed", None, RunError(
                "Version", f"unsupported promptforge version: {version} (this build supports major 0)"))
            return
        if self.harness.cancel_at is not None:
            self.kernel.schedule(seconds_to_ns(self.harness.cancel_at), FAULT, ("host_cancel",))
        root = Chain(
            run=self,
            id="0",
            kind="root",
            task=self.main_task,
            parent=None,
            depth=0,
            args=self.config.args.encode("utf-8"),
            argv=self.host.initial_argv(self.config.args),
            var=self.lua.lua.table(),
            limit=self.harness.ceiling,
            claim_identity="h1",
        )
        root.on_end = self._root_ended
        self.root = root
        self.emit(root, "run_started", section_override=self.prompt.title)
        self.host.begin_root(root)
        if root.live:      # a shared library that fails in the H1 pass ends it at once
            self.make_ready(root, None)

    def _loop(self) -> None:
        while self.outcome is None:
            if self.ready:
                labels = tuple(c.label for c in self.ready)
                pick = self.chooser.choose("chain", labels)
                chain = self.ready.pop(pick)
                self.steps += 1
                if self.steps > self.config.max_steps:
                    self._abort(
                        "Budget",
                        f"step budget exhausted: the run took more than {self.config.max_steps:,} "
                        "scheduling steps (unbounded spawning or waiting?)",
                    )
                    return
                if self.lua.memory_tight():
                    self._abort("Budget", "Lua memory exhausted: the run holds more than "
                                          f"{self.lua.max_memory // 2**20} MiB of Lua state")
                    return
                self.trace.emit(self.kernel.now, "step", chain=chain.id, kind=chain.kind)
                self._step(chain)
                continue
            if self.kernel.peek() is None:
                self._deadlock()
                return
            seq, event = self.kernel.pop()
            self.trace.emit(self.kernel.now, "event", event=event[0], seq=seq)
            self._handle(event)

    def _handle(self, event: tuple) -> None:
        what = event[0]
        if what == "complete":
            _, chain, token, finish = event
            if chain.parked_on is token and chain.live:
                finish()
        elif what == "timeout":
            _, chain, wait, expire = event
            if chain.parked_on is wait and chain.live:
                expire()
        elif what == "late":
            event[1]()          # only the writes-land-late variation schedules these
        elif what == "host_cancel":
            self._host_cancel()
        else:  # pragma: no cover
            raise ForgeInternalError(f"unknown event {what!r}")

    def make_ready(self, chain: Chain, value: Any) -> None:
        assert chain.live
        chain.resume_value = value
        chain.state = "ready"
        chain.blocked = None
        chain.parked_on = None
        self.ready.append(chain)

    def note(self, what: str, **fields: Any) -> None:
        """A trace record at the current instant."""
        self.trace.emit(self.kernel.now, what, **fields)

    def park(self, chain: Chain, blocked: str, on: Any) -> Any:
        chain.blocked = blocked
        chain.parked_on = on
        return PARK

    # --------------------------------------------------------- stepping
    def _step(self, chain: Chain) -> None:
        """Resume a chain and run it until it parks or ends."""
        self.current = chain
        chain.state = "running"
        value = chain.resume_value
        chain.resume_value = None
        try:
            while chain.state == "running" and self.outcome is None:
                if chain.co is None:
                    self._next_block(chain)
                    value = None
                    continue
                # A yield starts with the op name (a string); the block's
                # end starts with pcall's boolean.  lupa returns both from
                # send(), raising StopIteration only on a send after the end.
                request = _tuple(chain.co.send(value))
                if isinstance(request[0], bool):
                    chain.co = None
                    self._block_done(chain, request)
                    value = None
                    continue
                op = _text(request[0])
                chain.suspends += 1
                self.trace.emit(self.kernel.now, "call", chain=chain.id, op=op)
                value = self.dispatch(chain, op, request[1:])
                if value is PARK:
                    chain.state = "parked"
                    break
        except (ForgeInternalError, LuaError):
            raise
        except Exception as e:  # noqa: BLE001 - a bug ends the run as Internal, never a traceback
            self.lua.internal_error = self.lua.internal_error or e
        finally:
            self.current = None
        if self.lua.internal_error is not None and self.outcome is None:
            e = self.lua.internal_error
            self._abort("Internal", f"internal invariant violated: {type(e).__name__}: {e} "
                                    "(a bug in the forge kit: please report it with the prompt and seed)")

    def dispatch(self, chain: Chain, op: str, args: tuple) -> Any:
        """Answer one suspending call: a resume tuple, or PARK."""
        handler = self.host.suspending.get(op)
        if handler is None:  # pragma: no cover - prelude and host disagree
            raise ForgeInternalError(
                f"a chain yielded unknown request {op!r}; the Lua bridge and the host "
                "table disagree about the set of suspending calls"
            )
        return handler(chain, *args)

    # --------------------------------------------------------- the walk
    def _next_block(self, chain: Chain) -> None:
        """Start the chain's next block, entering sections as the walk says."""
        if chain.section is None and not chain.in_h1:
            self._enter_current(chain)
            if chain.state != "running":
                return
        if chain.block_index < len(chain.blocks):
            block = chain.blocks[chain.block_index]
            chain.current_block = block
            self.host.reset_prose(chain)
            source = ("\n" * (block.first_line - 1) + block.source).encode("utf-8")
            self.emit(chain, "lua_chunk_started")
            chain.co = self.lua.block_coroutine(source, block.location.encode("utf-8"), chain.env)
            return
        self._section_finished(chain)

    def _enter_current(self, chain: Chain) -> None:
        frame = chain.frames[-1]
        index = frame.siblings[frame.pos]
        self.enter_section(chain, index)

    def enter_section(self, chain: Chain, index: int | None) -> None:
        """A fresh section VM for `index` (None: the H1 pass)."""
        section = None if index is None else self.prompt.sections[index]
        self.entries += 1
        if self.entries > self.config.max_entries:
            self._abort("Budget", f"section entry budget exhausted: the run entered more than "
                                  f"{self.config.max_entries:,} sections (an endless jump loop?)")
            chain.state = "ended"
            return
        chain.section = section
        chain.in_h1 = index is None
        ids.section_entered(chain)
        entry = f"{chain.id}.{chain.entry_counter}"
        chain.entry_counter += 1
        chain.block_index = 0
        chain.blocks = self.prompt.h1_blocks if section is None else section.blocks
        chain.env = self.host.section_env(chain, entry)
        chain.vm_open = True
        chain.log_events = chain.log_bytes = 0
        self.models.enter_section(chain)
        if section is not None:
            self.emit(chain, "section_started")
        self._load_library(chain)

    def _load_library(self, chain: Chain) -> None:
        """Every section VM replays the shared library first (an empty one too)."""
        self.emit(chain, "lua_shared_load_started")
        shared = self.prompt.shared
        if shared is None:
            self.emit(chain, "lua_shared_load_succeeded")
            return
        source = ("\n" * (shared.first_line - 1) + shared.source).encode("utf-8")
        previous, self.current = self.current, chain
        chain.loading_library = True
        try:
            result = _tuple(self.lua.E.load_library(source, shared.location.encode("utf-8"),
                                                    chain.env))
        finally:
            chain.loading_library = False
            self.current = previous
        failure = None
        if not result[0]:
            failure = self.failure_of(result[1] if len(result) > 1 else None)
        elif len(result) > 1 and result[1] is not None and self.scalar(result[1]) is None:
            failure = self.lua_failure(f"cannot return a {typename(result[1])} as a result")
        if failure is None:
            self.emit(chain, "lua_shared_load_succeeded")
            return
        self.emit(chain, "lua_shared_load_failed")
        # A library that fails to load ends the run as Lua, even in the H1 pass.
        self.fail_chain(chain, attrs.evolve(failure, fatal_kind=failure.fatal_kind or "Lua"))

    def _teardown(self, chain: Chain) -> None:
        """The section VM goes away: one teardown pair per VM, however it ends."""
        if chain.vm_open:
            chain.vm_open = False
            self.emit(chain, "lua_teardown_started")
            self.emit(chain, "lua_teardown_succeeded")

    def _section_finished(self, chain: Chain) -> None:
        if not self.host.read_back_var(chain):
            return
        self._teardown(chain)
        if chain.in_h1:
            chain.in_h1 = False
            self.host.end_h1(chain)
            if chain.state != "running":
                return
            chain.section = None
            if not chain.frames:
                self.end_chain(chain, True, None)
            return
        self.emit(chain, "section_finished")
        chain.section = None
        self._advance_walk(chain)

    def _advance_walk(self, chain: Chain) -> None:
        while chain.frames:
            frame = chain.frames[-1]
            frame.pos += 1
            if not frame.once and frame.pos < len(frame.siblings):
                return
            chain.frames.pop()
        self.end_chain(chain, True, None)

    def _block_done(self, chain: Chain, result: tuple) -> None:
        self._check_abort(chain)
        if chain.state != "running":
            return
        if chain.pending_jump is not None:
            target = chain.pending_jump
            chain.pending_jump = None
            self.emit(chain, "lua_chunk_succeeded")
            self._apply_jump(chain, target)
            return
        ok = bool(result[0])
        if not ok:
            self.emit(chain, "lua_chunk_failed")
            self._teardown(chain)
            self.fail_chain(chain, self.failure_of(result[1] if len(result) > 1 else None))
            return
        self.emit(chain, "lua_chunk_succeeded")
        value = result[1] if len(result) > 1 else None
        if value is not None:
            text = self.scalar(value)
            if text is None:
                self.fail_chain(
                    chain,
                    self.lua_failure(f"cannot return a {typename(value)} as a result"),
                )
                return
            if not self.host.read_back_var(chain):
                return
            self._teardown(chain)
            if chain.section is not None:
                self.emit(chain, "section_finished")
            self.end_chain(chain, True, text)
            return
        chain.block_index += 1

    def _apply_jump(self, chain: Chain, target: str) -> None:
        if not self.host.read_back_var(chain):
            return
        origin = None if chain.in_h1 else chain.section.index
        try:
            index = resolve(self.prompt, origin, target)
        except HeadingError as e:
            self.fail_chain(chain, attrs.evolve(self.lua_failure(e.message), fatal_kind="Lua"))
            return
        self._teardown(chain)
        if chain.section is not None:
            self.emit(chain, "section_finished")
        was_h1 = chain.in_h1
        chain.section = None
        chain.in_h1 = False
        if was_h1:
            self.host.end_h1(chain)
            if chain.state != "running":
                return
            chain.frames = [Frame(self.prompt.top_level, self.prompt.top_level.index(index))]
            return
        frame = chain.frames[-1]
        if index in frame.siblings:
            frame.pos = frame.siblings.index(index)
        else:
            children = self.prompt.sections[origin].children
            chain.frames.append(Frame(children, children.index(index)))

    def scalar(self, value: Any) -> str | None:
        """The scalar return rule: the text a returned value stands for."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if value != value:
                return "NaN"
            if value in (float("inf"), float("-inf")):
                return "inf" if value > 0 else "-inf"
            if value.is_integer() and abs(value) < 1e16:
                return str(int(value))
            return repr(value)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return None

    # --------------------------------------------------------- failures
    def lua_failure(self, message: str, kind: str = "lua", **fields: str) -> Failure:
        value = self.lua.error(kind, message, **fields)
        return Failure(kind, message, tuple(sorted(fields.items())), value)

    def error_value(self, kind: str, message: str, chain: Chain | None = None, **fields: str):
        value = self.lua.error(kind, message, **fields)
        if chain is not None:
            self.lua.E.stamp(value, chain.suspends)
        return value

    def failure_of(self, value: Any) -> Failure:
        """A Lua value that left a block, as a Failure."""
        chain = self.current
        abort = self.lua.abort_value()
        if abort is not None:
            kind = "Internal" if self.lua.internal_error is not None else "Budget"
            return Failure("lua", _text(abort[b"message"]), (), abort, fatal_kind=kind)
        if self.lua.is_host_error(value):
            kind = _text(value[b"kind"])
            message = _text(value[b"message"])
            fields = []
            for key in ("task", "tasks", "name", "reason", "path", "finish_reason", "count"):
                v = value[key.encode()]
                if isinstance(v, bytes):
                    fields.append((key, _text(v)))
            stamp = self.lua.E.stamp_of(value)
            stale = chain is not None and stamp is not None and chain.suspends > stamp
            return Failure(kind, message, tuple(fields), value, stale=stale)
        if isinstance(value, bytes):
            message = self.map_position(_text(value))
        elif value is None:
            message = "nil"
        else:
            message = f"(error object is a {typename(value)} value)"
        return Failure(None, message, (), value)

    def map_position(self, message: str) -> str:
        m = _POSITION.search(message)
        if not m:
            return message
        return f"{m.group('loc')}:{m.group('line')}: {message}"

    def as_error_value(self, failure: Failure, receiver: Chain):
        """The error value `receiver` gets for a chain failure (through call, a
        wait or a fanout).  It is stamped with the receiver's suspending calls,
        so raising it right away counts as raising it fresh, and raising it
        after the receiver's next suspending call counts as raising it again."""
        if failure.kind is not None and failure.value is not None:
            value = failure.value
        else:
            value = self.lua.error("lua", failure.message)
        return self.lua.E.stamp(value, receiver.suspends)

    def _check_abort(self, chain: Chain) -> None:
        if self.lua.internal_error is not None:
            return      # _step reports it as Internal
        abort = self.lua.abort_value()
        if abort is not None and self.outcome is None:
            self._abort("Budget", _text(abort[b"message"]))

    # --------------------------------------------------------- chain ends
    def fail_chain(self, chain: Chain, failure: Failure) -> None:
        if failure.fatal_kind and self.outcome is None and chain is not self.root:
            # Uncatchable: the run ends whoever would have caught it.
            self.settle_owned(chain, endings.reason_for_failure(failure.kind))
            self._finish_run("failed", None, RunError(failure.fatal_kind, failure.message,
                                                      dict(failure.fields)))
            return
        self.end_chain(chain, False, failure)

    def end_chain(self, chain: Chain, ok: bool, value: Any) -> None:
        """A chain ends by itself: settle what it owns, then tell its starter."""
        if ok:
            leaked = endings.leaked(chain.owned)
            if leaked:
                id_list, message = endings.tasks_live([t.id for t in leaked])
                self.settle_owned(chain, AbandonReason.OWNER_RETURNED)
                self._close(chain)
                failure = self.failure_of(
                    self.error_value("tasks_live", message, chain, tasks=id_list))
                chain.failure = failure
                chain.on_end(chain, False, failure)
                return
            self.settle_owned(chain, AbandonReason.OWNER_RETURNED)
        else:
            self.settle_owned(chain, endings.reason_for_failure(value.kind))
        self._close(chain)
        if ok:
            chain.result = value
        else:
            chain.failure = value
        chain.on_end(chain, ok, value)

    def _close(self, chain: Chain) -> None:
        chain.state = "ended"
        chain.co = None
        chain.parked_on = None
        if chain in self.ready:
            self.ready.remove(chain)
        # A chain's end joins every task it owns.
        for task in chain.owned:
            self.tasks_api.joined(task)

    def settle_owned(self, chain: Chain, reason: AbandonReason) -> None:
        """Abandon every live task a chain owns, nested ones first."""
        for task in list(chain.owned):
            if task.live:
                self.tasks_api.abandon(task, reason)

    def stop_chain(self, chain: Chain) -> None:
        """Stop a chain from outside (cancel, abandon): its section never finishes."""
        if not chain.live:
            return
        callee = chain.callee
        if callee is not None:
            self.stop_chain(callee)
        self.tasks_api.drop_wait(chain)
        self.settle_owned(chain, endings.reason_when_stopped())
        self._teardown(chain)
        self._close(chain)

    def _root_ended(self, chain: Chain, ok: bool, value: Any) -> None:
        if ok:
            self._finish_run("ok", value if value is not None else "done", None)
            return
        outcome, error = classify(value, in_h1=chain.in_h1)
        self._finish_run(outcome, None, error)

    def _finish_run(self, outcome: str, result: str | None, error: RunError | None) -> None:
        if self.outcome is not None:
            return
        # Anything still live is stranded by the run's end.
        # Parents sort before their children, and abandoning a parent
        # abandons its children first as owner_aborted, so each task is
        # recorded exactly once.
        for task in sorted(self.tasks.values(), key=lambda t: ids.id_key(t.id)):
            if task.live:
                self.tasks_api.abandon(task, AbandonReason.RUN_TERMINATED)
        self.outcome = outcome
        self.result = result
        self.error = error
        if self.root is not None:
            self.emit(self.root, "run_succeeded" if outcome == "ok" else "run_failed",
                      section_override=self.prompt.title)
        self.trace.emit(self.kernel.now, "run_end", outcome=outcome,
                        error=error.kind if error else None)

    def _abort(self, kind: str, message: str) -> None:
        self._finish_run("failed", None, RunError(kind, message))

    def _host_cancel(self) -> None:
        self._finish_run("cancelled", None, RunError("Cancelled", "interrupted by Ctrl-C",
                                                     {"value_kind": "cancelled"}))

    def _deadlock(self) -> None:
        parked = []
        for chain in self._all_chains():
            if chain.live:
                parked.append(f"chain {chain.id} waits on {chain.blocked or 'nothing'}"
                              f"{self.models.parked_detail(chain)}")
        detail = "; ".join(parked) if parked else "no chain is live"
        self._abort("Deadlock", f"deadlock: every chain is parked and nothing is scheduled: {detail}")

    def _all_chains(self) -> list[Chain]:
        chains = [self.root]
        for task in sorted(self.tasks.values(), key=lambda t: ids.id_key(t.id)):
            if task.chain is not None:
                chains.append(task.chain)
        return chains

    # --------------------------------------------------------- harness ops
    def harness_op(self, chain: Chain, kind: str, blocked: str, finish, pinned: float | None = None,
                   detail: dict | None = None) -> Any:
        """Park `chain` on a harness operation that completes after a drawn duration.

        `finish()` runs at completion time, while the chain is still parked,
        and must make the chain ready (with its answer) or fail it.
        """
        token = object()
        delay = self.harness.latency.draw(self.chooser, kind, pinned)
        self.kernel.schedule(delay, COMPLETE, ("complete", chain, token, finish))
        self.trace.emit(self.kernel.now, "harness", chain=chain.id, op=kind,
                        duration=delay, **(detail or {}))
        return self.park(chain, blocked, token)

    def store_call(self, chain: Chain, op: str, path: str | None, run_op, direct: bool = False) -> Any:
        """Issue a store operation through the harness, with claims.

        `direct` performs it at once and returns the answer: the shared
        library's top level runs store calls directly, outside any wait.
        """
        if direct:
            return self._store_now(chain, op, path, run_op)
        if WRITES_LAND_LATE.on and op in ("write", "append"):
            delay = self.harness.latency.draw(self.chooser, "store") + 1
            self.kernel.schedule(delay, COMPLETE, ("late", run_op))
            return (True,)

        def finish() -> None:
            answer = self._store_now(chain, op, path, run_op)
            if answer is not PARK:
                self.make_ready(chain, answer)

        return self.harness_op(chain, "store", "store", finish, detail={"store": op, "path": path})

    def _store_now(self, chain: Chain, op: str, path: str | None, run_op) -> Any:
        """Perform a store operation: the resume tuple, or PARK when a claims
        conflict ended the run."""
        identity = chain.claim_identity
        claim = "write" if op in WRITES else "read"
        if path is not None:
            conflict = self.claims.conflict(identity, claim, path, self._exempt(chain))
            if conflict is not None:
                other, other_claim = conflict
                self._abort("Determinism", (
                    f"store determinism violation: {claim} on /_promptforge/store/{path} "
                    f"by ExecId({identity}) conflicts with a {other_claim} claim by "
                    f"ExecId({other})"))
                return PARK
        try:
            if self.harness.refuses(op, path):
                raise StoreFailure("store operation failed", "refused", path)
            value = run_op()
        except StoreFailure as f:
            self.emit(chain, f"store_{_event_op(op)}_failed")
            return (False, self.error_value("store", f.message, chain, **f.fields()))
        if path is not None:
            self.claims.take(identity, claim, path)
        if op == "glob":
            for p in value:
                self.claims.take(identity, "read", p)
        if op != "exists":
            self.emit(chain, f"store_{_event_op(op)}_succeeded")
        return (True, self.lua.to_lua(value)) if value is not None else (True,)

    def _exempt(self, chain: Chain):
        """Claims by a chain's owners taken before it was spawned are visible to it."""
        since: dict[str, int] = {}
        t = chain.task
        while t is not None and not t.is_main:
            owner = t.owner
            since.setdefault(owner.claim_identity, t.spawned_at_claim)
            t = owner.task
        # The walk sees the H1 pass's work: the H1 pass has ended.
        return lambda other, when: other in since and when <= since[other]

    # --------------------------------------------------------- events
    def emit(self, chain: Chain, kind: str, section_override: str | None = None,
             **fields: Any) -> None:
        task = chain.task
        record = {
            "kind": kind,
            "execution": self.config.execution,
            "section": section_override or chain.section_name,
            "provenance": {"task": task.id, "seq": task.seq},
        }
        task.seq += 1
        record.update(fields)
        self.events.append(record)

    def log(self, chain: Chain, message: str) -> None:
        self.logs.append(message)
        self.emit(chain, "lua", message=message)

    # --------------------------------------------------------- observation
    def observation(self) -> dict:
        tasks = {
            t.id: t.status_json()
            for t in sorted(self.tasks.values(), key=lambda t: ids.id_key(t.id))
        }
        return {
            "outcome": self.outcome,
            "result": self.result,
            "error": self.error.to_json() if self.error else None,
            "logs": list(self.logs),
            "events": list(self.events),
            "tasks": tasks,
            "messages": self.host.messages_json(),
            "store": self.harness.store.snapshot(),
            "virtual_time": ns_to_seconds(self.kernel.now),
            "trace_sha256": self.trace.sha256(),
        }


def _event_op(op: str) -> str:
    return "replace" if op == "str_replace" else op


def run_prompt(prompt: Prompt, harness: Harness | None = None, chooser: Chooser | None = None,
               config: RunConfig | None = None) -> Run:
    return Run(prompt, harness, chooser, config).execute()


def observation_json(obs: dict) -> str:
    return json.dumps(obs, sort_keys=True, ensure_ascii=False, indent=None, separators=(",", ":"))


__all__ = ["Run", "RunConfig", "observation_json", "run_prompt"]
