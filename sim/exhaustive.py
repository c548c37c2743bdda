"""Exhaustive search over the choice tree, reduced, bounded and honest.

Depth-first: every run replays a prefix and takes, past it, the first
option the reduction leaves awake (option 0 without reduction), and every
decision past the prefix with more than one such option pushes its
alternatives.  Three things keep the tree small or say that it was not
covered:

- *Reduction* (`forge.sim.reduction`): sleep sets over the picks of the
  next completion, for subjects run in orders mode (`forge.sim.orders`,
  which the CLI's `--strategy exhaustive` uses): a pick asleep at a node is
  not taken there (`pruned`), and a run that reaches a node where every pick
  sleeps is `redundant` from there on.  A subject without completion picks
  (the duration-menu mode, a subject over a pipe) is walked unreduced.
- *A deviation bound* (`max_deviations`): no schedule with more than that
  many non-canonical choices other than chain picks is run (`bounded`).
- *A budget* (`limit` runs): when it runs out, the report says
  `complete=False` and how many subtrees were left `unfinished`.

The siblings of one completion node are pushed one at a time: each carries
the earlier ones asleep, with the footprints read from their own runs, so
the next sibling is pushed only once the previous one has run.

The first failing schedule is shrunk (`forge.sim.shrink`); later ones are
reported as found.  What does not live here: the sleep sets and
independence (`forge.sim.reduction`), the report types (`forge.sim.explore`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from forge.sim.chooser import Choice, Chooser, ReplayProvider
from forge.sim.explore import Check, Finding, Report, Subject, check_all, finding, tally
from forge.sim.orders import GLOBAL
from forge.sim.reduction import Asleep, SleepProvider
from forge.sim.shrink import trim


@attrs.frozen
class _Entry:
    """A prefix to run, the sleep set carried past its last choice, and the
    siblings of that choice still to push after it (a completion node's)."""

    prefix: tuple[int, ...]
    asleep: tuple[Asleep, ...] = ()
    siblings: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()


def _counted(choices: Sequence[Choice], values: Sequence[int]) -> int:
    """Deviations the bound counts: non-canonical values of non-chain choices."""
    return sum(1 for c, v in zip(choices, values) if v and c.kind != "chain")


def exhaustive(subject: Subject, checks: Sequence[Check], limit: int = 10_000, reduce: bool = True,
               max_deviations: int | None = None, stop_at_first: bool = False,
               shrink_budget: int = 3000) -> Report:
    findings: list[Finding] = []
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    faults: dict[str, int] = {}
    stack: list[_Entry] = [_Entry(())]
    runs = pruned = bounded = redundant = 0
    stopped = False

    def within(made: Sequence[Choice], values: Sequence[int]) -> bool:
        nonlocal bounded
        if max_deviations is not None and _counted(made, values) > max_deviations:
            bounded += 1
            return False
        return True

    while stack and runs < limit:
        entry = stack.pop()
        chooser, provider, segments, (obs, sha) = _run(subject, entry, reduce)
        runs += 1
        traces.add(sha)
        tally(outcomes, (str(obs.get("outcome")),))
        tally(faults, chooser.faults_fired())
        made, values = chooser.choices, chooser.values()
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
        start = len(entry.prefix)
        footprint = {s.at: s.keys for s in segments}
        if entry.siblings:
            # The next sibling of the choice this prefix ends with sleeps on it.
            at = start - 1
            mine = Asleep(entry.labels[values[at]], footprint.get(at, frozenset({GLOBAL})))
            nxt = entry.prefix[:-1] + (entry.siblings[0],)
            if within(made, nxt):
                stack.append(_Entry(nxt, entry.asleep + (mine,), entry.siblings[1:],
                                    entry.labels))
        if isinstance(provider, SleepProvider):
            pruned += sum(len(n.labels) - len(n.picks) for n in provider.nodes)
            if provider.blocked_at is not None:
                redundant += 1
            nodes = {n.at: n for n in provider.nodes}
            end = provider.blocked_at if provider.blocked_at is not None else len(made)
        else:
            nodes, end = {}, len(made)
        # Deepest position first, so the shallowest alternative is popped next.
        for pos in range(end - 1, start - 1, -1):
            head = tuple(values[:pos])
            node = nodes.get(pos)
            if node is not None:
                if len(node.picks) > 1:
                    taken = Asleep(node.labels[node.picks[0]],
                                   footprint.get(pos, frozenset({GLOBAL})))
                    first = head + (node.picks[1],)
                    if within(made, first):
                        stack.append(_Entry(first, node.asleep + (taken,), node.picks[2:],
                                            node.labels))
                continue
            carried = provider.pending_at.get(pos, ()) if isinstance(provider, SleepProvider) \
                else ()
            for alt in range(made[pos].n - 1, 0, -1):
                if within(made, head + (alt,)):
                    stack.append(_Entry(head + (alt,), carried))
    return Report(runs, len(traces), tuple(findings), dict(sorted(outcomes.items())),
                  complete=not stack and not stopped, pruned=pruned, bounded=bounded,
                  unfinished=len(stack), redundant=redundant,
                  faults=dict(sorted(faults.items())))


def _run(subject: Subject, entry: _Entry, reduce: bool):
    """Run one entry: the chooser, its provider, the completion segments
    (none for a subject without them) and the subject's (obs, sha).

    A run that reached its seed has only global segments, which the sleep
    sets it kept online did not know; if sleep skipped an option in it, it
    is run again without sleep past its prefix."""
    for sleepless in (False, True):
        provider = SleepProvider(entry.prefix, entry.asleep, sleepless) if reduce \
            else ReplayProvider(entry.prefix)
        chooser = Chooser(provider)
        if reduce:
            provider.chooser = chooser
        result = subject(chooser)
        order = getattr(chooser, "completions", None)
        segments = order.segments() if order is not None else []
        if sleepless or not reduce or order is None or not provider.slept or not order.reached:
            break
    return chooser, provider, segments, result
