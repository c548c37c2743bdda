"""The chooser: the one funnel through which every open decision passes.

The spec leaves some things open: which ready chain runs next, how long a
harness operation takes, whether a fault is injected.  The engine never
decides those itself; it asks `Chooser.choose(kind, options)` and gets the
index of one option.  The chooser records every answer as a `Choice`, so a run
is a pure function of its inputs and its choice sequence - the idea behind
Hypothesis's conjecture engine.  Replaying the sequence replays the run;
shrinking the sequence shrinks the schedule.

Option 0 is always the canonical answer (the spec's default order), so the
all-zeros sequence is the canonical schedule and "smaller" sequences in
shortlex order are closer to it.

Strategies are `Provider`s: canonical, random(seed), replay(choices) (which
also serves exhaustive search and shrinking) here; PCT in `forge.sim.pct` and
Hypothesis in `forge.sim.hypothesis`; `forge.sim.strategies` builds one from its CLI
spelling.  None of
them reads wall time or an unseeded source: randomness is a SplitMix64
stream from the seed.

The decisions the engine asks for, and what a provider may read from them:
`chain` picks one of the ready chains, labelled `KIND:ID`; `latency:OP`
picks the duration of a harness operation the chain that ran last just
issued, from options labelled `x<multiplier>` of the operation's base
duration (option 0 is `x1.0`).  Operations whose durations end on the same
instant complete in the order they were issued.  In orders mode (a mode of
the harness's duration model, which exhaustive search uses) no duration is
drawn: `complete` picks which pending completion fires next, labelled
`CHAIN#N OP PATH`, option 0 being the event queue's own order
(`forge.sim.orders`).  `fault:KIND` (store, model, tool, operator, cancel;
only when the run's fault plan offers it, drawn by `Chooser.fault`) is
`none` or the fault, and `fault:cancel_step` (or, in older replay files,
`fault:cancel_at`) places a drawn host cancel (`forge.harness.Faults`).

A full record of a run's choices is replayed by `RecordedProvider`, which
reports the first `Drift` (a kind or option count that differs, or recorded
choices the run never asked for) instead of clamping; the replay file itself
is `forge.sim.replayfile`.

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import attrs

MASK64 = (1 << 64) - 1

#: The kind of the decision that picks which ready chain runs next.
CHAIN_KIND = "chain"


class SplitMix64:
    """A tiny, fully specified PRNG, so a seed means the same thing everywhere."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A value in [0, n); rejection sampling keeps it unbiased."""
        if n <= 1:
            return 0
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            v = self.next_u64()
            if v < limit:
                return v % n


@attrs.frozen
class Choice:
    """One recorded decision: `value` is an index into `n` options."""

    kind: str
    n: int
    value: int

    def to_json(self) -> list:
        return [self.kind, self.n, self.value]


@attrs.frozen
class Offered:
    """What a chooser keeps of options it was handed as a live view (the
    ready chains, which can be thousands): how many there were, the first
    (the canonical answer) and the one taken - what a run's story reads -
    instead of a copy of them all at every decision."""

    n: int
    first: str
    value: int
    taken: str

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i == 0:
            return self.first
        if i == self.value:
            return self.taken
        raise IndexError(f"option {i} of {self.n} was neither the first nor the one taken")


def kept_options(whole: bool, kept: tuple) -> Sequence[str]:
    """A decision's options as `Chooser.options` shows them, from the
    `whole` flag and the `kept` part of a `Chooser.made` record."""
    return kept if whole else Offered(*kept)


def taken_label(whole: bool, kept: tuple, value: int) -> str:
    """The label of the option answer `value` took, from the `whole` flag
    and the `kept` part of a `Chooser.made` record."""
    return kept[value] if whole else kept[3]


