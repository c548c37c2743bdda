"""The engine's state objects: a chain, a level of its walk, and a task.

A chain is one walk over sections, run block by block on Lua coroutines.
It is begun by the run (the root chain: the H1 pass, then the walk), by
`call`, by a spawn or by a fanout arm.  It owns a child counter (`rules.ids`),
a section-entry counter (`sys.id`), its `var`, and the tasks it spawned.  Its
`state` moves only in the kernel (`forge.engine.kernel`):

    new -> ready -> running -> parked -> ready -> ... -> ended

A task is what a spawn, a fanout arm or the model's `task` built-in starts:
a chain of its own plus the status its owner reads.  Its `state` is
"running" until it ends exactly once, as done (ok true or false), cancelled
or abandoned with a reason (`rules.endings`).

Each field says its invariant where it has one; the transitions that could
break one assert it.  What lives here: the fields and what can be derived
from them (`live`, `blocked`, `callee`, the status table).  What does not:
the steps that change them (the kernel, the walk in `walk`, the rules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from forge.engine.failures import Failure
from forge.engine.requests import CalledChain, Request
from forge.engine.rules.endings import AbandonReason
from forge.prompt.model import LuaBlock, Section
from forge.variation import declare

if TYPE_CHECKING:
    from forge.sim.kernel import Timer

OK_FALSE_WHILE_RUNNING = declare("status.ok-false-while-running", "status",
                                 "a running task reads ok = false")


@attrs.define(eq=False)
class Frame:
    """One level of a walk: a sibling list and the position in it."""

    siblings: tuple[int, ...]
    #: Invariant: 0 <= pos <= len(siblings); pos == len(siblings) means the
    #: level ran out and the frame is popped.
    pos: int


@attrs.define(eq=False)
class Chain:
    #: The prompt's title (its H1): the section name of the H1 pass.
    title: str
    #: Invariant: the root is "0"; any other chain's id is its parent's id
    #: plus the index it took from the parent's child counter.
    id: str
    kind: str                      # "root", "call" or "task"
    #: The task this chain's code runs inside (the main pseudo-task for the
    #: walk and anything it calls).
    task: Task
    parent: Chain | None
    #: Invariant: 0 for the root, parent.depth + 1 otherwise, never above
    #: rules.ids.DEPTH_CAP.
    depth: int
    args: bytes
    argv: Any
    var: Any                       # the Lua backing table of `var`
    limit: int                     # admission limit for the tasks it spawns
    #: The walk: one frame per level; a jump into children pushes one, and
    #: the end of a level pops it and resumes the parent level after the jumper.
    frames: list[Frame] = attrs.field(factory=list)
    #: Invariant: only grows (rules.ids.take is the one taker).
    child_counter: int = 0
    entry_counter: int = 0
    #: Tasks this chain spawned, in spawn order (ascending ids).
    owned: list = attrs.field(factory=list)
    #: The `owned` tasks holding a slot now, by id, in the order they took
    #: it; kept only by `rules.admission`, and the one record of who holds
    #: what: `busy`, `Task.holds_slot` and the run's count derive from it.
    holding: dict = attrs.field(factory=dict)
    #: "new", "ready", "running", "parked" or "ended"; changed only by the kernel.
    state: str = "new"
    section: Section | None = None
    in_h1: bool = False
    block_index: int = 0
    blocks: tuple[LuaBlock, ...] = ()
    env: Any = None
    co: Any = None
    resume_value: Any = None
    pending_jump: str | None = None
    #: Seeds for the first section entry of a task: item and index.
    first_item: Any = None
    has_item: bool = False
    first_index: int | None = None
    #: Called when the chain ends: fn(chain, ok, value_or_failure).
    on_end: Any = None
    #: Suspending calls made so far (for the stale re-raise rule).
    suspends: int = 0
    #: What the chain is parked on (a request from `forge.engine.requests`).
    #: Invariant: set exactly while `state` is "parked".
    parked_on: Request | None = None
    #: The timer of a timed wait the chain is parked on.
    #: Invariant: None unless `parked_on` is a timed Join or AwaitTasks.
    timer: Timer | None = None
    #: Invariant: while parked on a Join or on fanout arms, the number of its
    #: distinct members still live (each is registered once, and its end
    #: counts it down).
    join_left: int = 0
    result: Any = None
    failure: Failure | None = None
    #: The H1 pass and the walk claim the store separately.
    claim_identity: str = ""
    #: Per-section state for models and tools (forge.engine.models).
    section_state: Any = None
    current_block: LuaBlock | None = None
    #: Reads the current section VM's `argv` (the H1 pass may reassign it).
    argv_reader: Any = None
    #: The number naming this chain to the run's prose callback (0: none yet).
    vm_key: int = 0
    #: A stable name for scheduling choices and traces: `kind:id` (neither changes).
    label: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.label = f"{self.kind}:{self.id}"
    #: The limit `tasks.concurrency` clamps to: the parent chain's limit.
    ceiling: int = 0
    #: True while the section VM replays the shared library.
    loading_library: bool = False
    #: Whether the current section VM has not been torn down yet.
    vm_open: bool = False
    #: Log quota spent by the current section VM.
    log_events: int = 0
    log_bytes: int = 0


    @property
    def section_name(self) -> str:
        if self.in_h1 or self.section is None:
            return self.title
        return self.section.name

    @property
    def blocked(self) -> str | None:
        """The status table's `blocked` while parked: what the request waits for."""
        return None if self.parked_on is None else self.parked_on.blocked

    @property
    def callee(self) -> Chain | None:
        """The chain this one is parked on through `call`, if any."""
        request = self.parked_on
        return request.callee if isinstance(request, CalledChain) else None

    @property
    def live(self) -> bool:
        return self.state != "ended"

    @property
    def busy(self) -> int:
        """How many of its tasks hold a slot (`rules.admission`)."""
        return len(self.holding)


