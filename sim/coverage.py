"""Coverage-guided exploration: a corpus of choice records that reached something new, mutated.

The idea of AFL and of Antithesis's explorer, on the kit's choice records
(`forge.sim.chooser`): a run is a pure function of its choices, so a run
that reached a behaviour no earlier run reached is worth going back to.
`CoverageCampaign` keeps a *corpus* of such runs and spends each later run
replaying a prefix of one of them and changing what follows, instead of
drawing a whole fresh schedule as random does.

The feedback signal (`features`) is a run's abstract state, a set of
features each earlier run either had or not:

- each probe the run reached (`forge.sim.explore.PROBES`) and its outcome;
- event-kind bigrams in the order the events happened (`task_succeeded`
  then `timeout_expired` is another state than the reverse), each with a
  hit-count bucket (1, 2, 3, 4-7, 8+), as AFL buckets edge counts;
- bigrams of the chains picked (the kind of chain, `root` or `task`, and
  whether it was the canonical pick) and of the durations drawn (the
  option's label), so a new interleaving is new even when no event says so.

A run with a feature no earlier run had joins the corpus.  Which entry a
run extends is drawn by *energy* (AFL's power schedule, in the spirit of
its `rare` schedule): the rarer an entry's features over all runs so far
and the fewer times it has been extended, the likelier it is drawn.  The
mutations (`Plan`), each a prefix of choices replayed before the run's own
seeded draws take over:

- *flip* one decision to another option and keep everything after it
  (a one-step neighbour, where a single ordering often decides a bug);
- *cut* after a changed decision and draw the rest afresh (keep how the
  run got there, re-draw where it goes);
- *splice* the head of one entry onto the tail of another;
- *havoc*: two or three flips at once.

Seven runs in eight (`MUTATE`) draw a fresh schedule weighed by the lane's
rarity, so the search never starves on a corpus that stopped finding
anything; every plan whose replayed choices equal a run already made is
drawn again (up to `TRIES` times).

Determinism and spelling.  Which entry and which mutation a run gets is
drawn from the run's seed (a stream of its own) and the corpus the earlier
runs built, so a campaign is a function of its seeds; the run itself is
`CoverageProvider(seed, prefix)` - the prefix, then uniform draws from the
seed - which is what `coverage:SEED[:V.V...]` spells for one run, so a run
found by a campaign is drawn again alone by its description.

Lanes.  The corpus is grown over `LANE` consecutive seeds and then starts
afresh: a search over seeds is a sequence of independent lanes, each a
function of its own seeds only.  That is what lets a search be spread:
a worker runs whole lanes (`forge.sim.strategies.coverage` declares its
chunk as a lane), and a shard is its own lanes, never another shard's seeds.

What does not live here: the strategy's declaration and spelling
(`forge.sim.strategies.coverage`), running seeds (`forge.sim.explore`),
the probes themselves (`forge.probes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from forge.sim.chooser import CHAIN_KIND, Provider, SplitMix64

#: Mixed into the seed for the stream a run's own draws come from, so that
#: seed N is not random's seed N.
_DRAW_SALT = 0x2545F4914F6CDD1D
#: Mixed into the seed for the stream that picks an entry and a mutation.
_PLAN_SALT = 0x9E3779B97F4A7C15
#: Seeds a corpus grows over before the next lane starts afresh.
LANE = 200
#: One run in MUTATE extends a corpus entry; the others draw a fresh
#: schedule, weighed by the lane's rarity (a measured choice: on the
#: mutant catalogue, most bugs hang on one early decision that fresh
#: rarity-weighed draws reach sooner than a mutation of a later one).
MUTATE = 8
#: Plans drawn again when one replays a run already made.
TRIES = 8
#: The observation key of a run's outcome, and of its events (each a dict
#: with a `kind`), as the kit's subjects observe them.
OUTCOME, EVENTS = "outcome", "events"
#: The observation key its probes are listed under (`forge.sim.explore.PROBES`).
PROBES = "probes"


class CoverageProvider(Provider):
    """A prefix of choices replayed where it fits, then draws from the seed
    that favour rarely taken options.

    Past the prefix, an option is drawn with weight `1 / (1 + c)^2`, where
    `c` is how often the lane's runs so far took an option with its word
    (`rarity`; none given: uniform draws): an option the lane rarely took -
    a duration that ties a pending timer, a chain kind seldom picked, a
    fault - is tried soon, and options taken equally often stay equally
    likely.  It keeps what each draw was (option count, value, the taken
    option's word), which the campaign reads as the run's record; once the
    run has ended, its description spells every choice it made, so
    `coverage:SEED:V.V...` draws it again alone.
    """

    name = "coverage"

    def __init__(self, seed: int, prefix: Sequence[int] = (),
                 rarity: Mapping[str, int] | None = None) -> None:
        self.seed = seed
        self.prefix = tuple(prefix)
        self.rarity = rarity
        self.rng = SplitMix64(seed ^ _DRAW_SALT)
        self.ns: list[int] = []
        self.values: list[int] = []
        #: The word of the option taken at each real decision (more than one option).
        self.words: list[str] = []
        self.offered: list[tuple[str, ...] | None] = []

    def draw(self, kind: str, options: Sequence[str]) -> int:
        n, at = len(options), len(self.values)
        if at < len(self.prefix) and self.prefix[at] < n:
            value = self.prefix[at]
        elif self.rarity is None or n == 1 or n > MAX_WEIGHED:
            value = self.rng.below(n)
        else:
            value = _weighted(self.rng, weights(kind, options, self.rarity))
        self.ns.append(n)
        self.values.append(value)
        if n > 1:
            self.words.append(word_of(kind, options, value))
        #: The words of every option, where the draw weighs them (what a
        #: flip of this decision weighs its options by).
        self.offered.append(tuple(word_of(kind, options, i) for i in range(n))
                            if 1 < n <= MAX_WEIGHED else None)
        return value

    def describe(self) -> dict:
        return {"strategy": self.name, "seed": self.seed,
                "prefix": list(self.values or self.prefix)}


#: The most options a draw weighs by rarity (more: a uniform draw, so a
#: pick among thousands of ready chains stays O(1)).
MAX_WEIGHED = 64
#: The weight of an option no run of the lane took.
_WEIGHT = 1 << 20
#: How an *interesting* option's label starts - AFL's interesting values
#: (0, -1, the type's bounds), for durations: the harness offers a
#: duration that ends exactly on a pending timer's instant, or a nanosecond
#: either side, labelled `tie`, `tie-1ns`, `tie+1ns` (as
#: `forge.sim.strategies.ties.TIE` reads them) - and how much more weight
#: one gets than an ordinary option taken as often.
INTERESTING, INTERESTING_WEIGHT = "tie", 8


def weights(kind: str, options: Sequence[str], rarity: Mapping[str, int],
            words: Sequence[str] | None = None) -> list[int]:
    """Each option's weight: `1 / (1 + c)^2` for an option whose word the
    lane took `c` times, `INTERESTING_WEIGHT` times that for an interesting one."""
    words = words or [word_of(kind, options, i) for i in range(len(options))]
    return [max(1, _WEIGHT * (INTERESTING_WEIGHT if _interesting(w) else 1)
                // (1 + rarity.get(w, 0)) ** 2) for w in words]


def _interesting(word: str) -> bool:
    return word.partition("=")[2].startswith(INTERESTING)


def word_of(kind: str, options: Sequence[str], i: int) -> str:
    """What the rarity of option `i` is counted by: for a chain pick, the
    kind of chain and whether it is the canonical pick; else the decision's
    kind and the option's label (a duration's multiplier or tie)."""
    if kind == CHAIN_KIND:
        return options[i].partition(":")[0] + ("" if i == 0 else "+")
    return f"{kind}={options[i]}"


def _weighted(rng: SplitMix64, weights: Sequence[int]) -> int:
    at = rng.below(sum(weights))
    for i, w in enumerate(weights):
        if at < w:
            return i
        at -= w
    raise AssertionError("unreachable: the draw is below the weights' sum")


def _bucket(count: int) -> int:
    """AFL's hit-count buckets, coarsened: 1, 2, 3, 4-7, 8+."""
    return count if count <= 3 else 4 if count < 8 else 8


