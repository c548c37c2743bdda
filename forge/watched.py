"""Schedules already watched: a run whose choices are a watched run's is that run.

A run is a function of its spec, its seed and its choice sequence
(`forge.sim.chooser`), and a run that never read its seed
(`Run.seed_independent`) of its spec and choices alone.  So what the
watchers and the liveness monitors find while such a run happens - its
violations - is what they found on any earlier run of the same spec that
made the same choices, and so is the schedule's identity.  A search draws
the same few schedules again and again (200 random schedules of a two-task
prompt show two), and watching a run costs about half of running it.

`Watched` keeps the watched runs' choices in a tree, one per mode (orders
mode or durations drawn, `Chooser.orders`: a PCT run and a random one
ask different decisions): each node holds the
decision the runs through it asked there (its kind and options, as the
chooser kept them) and the nodes below it by the answer given; a run's
last node holds what it found (`Seen`).  Before a run, `predict` asks a
twin of the schedule's provider (`Provider.twin`: one that answers from
the decisions' kinds and option counts alone, as the random provider
does, or from their labels too, as PCT and ties do, where the chooser
kept them whole) the decisions the tree holds; answers that lead to a run's
last node say the run will be that run (a `Prediction`).

A predicted schedule is not run.  The chooser is asked the decisions on the
way (`Chooser.retrace`), so its provider answers them itself, as that run's
did, and the chooser ends holding that run's choices and faults fired; the
schedule then takes that run's observation, violations,
identity and probes.  Why that is the run: a run is a function of its spec,
its seed and its answers; the watched run never read its seed, and a run
given the same answers takes the same steps up to where it would first read
it - which is nowhere.  An ending a watched run could owe to the machine
(the CPU-time backstop's) is never kept.  A provider that answers otherwise
than its twin did (a kit bug; a test plants one) loses nothing: the chooser
gives the answers so far again and the schedule runs, watched.  Skipping
the run is most of the gain: a repeated schedule of two-tasks costs under a
twentieth of a run with its observation.

The observation is kept while the tree's kept observations stay within
`MAX_OBSERVATION_BYTES` as `marshal` writes them (`Seen.observation`).  A
predicted run whose observation was not kept (or whose probes no longer
are, `forge.runspec.Runner.probed`) runs unwatched; after the run
`Seen.confirms` holds its choices to that run's (their values: the same
answers asked the same decisions), its seed to unread and its ending to its
own, and only then are the kept violations and identity its own; otherwise
it runs again, watched.

The one kept observation serves every schedule that repeats the run, so
it is read-only data: the kit never changes an observation's values (it
adds its own keys to a copy of the top level: `with_violations`,
`Runner.probed`), and a user's check or probe handed the raw data gets a
copy of its own (`UserCheck`, `forge.probes.UserProbe`).  Users' checks and
probes, which may keep state, are called on every schedule.

What does not live here: the watchers (`forge.conformance.oracles`), the
monitors (`forge.liveness`), running and probing (`forge.runspec.Runner`).
"""

from __future__ import annotations

import copy
import marshal
from collections.abc import Sequence
from typing import Any

import attrs

from forge import variation
from forge.lua.backstop import BACKSTOP_KIND
from forge.sim.chooser import Chooser, Offered, kept_options, taken_label

#: The most decisions the tree keeps (its nodes); past it, runs are no longer kept.
MAX_NODES = 200_000
#: The most bytes of watched runs' observations the tree keeps (`Seen.observation`);
#: past it, a run is kept without its observation, and a run confirmed to be
#: it builds its own.
MAX_OBSERVATION_BYTES = 16 * 1024 * 1024


@attrs.frozen
class Seen:
    """A watched run: its choices as (kind, options, value), what the
    watchers found (`forge.sim.trace.Violation`s), its identity, and its
    observation (read-only; None: not kept)."""

    choices: tuple[tuple[str, int, int], ...]
    violations: tuple[Any, ...]
    identity: str
    observation: dict | None = attrs.field(default=None, eq=False, repr=False)
    #: The kinds of the faults it fired, in order (`Chooser.faults_fired`).
    fired: tuple[str, ...] = ()
    #: The choices' values, as `Chooser.values` lists them (`confirms`).
    values: list[int] = attrs.field(init=False, eq=False, repr=False)

    @values.default
    def _values(self) -> list[int]:
        return [value for _, _, value in self.choices]

    def confirms(self, run: Any) -> bool:
        """Whether the finished `run` is the run seen: the same choices, its
        seed never read, and an ending of its own (not the backstop's).

        The choices' values are compared alone: a run of one spec whose seed
        is unread is a function of the answers it got, so runs given the
        same answers asked the same decisions (kinds and option counts) -
        and the values are there without building the run's `Choice`s."""
        error = run.error
        return (run.seed_independent()
                and not (error is not None and error.kind == BACKSTOP_KIND)
                and run.chooser.values() == self.values)

    def observed(self, run: Any) -> dict:
        """The observation of `run`, confirmed to be the run seen: the one
        kept (read-only), else the run's own."""
        return run.observation() if self.observation is None else self.observation


