"""Partial-order reduction: which schedules are the same schedule.

Exhaustive search need not run two schedules that differ only in the order
of steps that commute.  The facts used here are read from the choice record
alone (kinds, values and option labels, see `forge.sim.chooser`), so they hold
for any engine that keeps the chooser's protocol:

- A *race* is a run of consecutive `chain` decisions with no event in
  between: each decision's ready set is the previous one minus the chain
  that ran (so they all happen at one virtual instant).
- A *simple step* is a chain of a race that made exactly one further
  choice, a duration (`latency:OP`, labels `x<multiplier>`), and then
  parked: it issued one harness operation and did nothing else the next
  decision shows (it started no chain and stopped none, or the ready set
  would differ).
- Two simple steps of one race are *independent* when their operations are
  of the same kind and their multipliers differ: the same base duration
  from the same instant, so they complete at different instants and the
  event queue orders them by time, not by who issued first.  Running them
  in either order leaves the same queue, the same ready set and the same
  task states.  Steps of different kinds, equal multipliers (a tie the
  issue order decides) and anything that is not a simple step are treated
  as dependent.

Within those facts every class of equivalent schedules has one
representative in lexicographic normal form (Anisimov-Knuth): no step `a`
follows a step `b` with `a < b` when `a` is independent of `b` and of every
step between them.  Since every prefix of a normal word is normal, a prefix
that is not normal can be pruned with its whole subtree; this is what
sleep sets compute, here without state.

Limits, stated plainly: the chooser does not see what a step does before
its harness call.  A log line, a write to a table two tasks share, or a
spawn the concurrency ceiling queues (it does not appear in the ready set)
inside a simple step make the two orders distinguishable, and the
reduction would keep only one of them.  The tests check the reduction
against brute force on prompts that race store writes; prompts that log
from racing tasks should be explored with `reduce=False`.

What does not live here: the search itself (`forge.sim.exhaustive`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from forge.sim.chooser import LATENCY_PREFIX, Choice, duration_multiplier


@attrs.frozen(order=True)
class Step:
    """A simple step: which chain ran and the duration it chose."""

    label: str
    kind: str = attrs.field(order=False)
    multiplier: float = attrs.field(order=False)
    value: int
    #: Position of the duration choice in the record.
    at: int = attrs.field(order=False, eq=False)


def independent(a: Step, b: Step) -> bool:
    return a.label != b.label and a.kind == b.kind and a.multiplier != b.multiplier


def races(choices: Sequence[Choice],
          options: Sequence[tuple[str, ...]]) -> list[list[tuple[int, Step | None]]]:
    """The record's races, each a list of (position of the chain pick, step).

    A race starts at a `chain` decision with more than one option and goes
    on while the next `chain` decision offers exactly the chains that were
    left (while chains are ready the engine pops no event, so all of it
    happens at one instant).  A step that is not simple is None: a
    barrier nothing moves past.
    """
    out: list[list[tuple[int, Step | None]]] = []
    current: list[tuple[int, Step | None]] = []
    n = len(choices)
    i = 0
    while i < n:
        c = choices[i]
        if c.kind != "chain":
            i += 1
            continue
        labels = options[i]
        picked = labels[c.value]
        rest = tuple(label for label in labels if label != picked)
        j = i + 1                      # the next chain decision, or the end
        while j < n and choices[j].kind != "chain":
            j += 1
        step: Step | None = None
        if j == i + 2 and choices[i + 1].kind.startswith(LATENCY_PREFIX):
            m = duration_multiplier(options[i + 1][choices[i + 1].value])
            if m is not None:
                step = Step(picked, choices[i + 1].kind, m, choices[i + 1].value, i + 1)
        if len(labels) > 1 or current:
            current.append((i, step))
        goes_on = bool(rest) and j < n and tuple(options[j]) == rest
        if current and not goes_on:
            out.append(current)
            current = []
        i = j
    if current:
        out.append(current)
    return out


def first_violation(choices: Sequence[Choice], options: Sequence[tuple[str, ...]]) -> int | None:
    """The record position where the schedule stops being in normal form.

    That is the duration choice of the first step `a` that could move left
    past steps it is independent of and land before a larger one.  None
    when the whole record is in normal form.
    """
    worst: int | None = None
    for race in races(choices, options):
        steps = [step for _, step in race]
        for k, a in enumerate(steps):
            if a is not None and violates(steps[:k], a):
                if worst is None or a.at < worst:
                    worst = a.at
                break
    return worst


def violates(before: Sequence[Step | None], a: Step) -> bool:
    """True when `a`, placed after `before` in one race, breaks normal form."""
    for b in reversed(before):
        if b is None or not independent(a, b):
            return False
        if a < b:
            return True
    return False


def later_step(choices: Sequence[Choice], options: Sequence[tuple[str, ...]], at: int,
               label: str) -> Step | None:
    """The simple step `label` takes later in the race that picks at `at`.

    Chains of one race do not touch each other before a barrier, so a chain
    picked earlier, at `at`, takes the step it took later: the same
    operation kind and the same duration options.  None when `label` takes
    no simple step in that race before a barrier.
    """
    for race in races(choices, options):
        if not any(pos == at for pos, _ in race):
            continue
        for pos, step in race:
            if pos < at:
                continue
            if step is None:
                return None
            if step.label == label:
                return step
        return None
    return None
