"""The harness: everything the engine asks of the outside world.

The engine is a pure function of its prompt, its arguments and the answers it
gets here.  Every answer that is not fixed by a script is drawn from the
chooser, so this module is the only door through which nondeterminism can
enter a run:

- the store backend (`MemoryStore`, seeded from a folder or a case),
- how long each operation takes (`LatencyModel`, a menu of durations whose
  first entry is the canonical one),
- the model's replies and the operator's answers (scripts, `forge.scripts`),
- the concurrency ceiling and host faults (a host cancel at a given instant).

What does not live here: the meaning of an operation (the engine's), and the
event queue (the simulator's).
"""

from __future__ import annotations

from typing import Any

import attrs

from forge.store import MemoryStore
from sim.chooser import Chooser
from sim.kernel import seconds_to_ns

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


@attrs.frozen
class LatencyModel:
    base: dict[str, float] = attrs.field(factory=lambda: dict(DEFAULT_LATENCY))
    menu: tuple[float, ...] = LATENCY_MENU

    def draw(self, chooser: Chooser, op: str, pinned: float | None = None) -> int:
        """Virtual duration of one operation, in nanoseconds.

        A duration a script pins (a model round's `delay`) is used as is;
        everything else is a choice.
        """
        if pinned is not None:
            return seconds_to_ns(pinned)
        base = self.base.get(op, 0.0)
        labels = tuple(f"x{m}" for m in self.menu)
        pick = chooser.choose(f"latency:{op}", labels)
        return seconds_to_ns(base * self.menu[pick])


@attrs.define(eq=False)
class Harness:
    """The outside world of one run."""

    store: MemoryStore = attrs.field(factory=MemoryStore)
    latency: LatencyModel = attrs.field(factory=LatencyModel)
    #: The most tasks running at once in the whole run.
    ceiling: int = 8
    #: A host cancel at this virtual instant (seconds), or None.
    cancel_at: float | None = None
    #: The scripted model (forge.scripts.ModelScript) or None.
    model: Any = None
    #: The scripted operator (forge.scripts.OperatorScript) or None.
    operator: Any = None
    #: Store paths whose operations the host refuses (a fault), by operation.
    refuse: dict[str, tuple[str, ...]] = attrs.field(factory=dict)

    def refuses(self, op: str, path: str | None) -> bool:
        paths = self.refuse.get(op, ()) + self.refuse.get("*", ())
        return path is not None and (path in paths or "*" in paths)