@attrs.define(eq=False)
class Task:
    id: str
    target: str
    origin: str
    depth: int
    owner: Chain | None
    is_main: bool = False
    chain: Chain | None = None
    #: "running" until the task ends exactly once: "done", "cancelled" or
    #: "abandoned" (rules.endings).
    state: str = "running"
    #: Invariant: None while running, True only when done and succeeded.
    ok: bool | None = None
    #: Invariant: set only on a task that is done with ok True.
    result: str | None = None
    #: Invariant: set only on a task that is done with ok False.
    failure: Failure | None = None
    #: Set exactly when the task is abandoned.
    reason: AbandonReason | None = None
    note: str | None = None
    turns: int = 0
    #: Invariant: set only on a done task, by exactly one wait.
    delivered: bool = False
    #: Whether it ever got its first slot.
    admitted: bool = False
    #: Provenance counter for events this task reports.
    seq: int = 0
    spawned_at_claim: int = 0
    #: The chain of this task parked on a Slot, waiting to take a slot again.
    waking: Chain | None = None
    #: Chains parked on a Join or FanoutArms that names this task.
    #: Invariant: each chain here is live and parked on such a request.
    waiters: list = attrs.field(factory=list)
    #: For a model-started task: the owner's section state that gets notices.
    model_owner: Any = None
    cancelled_value: Any = None
    #: Its owner asked to cancel it (`tasks.cancel`): it must end by the next step.
    stop_asked: bool = False

    @classmethod
    def main(cls, title: str) -> Task:
        """The main pseudo-task the walk runs inside; its target is the prompt's title."""
        return cls(id="0", target=title, origin="author", depth=0,
                   owner=None, is_main=True)

    @property
    def live(self) -> bool:
        return self.state == "running"

    @property
    def holds_slot(self) -> bool:
        """Whether it holds a concurrency slot (its owner's `holding` says).
        Invariant: only while admitted, live and not waiting on other tasks."""
        owner = self.owner
        return owner is not None and self.id in owner.holding

    # ------------------------------------------------------------ status
    def _blocked(self) -> str | None:
        if not self.live:
            return None
        if not self.admitted:
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
        live = self.live
        out = {
            "target": self.target,
            "origin": self.origin,
            "state": self.state,
            "turns": self.turns,
            "tasks": [t.id for t in self.live_children()],
            "depth": self.depth,
        }
        ok = False if (OK_FALSE_WHILE_RUNNING.on and live) else self.ok
        if ok is not None:
            out["ok"] = ok
        if live:        # an ended task has neither a section nor a wait
            section, blocked = self._section(), self._blocked()
            if section is not None:
                out["section"] = section
            if blocked is not None:
                out["blocked"] = blocked
        if self.note is not None:
            out["note"] = self.note
        if self.reason is not None:
            out["reason"] = self.reason.value
        return out