def features(provider: CoverageProvider, observation: dict | None) -> frozenset:
    """A run's abstract state (see the module docstring)."""
    out: set = set()
    counts: dict = {}
    words = provider.words
    for pair in zip(["^", *words], [*words, "$"]):
        counts[("w", *pair)] = counts.get(("w", *pair), 0) + 1
    if observation is not None:
        out.add(("outcome", str(observation.get(OUTCOME))))
        out.update(("probe", str(p)) for p in observation.get(PROBES, ()))
        events = observation.get(EVENTS) or ()
        kinds = [str(e.get("kind")) for e in events if isinstance(e, dict)]
        for pair in zip(["^", *kinds], [*kinds, "$"]):
            counts[("e", *pair)] = counts.get(("e", *pair), 0) + 1
    out.update((*key, _bucket(count)) for key, count in counts.items())
    return frozenset(out)


@attrs.frozen
class Entry:
    """A run of the corpus: its choices, their option counts, its features."""

    values: tuple[int, ...]
    ns: tuple[int, ...]
    features: frozenset = attrs.field(repr=False)
    #: The words of each decision's options (None where not weighed).
    offered: tuple = attrs.field(default=(), repr=False)

    def open_positions(self) -> list[int]:
        """Where the run had a real decision (more than one option)."""
        return [i for i, n in enumerate(self.ns) if n > 1]


