"""Shrinking a failing choice sequence to a local minimum, with the proof.

A choice sequence is compared by the key (deviations, length, values):
deviations are the choices that differ from canonical (non-zero values),
then shortlex.  Trailing zeros are dropped first, since a replay supplies
zeros past the end of its prefix, so `[2, 0]` and `[2]` are one schedule.

`shrink` runs passes that delete and lower choices until none of them finds
a smaller failing sequence, then checks every one-step neighbour of the
result - each single deletion, and each single choice lowered to each
smaller value - and reports whether all of them pass (`proven`).  Every
neighbour is smaller in the key, so a proven result is a local minimum both
by deviations and in shortlex order.

What lives here: the passes, the order and the proof.  What does not: how a
candidate is run (the caller's `run`), what counts as failing (`fails`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs

#: Runs a candidate prefix; answers (failed, the values the run really used,
#: and the number of options of each of those choices).
Runner = Callable[[Sequence[int]], tuple[bool, Sequence[int], Sequence[int]]]


def trim(values: Sequence[int]) -> tuple[int, ...]:
    """Drop trailing zeros: the replay provider supplies them anyway."""
    end = len(values)
    while end and values[end - 1] == 0:
        end -= 1
    return tuple(values[:end])


def deviations(values: Sequence[int]) -> int:
    """How many choices differ from the canonical answer (option 0)."""
    return sum(1 for v in values if v)


def key(values: Sequence[int]) -> tuple:
    """The shrink order: fewer deviations first, then shortlex."""
    t = trim(values)
    return (deviations(t), len(t), t)


def neighbours(values: Sequence[int]) -> list[tuple[int, ...]]:
    """Every one-step neighbour: delete one choice, or lower one to each smaller value."""
    out: list[tuple[int, ...]] = []
    seq = list(values)
    for i in range(len(seq)):
        out.append(tuple(seq[:i] + seq[i + 1:]))
    for i, v in enumerate(seq):
        for lower in range(v):
            out.append(tuple(seq[:i] + [lower] + seq[i + 1:]))
    return out


@attrs.frozen
class ShrinkResult:
    """The smallest failing sequence found and what is known about it."""

    choices: tuple[int, ...]
    deviations: int
    #: Every one-step neighbour was run and passed: a local minimum.
    proven: bool
    #: Candidate runs spent (the proof included).
    runs: int


class _Search:
    def __init__(self, run: Runner, start: Sequence[int], arity: Sequence[int],
                 budget: int) -> None:
        self.run, self.budget = run, budget
        self.best = trim(start)
        # Option counts of the best run's choices: where a deviation can go.
        self.arity = tuple(arity)
        self.runs = 0
        self.seen: set[tuple[int, ...]] = set()
        self._canonical: tuple[int, ...] | None = None

    def canonical_arity(self) -> tuple[int, ...]:
        """Option counts of the canonical run's choices (one run, made once).

        A schedule with one deviation has it at a decision of the canonical
        run, which the best run may not even ask: once a fault has fired and
        spent the budget, later fault decisions are never asked, so the best
        run's positions are not the canonical run's.
        """
        if self._canonical is None:
            self.runs += 1
            _, _, arity = self.run(())
            self._canonical = tuple(arity)
        return self._canonical

    def open_positions(self) -> list[int]:
        return [p for p, n in enumerate(self.arity) if n > 1]

    def exhausted(self) -> bool:
        return self.runs >= self.budget

    def attempt(self, candidate: Sequence[int]) -> bool:
        """Run `candidate` if it could improve on the best; True when it did."""
        cand = trim(candidate)
        if key(cand) >= key(self.best) or cand in self.seen or self.exhausted():
            return False
        self.seen.add(cand)
        self.runs += 1
        failed, used, arity = self.run(cand)
        # The run's own record replays the same run and is never larger than
        # the candidate (values that no longer fit became zeros).
        if failed and key(used) < key(self.best):
            self.best, self.arity = trim(used), tuple(arity)
            return True
        return False

    # ---------------------------------------------------------------- passes
    def delete_chunks(self) -> bool:
        improved = False
        for size in (8, 4, 2, 1):
            i = 0
            while i < len(self.best):
                b = list(self.best)
                if self.attempt(b[:i] + b[i + size:]):
                    improved = True
                else:
                    i += 1
        return improved

    def zero_chunks(self) -> bool:
        improved = False
        for size in (8, 4, 2):
            i = 0
            while i < len(self.best):
                b = list(self.best)
                if any(b[i:i + size]) and self.attempt(b[:i] + [0] * len(b[i:i + size]) + b[i + size:]):
                    improved = True
                else:
                    i += 1
        return improved

    def lower_each(self) -> bool:
        improved = False
        i = 0
        while i < len(self.best):
            for lower in range(self.best[i]):
                b = list(self.best)
                if self.attempt(b[:i] + [lower] + b[i + 1:]):
                    improved = True
                    break
            i += 1
        return improved

    def trade(self) -> bool:
        """Zero one or two deviations and place one deviation anywhere.

        No single deletion or lowering gets from "three small deviations" to
        "two larger ones elsewhere"; this pass does, one deviation at a time.
        Candidates not smaller in the shrink order are never run.
        """
        for k in (2, 1):
            b = list(self.best) + [0] * max(0, len(self.arity) - len(self.best))
            devs = [i for i, v in enumerate(b) if v]
            for combo in itertools.combinations(devs, k):
                for j in self.open_positions():
                    for value in range(1, self.arity[j]):
                        c = list(b)
                        for i in combo:
                            c[i] = 0
                        c[j] = value
                        if self.attempt(c):
                            return True
        return False

    def zero_and_swap(self) -> bool:
        """Zero one deviation and swap two later values.

        Lowering a chain pick hands the chain's turn to another chain, and
        the durations after it then belong to the wrong operations; a swap
        gives each its old duration back.
        """
        b = list(self.best) + [0] * max(0, len(self.arity) - len(self.best))
        devs = [i for i, v in enumerate(b) if v]
        for i in devs:
            later = [p for p in self.open_positions() if p > i]
            for p, q in itertools.combinations(later, 2):
                if b[p] == b[q]:
                    continue
                c = list(b)
                c[i] = 0
                c[p], c[q] = c[q], c[p]
                if self.attempt(c):
                    return True
        return False

    def regroup(self) -> bool:
        """Replace three deviations by two, placed anywhere with extreme values.

        Reaches schedules such as "slow two rivals" from "speed up every step
        of one chain", which no one-for-one move connects.  The latest
        deviations are given up first and the new ones tried earliest first,
        the likeliest trade in a race; the pass spends at most half of the
        remaining budget, so the proof keeps the rest.
        """
        b = list(self.best) + [0] * max(0, len(self.arity) - len(self.best))
        devs = [i for i, v in enumerate(b) if v]
        if len(devs) < 3:
            return False
        slots = [(p, v) for p in self.open_positions()
                 for v in sorted({1, self.arity[p] - 1})]
        cap = self.runs + (self.budget - self.runs) // 2
        for trio in reversed(list(itertools.combinations(devs, 3))):
            for (p, v), (q, w) in itertools.combinations(slots, 2):
                if self.runs >= cap:
                    return False
                if p == q:
                    continue
                c = list(b)
                for i in trio:
                    c[i] = 0
                c[p], c[q] = v, w
                if self.attempt(c):
                    return True
        return False

    def fewer_deviations(self) -> bool:
        """Try every placement of one deviation fewer, when the budget allows.

        Deviations go only where a run had a real decision (more than one
        option), with values below that decision's option count: for a single
        deviation the canonical run's decisions, otherwise the best run's.
        """
        target = deviations(self.best) - 1
        if target < 0:
            return False
        # One deviation sits on a decision of the canonical run; more sit on
        # the best run's decisions (an approximation the proof does not rely on).
        arity = self.canonical_arity() if target == 1 else self.arity
        positions = [p for p, n in enumerate(arity) if n > 1]
        combos = list(itertools.combinations(positions, target))
        cost = sum(_product(arity[p] - 1 for p in combo) for combo in combos)
        if cost > self.budget - self.runs:
            return False
        for combo in combos:
            for values in itertools.product(*(range(1, arity[p]) for p in combo)):
                c = [0] * len(arity)
                for p, v in zip(combo, values):
                    c[p] = v
                if self.attempt(c):
                    return True
        return False

    def unproven_neighbour(self) -> bool:
        """Run every one-step neighbour; True if one fails (then it is the new best)."""
        for cand in neighbours(self.best):
            t = trim(cand)
            if t in self.seen:
                continue        # already run: it passed, or it would be the best
            if self.exhausted():
                return True     # cannot finish the proof
            if self.attempt(t):
                return True
        return False


def shrink(run: Runner, start: Sequence[int], arity: Sequence[int], budget: int = 3000,
           trade: bool = True) -> ShrinkResult:
    """Shrink `start` (a failing sequence) until no pass applies, then prove it.

    `budget` bounds the candidate runs; when it runs out the best so far is
    returned with `proven=False`.  `trade` enables the pass that swaps two
    deviations for one and the search for one deviation fewer (run only when
    the budget covers it).  `arity` is the option count of each choice of
    `start`.
    """
    s = _Search(run, start, arity, budget)
    while not s.exhausted():
        progress = s.delete_chunks()
        progress |= s.zero_chunks()
        progress |= s.lower_each()
        if not progress and trade:
            progress = s.trade() or s.zero_and_swap() or s.regroup() or s.fewer_deviations()
        if progress:
            continue
        if not s.unproven_neighbour():
            break
    proven = not s.exhausted() or not _any_unseen(s)
    return ShrinkResult(s.best, deviations(s.best), proven, s.runs)


def _any_unseen(s: _Search) -> bool:
    return any(trim(c) not in s.seen for c in neighbours(s.best))


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out
