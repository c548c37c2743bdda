"""The harness: everything the engine asks of the outside world.

The engine is a pure function of its prompt, its arguments and the answers it
gets here.  Every answer that is not fixed by a script is drawn from the
chooser, so this module is the only door through which nondeterminism can
enter a run:

- the store backend (`MemoryStore`, seeded from a folder or a case),
- how long each operation takes (`LatencyModel`, a menu of durations whose
  first entry is the canonical one, and, when a timer is pending on the
  clock, durations that end on its instant or one nanosecond beside it;
  or, in orders mode, the canonical
  duration with the order of completions left to the chooser,
  `forge.sim.orders`),
- the model's replies and the operator's answers (scripts, `forge.scripts`),
- the bound tools and their answers (the tool script, `forge.toolscript`),
- the concurrency ceiling and host faults: a host cancel at a given instant,
  and faults drawn from the chooser (`FaultPlan`, `Faults`): a store
  refusal, a failed model round, a failed tool call, an operator who never
  answers, a host cancel before any scheduling step of the run (or, in replay
  files recorded before steps were offered, at one of the plan's instants).  Each opportunity is a
  decision `fault:KIND` with options (`none`, the fault), so option 0 is
  always "no fault" and shrinking prefers fewer faults; a per-run budget
  caps how many fire, and once it is spent no more decisions are asked.

What does not live here: the meaning of an operation (the engine's), and the
event queue (the simulator's).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from forge.store import MemoryStore
from forge.sim.chooser import Chooser
from forge.sim.kernel import seconds_to_ns

#: Canonical virtual durations, in seconds, per operation kind.
DEFAULT_LATENCY: dict[str, float] = {
    "store": 0.01,
    "model": 1.0,
    "operator": 1.0,
    "tool": 0.1,
}

#: Multipliers a non-canonical chooser may pick from; the first is canonical.
#: Zero and equal multiples put operations on the same instant on purpose, so
#: exploration meets the spec's tie rules often.
LATENCY_MENU: tuple[float, ...] = (1.0, 0.0, 0.5, 2.0, 5.0)


#: The options a duration choice offers after the multipliers when a timer
#: is pending on the clock (`LatencyModel.ties`): end exactly at the next
#: timer's instant, one nanosecond before it, one after it.
TIE_LABELS: tuple[str, ...] = ("tie", "tie-1ns", "tie+1ns")
_TIE_OFFSETS: tuple[int, ...] = (0, -1, 1)


@attrs.frozen
class LatencyModel:
    base: dict[str, float] = attrs.field(factory=lambda: dict(DEFAULT_LATENCY))
    menu: tuple[float, ...] = LATENCY_MENU
    #: Orders mode: no duration is drawn; which completion fires next is.
    orders: bool = False
    #: Tie-seeking durations: when the clock holds a timer later than now (a
    #: wait's timeout, a host cancel: an entry that is not a completion),
    #: the choice also offers `TIE_LABELS`, so a random or PCT schedule
    #: lands an operation on that instant, or just beside it, as often as on
    #: any multiplier.  No multiplier reaches a one-second timeout from a
    #: 0.01-second store write.  (Two completions meet through the
    #: multipliers: zero, and equal multiples.)  Off in replay files written
    #: before it.
    ties: bool = True

    def draw(self, chooser: Chooser, op: str, pinned: float | None = None,
             clock: Any = None) -> int:
        """Virtual duration of one operation, in nanoseconds.

        A duration a script pins (a model round's `delay`) is used as is;
        everything else is a choice, except in orders mode, where it is the
        base duration (the order of completions is chosen instead).
        `clock` (`forge.sim.kernel.Kernel`) says where the next pending
        timer is, for the tie options.
        """
        if pinned is not None:
            return seconds_to_ns(pinned)
        base = self.base.get(op, 0.0)
        if self.orders:
            return seconds_to_ns(base)
        labels = _labels(self.menu)
        until = clock.until_timer() if self.ties and clock is not None else None
        if until is None:
            pick = chooser.choose(f"latency:{op}", labels)
            return seconds_to_ns(base * self.menu[pick])
        pick = chooser.choose(f"latency:{op}", labels + TIE_LABELS)
        if pick < len(labels):
            return seconds_to_ns(base * self.menu[pick])
        return until + _TIE_OFFSETS[pick - len(labels)]


@functools.lru_cache(maxsize=32)
def _labels(menu: tuple[float, ...]) -> tuple[str, ...]:
    """A latency menu's option labels (`x0.5`, `x1`, ...)."""
    return tuple(f"x{m}" for m in menu)


#: The faults the chooser may inject (`--faults`), in the order docs list them.
FAULT_KINDS: tuple[str, ...] = ("store", "model", "tool", "operator", "cancel")


@attrs.frozen
class FaultPlan:
    """Which faults a run may draw, and how many may fire in one run."""

    kinds: tuple[str, ...] = ()
    budget: int = 1
    #: The instants (nanoseconds) a `cancel` fault may land on: option i+1 of
    #: `fault:cancel_at` is `cancel_instants_ns[i]`.  Set from the canonical
    #: run's harness completions (`forge.runspec`).
    cancel_instants_ns: tuple[int, ...] = ()
    #: How many scheduling steps a `cancel` fault may land before: option k
    #: of `fault:cancel_step` cancels the run just before its step k + 1, so
    #: a cancel can fall between any two steps, at any instant, of whatever
    #: schedule the run takes.  Set from the canonical run's step count.
    cancel_steps: int = 0

    def __bool__(self) -> bool:
        return bool(self.kinds) and self.budget > 0


class Faults:
    """One run's fault injector: every opportunity is a chooser decision."""

    def __init__(self, plan: FaultPlan, chooser: Chooser) -> None:
        self.plan, self.chooser = plan, chooser
        #: (kind, label) of each fault that fired, in order.
        self.fired: list[tuple[str, str]] = []
        #: The run's trace, if the caller wants to know where each fault fell
        #: (`at`): read only, so a fault leaves the trace bytes as they are.
        self.trace: Any = None
        #: For each fired fault, how many trace records preceded it.
        self.at: list[int] = []

    def fires(self, kind: str, label: str) -> bool:
        """Draw whether a `kind` fault fires here (never once the budget is spent)."""
        if kind not in self.plan.kinds or len(self.fired) >= self.plan.budget:
            return False
        if self.chooser.fault(kind, label):
            self.fired.append((kind, label))
            self.at.append(len(self.trace.records) if self.trace is not None else 0)
            return True
        return False

    def cancel_step(self) -> int | None:
        """At the run's start: the step (1-based) a drawn host cancel lands
        before, or None.  Shrinking lowers it (an earlier cancel) or drops it."""
        steps = self.plan.cancel_steps
        if not steps or not self.fires("cancel", "host cancel"):
            return None
        return 1 + self.chooser.choose("fault:cancel_step",
                                       tuple(f"before step {k}" for k in range(1, steps + 1)))

    def cancel_instant(self) -> float | None:
        """At the run's start: the instant (seconds) of a drawn host cancel, or None."""
        instants = self.plan.cancel_instants_ns
        if not instants or not self.fires("cancel", "host cancel"):
            return None
        pick = self.chooser.choose("fault:cancel_at", tuple(f"t={t}ns" for t in instants))
        return instants[pick] / 1_000_000_000


@attrs.define(eq=False)
class Harness:
    """The outside world of one run."""

    store: MemoryStore = attrs.field(factory=MemoryStore)
    #: How long each operation takes (its base seconds, the menu a schedule picks
    #: a multiplier from, orders mode, ties).
    latency_model: LatencyModel = attrs.field(factory=LatencyModel)
    #: The most tasks running at once in the whole run.
    ceiling: int = 8
    #: A host cancel at this virtual instant (seconds), or None.
    cancel_at: float | None = None
    #: A host cancel just before this scheduling step (1-based), or None.
    cancel_step: int | None = None
    #: The scripted model (forge.scripts.ModelScript) or None.
    model: Any = None
    #: The scripted operator (forge.scripts.OperatorScript) or None.
    operator: Any = None
    #: The tool catalogue and its answers (forge.toolscript.ToolScript) or None.
    tool: Any = None
    #: Store paths whose operations the host refuses (a fault), by operation.
    refusals: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: The run's fault injector, which draws its faults (`attach_faults`), or None.
    injector: Faults | None = None

    @classmethod
    def seeded(cls, files: dict[str, str], **keywords: Any) -> Harness:
        """A harness whose store holds `files` (path -> text; a store folder's
        or a case's), given its other fields as `keywords`."""
        return cls(store=MemoryStore(files), **keywords)

    def refuses(self, op: str, path: str | None) -> bool:
        refusals = self.refusals
        if refusals:        # most runs refuse nothing: asked at every store operation
            paths = refusals.get(op, ()) + refusals.get("*", ())
            if path is not None and (path in paths or "*" in paths):
                return True
        # `spawn` asks whether a task's setup is refused; a store fault is an operation's.
        return (self.injector is not None and op != "spawn"
                and self.injector.fires("store", f"refuse {op} {path or ''}".rstrip()))

    def attach_faults(self, plan: FaultPlan, chooser: Chooser) -> None:
        """Draw this run's faults from `chooser` (call once, before the run).

        The scripts get the injector too, since a model round and an ask are
        answered there; a cancel fault is drawn now and fixes `cancel_at`.
        """
        if not plan:
            return
        self.injector = injector = Faults(plan, chooser)
        if self.model is not None:
            self.model = attrs.evolve(self.model, injector=injector)
        if self.operator is not None:
            self.operator = attrs.evolve(self.operator, injector=injector)
        if self.tool is not None:
            self.tool = attrs.evolve(self.tool, injector=injector)
        if self.cancel_at is None and plan.cancel_steps:
            self.cancel_step = injector.cancel_step()
        elif self.cancel_at is None:
            self.cancel_at = injector.cancel_instant()
