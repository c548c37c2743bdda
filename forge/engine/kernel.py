"""The engine's kernel: the run loop, and the only code that moves a chain
between ready, running, parked and ended.

    ┌─> any chain ready? ── yes ──> the chooser picks one ──> step it until
    │        │                      it parks or ends (spawns, status reads
    │        no                     and other immediate calls never leave it)
    │        v
    │   next event? ── no ──> the run is over (or deadlocked)
    │        │ yes
    │        v
    └── advance the virtual clock and handle the event (a harness answer, a
        wait's timeout, a host fault), which makes chains ready

Every ready chain runs before the next event is popped, and timers sort last
among the events of their instant (`rules.timeouts`), so a task that ends at
the same instant a wait's timeout expires always wins the tie.

Chain states:

    new ──make_ready──> ready ──step──> running ──park──> parked ──make_ready──> ready
                                           │                 │
                                           └──────end────────┴──end──> ended

A chain parks on exactly one request of the closed set in `requests`; the
event that answers a request is dropped when the chain no longer waits on
that very request (it was stopped, or another answer came first).

What lives here: the ready list, the transitions, stepping a chain's block
coroutine and dispatching its suspending calls to their handlers, event
handling, the step budget and deadlock detection.  What does not: what a
block or a section does (the walk, `walk`), and what each suspending call
means (the parts' methods the table in `library` names).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from bisect import bisect_left

from forge.engine.state import Chain
from forge.engine.parking import PARK
from forge.engine.requests import Request, blocked_of
from forge.engine.rules import timeouts
from forge.errors import ForgeInternalError
from forge.lua.runtime import LuaError, results, text
from forge.sim.chooser import CHAIN_KIND, Chooser
from forge.sim.kernel import Kernel as EventQueue
from forge.sim.trace import Trace
from forge.variation import declare

#: Every ready chain is offered to each chain pick, so a fair scheduler runs
#: it within a bound (`forge.sim.fair`, `forge.liveness.ReadyChainNotRun`).
PASSED_OVER_WAITS_FOR_IDLE = declare(
    "kernel.passed-over-waits-for-idle", "kernel",
    "a ready chain a pick passed over (the pick took a later one) is no longer offered "
    "until no other chain is ready: a starved ready chain")


class Walk(Protocol):
    """What the kernel asks of the run while it steps a chain."""

    outcome: str | None
    #: The run's Lua runtime (the kernel settles its keeper after a resume,
    #: and reads the internal error a step may have noted).
    lua: Any

    def next_block(self, chain: Chain) -> None: ...

    def block_done(self, chain: Chain, result: tuple) -> None: ...

    def abort(self, kind: str, message: str) -> None: ...

    def host_cancel(self) -> None: ...

    def stop_rounds(self) -> None: ...

    def check_resources(self) -> bool: ...

    def note_internal_error(self, error: BaseException) -> None: ...

    def live_chains(self) -> list[Chain]: ...

    def parked_detail(self, chain: Chain) -> str: ...

    def answer_dropped(self, request: Request) -> None: ...


class ReadyLabels(Sequence):
    """The ready chains, in the order they became ready, offered to a chain
    choice as their labels read through the list (no copy).  A provider may
    read it during its `draw` only; the chooser keeps what it `Offered`.

    A provider that keeps its own view of the ready set (PCT, whose ranking
    would otherwise be matched against every ready chain at every choice)
    calls `follow` once: from then on each change is journaled, and `index`
    finds a label's place in O(log n).  Every change goes through `add`,
    `take` and `drop`, so the journal cannot miss one."""

    __slots__ = ("_ready", "journal", "_arrival", "_arrivals")

    def __init__(self) -> None:
        self._ready: list[Chain] = []
        #: (label, True) when a chain becomes ready, (label, False) when it
        #: leaves the list; None until a provider follows.
        self.journal: list[tuple[str, bool]] | None = None
        #: While following: each ready label's arrival number, and the
        #: numbers in order - a label's place in the list is its rank there
        #: (a plain list, as the ready list is: numbers only grow, so an
        #: arrival is appended, and a departure is found by bisection).
        self._arrival: dict[str, int] = {}
        self._arrivals: list[int] = []

    def __len__(self) -> int:
        return len(self._ready)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [c.label for c in self._ready[i]]
        return self._ready[i].label

    def __iter__(self):
        # One pass in C, not a `__getitem__` call a label (`Sequence`'s).
        return iter([c.label for c in self._ready])

    def add(self, chain: Chain) -> None:
        self._ready.append(chain)
        if self.journal is not None:
            self._noted(chain, True)

    def take(self, i: int) -> Chain:
        chain = self._ready.pop(i)
        if self.journal is not None:
            self._noted(chain, False)
        return chain

    def drop(self, chain: Chain) -> None:
        self._ready.remove(chain)
        if self.journal is not None:
            self._noted(chain, False)

    def follow(self) -> list[tuple[str, bool]]:
        """The journal, begun (the first time) with every chain ready now."""
        if self.journal is None:
            self.journal = []
            for chain in self._ready:
                self._noted(chain, True)
        return self.journal

    def _noted(self, chain: Chain, ready: bool) -> None:
        """Journal a change (called only while a provider follows)."""
        journal = self.journal
        assert journal is not None
        label = chain.label
        journal.append((label, ready))
        if ready:
            arrival = self._arrival[label] = len(self.journal)
            self._arrivals.append(arrival)
        else:
            arrivals = self._arrivals
            del arrivals[bisect_left(arrivals, self._arrival.pop(label))]

    def index(self, label: str, *bounds: int) -> int:     # type: ignore[override]
        if self.journal is None or bounds:
            return super().index(label, *bounds)
        return bisect_left(self._arrivals, self._arrival[label])


class Scheduler:
    def __init__(self, walk: Walk, events: EventQueue, chooser: Chooser, trace: Trace,
                 handlers: dict[str, tuple[type, Callable[..., Any]]], parts: dict,
                 step_limit: int) -> None:
        self.walk = walk
        self.events = events
        self.chooser = chooser
        self.trace = trace
        #: Suspending call name -> (part type, method(part, chain, *args)):
        #: a resume tuple or PARK (`forge.engine.library`).
        self.handlers = handlers
        #: The run's parts by type, the methods' first argument.
        self.parts = parts
        self.step_limit = step_limit
        #: Ready chains, in the order they became ready; a chain choice's
        #: options (their labels), in O(1).
        #: Invariant: exactly the chains whose state is "ready".
        self.ready = ReadyLabels()
        #: The chain being stepped, if any (one at a time).
        self.current: Chain | None = None
        self.steps = 0
        #: A host cancel fault lands just before this step (`Harness.cancel_step`).
        self.cancel_step: int | None = None
        #: Under the kernel.passed-over-waits-for-idle variation only: the
        #: chains a pick passed over, hidden from the picks (None: off).
        self.passed_over: set[Chain] | None = set() if PASSED_OVER_WAITS_FOR_IDLE.on else None

    # ------------------------------------------------------------ transitions
    def make_ready(self, chain: Chain, value: Any) -> None:
        """`chain` resumes with `value` when it is next picked."""
        assert chain.live and chain.state != "ready", f"chain {chain.id} is made ready twice"
        chain.resume_value = value
        chain.state = "ready"
        chain.parked_on = None
        chain.timer = None
        self.ready.add(chain)

    def park(self, chain: Chain, request: Request, timeout_ns: int | None = None,
             expire: Callable[[], None] | None = None) -> Any:
        """Park `chain` on `request`; a handler returns what this returns.

        With `timeout_ns`, the wait's timer is scheduled too, and `expire()`
        runs if it fires while the chain still waits on `request`.
        """
        blocked_of(request)         # refuses anything outside the closed set
        assert chain.live
        chain.parked_on = request
        chain.timer = None
        if timeout_ns is not None:
            assert expire is not None
            chain.timer = timeouts.schedule(self.events, timeout_ns, chain, request, expire)
        return PARK

    def end(self, chain: Chain) -> None:
        """`chain` is over: it never runs or waits again."""
        if chain.timer is not None:
            self.events.cancel(chain.timer)
        was_ready = chain.state == "ready"
        chain.state = "ended"
        chain.co = None
        chain.parked_on = None
        chain.timer = None
        # Nothing reads an ended chain's section VM again: let Lua collect it,
        # so a run's memory follows its live chains, not every chain it ran.
        chain.env = chain.argv_reader = chain.first_item = None
        # Its model-side section state lives on in the tasks its model
        # started (their notices), not through the chain.
        chain.section_state = None
        # Nor its `var` and `argv`: a run of many tasks holds Lua state for its
        # live chains only (a spawn or call copies them from a live chain).
        chain.var = chain.argv = None
        if was_ready:           # the invariant: only a ready chain is in the list
            self.ready.drop(chain)

    def _take_hiding_passed_over(self) -> Chain:
        """The wrong pick of kernel.passed-over-waits-for-idle: chains passed
        over are offered only when no other chain is ready."""
        hidden = self.passed_over
        assert hidden is not None
        ready = self.ready._ready
        offered = [c for c in ready if c not in hidden] or list(ready)
        value = self.chooser.choose(CHAIN_KIND, [c.label for c in offered])
        chain = offered[value]
        if value:
            hidden.add(offered[0])
        hidden.discard(chain)
        self.ready.drop(chain)
        return chain

    def note(self, what: str, **fields: Any) -> None:
        """A trace record at the current instant."""
        self.trace.emit(self.events.now, what, **fields)

    # ------------------------------------------------------------ the loop
    def loop(self) -> None:
        # The names this loop reads at every step, looked up once (the trace's
        # `emit` is read at each record: `Trace.observe` may swap it).
        walk, trace, events, ready = self.walk, self.trace, self.events, self.ready
        ready_chains, choose = ready._ready, self.chooser.choose
        while walk.outcome is None:
            if ready_chains:
                steps = self.steps + 1
                if steps == self.cancel_step:
                    trace.emit(events.now, "event", event="host_cancel", step=self.cancel_step)
                    walk.host_cancel()
                    return
                if self.passed_over is None:
                    chain = ready.take(choose(CHAIN_KIND, ready))
                else:
                    chain = self._take_hiding_passed_over()
                # Out of the list, so no longer "ready": a budget that ends the
                # run before the step below must not look for it there.
                chain.state = "running"
                self.steps = steps
                if steps > self.step_limit:
                    walk.abort("Budget", f"step budget exhausted: the run took more than "
                                         f"{self.step_limit:,} scheduling steps "
                                         "(unbounded spawning or waiting?)")
                    return
                if not walk.check_resources():
                    return
                trace.emit(events.now, "step", chain=chain.id, kind=chain.kind)
                self.step(chain)
                continue
            if events.peek() is None:
                self._deadlock()
                return
            seq, event = events.pop()
            trace.emit(events.now, "event", event=event[0], seq=seq)
            self._handle(event)

    def _handle(self, event: tuple) -> None:
        what = event[0]
        if what in ("complete", "timeout"):
            _, chain, request, answer = event
            if chain.live and chain.parked_on is request:
                answer()
            elif what == "complete":
                self.walk.answer_dropped(request)   # nobody waits for it any more
        elif what == "late":
            event[1]()          # only the races.writes-land-late variation schedules these
        elif what == "host_cancel":
            self.walk.host_cancel()
        elif what == "round_stop":
            self.walk.stop_rounds()
        else:
            raise ForgeInternalError(f"the event queue held an unknown event {what!r}")

    def step(self, chain: Chain) -> None:
        """Resume `chain` and run it until it parks or ends."""
        walk, trace, events = self.walk, self.trace, self.events
        lua = walk.lua
        keeper = lua.keeper
        self.current = chain
        chain.state = "running"
        value = chain.resume_value
        chain.resume_value = None
        try:
            while chain.state == "running" and walk.outcome is None:
                co = chain.co
                if co is None:
                    walk.next_block(chain)
                    value = None
                    continue
                # A yield starts with the call's name (a string); the block's
                # end starts with pcall's boolean.  lupa returns both from
                # send(), raising StopIteration only on a send after the end.
                try:
                    yielded = results(co.send(value))
                finally:
                    if keeper.raised:
                        lua.settle()
                if isinstance(yielded[0], bool):
                    chain.co = None
                    walk.block_done(chain, yielded)
                    value = None
                    continue
                call = text(yielded[0])
                chain.suspends += 1
                trace.emit(events.now, "call", chain=chain.id, op=call)
                value = self._dispatch(chain, call, yielded[1:])
                if value is PARK:
                    assert chain.parked_on is not None, f"chain {chain.id} parked on nothing"
                    chain.state = "parked"
                    break
        except (ForgeInternalError, LuaError):
            raise
        except Exception as e:  # noqa: BLE001 - a bug ends the run as Internal, never a traceback
            walk.note_internal_error(e)
        finally:
            self.current = None
        error = lua.internal_error
        if error is not None and walk.outcome is None:
            walk.abort("Internal", f"internal invariant violated: {type(error).__name__}: {error} "
                                   "(a bug in the forge kit: please report it with the prompt "
                                   "and seed)")

    def _dispatch(self, chain: Chain, call: str, args: tuple) -> Any:
        handler = self.handlers.get(call)
        if handler is None:
            raise ForgeInternalError(
                f"a chain yielded unknown suspending call {call!r}; the Lua bridge and the "
                "host table disagree about the set of suspending calls")
        part, method = handler
        try:
            return method(self.parts[part], chain, *args)
        except LuaError as e:
            # The prompt's own Lua, which a handler ran under the budget
            # (`LuaRuntime.guarded`: a metamethod of a table the call was
            # handed), raised or spent the budget: the call fails with it.
            return self.walk.lua.failure(e)

    def _deadlock(self) -> None:
        parked = [f"chain {c.id} waits on {c.blocked or 'nothing'}{self.walk.parked_detail(c)}"
                  for c in self.walk.live_chains()]
        detail = "; ".join(parked) if parked else "no chain is live"
        self.walk.abort("Deadlock",
                        f"deadlock: every chain is parked and nothing is scheduled: {detail}")
