"""Exhaustive search over the choice tree, reduced, bounded and honest.

Depth-first and canonical-first: every run replays a prefix and goes
canonical after it, and every choice past the prefix with more than one
option pushes its alternatives.  Three things keep the tree small or say
that it was not covered:

- *Reduction* (`forge.sim.reduction`): an alternative whose schedule is not in
  normal form - a step that commutes with the steps before it and would
  sort before them - is pruned with its subtree, since an equivalent
  schedule in normal form is run instead.
- *A deviation bound* (`max_deviations`): no schedule with more than that
  many non-canonical choices other than chain picks is run.  Chain picks
  are not counted so that schedules the reduction treats as equivalent
  (same durations, steps in another order) fall under the bound together;
  without that the bound and the reduction could together lose a class.
- *A budget* (`limit` runs): when it runs out, the report says
  `complete=False` and how many subtrees were left `unfinished`.

The first failing schedule is shrunk (`forge.sim.shrink`); later ones are
reported as found.  What does not live here: the equivalence facts
(`forge.sim.reduction`), the report types (`forge.sim.explore`).
"""

from __future__ import annotations

from collections.abc import Sequence

from forge.sim.chooser import Choice, Chooser, ReplayProvider
from forge.sim.explore import Check, Finding, Report, Subject, check_all, finding
from forge.sim.reduction import first_violation, later_step
from forge.sim.shrink import trim


def _counted(choices: Sequence[Choice], values: Sequence[int]) -> int:
    """Deviations the bound counts: non-canonical values of non-chain choices."""
    return sum(1 for c, v in zip(choices, values) if v and c.kind != "chain")


def exhaustive(subject: Subject, checks: Sequence[Check], limit: int = 10_000, reduce: bool = True,
           max_deviations: int | None = None, stop_at_first: bool = False,
           shrink_budget: int = 3000) -> Report:
    findings: list[Finding] = []
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    stack: list[tuple[int, ...]] = [()]
    runs = pruned = bounded = redundant = 0
    stopped = False
    while stack and runs < limit:
        prefix = stack.pop()
        chooser = Chooser(ReplayProvider(prefix))
        obs, sha = subject(chooser)
        runs += 1
        traces.add(sha)
        key = str(obs.get("outcome"))
        outcomes[key] = outcomes.get(key, 0) + 1
        made, options, values = chooser.choices, chooser.options, chooser.values()
        problems = check_all(obs, checks)
        if problems:
            if not findings:
                findings.append(finding(subject, None, chooser, obs, problems, checks,
                                        shrink_budget, {"strategy": "exhaustive"}))
            else:
                findings.append(Finding(None, tuple(problems), tuple(values), trim(values), obs,
                                        sum(1 for v in values if v), False,
                                        {"strategy": "exhaustive"}))
            if stop_at_first:
                stopped = True
                break
        end = len(made)
        if reduce:
            bad = first_violation(made, options)
            if bad is not None:
                redundant += 1
                end = bad + 1        # alternatives past it share the violation
        base = _counted(made[:len(prefix)], values[:len(prefix)])
        # Deepest position and largest alternative go on the stack first, so
        # the shallowest, smallest alternative is popped next.
        for pos in range(end - 1, len(prefix) - 1, -1):
            for alt in range(made[pos].n - 1, 0, -1):
                head = tuple(values[:pos]) + (alt,)
                for candidate in _expand(made, options, pos, alt, head, reduce):
                    if candidate is None:
                        pruned += 1
                        continue
                    counted = base + _counted_tail(made, options, len(prefix), candidate)
                    if max_deviations is not None and counted > max_deviations:
                        bounded += 1
                        continue
                    stack.append(candidate)
    return Report(runs, len(traces), tuple(findings), dict(sorted(outcomes.items())),
                  complete=not stack and not stopped, pruned=pruned, bounded=bounded,
                  unfinished=len(stack), redundant=redundant)


def _counted_tail(made: Sequence[Choice], options, start: int, candidate: tuple[int, ...]) -> int:
    """Counted deviations of `candidate` from position `start` on.

    Positions past the record (a duration choice `_expand` added) are
    durations, never chain picks.
    """
    return sum(1 for pos in range(start, len(candidate))
               if candidate[pos] and (pos >= len(made) or made[pos].kind != "chain"))


def _expand(made: Sequence[Choice], options: Sequence[tuple[str, ...]], pos: int, alt: int,
            head: tuple[int, ...], reduce: bool) -> list[tuple[int, ...] | None]:
    """The prefixes to run for the alternative `alt` at `pos`, in stack order;
    None stands for a pruned one.

    A changed duration is judged at once: its step keeps its shape (the
    chain parked on that operation), only the value changes.  A changed
    chain pick is judged through the step that chain took later in the same
    race, when it did: then each of its durations is a prefix of its own,
    and those out of normal form are pruned before they run.
    """
    if not reduce:
        return [head]
    if made[pos].kind != "chain":
        changed = list(made[:pos]) + [Choice(made[pos].kind, made[pos].n, alt)]
        return [None] if first_violation(changed, options[:pos + 1]) == pos else [head]
    label = options[pos][alt]
    step = later_step(made, options, pos, label)
    if step is None:
        return [head]
    arity = made[step.at].n
    picked = list(made[:pos]) + [Choice("chain", made[pos].n, alt)]
    opts = list(options[:pos + 1]) + [options[step.at]]
    verdicts = [first_violation(picked + [Choice(step.kind, arity, v)], opts) == pos + 1
                for v in range(arity)]
    if not any(verdicts):
        return [head]
    return [None if bad else head + (v,) for v, bad in reversed(list(enumerate(verdicts)))]
