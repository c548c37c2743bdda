"""A chain: one walk over sections, run block by block on Lua coroutines.

A chain is begun by the run (the root chain: the H1 pass, then the walk), by
`call`, by a spawn or by a fanout arm.  It owns a child counter (ids of the
chains and tasks it starts, and of its timed waits), a section-entry counter
(`sys.id`), its `var`, and the tasks it spawned.

State machine (the `state` field):

    new ──> ready ──> running ──> parked ──> ready ──> ... ──> ended
                         │                                  ▲
                         └──────────── (block ends, walk ends) ┘

`running` means the scheduler is inside `step`; only one chain runs at a
time.  A chain parks on a suspending call (store, model round, wait, call);
whoever answers that call makes it ready again with the resume value.

What lives here: a chain's state - its ids and counters, its walk position
(a stack of `Frame`s: a sibling list and a position; a jump into children
pushes one, and its end resumes the parent level after the jumper), its
current section VM and block coroutine, and what it is parked on.  What does
not: the steps of the walk (entering sections, running blocks, the scalar
return rule, jump and call), which `run` drives, since they interleave with
scheduling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from forge.engine.failures import Failure
from forge.prompt.model import LuaBlock, Section

if TYPE_CHECKING:
    from forge.engine.run import Run
    from forge.engine.tasks import Task


@attrs.define(eq=False)
class Frame:
    """One level of a walk: a sibling list and the position in it."""

    siblings: tuple[int, ...]
    pos: int
    #: A task's own level runs its target section only, never falling through.
    once: bool = False


@attrs.define(eq=False)
class Chain:
    run: Run
    id: str
    kind: str                      # "root", "call" or "task"
    #: The task this chain's code runs inside (the main pseudo-task for the
    #: walk and anything it calls).
    task: Task
    parent: Chain | None
    depth: int
    args: bytes
    argv: Any
    var: Any                       # the Lua backing table of `var`
    limit: int                     # admission limit for the tasks it spawns
    #: Heading-resolution origin for the first section (None: from H1).
    frames: list[Frame] = attrs.field(factory=list)
    child_counter: int = 0
    entry_counter: int = 0
    owned: list = attrs.field(factory=list)     # Tasks this chain spawned, in spawn order
    #: How many of `owned` hold a slot now (checked against `limit`).
    busy: int = 0
    state: str = "new"
    blocked: str | None = None
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
    #: What the chain is parked on, for cancellation and deadlock reports.
    parked_on: Any = None
    result: Any = None
    failure: Failure | None = None
    #: The H1 pass and the walk claim the store separately.
    claim_identity: str = ""
    #: Per-section state for models and tools (forge.engine.models).
    section_state: Any = None
    #: The chain this one is parked on through `call`, if any.
    callee: Chain | None = None
    current_block: LuaBlock | None = None
    #: Lua-side controls of the current section VM (prose reset, argv).
    control: Any = None
    var_proxy: Any = None
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
    def label(self) -> str:
        """A stable name for scheduling choices and traces."""
        return f"{self.kind}:{self.id}"

    @property
    def section_name(self) -> str:
        if self.in_h1 or self.section is None:
            return self.run.prompt.title
        return self.section.name

    @property
    def live(self) -> bool:
        return self.state != "ended"