class Provider(ABC):
    """Where the answers come from.  `draw` must return a value in [0, n)."""

    name: str = "provider"
    #: Whether its runs are in orders mode (`forge.sim.orders`): PCT's are,
    #: wherever it draws (alone, or as a portfolio's member), so a run it
    #: drew is the run its spelling names.
    orders: bool = False
    #: Whether its `twin` reads the options' labels, not only their count:
    #: a chooser then keeps a small live view's labels whole (`WHOLE`), so
    #: that the decisions a searcher keeps can be asked of the twin.
    twin_reads_labels: bool = False

    @abstractmethod
    def draw(self, kind: str, options: Sequence[str]) -> int: ...

    def describe(self) -> dict:
        return {"strategy": self.name}

    def twin(self) -> Provider | None:
        """A provider that, from here on, answers every decision as this one
        would, reading only each decision's kind and its options' count
        (`len(options)`) - or their labels too, when `twin_reads_labels`
        says so, from options given whole (a tuple); None when this one
        cannot be copied.  A searcher asks the twin the decisions of runs
        it has seen, to tell which one a schedule will repeat
        (`forge.watched`)."""
        return None


class Canonical(Provider):
    """Always option 0: the spec's default order."""

    name = "canonical"

    def draw(self, kind: str, options: Sequence[str]) -> int:
        return 0


class RandomProvider(Provider):
    """Uniform choices from a seeded stream."""

    name = "random"

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = SplitMix64(seed)

    def draw(self, kind: str, options: Sequence[str]) -> int:
        return self.rng.below(len(options))

    def describe(self) -> dict:
        return {"strategy": self.name, "seed": self.seed}

    def twin(self) -> RandomProvider:
        twin = RandomProvider(self.seed)
        twin.rng.state = self.rng.state
        return twin


class ReplayProvider(Provider):
    """Answers from a recorded prefix, then canonical answers.

    A prefix value that does not fit (the option count shrank, or the kind
    differs) is a misalignment: the first one is recorded and the canonical
    answer is used, as Hypothesis does when a replayed buffer drifts.
    """

    name = "replay"

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = list(prefix)
        self.pos = 0
        self.misaligned_at: int | None = None

    def draw(self, kind: str, options: Sequence[str]) -> int:
        pos = self.pos
        self.pos += 1
        if pos >= len(self.prefix):
            return 0
        value = self.prefix[pos]
        if 0 <= value < len(options):
            return value
        if self.misaligned_at is None:
            self.misaligned_at = pos
        return 0


@attrs.frozen
class Drift:
    """Where a replay stopped matching its record: the run asked for a choice
    whose kind or option count differs from the recorded one (or for more
    choices than were recorded, then `recorded` is None), or it ended before
    taking every recorded choice (then `asked` is None and `unused` counts the
    recorded choices it left)."""

    index: int
    recorded: tuple[str, int] | None
    asked: tuple[str, int] | None
    unused: int = 0

    def describe(self) -> str:
        if self.asked is None:
            assert self.recorded is not None
            rkind, rn = self.recorded
            return (f"choice {self.index}: the run ended there, leaving {self.unused} recorded "
                    f"choice{'s' * (self.unused != 1)} unused (the next: {rkind} with {rn} "
                    f"option{'s' * (rn != 1)})")
        kind, n = self.asked
        now = f"the run asked for {kind} with {n} option{'s' * (n != 1)}"
        if self.recorded is None:
            return f"choice {self.index}: the record ends there, but {now}"
        rkind, rn = self.recorded
        return f"choice {self.index}: recorded {rkind} with {rn} option{'s' * (rn != 1)}, but {now}"


