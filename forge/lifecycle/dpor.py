"""Dynamic partial-order reduction for the lifecycle races (Flanagan and
Godefroid, POPL 2005, in its stateless form).

Two steps of different actors are *dependent* when their footprints touch
one area of the shared world and one of them writes it (``explore`` records
what each step read and wrote: store rows by id or all of them, the host's
run registry, the Managers' launch-window tables, locks, id counters,
session repositories, clocks, the Continue hook's queue). Independent steps
commute: running them in either order reaches the same world, so only one
order need be run. After each run, every *race* of the run - a dependent
pair of steps of two actors with no step between them that orders them -
adds the later actor to the backtrack set of the state before the earlier
step (every actor enabled there if it was not), and the search backtracks
only into those. The default continuation past a prefix is option 0.

Footprints are read from the run itself, so they are exact for what ran;
they are as complete as the recording in ``explore`` - the price of a missed
shared access would be a lost interleaving, which is why the tests compare
the reduced search's reachable end states with the unreduced one's on every
shipped race.

Lives here: ``dpor`` (the search) and ``dependent``. Does not live here:
running one schedule (``explore.subject``), the unreduced search
(``sim.exhaustive``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

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
    chosen: int  # the actor that went
    backtrack: set[int]
    done: set[int]


@attrs.frozen
class Search:
    runs: int
    complete: bool
    #: The first failing run's observation and its choice sequence, if any.
    failure: dict | None = attrs.field(default=None, eq=False)
    choices: tuple[int, ...] = ()
    #: Distinct end states (the rows, the reports and what each actor got) seen.
    ends: frozenset = attrs.field(default=frozenset(), eq=False)


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


def dpor(run: Callable[[Sequence[int]], dict], limit: int = 100_000,
         stop_at_first: bool = True, end_of: Callable[[dict], object] | None = None) -> Search:
    """Explore every class of equivalent schedules once. ``run(prefix)`` runs
    one schedule (its choices: ``prefix``, then option 0) and answers its
    observation, whose ``decisions`` are (offered actors, actor, footprint)."""
    path: list[_Node] = []
    prefix: list[int] = []
    runs = 0
    ends: set = set()
    while True:
        obs = run(prefix)
        runs += 1
        decisions = obs["decisions"]
        if end_of is not None:
            ends.add(end_of(obs))
        if obs["problems"] and stop_at_first:
            values = tuple(d[0].index(d[1]) for d in decisions)
            return Search(runs, False, obs, values, frozenset(ends))
        for offered, actor, _fp in decisions[len(path):]:
            path.append(_Node(list(offered), actor, {actor}, {actor}))
        for i, j in _races(decisions):
            node, later = path[i], decisions[j][1]
            node.backtrack |= {later} if later in node.offered else set(node.offered)
        while path:
            node = path[-1]
            todo = sorted(node.backtrack - node.done)
            if todo:
                node.done.add(todo[0])
                node.chosen = todo[0]
                prefix = [n.offered.index(n.chosen) for n in path]
                break
            path.pop()
        if not path:
            return Search(runs, True, None, (), frozenset(ends))
        if runs >= limit:
            return Search(runs, False, None, (), frozenset(ends))