class CoverageCampaign:
    """A coverage-guided search's state: the lane's corpus and how often each feature was hit."""

    #: A coverage search learns no PCT horizon.
    horizon: int | None = None

    def __init__(self, depth: int = 0, horizon: int | None = None) -> None:
        self._lane: int | None = None     # the first seed of the current lane
        self._reset()

    def _reset(self) -> None:
        self.corpus: list[Entry] = []
        #: Runs that hit each feature, over the lane so far.
        self.hits: dict = {}
        #: Times each entry (by index) was extended.
        self.picked: list[int] = []
        #: The choices of every run made in the lane (what a plan must not repeat).
        self.made: set[tuple[int, ...]] = set()
        #: How often the lane's runs took an option of each word (`word_of`).
        self.taken: dict[str, int] = {}

    def provider(self, seed: int) -> CoverageProvider:
        if self._lane is None or not 0 <= seed - self._lane < LANE:
            self._lane = seed
            self._reset()
        return CoverageProvider(seed, self._plan(seed), dict(self.taken))

    def learn(self, run: Any, observation: dict | None = None) -> None:
        """Learn from a finished run: its provider and its observation.

        Anything else (a spread campaign's record of a run, which carries no
        choices) teaches nothing: a worker's lane learns from its own runs.
        """
        if not isinstance(run, CoverageProvider):
            return
        values = tuple(run.values)
        self.made.add(values)
        for word in run.words:
            self.taken[word] = self.taken.get(word, 0) + 1
        found = features(run, observation)
        new = [f for f in found if f not in self.hits]
        for f in found:
            self.hits[f] = self.hits.get(f, 0) + 1
        if new:
            self.corpus.append(Entry(values, tuple(run.ns), found, tuple(run.offered)))
            self.picked.append(0)

    # -- planning -------------------------------------------------------------------------

    def _energy(self, i: int) -> int:
        """How likely entry `i` is to be extended: the rarer its features
        and the less often it was extended, the more."""
        rarity = sum(1_000_000 // self.hits[f] for f in self.corpus[i].features)
        return max(1, rarity // (1 + self.picked[i]))

    def _pick(self, rng: SplitMix64) -> int:
        return _weighted(rng, [self._energy(i) for i in range(len(self.corpus))])

    def _plan(self, seed: int) -> tuple[int, ...]:
        rng = SplitMix64(seed ^ _PLAN_SALT)
        if not self.corpus or rng.below(MUTATE) != 0:
            return ()
        for _ in range(TRIES):
            i = self._pick(rng)
            plan = mutate(self.corpus[i], self.corpus, rng, self.taken)
            if plan is not None and plan not in self.made:
                self.picked[i] += 1
                return plan
        return ()


def _other(rng: SplitMix64, entry: Entry, at: int, rarity: Mapping[str, int]) -> int:
    """An option of decision `at` other than the one `entry` took, by the
    options' weights (`weights`) where they are known, else uniform."""
    n, value = entry.ns[at], entry.values[at]
    words = entry.offered[at] if at < len(entry.offered) else None
    if words is None:
        pick = rng.below(n - 1)
        return pick + (pick >= value)
    weighed = weights("", (), rarity, words)
    weighed[value] = 0
    return _weighted(rng, weighed)


def mutate(entry: Entry, corpus: Sequence[Entry], rng: SplitMix64,
           rarity: Mapping[str, int]) -> tuple[int, ...] | None:
    """A prefix that changes `entry` (None: it has no real decision)."""
    open_ = entry.open_positions()
    if not open_:
        return None
    values = list(entry.values)
    how = rng.below(4)
    at = open_[rng.below(len(open_))]
    if how == 0:            # flip one decision, keep the rest
        values[at] = _other(rng, entry, at, rarity)
        return tuple(values)
    if how == 1:            # cut: keep the head, change one decision, draw the rest afresh
        values[at] = _other(rng, entry, at, rarity)
        return tuple(values[:at + 1])
    if how == 2:            # splice another entry's tail onto this head
        other = corpus[rng.below(len(corpus))]
        values[at] = _other(rng, entry, at, rarity)
        if len(other.values) > at:
            return tuple(values[:at + 1] + list(other.values[at + 1:]))
        return tuple(values)
    for _ in range(2 + rng.below(2)):   # havoc: two or three flips
        at = open_[rng.below(len(open_))]
        values[at] = _other(rng, entry, at, rarity)
    return tuple(values)


def lanes(seeds: Iterable[int]) -> list[range]:
    """The lanes a contiguous run of seeds is cut into (`LANE` each, the last shorter)."""
    seeds = list(seeds)
    if not seeds:
        return []
    first, stop = seeds[0], seeds[-1] + 1
    return [range(a, min(a + LANE, stop)) for a in range(first, stop, LANE)]
