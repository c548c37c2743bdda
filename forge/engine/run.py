"""A run: the root chain, every chain it starts, and the walk they take.

A run owns the prompt, the harness, the chooser, the virtual clock and the
trace; it builds the root chain, hands the loop to the kernel
(`forge.engine.kernel`), and answers what the kernel asks while it steps a
chain: start the next block (entering sections as the walk says), finish a
block (the scalar return rule, jump, a failure), and end a chain.

What lives here: the walk (sections, blocks, jump, the H1 pass's hand-over,
the scalar return rule), how a chain ends and what it settles, harness
operations and the store calls behind them, events, the observation, and
the run's host library put together from its parts (`host`, `tasks`,
`models`).
What does not: the loop and the chain states (`kernel`), the requests a chain
parks on (`requests`), the tasks namespace (`tasks`), the section VM globals
(`host`), and the rules (`rules/`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs

from forge.engine import collection, fanout, host, library, models, tasks
from forge.engine.roles import RolesAPI
from forge.engine.tools import ToolsAPI
from forge.engine.context import Context
from forge.engine.state import Chain, Frame, Task
from forge.engine.failures import Failure, RunError, classify
from forge.engine.kernel import Scheduler
from forge.engine.parking import PARK
from forge.engine.quotas import DEFAULT_MAX_KEPT_BYTES, KeptQuota, data_size
from forge.engine.requests import Request, StoreOp
from forge.engine.rules import endings, ids
from forge.engine.rules.admission import Admission
from forge.engine.rules.endings import OwnerEnd
from forge.engine.claims import WRITES, Claims
from forge.store import StoreFailure, StoreQuota
from forge.errors import ForgeInternalError
from forge.harness import Harness
from forge.lua import runtime as lua_runtime
from forge.lua.runtime import (
    DEFAULT_MAX_INSTRUCTIONS,
    LuaError,
    results,
    text,
    typename,
)
from forge.prompt.headings import HeadingError, resolve
from forge.prompt.model import Prompt
from forge.variation import declare
from forge.sim.chooser import Chooser
from forge.sim.kernel import COMPLETE, FAULT, Kernel, ns_to_seconds, seconds_to_ns
from forge.sim.orders import CompletionOrder
from forge.sim.trace import Trace

#: Scheduling steps after which a run is declared runaway (a prompt that
#: spawns or waits forever without ever ending).
DEFAULT_MAX_STEPS = 200_000
#: Tasks one run may start; breadth is otherwise unbounded (depth is capped at 8).
DEFAULT_MAX_TASKS = 10_000
#: Section entries one run may make (an endless jump loop runs no Lua loop).
DEFAULT_MAX_ENTRIES = 50_000
#: `log` checkpoints, and their UTF-8 bytes, one run may record in all.  The
#: spec's quotas are per section VM; with up to `DEFAULT_MAX_TASKS` VMs they
#: would allow gigabytes, so the kit bounds the run as a whole too.
DEFAULT_MAX_LOGS = 100_000
DEFAULT_MAX_LOG_BYTES = 16 * 1024 * 1024
#: What one list entry costs in Lua's heap beyond its text, at most: a string
#: header and a table slot (used to check room before handing Lua a list).
LUA_ENTRY_BYTES = 64


TASK_RUNS_TARGET_ONLY = declare("walk.task-runs-target-only", "walk",
                                "a task or fanout arm runs its target section only and never "
                                "falls through to the following siblings")
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
    max_logs: int = DEFAULT_MAX_LOGS
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    max_kept_bytes: int = DEFAULT_MAX_KEPT_BYTES
    execution: str = "run-1"
    seed: int = 0


_DEFAULT_CONFIG = RunConfig()     # frozen: one serves every run given none



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
        self.config = config or _DEFAULT_CONFIG
        self.execution = self.config.execution
        self.clock = Kernel()
        self.trace = Trace()
        # A runtime reused across runs unless the prompt names weak tables
        # (`forge.lua.runtime` says why).
        reuse = lua_runtime.WEAK_MODE not in prompt.words
        self.lua = lua_runtime.acquire(self.config.max_instructions, self.config.seed, reuse)
        self._random_untouched: bool | None = None
        self._executed = False
        self.claims = Claims()
        self.logs: list[str] = []
        self.log_bytes = 0
        self.kept = KeptQuota(self.config.max_kept_bytes)
        #: Events as (kind, section, task id, seq, fields) tuples: the dicts
        #: the observation shows are built when read (`events`).
        self._events: list[tuple] = []
        self._event_dicts: list[dict] = []
        self.tasks: dict[str, Any] = {}          # id -> Task, every task of the run
        #: Every harness operation issued, in order, with how it ended:
        #: the observation's `effects`.
        self.effects: list[dict] = []
        #: The effect of each request still to be answered (requests compare by identity).
        self._effect_of: dict = {}
        #: The completion timer of each request still to be answered (`drop_op`).
        self._timer_of: dict = {}
        self.outcome: str | None = None
        #: Set while the run's end strands what is still live: no chain
        #: resumes from then on, so a waiter is not handed a stranded member.
        self.ending = False
        self.result: str | None = None
        self.error: RunError | None = None
        self.entries = 0
        self._nonce: str | None = None
        #: The parts by type, as the library's routes and the kernel find them.
        self.parts: library.Parts = {}
        self.scheduler = Scheduler(self, self.clock, self.chooser, self.trace,
                                   library.SUSPENDING, self.parts, self.config.max_steps)
        self.scheduler.cancel_step = self.harness.cancel_step
        self.admission = Admission(self.scheduler, self.harness.ceiling)
        self.main_task = Task.main(prompt.title)
        # What the parts may use; the run itself serves the five narrow
        # services for now (its errors, budget, events, chain ends, effects).
        self.ctx = Context(prompt=prompt, config=self.config, harness=self.harness, lua=self.lua,
                           clock=self.clock, trace=self.trace, claims=self.claims,
                           scheduler=self.scheduler, admission=self.admission, tasks=self.tasks,
                           main_task=self.main_task, errors=self, budget=self, events=self,
                           chains=self, effects=self, nonce=lambda: self.nonce)
        self.tasks_api = tasks.TasksAPI(self.ctx)
        self.models = models.ModelsAPI(self.ctx)
        self.fanout = fanout.Fanout(self.ctx)
        self.parts.update({tasks.TasksAPI: self.tasks_api, fanout.Fanout: self.fanout,
                           models.ModelsAPI: self.models})
        if self.models.needed():
            self.parts[ToolsAPI] = self.models.tools
            self.parts[RolesAPI] = self.models.roles
        self.host = host.Host(self.ctx, library.LIBRARY_WITH_MODELS if self.models.needed()
                              else library.LIBRARY, self.parts)
        self.parts[host.Host] = self.host
        # The parts that call one another, handed to each other.
        self.tasks_api.host = self.fanout.host = self.models.host = self.host
        self.tasks_api.fanout = self.fanout
        self.fanout.tasks = self.models.tasks_api = self.tasks_api
        self.host.models = self.models
        if self.harness.latency.orders:
            self.clock.orders = CompletionOrder(self.chooser, self.trace.records, self._events,
                                                lambda: not self.seed_independent())
        self.root: Chain | None = None

    # ------------------------------------------------------------------ API
    def execute(self) -> Run:
        """Run to the end and return self (read `observation()`).  A run
        executes once: its runtime has gone back and its parts have let go."""
        if self._executed:
            raise RuntimeError("Run.execute: this run has already executed; build a new Run "
                               "(run_prompt) to run the prompt again")
        self._executed = True
        ended = False
        try:
            with collection.deferred():
                self._start()
                if self.outcome is None:
                    self.scheduler.loop()
            ended = True
        except ForgeInternalError:
            raise
        except LuaError as e:  # pragma: no cover - a bug in the bridge
            raise ForgeInternalError(f"internal error in the engine: {e}") from e
        finally:
            self._release(ended)
        if ended:
            self._let_go()
        return self

    def _release(self, ended: bool) -> None:
        """The runtime's slots let go of the run, and a reused runtime goes
        back for the next run (given up if the run did not end normally):
        what this run still asks of Lua afterwards (`seed_independent`) is
        read first."""
        if self.lua.reusable and ended and self.lua.internal_error is None:
            self._random_untouched = bool(self.lua.fn.random_untouched())
        lua_runtime.release(self.lua, keep=ended)

    def _let_go(self) -> None:
        """The run has ended: its parts let go of it, so that once its
        caller drops it, reference counting frees it at once instead of
        leaving the whole graph to Python's cyclic collector (about a tenth
        of a small run's cost).  What a finished run is read for - its
        observation, tasks, trace, effects and the parts' own records - is
        data the parts hold, not reached through these back-references; a
        test holds every example and conformance case to this."""
        self.models.let_go()
        self.tasks_api.let_go()
        self.fanout.let_go()
        self.host.ctx = self.host.models = None
        self.ctx.let_go()
        self.scheduler.walk = None
        self.parts.clear()
        # What never fires now: timers and answers still pending, whose
        # events hold the chains and the run.
        self.clock.drop_pending()
        self.clock.orders = None
        # Tasks keep their chains (an ended task's status reads nothing
        # else); chains let go of the run, of the tasks they belong to, own
        # or wait on, and of their section's model state.  A call's chain is
        # reached as the owner, parent or callee of one of these.
        chains = [self.root]
        for task in (self.main_task, *self.tasks.values()):
            task.model_owner = None
            chains += (task.chain, task.owner)
        while chains:
            chain = chains.pop()
            if chain is None or chain.task is None:     # none, or let go already
                continue
            chains += (chain.parent, chain.callee)
            chain.on_end = chain.task = chain.section_state = None
            chain.parked_on = None
            chain.owned = []

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
            self.clock.schedule(seconds_to_ns(self.harness.cancel_at), FAULT, ("host_cancel",))
        if self.harness.model is not None and self.harness.model.stop_at is not None:
            self.clock.schedule(seconds_to_ns(self.harness.model.stop_at), FAULT, ("round_stop",))
        root = Chain(
            title=self.prompt.title,
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
            self.scheduler.make_ready(root, None)

    # ------------------------------------------------ what the kernel asks
    @property
    def current(self) -> Chain | None:
        """The chain being stepped, if any."""
        return self.scheduler.current

    def check_resources(self) -> bool:
        """Between steps: is there Lua memory left to go on?"""
        if self.lua.memory_tight():
            self.abort("Budget", "Lua memory exhausted: the run holds more than "
                                 f"{self.lua.max_memory // 2**20} MiB of Lua state")
            return False
        return True

    def room_for(self, nbytes: int, what: str) -> bool:
        """Whether Lua has room for `nbytes` more that the engine is about to
        hand it (`what`); if not, the run ends as Budget before the allocation
        that would abort the process."""
        if not self.lua.memory_tight(nbytes):
            return True
        self.abort("Budget", f"Lua memory exhausted: {what} ({nbytes:,} bytes) would take the "
                             f"run past {self.lua.max_memory // 2**20} MiB of Lua state")
        return False

    def keep(self, nbytes: int, what: str) -> bool:
        """Whether the run may keep `nbytes` more of the prompt's values for
        `what` (`forge.engine.quotas`); if not, the run ends as Budget.  For a
        host function, which then returns an error the run never resumes."""
        message = self.kept.take(nbytes, what)
        if message is None:
            return True
        self.abort("Budget", message)
        # No pcall around the host function keeps the block going.
        self.lua.fn.abort_with(self.lua.error("lua", message))
        return False

    def kept_failure(self, nbytes: int, what: str) -> Failure | None:
        """As `keep`, for a value leaving a block: None within the quota,
        else the failure that ends the run as Budget whoever would catch it."""
        message = self.kept.take(nbytes, what)
        return None if message is None else Failure("lua", message, (), None, fatal_kind="Budget")

    def internal_error(self) -> BaseException | None:
        return self.lua.internal_error

    def note_internal_error(self, error: BaseException) -> None:
        self.lua.internal_error = self.lua.internal_error or error

    def live_chains(self) -> list[Chain]:
        return [c for c in self._all_chains() if c.live]

    def parked_detail(self, chain: Chain) -> str:
        return self.models.parked_detail(chain)

    # --------------------------------------------------------- the walk
    def next_block(self, chain: Chain) -> None:
        """Start the chain's next block, entering sections as the walk says."""
        if chain.section is None and not chain.in_h1:
            if not chain.frames:
                # Nothing to walk: a prompt that is only an H1 (with no H1
                # pass, or one that handed over to an empty walk).
                self.end_chain(chain, True, None)
                return
            self._enter_current(chain)
            if chain.state != "running":
                return
        if chain.block_index < len(chain.blocks):
            block = chain.blocks[chain.block_index]
            chain.current_block = block
            self.host.reset_prose(chain)
            self.emit(chain, "lua_chunk_started")
            chain.co = self.lua.block_coroutine(block.chunk, block.chunkname, chain.env)
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
            self.abort("Budget", f"section entry budget exhausted: the run entered more than "
                                  f"{self.config.max_entries:,} sections (an endless jump loop?)")
            self.scheduler.end(chain)
            return
        chain.section = section
        chain.in_h1 = index is None
        entry = ids.enter_section(chain)
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
        previous, self.scheduler.current = self.scheduler.current, chain
        chain.loading_library = True
        try:
            result = results(self.lua.load_library(shared.chunk, shared.chunkname, chain.env))
        finally:
            chain.loading_library = False
            self.scheduler.current = previous
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
        """The section ended without returning: on to the next sibling, or up a
        level when this one ran out.  Every walk does this, a task's included."""
        while chain.frames:
            frame = chain.frames[-1]
            frame.pos += 1
            at_task_level = chain.kind == "task" and len(chain.frames) == 1
            if frame.pos < len(frame.siblings) and not (TASK_RUNS_TARGET_ONLY.on and at_task_level):
                return
            chain.frames.pop()
        self.end_chain(chain, True, None)

    def block_done(self, chain: Chain, result: tuple) -> None:
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
            over = isinstance(value, bytes) and self.kept_failure(
                len(value), f"a result of {len(value):,} bytes from task {chain.id}")
            if over:
                self.fail_chain(chain, over)
                return
            returned = self.scalar(value)
            if returned is None:
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
            self.end_chain(chain, True, returned)
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
        if chain is not None:
            return self.lua.stamped_error(kind, message, chain.suspends, **fields)
        return self.lua.error(kind, message, **fields)

    def failure_of(self, value: Any) -> Failure:
        """A Lua value that left a block, as a Failure."""
        chain = self.current
        abort = self.lua.fn.abort_value()
        if abort is not None:
            kind = "Internal" if self.lua.internal_error is not None else "Budget"
            return Failure("lua", text(abort[b"message"]), (), abort, fatal_kind=kind)
        if value == b"not enough memory":
            # Lua's own memory error, raised where no pcall caught it (the
            # sandbox's pcall turns it into the abort above): the same Budget.
            return Failure("lua", "not enough memory: the run exceeded its Lua memory limit", (),
                           None, fatal_kind="Budget")
        raw = value[b"message"] if self.lua.fn.is_host_error(value) else value
        if isinstance(raw, bytes):
            over = self.kept_failure(len(raw), f"an error message of {len(raw):,} bytes")
            if over:
                return over
        if self.lua.fn.is_host_error(value):
            kind = text(value[b"kind"])
            message = text(raw)
            fields = []
            for key in ("task", "tasks", "name", "reason", "path", "finish_reason", "count"):
                v = value[key.encode()]
                if isinstance(v, bytes):
                    fields.append((key, text(v)))
            stamp = self.lua.fn.stamp_of(value)
            stale = chain is not None and stamp is not None and chain.suspends > stamp
            return Failure(kind, message, tuple(fields), value, stale=stale)
        if isinstance(value, bytes):
            message = self.map_position(text(value))
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
        return self.lua.fn.stamp(value, receiver.suspends)

    def _check_abort(self, chain: Chain) -> None:
        if self.lua.internal_error is not None:
            return      # _step reports it as Internal
        abort = self.lua.fn.abort_value()
        if abort is not None and self.outcome is None:
            self.abort("Budget", text(abort[b"message"]))

    # --------------------------------------------------------- chain ends
    def fail_chain(self, chain: Chain, failure: Failure) -> None:
        if failure.fatal_kind and self.outcome is None and chain is not self.root:
            # Uncatchable: the run ends whoever would have caught it.
            self.settle_owned(chain, OwnerEnd.FAILED, failure.kind)
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
                self.settle_owned(chain, OwnerEnd.RETURNED)
                self._close(chain)
                failure = self.failure_of(
                    self.error_value("tasks_live", message, chain, tasks=id_list))
                chain.failure = failure
                chain.on_end(chain, False, failure)
                return
            self.settle_owned(chain, OwnerEnd.RETURNED)
        else:
            self.settle_owned(chain, OwnerEnd.FAILED, value.kind)
        self._close(chain)
        if ok:
            chain.result = value
        else:
            chain.failure = value
        chain.on_end(chain, ok, value)

    def _close(self, chain: Chain) -> None:
        self.scheduler.end(chain)
        self.host.forget(chain)
        # A chain's end joins every task it owns.
        for task in chain.owned:
            self.tasks_api.joined(task)

    def settle_owned(self, chain: Chain, end: OwnerEnd, failure_kind: str | None = None) -> None:
        """Abandon every live task a chain owns, nested ones first, with the
        reason its way of ending gives (`endings.abandon_reason`)."""
        reason = endings.abandon_reason(end, failure_kind)
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
        self.tasks_api.unregister(chain)
        self.settle_owned(chain, OwnerEnd.STOPPED)
        self._teardown(chain)
        self._close(chain)

    def _root_ended(self, chain: Chain, ok: bool, value: Any) -> None:
        if ok:
            self._finish_run("ok", value if value is not None else "done", None)
            return
        outcome, error = classify(value, in_h1=chain.in_h1)
        self._finish_run(outcome, None, error)

    def _finish_run(self, outcome: str, result: str | None, error: RunError | None) -> None:
        if self.outcome is not None or self.ending:
            return
        self.ending = True
        # Anything still live is stranded by the run's end.
        # Parents sort before their children, and abandoning a parent
        # abandons its children first as owner_aborted, so each task is
        # recorded exactly once.
        run_ended = endings.abandon_reason(OwnerEnd.RUN_ENDED)
        for task in sorted(self.tasks.values(), key=lambda t: ids.id_key(t.id)):
            if task.live:
                self.tasks_api.abandon(task, run_ended)
        self.outcome = outcome
        self.result = result
        self.error = error
        if self.root is not None:
            self.emit(self.root, "run_succeeded" if outcome == "ok" else "run_failed",
                      section_override=self.prompt.title)
        self.trace.emit(self.clock.now, "run_end", outcome=outcome,
                        error=error.kind if error else None)

    def abort(self, kind: str, message: str) -> None:
        self._finish_run("failed", None, RunError(kind, message))

    def host_cancel(self) -> None:
        self._finish_run("cancelled", None, RunError("Cancelled", "interrupted by Ctrl-C",
                                                     {"value_kind": "cancelled"}))

    def _all_chains(self) -> list[Chain]:
        chains = [self.root]
        for task in sorted(self.tasks.values(), key=lambda t: ids.id_key(t.id)):
            if task.chain is not None:
                chains.append(task.chain)
        return chains

    # --------------------------------------------------------- harness ops
    def harness_op(self, chain: Chain, kind: str, request: Request, finish,
                   pinned: float | None = None, detail: dict | None = None) -> Any:
        """Park `chain` on a harness operation that completes after a drawn duration.

        `finish()` runs at completion time, while the chain is still parked
        on `request`, and must make the chain ready (with its answer) or fail it.
        """
        delay = self.harness.latency.draw(self.chooser, kind, pinned, self.clock)
        effect = self._issue(chain, kind, request, detail)
        effect["due"] = ns_to_seconds(self.clock.now + delay)

        def answered() -> None:
            done = self._effect_of.pop(request)
            done["answer"] = "answered"
            # In orders mode a completion may fire before or after its due instant.
            done["due"] = ns_to_seconds(self.clock.now)
            del self._timer_of[request]
            finish()

        path = (detail or {}).get("path")
        free = None if pinned is not None else (
            f"{chain.id}#{chain.suspends} {kind}" + (f" {path}" if path is not None else ""),
            frozenset({f"chain:{chain.id}", f"task:{chain.task.id}",
                       f"path:{path}" if kind == "store" and path is not None else
                       ("path:*" if kind == "store" else "*")}))
        self._timer_of[request] = self.clock.schedule(delay, COMPLETE,
                                                      ("complete", chain, request, answered), free)
        self.trace.emit(self.clock.now, "harness", chain=chain.id, op=kind,
                        duration=delay, **(detail or {}))
        return self.scheduler.park(chain, request)

    def never_answered_op(self, chain: Chain, kind: str, request: Request,
                          detail: dict | None = None) -> Any:
        """Park `chain` on a harness operation the host never answers."""
        self._issue(chain, kind, request, detail)["answer"] = "never"
        self._effect_of.pop(request)
        self.trace.emit(self.clock.now, "harness_unanswered", chain=chain.id, op=kind,
                        **(detail or {}))
        return self.scheduler.park(chain, request)

    def _issue(self, chain: Chain, kind: str, request: Request, detail: dict | None) -> dict:
        effect = {"op": kind, "chain": chain.id, "task": chain.task.id,
                  "issued": ns_to_seconds(self.clock.now), "answer": "pending", **(detail or {})}
        self.effects.append(effect)
        self._effect_of[request] = effect
        return effect

    def drop_op(self, request: Request) -> bool:
        """The harness drops an operation in flight: its answer never comes
        (its completion timer is cancelled) and its effect reads `dropped`.
        False when it is no longer in flight."""
        timer = self._timer_of.pop(request, None)
        if timer is None:
            return False
        self.clock.cancel(timer)
        effect = self._effect_of.pop(request)
        effect["answer"] = "dropped"
        effect["dropped_at"] = ns_to_seconds(self.clock.now)
        return True

    def stop_rounds(self) -> None:
        """The model script's round stop (`forge.scripts`, `stop_at`)."""
        self.models.stop_rounds()

    def answer_dropped(self, request: Request) -> None:
        """A harness answer arrived for a chain that no longer waits on it."""
        self._timer_of.pop(request, None)
        effect = self._effect_of.pop(request, None)
        if effect is not None:
            effect["answer"] = "dropped"

    def store_call(self, chain: Chain, op: str, path: str | None, run_op, direct: bool = False) -> Any:
        """Issue a store operation through the harness, with claims.

        `direct` performs it at once and returns the answer: the shared
        library's top level runs store calls directly, outside any wait.
        """
        if direct:
            return self._store_now(chain, op, path, run_op)
        if WRITES_LAND_LATE.on and op in ("write", "append"):
            delay = self.harness.latency.draw(self.chooser, "store", clock=self.clock) + 1
            self.clock.schedule(delay, COMPLETE, ("late", run_op))
            return (True,)

        def finish() -> None:
            answer = self._store_now(chain, op, path, run_op)
            if answer is not PARK:
                self.scheduler.make_ready(chain, answer)

        return self.harness_op(chain, "store", StoreOp(op, path), finish,
                               detail={"store": op, "path": path})

    def _store_now(self, chain: Chain, op: str, path: str | None, run_op) -> Any:
        """Perform a store operation: the resume tuple, or PARK when a claims
        conflict ended the run."""
        identity = chain.claim_identity
        claim = "write" if op in WRITES else "read"
        if path is not None:
            conflict = self.claims.conflict(identity, claim, path, self._exempt(chain))
            if conflict is not None:
                other, other_claim = conflict
                self.abort("Determinism", (
                    f"store determinism violation: {claim} on /_promptforge/store/{path} "
                    f"by ExecId({identity}) conflicts with a {other_claim} claim by "
                    f"ExecId({other})"))
                return PARK
        try:
            if self.harness.refuses(op, path):
                raise StoreFailure("store operation failed", "refused", path)
            value = run_op()
        except StoreQuota as q:
            self.abort("Budget", str(q))
            return PARK
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
        if value is None:
            return (True,)
        if not self.room_for(data_size(value, LUA_ENTRY_BYTES), f"the store's answer to {op}"):
            return PARK
        return (True, self.lua.to_lua(value))

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

    @property
    def nonce(self) -> str:
        """The run's nonce, derived from its seed (built when first read, so
        `seed_independent` can tell whether anything read it)."""
        if self._nonce is None:
            self._nonce = hashlib.sha256(f"forge-nonce:{self.config.seed}".encode()).hexdigest()[:32]
        return self._nonce

    def seed_independent(self) -> bool:
        """Whether the seed reached nothing this run did: it never read the
        nonce, and Lua's generator is where the seed put it (nothing drew
        from it or reseeded it).  Then the same prompt, harness and choices
        under another seed give this very run - what lets a runner skip
        repeating it.  Call it once, after the run: it moves the generator."""
        if self._random_untouched is None:
            self._random_untouched = bool(self.lua.fn.random_untouched())
        return self._nonce is None and self._random_untouched

    # --------------------------------------------------------- events
    def emit(self, chain: Chain, kind: str, section_override: str | None = None,
             **fields: Any) -> None:
        task = chain.task
        self._events.append((kind, section_override or chain.section_name, task.id, task.seq,
                             fields))
        task.seq += 1

    @property
    def events(self) -> list[dict]:
        """Every event so far, as the observation shows it."""
        built, execution = self._event_dicts, self.execution
        for kind, section, task, seq, fields in self._events[len(built):]:
            built.append({"kind": kind, "execution": execution, "section": section,
                          "provenance": {"task": task, "seq": seq}, **fields})
        return built

    def log(self, chain: Chain, message: str, nbytes: int) -> bool:
        """Record a checkpoint; False (the run ended as Budget) past the
        run-wide log budget."""
        self.log_bytes += nbytes
        if len(self.logs) >= self.config.max_logs or self.log_bytes > self.config.max_log_bytes:
            self.abort("Budget", f"log budget exhausted: the run logged more than "
                                 f"{self.config.max_logs:,} checkpoints or "
                                 f"{self.config.max_log_bytes:,} bytes")
            return False
        self.logs.append(message)
        self.emit(chain, "lua", message=message)
        return True

    # --------------------------------------------------------- observation
    def observation(self) -> dict:
        # Built from the run's live graph: a full pass of the collector now
        # would find nothing to free (`collection`).
        with collection.deferred():
            return self._observation()

    def _observation(self) -> dict:
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
            "messages": self.models.messages_json(),
            "rounds": self.models.rounds_json(),
            "effects": [dict(e) for e in self.effects],
            "store": self.harness.store.snapshot(),
            "virtual_time": ns_to_seconds(self.clock.now),
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