@attrs.frozen
class Prediction:
    """The watched run a schedule will repeat (`Watched.predict`), and the
    decisions, each a kind and its options, its run asked on the way."""

    seen: Seen
    decisions: tuple[tuple[str, Sequence[str]], ...]


def own_copy(obs: dict) -> dict:
    """A copy of an observation's JSON data for a user's function to keep or
    change: the kit's observations are read-only data that schedules share
    (see the module docstring)."""
    try:
        copied: dict = marshal.loads(marshal.dumps(obs))
    except ValueError:          # not JSON data alone (`marshal` writes JSON's types)
        copied = copy.deepcopy(obs)
    return copied


def _choices(chooser: Chooser) -> tuple[tuple[str, int, int], ...]:
    return tuple([(kind, n, value) for kind, n, value, _, _ in chooser.made()])


class _Node:
    __slots__ = ("decision", "below", "seen", "taken")

    def __init__(self, taken: str = "") -> None:
        #: (kind, options) of the decision asked here; None: no run went on.
        self.decision: tuple[str, Sequence[str]] | None = None
        self.below: dict[int, _Node] = {}
        #: The run that ended here (made no more choices), if one did.
        self.seen: Seen | None = None
        #: The label of the option whose answer leads here from the node
        #: above (what an `Offered` kept there may not hold: the runs
        #: through it took different options).
        self.taken = taken


class Watched:
    """The runs of one spec watched so far, by their choices (see the module)."""

    def __init__(self) -> None:
        #: The tree of each mode, by `Chooser.orders`.
        self.roots = {False: _Node(), True: _Node()}
        self.nodes = 2
        #: The bytes of the observations kept (`MAX_OBSERVATION_BYTES`).
        self.observation_bytes = 0
        #: The variation sites on when the runs were kept: a mutant's runs
        #: are not the reference's.
        self.sites = variation.switched_on()

    def predict(self, chooser: Chooser) -> Prediction | None:
        """The watched run `chooser`'s schedule will make, if its provider's
        twin, answering the tree's decisions, leads to one (else None).
        Call it before the run: it reads the provider as it is then."""
        twin = chooser.provider.twin()
        if twin is None or variation.switched_on() != self.sites:
            return None
        labels = twin.twin_reads_labels
        node = self.roots[chooser.orders]
        decisions = []
        while node.seen is None:
            if node.decision is None:
                return None
            decision = node.decision
            kind, options = decision
            whole = type(options) is tuple
            if labels and not whole:
                return None     # kept as what it `Offered`: the labels are not all there
            value = twin.draw(kind, options)
            nxt = node.below.get(value)
            if nxt is None:
                return None
            # As the run offered it: the first option, and the one this answer takes.
            decisions.append(decision if whole else
                             (kind, Offered(len(options), options[0], value, nxt.taken)))
            node = nxt
        return Prediction(node.seen, tuple(decisions))

    def keep(self, run: Any, obs: dict, identity: str) -> None:
        """Keep the watched `run` (its observation `obs`, its identity), when
        its choices alone make it: its seed unread, its ending its own."""
        error = obs.get("error")
        if (self.nodes >= MAX_NODES or variation.switched_on() != self.sites
                or (isinstance(error, dict) and error.get("kind") == BACKSTOP_KIND)
                or not run.seed_independent()):
            return
        chooser = run.chooser
        node = self.roots[chooser.orders]
        # The decisions as the chooser keeps them: a node's options are built
        # (as `Chooser.options` builds them) only where the tree needs them.
        for kind, n, value, whole, kept in chooser.made():
            if node.seen is not None:
                return          # not a run of one spec after all: keep nothing
            if node.decision is None:
                node.decision = (kind, kept_options(whole, kept))
            elif (node.decision[0], len(node.decision[1])) != (kind, n):
                return
            elif whole and type(node.decision[1]) is not tuple:
                # The same decision (the same choices led here), its labels
                # whole this time: a twin that reads labels can answer it now.
                node.decision = (kind, kept)
            nxt = node.below.get(value)
            if nxt is None:
                nxt = node.below[value] = _Node(taken_label(whole, kept, value))
                self.nodes += 1
            node = nxt
        if node.decision is None and node.seen is None:
            node.seen = Seen(_choices(chooser), tuple(run.trace.violations), identity,
                             self._kept(obs), tuple(chooser.faults_fired()))

    def _kept(self, obs: dict) -> dict | None:
        """`obs`, to keep, if it fits the budget (its size as `marshal`
        writes it); None when it does not, or when it holds what `marshal`
        does not write (the engine's observations are JSON data)."""
        try:
            size = len(marshal.dumps(obs))
        except ValueError:
            return None
        if self.observation_bytes + size > MAX_OBSERVATION_BYTES:
            return None
        self.observation_bytes += size
        return obs