class RecordedProvider(Provider):
    """Answers from a full record of (kind, n, value), checking each against it.

    Unlike `ReplayProvider` (a prefix for search and shrinking, where drift is
    expected), a mismatch here is reported: the first mismatch is kept and
    every later answer is canonical, so the caller can refuse the run.
    `drift`, read once the run has ended, is that mismatch, or else the first
    recorded choice the run never asked for: a record with choices left over
    does not describe the run either.
    """

    name = "recorded"

    def __init__(self, choices: Sequence[Choice | tuple[str, int, int]]) -> None:
        self.record = [c if isinstance(c, Choice) else Choice(*c) for c in choices]
        self.pos = 0
        self._drift: Drift | None = None

    @property
    def drift(self) -> Drift | None:
        """The first place the run left the record (None: it took every
        recorded choice and no other); read it after the run."""
        if self._drift is None and self.pos < len(self.record):
            left = self.record[self.pos]
            return Drift(self.pos, (left.kind, left.n), None, len(self.record) - self.pos)
        return self._drift

    def draw(self, kind: str, options: Sequence[str]) -> int:
        pos = self.pos
        self.pos += 1
        if self._drift is not None:
            return 0
        n = len(options)
        if pos >= len(self.record):
            self._drift = Drift(pos, None, (kind, n))
            return 0
        want = self.record[pos]
        if want.kind != kind or want.n != n:
            self._drift = Drift(pos, (want.kind, want.n), (kind, n))
            return 0
        return want.value


class _Redraw(Provider):
    """What a chooser's provider answered already, given again in order;
    then the chooser asks the provider itself (`Chooser.retrace`)."""

    def __init__(self, chooser: Chooser, provider: Provider, answers: Sequence[int]) -> None:
        self.chooser, self.provider, self.answers = chooser, provider, list(answers)
        self.name, self.orders = provider.name, provider.orders
        self.twin_reads_labels = provider.twin_reads_labels
        self.pos = 0

    def draw(self, kind: str, options: Sequence[str]) -> int:
        value = self.answers[self.pos]
        self.pos += 1
        if self.pos == len(self.answers):
            self.chooser.provider = self.provider
        return value


#: The most options of a live view a chooser keeps whole (their labels
#: copied) for a provider whose twin reads labels; a larger one is kept as
#: what it `Offered`, so a decision among thousands of chains stays O(1).
WHOLE = 16


