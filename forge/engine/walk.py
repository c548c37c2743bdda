"""The walk: how a chain goes through sections and blocks, how it fails and
ends, and how the run ends.

The kernel (`forge.engine.kernel`) steps chains; between steps it asks the
walk what a chain does next: start its next block (entering sections as the
walk says: the H1 pass, then the top level in order, into children by jump,
up a level when one runs out), finish a block (the scalar return rule, a
jump, a failure), and end a chain (settle what it owns with the abandon
reason its end gives, `rules.endings`, then tell whoever started it).  A
failure the chain cannot catch (a budget, a library that fails to load) ends
the run; the run's end strands what is still live as `run_terminated`.

What lives here: the walk, a block's end, failure values and error values,
chain ends, the run's end and the run-wide budgets checked between steps.
What does not: the loop and chain states (`kernel`), what a suspending call
does (the parts), harness operations (`effects`), events and the
observation (`observation`), putting a run together (`run`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from forge.engine.failures import Failure, RunError, classify
from forge.engine.quotas import KeptQuota
from forge.engine.requests import Request
from forge.engine.rules import endings, ids
from forge.engine.rules.endings import OwnerEnd
from forge.engine.state import Chain, Frame
from forge.lua.runtime import ending_kind, results, text, typename
from forge.prompt.headings import HeadingError, resolve
from forge.sim.kernel import FAULT, seconds_to_ns
from forge.variation import declare

if TYPE_CHECKING:
    from forge.engine.context import Context
    from forge.engine.effects import Effects
    from forge.engine.host import Host
    from forge.engine.models import ModelsAPI
    from forge.engine.tasks import TasksAPI

TASK_RUNS_TARGET_ONLY = declare("walk.task-runs-target-only", "walk",
                                "a task or fanout arm runs its target section only and never "
                                "falls through to the following siblings")

_POSITION = re.compile(r'\[string "(?P<loc>[^"]*)"\]:(?P<line>\d+):')


class Walk:
    """The walk of every chain of one run, and how the run ends."""

    def __init__(self, ctx: Context, kept: KeptQuota) -> None:
        self.prompt = ctx.prompt
        self.config = ctx.config
        self.harness = ctx.harness
        self.lua = ctx.lua
        self.clock = ctx.clock
        self.trace = ctx.trace
        self.scheduler = ctx.scheduler
        self.tasks = ctx.tasks
        self.main_task = ctx.main_task
        self.observer = ctx.events
        self.kept = kept
        #: The parts the walk drives, handed over by the composition root.
        self.host: Host = None      # type: ignore[assignment]
        self.models: ModelsAPI = None      # type: ignore[assignment]
        self.tasks_api: TasksAPI = None      # type: ignore[assignment]
        self.effects: Effects = None      # type: ignore[assignment]
        self.root: Chain | None = None
        self.outcome: str | None = None
        #: Set while the run's end strands what is still live: no chain
        #: resumes from then on, so a waiter is not handed a stranded member.
        self.ending = False
        self.result: str | None = None
        self.error: RunError | None = None
        #: Section entries made so far (bounded by `max_entries`).
        self.entries = 0

    # ------------------------------------------------------------ the start
    def start(self) -> None:
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
        self.observer.emit(root, "run_started", section_override=self.prompt.title)
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
            frame = chain.frames[-1]
            self.enter_section(chain, frame.siblings[frame.pos])
            if chain.state != "running":
                return
        if chain.block_index < len(chain.blocks):
            block = chain.blocks[chain.block_index]
            chain.current_block = block
            self.observer.emit(chain, "lua_chunk_started")
            chain.co = self.lua.block_coroutine(block.chunk, block.chunkname, chain.env)
            return
        self._section_finished(chain)

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
            self.observer.emit(chain, "section_started")
        self._load_library(chain)

    def _load_library(self, chain: Chain) -> None:
        """Every section VM replays the shared library first (an empty one too)."""
        shared = self.prompt.shared
        if shared is None:
            self.observer.emit_pair(chain, "lua_shared_load_started", "lua_shared_load_succeeded")
            return
        self.observer.emit(chain, "lua_shared_load_started")
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
            self.observer.emit(chain, "lua_shared_load_succeeded")
            return
        self.observer.emit(chain, "lua_shared_load_failed")
        # A library that fails to load ends the run as Lua, even in the H1 pass.
        self.fail_chain(chain, attrs.evolve(failure, fatal_kind=failure.fatal_kind or "Lua"))

    def _teardown(self, chain: Chain) -> None:
        """The section VM goes away: one teardown pair per VM, however it ends."""
        if chain.vm_open:
            chain.vm_open = False
            self.observer.emit_pair(chain, "lua_teardown_started", "lua_teardown_succeeded")

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
        self.observer.emit(chain, "section_finished")
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
            self.observer.emit(chain, "lua_chunk_succeeded")
            self._apply_jump(chain, target)
            return
        ok = bool(result[0])
        if not ok:
            self.observer.emit(chain, "lua_chunk_failed")
            self._teardown(chain)
            self.fail_chain(chain, self.failure_of(result[1] if len(result) > 1 else None))
            return
        self.observer.emit(chain, "lua_chunk_succeeded")
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
                self.observer.emit(chain, "section_finished")
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
            self.observer.emit(chain, "section_finished")
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
        if isinstance(value, bytes):        # the common case first (types are disjoint)
            return value.decode("utf-8", "replace")
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
            kind = ("Internal" if self.lua.internal_error is not None
                    else ending_kind(abort))
            return Failure("lua", text(abort[b"message"]), (), abort, fatal_kind=kind)  # lua: own table
        if value == b"not enough memory":
            # Lua's own memory error, raised where no pcall caught it (the
            # sandbox's pcall turns it into the abort above): the same Budget.
            return Failure("lua", "not enough memory: the run exceeded its Lua memory limit", (),
                           None, fatal_kind="Budget")
        raw = value[b"message"] if self.lua.fn.is_host_error(value) else value  # lua: own table
        if isinstance(raw, bytes):
            over = self.kept_failure(len(raw), f"an error message of {len(raw):,} bytes")
            if over:
                return over
        if self.lua.fn.is_host_error(value):
            kind = text(value[b"kind"])  # lua: own table (a host error)
            message = text(raw)
            fields = []
            for key in ("task", "tasks", "name", "reason", "path", "finish_reason", "count"):
                v = value[key.encode()]  # lua: own table (a host error)
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
            self.abort(ending_kind(abort), text(abort[b"message"]))  # lua: own table

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
            leaked = endings.leaked(chain.owned) if chain.owned else ()
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
        if not chain.owned:
            return
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
            self.observer.emit(self.root, "run_succeeded" if outcome == "ok" else "run_failed",
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

    # --------------------------------------------------------- effects
    def stop_rounds(self) -> None:
        """The model script's round stop (`forge.scripts`, `stop_at`)."""
        self.models.stop_rounds()

    def answer_dropped(self, request: Request) -> None:
        """A harness answer arrived for a chain that no longer waits on it."""
        self.effects.answer_dropped(request)
