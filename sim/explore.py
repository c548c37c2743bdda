"""Exploring schedules: many choice sequences of one run, checked and shrunk.

`explore` runs a subject under a strategy per seed and checks every result
with the invariant checks it is given; the first failing schedule is shrunk
to a shortlex-minimal choice sequence that still fails, and reported with a
replay file.  `exhaustive` walks the choice tree depth-first.

A *subject* is any callable `subject(chooser) -> (observation, trace_sha)`:
the explorer knows nothing about prompts, which is why the lifecycle
manager's workloads can use it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from sim.chooser import (
    Chooser,
    PCTProvider,
    Provider,
    RandomProvider,
    ReplayProvider,
)

Subject = Callable[[Chooser], tuple[dict, str]]
Check = Callable[[dict], list[str]]


@attrs.frozen
class Finding:
    """A failing schedule: what broke, and the choices that reproduce it."""

    seed: int | None
    problems: tuple[str, ...]
    choices: tuple[int, ...]
    shrunk: tuple[int, ...]
    observation: dict = attrs.field(eq=False, repr=False)


@attrs.frozen
class Report:
    runs: int
    distinct_traces: int
    findings: tuple[Finding, ...]
    outcomes: dict


def run_once(subject: Subject, provider: Provider) -> tuple[dict, str, list[int]]:
    chooser = Chooser(provider)
    obs, sha = subject(chooser)
    return obs, sha, chooser.values()


def check_all(obs: dict, checks: Sequence[Check]) -> list[str]:
    problems: list[str] = []
    for check in checks:
        problems.extend(check(obs))
    return problems


def shrink(subject: Subject, choices: Sequence[int], fails: Callable[[dict], bool],
           budget: int = 300) -> tuple[int, ...]:
    """The shortlex-smallest failing sequence found by deleting and lowering choices.

    Passes, in the order Hypothesis's shrinker favours: drop the tail, delete
    chunks, then lower each value (trying 0 first).  Every candidate is a
    fresh run from a replay prefix, so progress is deterministic.
    """
    best = list(choices)
    tries = 0

    def attempt(candidate: list[int]) -> bool:
        nonlocal best, tries
        if tries >= budget:
            return False
        tries += 1
        obs, _, used = run_once(subject, ReplayProvider(candidate))
        if fails(obs):
            # Trailing zeros are what a replay supplies anyway: compare without them.
            while used and used[-1] == 0:
                used.pop()
            if (len(used), used) < (len(best), best):
                best = used
            return True
        return False

    # Trailing zeros are implied by the replay provider.
    while best and best[-1] == 0:
        best.pop()
    for size in (8, 4, 2, 1):
        i = 0
        while i < len(best):
            candidate = best[:i] + best[i + size:]
            if not attempt(candidate):
                i += 1
            while best and best[-1] == 0:
                best.pop()
    i = 0
    while i < len(best):
        if best[i] > 0:
            for lower in range(0, best[i]):
                candidate = best[:i] + [lower] + best[i + 1:]
                if attempt(candidate):
                    break
        i += 1
        while best and best[-1] == 0:
            best.pop()
    return tuple(best)


def explore(subject: Subject, seeds: Iterable[int], checks: Sequence[Check],
            strategy: str = "random", pct_depth: int = 3, stop_at_first: bool = True,
            shrink_budget: int = 300, progress: Callable[[int], None] | None = None) -> Report:
    findings: list[Finding] = []
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    runs = 0
    for seed in seeds:
        provider = PCTProvider(seed, pct_depth) if strategy == "pct" else RandomProvider(seed)
        obs, sha, used = run_once(subject, provider)
        runs += 1
        traces.add(sha)
        key = str(obs.get("outcome"))
        outcomes[key] = outcomes.get(key, 0) + 1
        problems = check_all(obs, checks)
        if progress:
            progress(runs)
        if problems:
            def fails(o: dict) -> bool:
                return bool(check_all(o, checks))

            small = shrink(subject, used, fails, shrink_budget)
            findings.append(Finding(seed, tuple(problems), tuple(used), small, obs))
            if stop_at_first:
                break
    return Report(runs, len(traces), tuple(findings), dict(sorted(outcomes.items())))


def exhaustive(subject: Subject, checks: Sequence[Check], limit: int = 10_000) -> Report:
    """Depth-first over the choice tree, each branch once, up to `limit` runs."""
    findings: list[Finding] = []
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    stack: list[list[int]] = [[]]
    runs = 0
    while stack and runs < limit:
        prefix = stack.pop()
        chooser = Chooser(ReplayProvider(prefix))
        obs, sha = subject(chooser)
        runs += 1
        traces.add(sha)
        key = str(obs.get("outcome"))
        outcomes[key] = outcomes.get(key, 0) + 1
        problems = check_all(obs, checks)
        if problems:
            findings.append(Finding(None, tuple(problems), tuple(chooser.values()),
                                    tuple(chooser.values()), obs))
        # Branch on every choice past the prefix, deepest last so the
        # traversal is depth-first in the canonical-first order.
        made = chooser.choices
        for pos in range(len(made) - 1, len(prefix) - 1, -1):
            for alt in range(made[pos].n - 1, 0, -1):
                stack.append([c.value for c in made[:pos]] + [alt])
    return Report(runs, len(traces), tuple(findings), dict(sorted(outcomes.items())))