class Chooser:
    """Records every decision; the engine's only source of open choices.

    `seed` is the run's seed (what seeds `math.random` and the nonce), kept
    beside the provider so that a schedule found at seed N is `forge run
    --seed N`, and its shrunk replays keep the same seed.  `orders` is the
    run's mode (`forge.sim.orders`): its provider's unless given, and kept
    by the replays that shrink it, as the seed is.
    """

    def __init__(self, provider: Provider | None = None, seed: int = 0,
                 orders: bool | None = None) -> None:
        self.provider = provider or Canonical()
        self.seed = seed
        self.orders = self.provider.orders if orders is None else orders
        #: Each decision as it was made: (kind, option count, value, what is
        #: kept of the options) - a tuple of them whole, or the `Offered`
        #: fields of a live view.  `choices` and `options` build their
        #: values from these when read (most runs never read them).
        self._made: list[tuple[str, int, int, tuple]] = []
        self._choices: list[Choice] = []
        self._options: list[Sequence[str]] = []
        #: In orders mode, the run's completion picker (`forge.sim.orders`),
        #: which also records what each pick's segment touched.
        self.completions = None
        self._faults: list[str] = []
        #: Small live views are kept whole for a twin that reads labels.
        self._whole = WHOLE if self.provider.twin_reads_labels else 0

    def choose(self, kind: str, options: Sequence[str]) -> int:
        n = len(options)
        if n == 0:
            raise ValueError(f"choice {kind!r} offered no options")
        # Forced choices (one option) go through the provider too, so that a
        # recorded sequence and a replay count positions the same way.
        value = self.provider.draw(kind, options)
        if not 0 <= value < n:
            raise ValueError(f"provider {self.provider.name} answered {value} for {n} options")
        self._keep(kind, options, n, value)
        return value

    def _keep(self, kind: str, options: Sequence[str], n: int, value: int) -> None:
        """Record the decision `kind` among `options` (`n` of them) answered `value`."""
        if isinstance(options, (tuple, list)) or n <= self._whole:
            kept: tuple = tuple(options)
            whole = True
        else:
            first = options[0]
            kept = (n, first, value, first if value == 0 else options[value])
            whole = False
        self._made.append((kind, n, value, whole, kept))
        if kind == CHAIN_KIND and self.completions is not None:
            # In orders mode a chain pick starts a segment too (`forge.sim.orders`).
            self.completions.chained(len(self._made) - 1, options[value])

    @property
    def choices(self) -> list[Choice]:
        """Every decision so far, in order (the same list each time, grown
        as decisions are made)."""
        built = self._choices
        for kind, n, value, _, _ in self._made[len(built):]:
            built.append(Choice(kind, n, value))
        return built

    @property
    def options(self) -> list[Sequence[str]]:
        """The option labels of each choice, parallel to `choices`: what a
        run's story reads (which chain, which duration).  Options handed
        as a tuple or list are kept whole; a live view (the kernel's
        ready chains) as what it `Offered`, so a decision among n chains
        costs O(1), not O(n) - or whole when small and the provider's
        twin reads labels (`WHOLE`)."""
        built = self._options
        for _, _, _, whole, kept in self._made[len(built):]:
            built.append(kept_options(whole, kept))
        return built

    def values(self) -> list[int]:
        return [made[2] for made in self._made]

    def last_value(self) -> int:
        """The answer to the latest decision."""
        return self._made[-1][2]

    def made(self) -> list[tuple[str, int, int, bool, tuple]]:
        """Each decision so far as the chooser keeps it, not built into
        `Choice`s: its kind, option count and value, whether its options
        are kept whole, and what is kept of them (the options, or the fields
        of what they `Offered`).  Read-only."""
        return self._made

    def retrace(self, decisions: Sequence[tuple[str, Sequence[str]]], values: Sequence[int],
                fired: Sequence[str]) -> bool:
        """Ask `decisions` (each a kind and its options) with no run to ask
        them, as a run that answered them `values` and fired the faults
        `fired` (their kinds, `faults_fired`) did
        (`forge.watched`): True when the provider answers each with its
        value, the chooser then holding that run's choices and faults fired
        (and its options, where a run kept the labels of a live view whole
        or as what it `Offered`, as the decisions give them).

        At the first answer that differs, False: the chooser forgets the
        decisions, and gives the provider's answers so far again, in order,
        to the run that must now ask them, before asking the provider anew -
        so the run is the one a chooser never handed `decisions` would make.
        Call it on a chooser no run has asked yet."""
        assert not self._made, "retrace: this chooser was asked before"
        draw = self.provider.draw
        for (kind, options), value in zip(decisions, values):
            answer = draw(kind, options)
            if answer != value:
                drawn = [*self.values(), answer]
                self._made.clear()
                self._choices.clear()
                self._options.clear()
                self.provider = _Redraw(self, self.provider, drawn)
                return False
            self._keep(kind, options, len(options), value)
        self._faults = list(fired)
        return True

    def fault(self, kind: str, label: str) -> bool:
        """Whether a `kind` fault (`label` says which operation it hits) fires
        here: the decision `fault:KIND` between `none` and the fault.  The
        one place a fault is drawn, so `faults_fired` is exactly these."""
        fired = self.choose(f"fault:{kind}", ("none", label)) == 1
        if fired:
            self._faults.append(kind)
        return fired

    def faults_fired(self) -> list[str]:
        """The kinds of the faults this run fired (`fault`), in order."""
        return list(self._faults)



# The replay file format lives in `forge.sim.replayfile`; these names stay importable here.
from forge.sim.replayfile import (  # noqa: E402
    MAX_REPLAY_BYTES, MAX_REPLAY_CHOICES, ReplayFileError, dump_replay, load_replay, read_replay)
