"""Dynamic partial-order reduction for the lifecycle races: stateless DPOR
(Flanagan and Godefroid, POPL 2005) with sleep sets.

Two steps of different actors are *dependent* when their footprints touch
one area of the shared world and one of them writes it (``explore`` records
what each step read and wrote: store rows by id or all of them, the host's
run registry, the Managers' launch-window tables, locks, id counters,
session repositories, clocks, the Continue hook's queue). Independent steps
commute: running them in either order reaches the same world, so only one
order need be run.

- *Backtracking*: after each run, every race of the run - a dependent pair
  of steps of two actors with no step between them that orders them - adds
  the later actor to the backtrack set of the state before the earlier step
  (every actor enabled there if it was not); the search backtracks only
  into those.
- *Sleep sets*: an actor explored from a state sleeps in the states after a
  sibling's step that is independent of its own (its step would commute
  past), and is not picked while it sleeps; a run in which every enabled
  actor sleeps is redundant from there (it finishes, but adds nothing past
  that point). The run's steering past its prefix is a provider
  (``_Steer``) that reads the footprints as the run makes them.

Footprints are read from the run itself, so they are exact for what ran;
they are as complete as the recording in ``explore`` - the price of a missed
shared access would be a lost interleaving, which is why the tests compare
the reduced search's reachable end states with the unreduced one's on every
shipped race small enough to enumerate.

Lives here: ``dpor`` (the search), ``dependent``. Does not live here:
running one schedule (``explore.subject``), the unreduced search
(``forge.sim.exhaustive``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from forge.sim.chooser import Provider

Footprint = Sequence[tuple[str, str, str]]


def dependent(a: Footprint, b: Footprint) -> bool:
    """True when the two footprints touch one area and one of them writes it;
    a key ``*`` (every row) meets every key of its area."""
    for mode_a, area_a, key_a in a:
        for mode_b, area_b, key_b in b:
            if area_a != area_b or (mode_a == "r" and mode_b == "r"):
                continue
            if key_a == key_b or key_a == "*" or key_b == "*":
                return True
    return False


@attrs.define
class _Node:
    offered: list[int]
    chosen: int  # the actor that goes from here in the current run
    backtrack: set[int]
    done: set[int]
    #: Sleeping actors on entry, with the footprint of the step each would take.
    sleep: dict[int, frozenset]
    #: The footprint of each actor's step from here, as runs have seen it.
    steps: dict[int, frozenset] = attrs.field(factory=dict)


def _after(node: _Node, fp: frozenset) -> dict[int, frozenset]:
    """The sleep set after ``node.chosen`` takes the step ``fp``: the sleepers and
    the siblings explored before it, whose steps commute with it."""
    sleepers = dict(node.sleep)
    for actor in node.done - {node.chosen}:
        sleepers[actor] = node.steps[actor]
    return {a: f for a, f in sleepers.items()
            if a != node.chosen and not dependent(f, fp)}


class _Steer(Provider):
    """Replays the prefix, then picks the first enabled actor not asleep."""

    name = "dpor"

    def __init__(self, path: list[_Node], prefix: Sequence[int]) -> None:
        self.path, self.prefix = path, list(prefix)
        self.pos = 0
        self.turnstile: Any = None
        self.sleep: dict[int, frozenset] = {}
        self.sleeps: list[dict[int, frozenset]] = []  # per new position
        self.blocked_at: int | None = None

    def attach(self, turnstile: Any) -> None:
        self.turnstile = turnstile

    def draw(self, kind: str, options: Sequence[str]) -> int:
        k = self.pos
        self.pos += 1
        if k < len(self.prefix):
            return self.prefix[k]
        offered = self.turnstile.offered[k]
        if k > 0:
            fp = frozenset(self.turnstile.footprints[k - 1])
            if k - 1 < len(self.path):
                node = self.path[k - 1]
                node.steps[node.chosen] = fp
                self.sleep = _after(node, fp)
            else:
                prev = self.turnstile.steps[k - 1][0]
                self.sleep = {a: f for a, f in self.sleep.items()
                              if a != prev and not dependent(f, fp)}
        self.sleeps.append(dict(self.sleep))
        for index, actor in enumerate(offered):
            if actor not in self.sleep:
                return index
        if self.blocked_at is None:
            self.blocked_at = k
        return 0


@attrs.frozen
class Search:
    runs: int
    complete: bool
    #: The first failing run's observation and its choice sequence, if any.
    failure: dict | None = attrs.field(default=None, eq=False)
    choices: tuple[int, ...] = ()
    #: Distinct end states (``end_of`` of each run) seen.
    ends: frozenset = attrs.field(default=frozenset(), eq=False)
    #: Runs that every enabled actor's sleep made redundant part way.
    blocked: int = 0
    #: Runs that reached each probe (the observations' ``probes``), by name.
    probes: dict = attrs.field(factory=dict, eq=False)


def _races(decisions: list) -> list[tuple[int, int]]:
    """(i, j) pairs of the run whose steps race (see the module docstring)."""
    actors = [d[1] for d in decisions]
    fps = [d[2] for d in decisions]
    before: list[int] = []  # bitset of the steps that happen before each step
    out = []
    for j in range(len(decisions)):
        direct = [k for k in range(j) if actors[k] == actors[j] or dependent(fps[k], fps[j])]
        hb = 0
        for k in direct:
            hb |= before[k] | (1 << k)
        before.append(hb)
        for i in direct:
            if actors[i] == actors[j]:
                continue
            through = 0
            for k in direct:
                if k != i:
                    through |= before[k]
            if not (through >> i) & 1:
                out.append((i, j))
    return out


def dpor(run: Callable[[Provider], dict], limit: int = 100_000, stop_at_first: bool = True,
         end_of: Callable[[dict], object] | None = None) -> Search:
    """Explore every class of equivalent schedules once. ``run(provider)`` runs
    one schedule with the choices the provider draws and answers its
    observation, whose ``decisions`` are (offered actors, actor, footprint)."""
    path: list[_Node] = []
    prefix: list[int] = []
    runs = blocked = 0
    ends: set = set()
    reached: dict[str, int] = {}
    while True:
        steer = _Steer(path, prefix)
        obs = run(steer)
        runs += 1
        for name in obs.get("probes", ()):
            reached[name] = reached.get(name, 0) + 1
        decisions = obs["decisions"]
        if end_of is not None:
            ends.add(end_of(obs))
        if obs["problems"] and stop_at_first:
            values = tuple(d[0].index(d[1]) for d in decisions)
            return Search(runs, False, obs, values, frozenset(ends), blocked, reached)
        # past a sleep-blocked position the run is redundant: add no states there
        end = len(decisions) if steer.blocked_at is None else steer.blocked_at
        blocked += steer.blocked_at is not None
        start = len(path)
        for k in range(start, end):
            offered, actor, fp = decisions[k]
            sleep = steer.sleeps[k - len(prefix)] if k >= len(prefix) else {}
            node = _Node(list(offered), actor, {actor}, {actor}, sleep)
            path.append(node)
        for k in range(len(path)):
            path[k].steps[decisions[k][1]] = frozenset(decisions[k][2])
        for i, j in _races(decisions[:end]):
            node, later = path[i], decisions[j][1]
            node.backtrack |= {later} if later in node.offered else set(node.offered)
        while path:
            node = path[-1]
            todo = sorted(node.backtrack - node.done - set(node.sleep))
            if todo:
                node.done.add(todo[0])
                node.chosen = todo[0]
                prefix = [n.offered.index(n.chosen) for n in path]
                break
            path.pop()
        if not path:
            return Search(runs, True, None, (), frozenset(ends), blocked, reached)
        if runs >= limit:
            return Search(runs, False, None, (), frozenset(ends), blocked, reached)
