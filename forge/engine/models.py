"""Models, conversations and operator input, on the scripted model harness.

What lives here: `models.infer` and `models.loop`, `messages.new()` lists, `compactors`, `input.ask()`/`input.connected()`, keeping the per-section-entry
state (`SectionState`, whose records are `modelside`'s), and the `models.loop` state machine: every round
gathers the section's task notices, checks the list, offers the section's
tools, takes its reply from the model script on the virtual clock, and runs
the model's tool calls in order (task built-ins, bound tools, local tool
handlers) before
appending the batch.  It also keeps the round log (each round's tools
and the records it sent) and the message lists the `--json` observation
shows, and carries out the model script's round stop (`stop_at`: the
rounds in flight fail, their answers and timers dropped).

What does not: model roles, handles and selection (`roles`), the `tools`
namespace (`tools`), the task built-ins and notices (`modeltasks`), checking
and measuring message lists (`conversation`), reading the script files
(`forge.scripts`).

A handler or compactor is Lua that must run inside the calling chain, so its
own suspending calls park the chain like any other.  The Lua side
(`forge/lua/models.lua`) is a trampoline: `models.loop` and `tools.call`
yield to the engine, which answers `done` (return this), `run` (call this
function here and report back with `models.handler_done`) or `continue`
(re-enter with `models.continue` after a round or a wait parked the chain).
Each section entry keeps a stack of such operations (`ops`), since a handler
may itself call `models.loop` or `tools.call`.

`models.loop` as a state machine (`LoopOp.phase`):

    send ──round sent, chain parks (blocked chat)──> reply
    reply ──text──> done                    reply ──tool calls──> calls
    calls ──built-in answered at once──> calls (next call)
    calls ──await_tasks parks (blocked tasks)──> await ──woken──> calls
    calls ──local tool──> handler (Lua runs it) ──handler_done──> calls
    calls ──bound tool──> tool (chain parks, blocked tool_call) ──reply──> calls
    calls ──batch appended──> send
    send ──overflow with a compactor──> compactor ──> (always raises)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from forge.engine.conversation import (
    check_list,
    checked_list,
    estimate_tokens,
    list_json,
    user_record,
)
from forge.engine.envelope import wrap
from forge.engine.failures import MISSING_MODEL, Failure
from forge.engine.modeltasks import ModelTasks
from forge.engine.letgo import let_go
from forge.engine.modelside import LocalTool, LoopOp, RoundCall, ScriptCallOp, SectionState
from forge.engine.roles import RolesAPI
from forge.engine.parking import PARK
from forge.engine.requests import ModelRound, OperatorQuestion
from forge.engine.tools import BUILTINS, JUMP_REFUSAL, ToolsAPI, debug_list
from forge.lua.runtime import LuaFunction, decode, typename
from forge.scripts import ROUND_STOP_MESSAGE, Reply, ScriptCursor, ScriptEntry

if TYPE_CHECKING:
    from forge.engine.state import Chain
    from forge.engine.context import Context
    from forge.engine.host import Host
    from forge.engine.tasks import TasksAPI


#: The round cap when the prompt sets no `max_tool_iterations`.
DEFAULT_ROUND_CAP = 24
UNAVAILABLE = "User input is unavailable in this host; continue without it."
CONTEXT_MESSAGES = {
    "precheck": "context exhausted: the request precheck overflowed the model's context window",
    "provider": ("context exhausted: the provider rejected the request as exceeding the model's "
                 "context window"),
}


def _stopped(entry: ScriptEntry) -> ScriptEntry:
    """`entry` answering with the round stop's backend failure instead."""
    return attrs.evolve(entry, where=f"{entry.where} (stopped)",
                        reply=Reply(fail=ROUND_STOP_MESSAGE))


