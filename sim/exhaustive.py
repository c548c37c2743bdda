"""Exhaustive search over the choice tree, reduced, bounded and honest.

Depth-first: every run replays a prefix and takes, past it, the first
option the reduction leaves awake (option 0 without reduction), and every
decision past the prefix with more than one such option pushes its
alternatives.  Three things keep the tree small or say that it was not
covered:

- *Reduction* (`forge.sim.reduction`): sleep sets over chain picks and
  completion picks, for subjects run in orders mode (`forge.sim.orders`,
  which the CLI's `--strategy exhaustive` uses): a pick asleep at a node is
  not taken there (`pruned`), and a run that reaches a node where every pick
  sleeps is `redundant` from there on.  A subject not in orders mode (the
  duration-menu mode, a subject over a pipe) is walked unreduced.
- *A deviation bound* (`max_deviations`): no schedule with more than that
  many non-canonical choices other than chain picks is run (`bounded`).
- *A budget* (`limit` runs): when it runs out, the report says
  `complete=False` and how many subtrees were left `unfinished`.

The siblings of one completion node are pushed one at a time: each carries
the earlier ones asleep, with the footprints read from their own runs, so
the next sibling is pushed only once the previous one has run.

The first failing schedule is shrunk (`forge.sim.shrink`); later ones are
reported as found.

Every run of the walk is a `step` that depends on its entry alone: what it
pushes is read off its own run.  So the walk's serial order (a stack popped
depth-first) can be cut into subtrees walked anywhere: `slice_of` walks a
subtree for a few runs and hands back its unwalked subtrees, and `spread`
hands those to idle workers and folds every step, in the serial order,
into the report one process would make (`Tally`).  The budget, the
reduction and the completeness claim are therefore the serial walk's, and
the pool that runs the slices is the caller's (`forge.campaign`).

What does not live here: the sleep sets and independence
(`forge.sim.reduction`), the report types (`forge.sim.explore`), worker
processes (`forge.pool`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence

import attrs

from forge.sim.chooser import CHAIN_KIND, Choice, Chooser, ReplayProvider
from forge.sim.explore import (PROBES, Check, Finding, Report, Subject, check_all, finding,
                               tally)
from forge.sim.orders import GLOBAL, footprints
from forge.sim.reduction import BOUNDED_PICKS, PICKS, Asleep, SleepProvider
from forge.sim.shrink import trim


@attrs.frozen
class Entry:
    """A prefix to run, the sleep set carried past its last choice, and the
    siblings of that choice still to push after it (a completion node's)."""

    prefix: tuple[int, ...]
    asleep: tuple[Asleep, ...] = ()
    siblings: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()


#: The walk starts at the empty prefix.
ROOT = Entry(())


@attrs.frozen
class Step:
    """One run of the walk: what the report counts of it, and the entries it
    pushed (in push order, so the last is run next)."""

    sha: str
    outcome: str
    #: The kinds of the faults it fired (`Chooser.faults_fired`).
    faults_fired: tuple[str, ...]
    values: tuple[int, ...]
    problems: tuple[str, ...]
    #: The run's observation, kept only when it failed (a finding needs it).
    observation: dict | None = attrs.field(eq=False, repr=False)
    pruned: int
    bounded: int
    redundant: int
    pushed: tuple[Entry, ...]
    #: The probes the run reached (`forge.sim.explore.PROBES`).
    probes: tuple[str, ...] = ()


@attrs.frozen
class Walk:
    """What every step of one walk shares."""

    subject: Subject
    checks: Sequence[Check]
    reduce: bool = True
    max_deviations: int | None = None


def _counted(choices: Sequence[Choice], values: Sequence[int]) -> int:
    """Deviations the bound counts: non-canonical values of non-chain choices."""
    return sum(1 for c, v in zip(choices, values) if v and c.kind != CHAIN_KIND)


def step(walk: Walk, entry: Entry) -> Step:
    """Run `entry` and read off the entries its run adds to the walk.

    A step depends on nothing but its entry, which is what lets a walk be
    cut into subtrees and run anywhere (`slice_of`, `Tally`)."""
    chooser, provider, segments, (obs, sha) = _run(walk, entry)
    made, values = chooser.choices, chooser.values()
    pushed: list[Entry] = []
    bounded = pruned = redundant = 0

    def push(candidate: Entry) -> None:
        nonlocal bounded
        if walk.max_deviations is not None and \
                _counted(made, candidate.prefix) > walk.max_deviations:
            bounded += 1
        else:
            pushed.append(candidate)

    start = len(entry.prefix)
    footprint = footprints(segments)
    if entry.siblings:
        # The next sibling of the choice this prefix ends with sleeps on it.
        at = start - 1
        mine = Asleep(entry.labels[values[at]], footprint.get(at, frozenset({GLOBAL})))
        push(Entry(entry.prefix[:-1] + (entry.siblings[0],), entry.asleep + (mine,),
                   entry.siblings[1:], entry.labels))
    if isinstance(provider, SleepProvider):
        pruned = sum(len(n.labels) - len(n.picks) for n in provider.nodes)
        redundant = int(provider.blocked_at is not None)
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
                push(Entry(head + (node.picks[1],), node.asleep + (taken,), node.picks[2:],
                           node.labels))
            continue
        carried = provider.pending_at.get(pos, ()) if isinstance(provider, SleepProvider) \
            else ()
        for alt in range(made[pos].n - 1, 0, -1):
            push(Entry(head + (alt,), carried))
    problems = tuple(check_all(obs, walk.checks))
    return Step(sha, str(obs.get("outcome")), tuple(chooser.faults_fired()), tuple(values),
                problems, obs if problems else None, pruned, bounded, redundant, tuple(pushed),
                tuple(obs.get(PROBES, ())))


class Tally:
    """Folds steps, in the walk's serial order, into its report.

    The serial order is depth-first: a stack that starts at `ROOT`, pops
    an entry, runs it and pushes what its step pushed.  The tally stops
    taking steps at the budget (`limit` runs) or, with `stop_at_first`,
    after the first failing one; `done` says so."""

    def __init__(self, walk: Walk, limit: int, stop_at_first: bool, shrink_budget: int) -> None:
        self.walk, self.limit = walk, limit
        self.stop_at_first, self.shrink_budget = stop_at_first, shrink_budget
        self.findings: list[Finding] = []
        self.traces: set[str] = set()
        self.outcomes: dict[str, int] = {}
        self.faults_fired: dict[str, int] = {}
        self.probes: dict[str, int] = {}
        self.runs = self.pruned = self.bounded = self.redundant = 0
        #: Entries pushed and not yet run: the serial stack's height.
        self.waiting = 1
        self.stopped = False

    @property
    def done(self) -> bool:
        return self.stopped or self.runs >= self.limit or self.waiting == 0

    def take(self, s: Step) -> None:
        self.runs += 1
        self.waiting -= 1
        self.traces.add(s.sha)
        tally(self.outcomes, (s.outcome,))
        tally(self.faults_fired, s.faults_fired)
        tally(self.probes, s.probes)
        if s.problems:
            self.findings.append(self._finding(s))
            if self.stop_at_first:
                # The serial walk stops before it pushes this run's alternatives.
                self.stopped = True
                return
        self.pruned += s.pruned
        self.bounded += s.bounded
        self.redundant += s.redundant
        self.waiting += len(s.pushed)

    def _finding(self, s: Step) -> Finding:
        provider = {"strategy": SleepProvider.name}
        if self.findings:
            return Finding(None, s.problems, s.values, trim(s.values), s.observation,
                           sum(1 for v in s.values if v), False, provider)
        # Only the first is shrunk, from a replay of its choices: the same run.
        chooser = Chooser(ReplayProvider(s.values))
        self.walk.subject(chooser)
        return finding(self.walk.subject, None, chooser, s.observation, s.problems,
                       self.walk.checks, self.shrink_budget, provider)

    def report(self) -> Report:
        return Report(self.runs, len(self.traces), tuple(self.findings),
                      dict(sorted(self.outcomes.items())),
                      complete=self.waiting == 0 and not self.stopped, pruned=self.pruned,
                      bounded=self.bounded, unfinished=self.waiting, redundant=self.redundant,
                      faults_fired=dict(sorted(self.faults_fired.items())),
                      probes=dict(sorted(self.probes.items())))


def exhaustive(subject: Subject, checks: Sequence[Check], limit: int = 10_000, reduce: bool = True,
               max_deviations: int | None = None, stop_at_first: bool = False,
               shrink_budget: int = 3000) -> Report:
    """Walk the choice tree depth-first in this process (see the module docstring)."""
    walk = Walk(subject, checks, reduce, max_deviations)
    counts = Tally(walk, limit, stop_at_first, shrink_budget)
    stack = [ROOT]
    while not counts.done:
        s = step(walk, stack.pop())
        counts.take(s)
        stack.extend(s.pushed)
    return counts.report()


@attrs.frozen
class Slice:
    """A subtree's walk, cut short: its first steps in serial order, and the
    entries still to run (in stack order: the last is run next)."""

    steps: tuple[Step, ...]
    rest: tuple[Entry, ...]


def slice_of(walk: Walk, entry: Entry, budget: int, stop_at_first: bool) -> Slice:
    """Walk the subtree under `entry` serially for at most `budget` runs.

    The subtree's serial order is the slice's steps, then the subtrees of
    `rest` from the last to the first, which is how `spread` stitches the
    slices of many workers into the one serial order."""
    steps: list[Step] = []
    stack = [entry]
    while stack and len(steps) < budget:
        s = step(walk, stack.pop())
        steps.append(s)
        if s.problems and stop_at_first:
            break
        stack.extend(s.pushed)
    return Slice(tuple(steps), tuple(stack))


class _Part:
    """A subtree of the walk, as `spread` knows it: unsent, sent, or cut
    into a slice and the parts under its rest (in serial order)."""

    __slots__ = ("entry", "key", "future", "slice", "parts")

    def __init__(self, entry: Entry, key: tuple[int, ...] = ()) -> None:
        self.entry = entry
        #: Its place in the serial order: parts compare as their keys do.
        self.key = key
        self.future = None
        self.slice: Slice | None = None
        self.parts: list[_Part] = []


def spread(walk: Walk, submit: Callable[[Entry, int], object],
           first_done: Callable[[list], object], in_flight: int, *, limit: int = 10_000,
           stop_at_first: bool = False, shrink_budget: int = 3000,
           budget: int = 32) -> Report:
    """`exhaustive`'s report, with subtrees walked by `workers` elsewhere.

    `submit(entry, budget)` starts `slice_of` for that entry somewhere and
    returns a future (`result()`, `cancel()`); `first_done(futures)` blocks
    until one of them is done and returns it; at most `in_flight` slices
    are out at once.  Work is cut as it is found:
    a slice hands back its unwalked subtrees, any idle worker takes the next
    of them, so an unbalanced tree keeps every worker busy.  The report is
    the serial one: steps are folded in the walk's serial order, whatever
    order the slices finish in, and the budget stops the fold where the
    serial walk would stop (runs past it are done and thrown away)."""
    counts = Tally(walk, limit, stop_at_first, shrink_budget)
    root = _Part(ROOT)
    # Parts not yet sent, by their place in the serial order: the earliest
    # goes first, so a budget that runs out wastes the least.
    unsent: list[tuple[tuple[int, ...], int, _Part]] = [((), 0, root)]
    made = itertools.count(1)
    sent: dict[object, _Part] = {}
    # The parts still to fold, in serial order from the end (the top is next).
    order: list[_Part] = [root]
    while not counts.done:
        while unsent and len(sent) < in_flight:
            part = heapq.heappop(unsent)[2]
            part.future = submit(part.entry, budget)
            sent[part.future] = part
        while order and order[-1].slice is not None and not counts.done:
            part = order.pop()
            for s in part.slice.steps:
                counts.take(s)
                if counts.done:
                    break
            order.extend(reversed(part.parts))
        if counts.done or not order:
            break
        done = first_done(list(sent))
        part = sent.pop(done)
        part.slice = done.result()
        part.parts = [_Part(e, part.key + (i,))
                      for i, e in enumerate(reversed(part.slice.rest))]
        for p in part.parts:
            heapq.heappush(unsent, (p.key, next(made), p))
    for future in sent:
        future.cancel()
    return counts.report()


def _run(walk: Walk, entry: Entry):
    """Run one entry: the chooser, its provider, the completion segments
    (none for a subject without them) and the subject's (obs, sha).

    A run that reached its seed has only global segments, which the sleep
    sets it kept online did not know; if sleep skipped an option in it, it
    is run again without sleep past its prefix."""
    subject, reduce = walk.subject, walk.reduce
    picks = PICKS if walk.max_deviations is None else BOUNDED_PICKS
    for sleepless in (False, True):
        provider = SleepProvider(entry.prefix, entry.asleep, sleepless, picks) if reduce \
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
