"""Effects: the harness operations a run issues, and the store calls behind them.

A chain that asks the outside world for something (a store call, a model
round, an operator's answer, a tool's reply) parks on a harness operation:
it completes after a latency drawn from the harness (`harness_op`), or never
(`never_answered_op`); the harness may drop one in flight (`drop_op`).  Every
operation issued is recorded, in order, with how it ended: the observation's
`effects`.  A store call goes through the harness with the store's claims:
a read or write that conflicts with another chain's claim ends the run as
Determinism; a refusal is the prompt's `store` error; a quota ends it as
Budget.

What lives here: issuing, answering and dropping operations, their records,
and store calls with their claims.  What does not: what each operation means
to its caller (`host`, `models`, `tools`), the claims themselves
(`claims`), the completion order of operations due at one instant
(`forge.sim.orders`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from forge.engine.claims import WRITES
from forge.engine.parking import PARK
from forge.engine.quotas import data_size
from forge.engine.requests import Request, StoreOp
from forge.sim.chooser import Chooser
from forge.sim.kernel import COMPLETE, ns_to_seconds
from forge.store import StoreFailure, StoreQuota
from forge.variation import declare

if TYPE_CHECKING:
    from forge.engine.context import Context
    from forge.engine.state import Chain

WRITES_LAND_LATE = declare("races.writes-land-late", "races",
                           "a store write answers at once and lands later, so a delivery does "
                           "not join it")

#: What one list entry costs in Lua's heap beyond its text, at most: a string
#: header and a table slot (used to check room before handing Lua a list).
LUA_ENTRY_BYTES = 64


class Effects:
    def __init__(self, ctx: Context, chooser: Chooser) -> None:
        self.ctx = ctx
        self.chooser = chooser
        #: Every harness operation issued, in order, with how it ended:
        #: the observation's `effects`.
        self.records: list[dict] = []
        #: The effect of each request still to be answered (requests compare by identity).
        self._effect_of: dict = {}
        #: The completion timer of each request still to be answered (`drop_op`).
        self._timer_of: dict = {}

    def harness_op(self, chain: Chain, kind: str, request: Request, finish,
                   pinned: float | None = None, detail: dict | None = None) -> Any:
        """Park `chain` on a harness operation that completes after a drawn duration.

        `finish()` runs at completion time, while the chain is still parked
        on `request`, and must make the chain ready (with its answer) or fail it.
        """
        delay = self.ctx.harness.latency_model.draw(self.chooser, kind, pinned, self.ctx.clock)
        effect = self._issue(chain, kind, request, detail)
        effect["due"] = ns_to_seconds(self.ctx.clock.now + delay)

        def answered() -> None:
            done = self._effect_of.pop(request)
            done["answer"] = "answered"
            # In orders mode a completion may fire before or after its due instant.
            done["due"] = ns_to_seconds(self.ctx.clock.now)
            del self._timer_of[request]
            finish()

        path = (detail or {}).get("path")
        free = None if pinned is not None else (
            f"{chain.id}#{chain.suspends} {kind}" + (f" {path}" if path is not None else ""),
            frozenset({f"chain:{chain.id}", f"task:{chain.task.id}",
                       f"path:{path}" if kind == "store" and path is not None else
                       ("path:*" if kind == "store" else "*")}))
        self._timer_of[request] = self.ctx.clock.schedule(delay, COMPLETE,
                                                      ("complete", chain, request, answered), free)
        self.ctx.trace.emit(self.ctx.clock.now, "harness", chain=chain.id, op=kind,
                        duration=delay, **(detail or {}))
        return self.ctx.scheduler.park(chain, request)

    def never_answered_op(self, chain: Chain, kind: str, request: Request,
                          detail: dict | None = None) -> Any:
        """Park `chain` on a harness operation the host never answers."""
        self._issue(chain, kind, request, detail)["answer"] = "never"
        self._effect_of.pop(request)
        self.ctx.trace.emit(self.ctx.clock.now, "harness_unanswered", chain=chain.id, op=kind,
                        **(detail or {}))
        return self.ctx.scheduler.park(chain, request)

    def _issue(self, chain: Chain, kind: str, request: Request, detail: dict | None) -> dict:
        effect = {"op": kind, "chain": chain.id, "task": chain.task.id,
                  "issued": ns_to_seconds(self.ctx.clock.now), "answer": "pending", **(detail or {})}
        self.records.append(effect)
        self._effect_of[request] = effect
        return effect

    def drop_op(self, request: Request) -> bool:
        """The harness drops an operation in flight: its answer never comes
        (its completion timer is cancelled) and its effect reads `dropped`.
        False when it is no longer in flight."""
        timer = self._timer_of.pop(request, None)
        if timer is None:
            return False
        self.ctx.clock.cancel(timer)
        effect = self._effect_of.pop(request)
        effect["answer"] = "dropped"
        effect["dropped_at"] = ns_to_seconds(self.ctx.clock.now)
        return True

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
            delay = self.ctx.harness.latency_model.draw(self.chooser, "store", clock=self.ctx.clock) + 1
            self.ctx.clock.schedule(delay, COMPLETE, ("late", run_op))
            return (True,)

        def finish() -> None:
            answer = self._store_now(chain, op, path, run_op)
            if answer is not PARK:
                self.ctx.scheduler.make_ready(chain, answer)

        return self.harness_op(chain, "store", StoreOp(op, path), finish,
                               detail={"store": op, "path": path})

    def _store_now(self, chain: Chain, op: str, path: str | None, run_op) -> Any:
        """Perform a store operation: the resume tuple, or PARK when a claims
        conflict ended the run."""
        identity = chain.claim_identity
        claim = "write" if op in WRITES else "read"
        if path is not None:
            conflict = self.ctx.claims.conflict(identity, claim, path, self._exempt(chain))
            if conflict is not None:
                other, other_claim = conflict
                self.ctx.budget.abort("Determinism", (
                    f"store determinism violation: {claim} on /_promptforge/store/{path} "
                    f"by ExecId({identity}) conflicts with a {other_claim} claim by "
                    f"ExecId({other})"))
                return PARK
        try:
            if self.ctx.harness.refuses(op, path):
                raise StoreFailure("store operation failed", "refused", path)
            value = run_op()
        except StoreQuota as q:
            self.ctx.budget.abort("Budget", str(q))
            return PARK
        except StoreFailure as f:
            self.ctx.events.emit(chain, f"store_{_event_op(op)}_failed")
            return (False, self.ctx.errors.error_value("store", f.message, chain, **f.fields()))
        if path is not None:
            self.ctx.claims.take(identity, claim, path)
        if op == "glob":
            for p in value:
                self.ctx.claims.take(identity, "read", p)
        if op != "exists":
            self.ctx.events.emit(chain, f"store_{_event_op(op)}_succeeded")
        if value is None:
            return (True,)
        if not self.ctx.budget.room_for(data_size(value, LUA_ENTRY_BYTES), f"the store's answer to {op}"):
            return PARK
        return (True, self.ctx.lua.to_lua(value))

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


def _event_op(op: str) -> str:
    return "replace" if op == "str_replace" else op