def _t(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@attrs.frozen
class RoundRecord:
    """One round as it went out, for tests and the trace."""

    task: str
    section: str
    origin: str               # "chat" (models.loop) or "infer"
    records: int              # records in the list when the round was sent
    tools: tuple[str, ...]    # the tools offered, in order
    entry: str                # the script entry that answered it
    #: (name, description) of each tool offered, in order.
    described: tuple[tuple[str, str], ...] = ()
    #: Which of the section's lists in `messages` the round sent (None: infer).
    list_index: int | None = None
    #: The message records the round sent, as JSON data, taken when it was
    #: sent (the list may change afterwards); never mutated.
    sent: list = attrs.field(eq=False, factory=list)

    def to_json(self) -> dict:
        """The round as the observation's `rounds` shows it."""
        return {"task": self.task, "section": self.section, "origin": self.origin,
                "list": self.list_index, "records": self.records,
                "tools": [{"name": n, "description": d} for n, d in self.described],
                "entry": self.entry, "messages": self.sent}


def model_side_needed(prompt) -> bool:
    """Whether a run of `prompt` needs the model side (`ModelsAPI.GLOBALS`)."""
    return bool(prompt.roles or prompt.tools or prompt.models
                or not ModelsAPI.GLOBALS.isdisjoint(prompt.words))


@attrs.frozen
class LuaSide:
    """`forge/lua/models.lua` in one runtime, loaded once per runtime (it
    holds no state of a run), with the functions the engine calls."""

    infer: Any
    loop: Any
    new_list: Any
    call: Any
    append: Any
    truncate: Any
    calls_view: Any
    list_serial: Any


def lua_side(L: Any) -> LuaSide:
    side = L.engine_tables.get("models")
    if side is None:
        table = L.load_engine_chunk("models.lua")(L.E)
        RolesAPI.seal(table, L.keeper)
        side = L.engine_tables["models"] = LuaSide(*(
            table[f.name.encode()] for f in attrs.fields(LuaSide)))  # lua: own table
    return side


class ModelsAPI:
    """The run's model side: one per run, hooked in by `Run` and `Host`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lua = ctx.lua
        #: The parts model tasks start and check targets through (handed
        #: over by the composition root).
        self.tasks_api: TasksAPI = None      # type: ignore[assignment]
        self.host: Host = None      # type: ignore[assignment]
        harness = ctx.harness
        self.script = harness.model
        self.cursor = ScriptCursor(harness.model, harness.operator)
        self.known_tools: set[str] = set()
        self.lists: dict[int, tuple[str, Any]] = {}
        self.rounds: list[RoundRecord] = []
        #: Each model round in flight -> (its chain, how it fails when the
        #: script's `stop_at` stops it), in the order sent; kept only while
        #: a stop is still to come (None otherwise).
        self.in_flight: dict[ModelRound, tuple[Chain, Any]] | None = (
            {} if self.script is not None and self.script.stop_at is not None else None)
        self.asks = 0
        self.cap = ctx.prompt.max_tool_iterations or DEFAULT_ROUND_CAP
        #: Whether the prompt can reach the model side at all (`needed`);
        #: without it no code of a run reaches roles, tools or model tasks,
        #: so they are not built.
        self._needed = model_side_needed(ctx.prompt)
        if self._needed:
            self.roles = RolesAPI(self)
            self.tools = ToolsAPI(self)
            self.tasks = ModelTasks(self)
        #: The runtime's Lua side of the models (None: not `needed`).
        self.L: Any = lua_side(self.lua) if self._needed else None

    def let_go(self) -> None:
        """The run has ended: the model side lets go of it (`Run._let_go`)."""
        let_go(self, "ctx", "tasks_api", "host")
        if self._needed:
            for part in (self.tools, self.tasks):
                let_go(part, "ctx", "models")
            let_go(self.roles, "models")

    # ------------------------------------------------------------ hooks
    #: The globals of the model side: a prompt whose code and prose never
    #: name one of these (nor `_G`/`_ENV`, through which any global is
    #: reachable by a computed name) and declares no roles or tools cannot
    #: observe whether the model side is installed.
    GLOBALS = frozenset({"models", "messages", "compactors", "tools", "input", "_G", "_ENV"})

    def input_connected(self, *args):
        """`input.connected()`: whether an operator script answers."""
        return (True, self.cursor.operator is not None)

    def needed(self) -> bool:
        """Whether the run's host library needs the model side."""
        return self._needed

    def enter_section(self, chain: Chain) -> None:
        """A section entry starts: fresh selection, local tools, allowlist.

        Without the model side (`needed`) no code can reach a section state.
        """
        if self.L is None:
            return
        old = chain.section_state
        state = SectionState(self, chain, chain.section_name, chain.in_h1)
        if old is not None and old.is_h1 and not chain.in_h1:
            self.tasks.hand_over(old, state)
        chain.section_state = state
        self.roles.install_globals(chain.env)

    def messages_json(self) -> dict:
        """Each section's message lists (those given to models.loop), by section name."""
        out: dict[str, list] = {}
        for section, table in self.lists.values():
            out.setdefault(section, []).append(list_json(table))
        return out

    def rounds_json(self) -> list:
        """Every model round in the order sent: the observation's `rounds`."""
        return [r.to_json() for r in self.rounds]

    def jump_refusal(self, chain: Chain) -> str | None:
        state = chain.section_state
        return JUMP_REFUSAL if state is not None and state.handler_depth else None

    def parked_detail(self, chain: Chain) -> str:
        """Why a parked chain waits, for the deadlock report."""
        if isinstance(chain.parked_on, OperatorQuestion) and chain.parked_on.answer is None:
            operator = self.cursor.operator
            return (f" (input.ask() number {chain.parked_on.number}: the operator script "
                    f"{operator.source} has no answer left; it holds {len(operator.answers)})")
        return ""

    # ------------------------------------------------------------ helpers
    def err(self, message: str, kind: str = "lua", **fields: str):
        return (False, self.ctx.errors.error_value(kind, message, self.ctx.scheduler.current, **fields))

    def error_at(self, chain: Chain, message: str, kind: str = "lua", **fields: str):
        return (False, self.ctx.errors.error_value(kind, message, chain, **fields))

    def emit(self, chain: Chain, kind: str, **fields: Any) -> None:
        self.ctx.events.emit(chain, kind, **fields)

    def harness_failure(self, chain: Chain, message: str) -> tuple:
        """End the run: the harness itself cannot go on (a script ran out)."""
        self.ctx.chains.fail_chain(chain, Failure("internal", message, fatal_kind="Harness"))
        # The run is over; this value is never sent to the chain.
        return (True, b"done", None)

    def _command(self, fn: Any, arg: Any) -> tuple:
        cmd = self.lua.lua.table()
        cmd[b"fn"] = fn  # lua: own table
        cmd[b"arg"] = arg  # lua: own table
        return (True, b"run", cmd)

    def _take_entry(self, chain: Chain, state: SectionState,
                    latest: str = "") -> ScriptEntry | None:
        state.rounds_made += 1
        entry = self.cursor.take_round(state.name, state.rounds_made, latest)
        if entry is None:
            self.harness_failure(chain, self.cursor.no_round_message(
                state.name, state.rounds_made, chain.task.id))
        return entry

    def compactors_fail(self, tag=None, *rest):
        text = _t(tag) if isinstance(tag, bytes) else self.lua.tostring(tag)
        if text not in CONTEXT_MESSAGES or not isinstance(tag, bytes):
            return self.err(f'unknown overflow reason "{text}"; expected "precheck" or "provider"')
        return self.err(CONTEXT_MESSAGES[text], "context_exhausted", reason=text)

    # ------------------------------------------------------------ models.infer
    def infer(self, chain: Chain, count: int = 0, *args):
        args = args[:count]
        if count > 2:
            return self.err("models.infer takes (handle?, prompt)")
        pinned, prompt = None, None
        if count == 2:
            pinned = self.roles.handle_of(args[0])
            if pinned is None:
                kind = typename(args[0])
                suffix = "" if kind == "userdata" else f", got {kind}"
                return self.err(f"models.infer handle must be a model handle{suffix}")
            prompt = args[1]
        elif count == 1 and self.roles.handle_of(args[0]) is None:
            prompt = args[0]
        if not isinstance(prompt, bytes):
            return self.err(f"prompt must be a string, got {typename(prompt)}")
        if decode(prompt) is None:
            return self.err("prompt must be a valid UTF-8 string")
        state = chain.section_state
        if self.roles.round_model(state, pinned) is None:
            return self.err(f"{MISSING_MODEL}{state.name}", "internal")
        if len(prompt) // 4 + 4 > self.script.context:
            return self.err(CONTEXT_MESSAGES["precheck"], "context_exhausted", reason="precheck")
        entry = self._take_entry(chain, state, _t(prompt))
        if entry is None:
            return (True, b"")
        self._record_round(chain, RoundRecord(
            chain.task.id, state.name, "infer", 1, (), entry.where,
            sent=[{"role": "user", "content": _t(prompt)}]))
        request = ModelRound("infer", entry.where)
        if self.in_flight is not None:
            self.in_flight[request] = (chain, lambda: self._inferred(chain, _stopped(entry)))
        return self.ctx.effects.harness_op(chain, "model", request,
                                   lambda: self._answered(request, self._inferred, chain, entry),
                                   pinned=entry.pinned(self.ctx.clock.now / 1e9),
                                   detail={"entry": entry.where})

    def _inferred(self, chain: Chain, entry: ScriptEntry) -> None:
        reply = entry.reply
        failed = self._round_failure(chain, reply)
        if failed is not None:
            self.ctx.scheduler.make_ready(chain, self.error_at(chain, *failed[0], **failed[1]))
            return
        turn = self._count_round(chain)
        if reply.tool_calls:
            self.ctx.scheduler.make_ready(chain, self.error_at(
                chain, "model inference received tool calls but no tools were advertised"))
            return
        text = reply.text or ""
        self._reply_events(chain, turn, text, reply.finish_reason, "infer")
        self.ctx.scheduler.make_ready(chain, (True, text.encode("utf-8")))

    def _round_failure(self, chain: Chain, reply) -> tuple | None:
        """A failed round's error (message, kind) and fields, reported as failed."""
        if reply.fail is not None:
            self.emit(chain, "model_turn_failed")
            return (reply.fail, "internal"), {}
        if reply.overflow:
            self.emit(chain, "model_turn_failed")
            return (CONTEXT_MESSAGES["provider"], "context_exhausted"), {"reason": "provider"}
        return None

    def _count_round(self, chain: Chain) -> int:
        task = chain.task
        task.turns = min(task.turns + 1, 4294967295)
        self.emit(chain, "model_turn_completed")
        return task.turns

    def _reply_events(self, chain: Chain, turn: int, text: str, finish: str | None,
                      origin: str) -> None:
        if finish == "length" and text.strip():
            self.emit(chain, "model_turn_truncated")
        fields = {"turn": turn, "text": text, "model": self.script.model_id, "origin": origin}
        if finish is not None:
            fields["finish_reason"] = finish
        self.emit(chain, "assistant_reply", **fields)

    # ------------------------------------------------------------ models.loop
    def loop(self, chain: Chain, count: int = 0, *args):
        args = args[:count]
        pinned = self.roles.handle_of(args[0]) if args else None
        if pinned is not None:
            rest, most = args[1:], 3
        elif args and typename(args[0]) == "userdata":
            return self.err("models.loop handle must be a model handle")
        else:
            rest, most = args, 2
        if count > most:
            return self.err("models.loop takes (handle?, messages, compactor?)")
        msgs = rest[0] if rest else None
        compactor = rest[1] if len(rest) > 1 else None
        if compactor is not None and not isinstance(compactor, LuaFunction):
            return self.err(f"compactor must be a function, got {typename(compactor)}")
        state = chain.section_state
        fault = check_list(msgs)
        if fault:
            if fault.across:
                self.emit(chain, "model_turn_failed")
            return self.err(fault.message)
        self.lists.setdefault(self.L.list_serial(msgs), (state.name, msgs))
        op = LoopOp(msgs, pinned, compactor, self.cap)
        state.ops.append(op)
        return self._advance(chain, state, op)

    def continue_loop(self, chain: Chain, *rest):
        state = chain.section_state
        return self._advance(chain, state, state.ops[-1])

    def _fail(self, chain: Chain, state: SectionState, op: Any, message: str, kind: str = "lua",
              **fields: str):
        state.ops.remove(op)
        return self.error_at(chain, message, kind, **fields)

    def _advance(self, chain: Chain, state: SectionState, op: LoopOp):
        """Run the loop until it needs the harness, Lua, or a wait."""
        while True:
            if op.phase == "send":
                return self._send(chain, state, op)
            if op.phase == "reply":
                answer = self._replied(chain, state, op)
            elif op.phase == "await":
                self._served(chain, op, op.await_text, True)
                op.await_text = None
                op.phase = "calls"
                continue
            else:
                answer = self._next_call(chain, state, op)
            if answer is not None:
                return answer
            if op.phase == "done":
                state.ops.remove(op)
                return (True, b"done", None)

    def _send(self, chain: Chain, state: SectionState, op: LoopOp):
        if op.rounds >= op.cap:
            return self._fail(chain, state, op, "tool-call loop did not converge",
                              "tool_loop_exhausted")
        fault, sent, records = checked_list(op.msgs)
        if fault:
            if fault.across:
                self.emit(chain, "model_turn_failed")
            return self._fail(chain, state, op, fault.message)
        if self.roles.round_model(state, op.selection) is None:
            return self._fail(chain, state, op, f"{MISSING_MODEL}{state.name}", "internal")
        self.emit(chain, "tool_scope_validation_started")
        specs = self.tools.offered(state)
        offered = tuple(spec.name for spec in specs)
        self.emit(chain, "tool_scope_validation_succeeded")
        before = len(op.msgs)
        for text in self.tasks.waiting(state):
            self.L.append(op.msgs, self.lua.table({"role": "user", "content": text}))
            sent.append({"role": "user", "content": _t(text)})
            records.append(user_record(_t(text)))
        if estimate_tokens(records) > self.script.context:
            # A refused round appends nothing: the notices wait for the next one.
            self.L.truncate(op.msgs, before)
            return self._overflow(chain, state, op, "precheck")
        entry = self._take_entry(chain, state, self._latest_user(op.msgs))
        if entry is None:
            return (True, b"done", None)
        self.tasks.gather(state)
        op.rounds += 1
        op.entry, op.offered, op.allowed = entry, offered, state.allow is not None
        op.phase = "reply"
        serial = self.L.list_serial(op.msgs)
        same = [key for key, (section, _) in self.lists.items() if section == state.name]
        self._record_round(chain, RoundRecord(
            chain.task.id, state.name, "chat", len(op.msgs), offered, entry.where,
            tuple((s.name, s.description) for s in specs), same.index(serial), sent))
        request = ModelRound("chat", entry.where)
        if self.in_flight is not None:
            self.in_flight[request] = (chain, lambda: self._reply_now(chain, op, _stopped(entry)))
        return self.ctx.effects.harness_op(
            chain, "model", request,
            lambda: self._answered(request, self._reply_now, chain, op, entry),
            pinned=entry.pinned(self.ctx.clock.now / 1e9),
            detail={"entry": entry.where, "records": len(op.msgs)})

    def _reply_now(self, chain: Chain, op: LoopOp, entry: ScriptEntry) -> None:
        """A `models.loop` round's reply is in: the chain goes on with it."""
        op.entry = entry
        self.ctx.scheduler.make_ready(chain, (True, b"continue", None))

    def _answered(self, request: ModelRound, deliver, *args) -> None:
        if self.in_flight is not None:
            del self.in_flight[request]
        deliver(*args)

    def stop_rounds(self) -> None:
        """The model script's round stop: every model round in flight, in the
        order sent, loses its scripted answer and its timer (the effect reads
        `dropped`), and a chain still waiting on one reads a backend failure."""
        stopping, self.in_flight = self.in_flight or {}, None
        for request, (chain, fail) in stopping.items():
            if self.ctx.effects.drop_op(request) and chain.live and chain.parked_on is request:
                fail()

    def _record_round(self, chain: Chain, record: RoundRecord) -> None:
        """Keep a round as it goes out, for the observation's `rounds` and
        the trace's `round` record (just before the round's `harness` one)."""
        self.rounds.append(record)
        self.ctx.trace.emit(self.ctx.clock.now, "round", chain=chain.id, origin=record.origin,
                            tools=list(record.tools), messages=record.sent)

    def _latest_user(self, msgs) -> str:
        """The text of the list's last user record ("" when it has none)."""
        for i in range(len(msgs), 0, -1):
            # The prompt's list and records: their metamethods run under the budget.
            record = self.lua.index(msgs, i)
            if self.lua.index(record, b"role") == b"user":
                content = self.lua.index(record, b"content")
                return _t(content) if isinstance(content, bytes) else ""
        return ""

    def _overflow(self, chain: Chain, state: SectionState, op: LoopOp, reason: str):
        if op.compactor is None:
            return self._fail(chain, state, op, CONTEXT_MESSAGES[reason], "context_exhausted",
                              reason=reason)
        op.phase = "compactor"
        return self._command(op.compactor, reason.encode())

    def _replied(self, chain: Chain, state: SectionState, op: LoopOp):
        """The round's reply arrived: record it, or set up its tool calls."""
        reply = op.entry.reply
        calls, seen = [], set()
        for spec in reply.tool_calls:
            if spec.name not in BUILTINS and spec.name not in self.known_tools:
                return self.harness_failure(chain, (
                    f"model script {self.script.source}: {spec.where}.name: `{spec.name}` is "
                    "neither a task built-in nor a bound or local tool of this prompt"))
            call_id = spec.id or state.next_call_id()
            if call_id in seen:
                return self._fail(chain, state, op, (
                    "the model backend sent a reply that could not be understood: tool call id "
                    f'"{call_id}" repeats within one reply'), "internal")
            seen.add(call_id)
            calls.append(RoundCall(call_id, spec.name, spec.arguments))
        failed = self._round_failure(chain, reply)
        if failed is not None:
            if failed[1].get("reason") == "provider":
                return self._overflow(chain, state, op, "provider")
            return self._fail(chain, state, op, *failed[0], **failed[1])
        turn = self._count_round(chain)
        if calls:
            self.emit(chain, "assistant_tool_calls", turn=turn, model=self.script.model_id,
                      calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls])
            for call in calls:
                in_scope = op.allowed if call.name in BUILTINS else call.name in op.offered
                if not in_scope:
                    self.emit(chain, "tool_call_failed")
                    hint = (" (alias is a bound tool slot but was not added to this section's "
                            "scope)" if call.name in self.tools.bound else "")
                    return self._fail(
                        chain, state, op,
                        f'tool "{call.name}" is not in this section\'s scope; in-scope aliases: '
                        f"{debug_list(op.offered)}{hint}", "out_of_scope_tool", name=call.name)
            op.turn, op.text, op.calls, op.index, op.results = turn, reply.text or "", calls, 0, []
            op.phase = "calls"
            return None
        text = reply.text or ""
        if not text.strip():
            if reply.finish_reason == "stop" and op.answered:
                self._reply_events(chain, turn, "", reply.finish_reason, "chat")
                self.L.append(op.msgs, self.lua.table({"role": "assistant", "content": ""}))
                op.phase = "done"
                return None
            fields = {"finish_reason": reply.finish_reason} if reply.finish_reason else {}
            return self._fail(chain, state, op, "empty model reply", "empty_model_reply", **fields)
        self._reply_events(chain, turn, text, reply.finish_reason, "chat")
        self.L.append(op.msgs, self.lua.table({"role": "assistant", "content": text}))
        op.phase = "done"
        return None

    def _next_call(self, chain: Chain, state: SectionState, op: LoopOp):
        """Run the round's calls in order; append the batch once all are answered."""
        while op.index < len(op.calls):
            call = op.calls[op.index]
            self.tools.count(chain, call.name)
            if call.name in BUILTINS:
                served = self.tasks.call(chain, state, op, call.name, call.arguments)
                if served is None:
                    op.phase = "await"
                    return PARK
                self._served(chain, op, *served)
                continue
            bound = self.tools.bound.get(call.name)
            if bound is not None:
                op.phase = "tool"
                return self.tools.invoke(chain, bound, call.arguments,
                                         lambda reply: self._tool_answered(chain, op, reply))
            tool = state.local_tools[call.name]
            state.handler_depth += 1
            op.phase = "handler"
            return self._command(tool.handler, self.lua.to_lua(call.arguments))
        self.L.append(op.msgs, self.lua.table({
            "role": "assistant", "content": op.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                           for c in op.calls],
        }))
        for call, content in zip(op.calls, op.results):
            self.L.append(op.msgs, self.lua.table({"role": "tool", "content": content,
                                                   "tool_call_id": call.id}))
        op.answered += len(op.calls)
        op.phase = "send"
        return None

    def _tool_answered(self, chain: Chain, op: LoopOp, reply) -> None:
        """A bound tool's reply to a model call: its result, or its failure text
        wrapped as untrusted whatever the tool's trust marking."""
        if reply.error is not None:
            self._served(chain, op, wrap(reply.error, self.ctx.nonce()), False, trusted=False)
        else:
            self._served(chain, op, reply.result, True)
        op.phase = "calls"
        self.ctx.scheduler.make_ready(chain, (True, b"continue", None))

    def _served(self, chain: Chain, op: LoopOp, text: str, ok: bool,
                trusted: bool = True) -> None:
        """A call of the round has its answer (built-ins and handlers: trusted text)."""
        call = op.calls[op.index]
        self.emit(chain, "tool_call_succeeded" if ok else "tool_call_failed")
        self.emit(chain, "tool_result", turn=op.turn, tool_call_id=call.id, alias=call.name,
                  content=text, trusted=trusted)
        op.results.append(text)
        op.index += 1

    # ------------------------------------------------------------ handlers
    def start_script_call(self, chain: Chain, tool: LocalTool, arguments: dict):
        state = chain.section_state
        state.ops.append(ScriptCallOp(tool, chain.task.turns))
        state.handler_depth += 1
        return self._command(tool.handler, self.lua.to_lua(arguments))

    def handler_done(self, chain: Chain, ok: Any = None, value: Any = None, *rest):
        state = chain.section_state
        op = state.ops[-1]
        if isinstance(op, LoopOp) and op.phase == "compactor":
            if ok:
                return self._fail(chain, state, op, "the compactor returned instead of raising: a "
                                  "compactor must raise an error, as compactors.fail does")
            state.ops.remove(op)
            return (False, value)
        state.handler_depth -= 1
        text = self.ctx.chains.scalar(value) if value is not None else ""
        if not ok or text is None:
            self.emit(chain, "tool_call_failed")
            if not ok:
                state.ops.remove(op)
                return (False, value)
            return self._fail(chain, state, op, f"cannot return a {typename(value)} as a result")
        if isinstance(op, ScriptCallOp):
            self.emit(chain, "tool_call_succeeded")
            self.emit(chain, "tool_result", turn=op.turn, tool_call_id="", alias=op.tool.alias,
                      content=text, trusted=True)
            state.ops.remove(op)
            return (True, b"done", text.encode("utf-8"))
        self._served(chain, op, text, True)
        op.phase = "calls"
        return self._advance(chain, state, op)

    # ------------------------------------------------------------ input.ask
    def ask(self, chain: Chain, *args):
        if any(a is not None for a in args):
            return self.err("input.ask takes no arguments")
        self.emit(chain, "user_input_wait_started")
        if self.cursor.operator is None:
            return (True, UNAVAILABLE.encode("utf-8"), False)
        self.asks += 1
        answer = self.cursor.take_answer()
        if answer is None:
            # Like an operator who never answers: the ask stays pending.
            return self.ctx.effects.never_answered_op(chain, "operator", OperatorQuestion(self.asks, None))

        def answered() -> None:
            self.emit(chain, "user_input", text=answer.text)
            self.ctx.scheduler.make_ready(chain, (True, answer.text.encode("utf-8"), True))

        return self.ctx.effects.harness_op(chain, "operator", OperatorQuestion(self.asks, answer.where),
                                   answered, pinned=answer.delay,
                                   detail={"answer": answer.where})


__all__ = ["ModelsAPI", "RoundRecord", "SectionState"]
