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
also serves exhaustive search and shrinking) here; PCT in `sim.pct` and
Hypothesis in `sim.hypothesis`; `sim.strategies` builds one from its CLI
spelling.  None of
them reads wall time or an unseeded source: randomness is a SplitMix64
stream from the seed.

The decisions the engine asks for, and what a provider may read from them:
`chain` picks one of the ready chains, labelled `KIND:ID`; `latency:OP`
picks the duration of a harness operation the chain that ran last just
issued, from options labelled `x<multiplier>` of the operation's base
duration (option 0 is `x1.0`).  Operations whose durations end on the same
instant complete in the order they were issued.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence

import attrs

MASK64 = (1 << 64) - 1

#: Duration choices' kinds start with this; their labels are `x<multiplier>`.
LATENCY_PREFIX = "latency:"


def duration_multiplier(label: str) -> float | None:
    """The multiplier a duration option's label `x<number>` names, or None."""
    if not label.startswith("x"):
        return None
    try:
        return float(label[1:])
    except ValueError:
        return None


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


class Provider(ABC):
    """Where the answers come from.  `draw` must return a value in [0, n)."""

    name: str = "provider"

    @abstractmethod
    def draw(self, kind: str, options: Sequence[str]) -> int: ...

    def describe(self) -> dict:
        return {"strategy": self.name}


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


class Chooser:
    """Records every decision; the engine's only source of open choices."""

    def __init__(self, provider: Provider | None = None) -> None:
        self.provider = provider or Canonical()
        self.choices: list[Choice] = []
        #: The option labels of each choice, parallel to `choices`: what the
        #: explorer's reduction reads (which chain, which duration).
        self.options: list[tuple[str, ...]] = []

    def choose(self, kind: str, options: Sequence[str]) -> int:
        n = len(options)
        if n == 0:
            raise ValueError(f"choice {kind!r} offered no options")
        # Forced choices (one option) go through the provider too, so that a
        # recorded sequence and a replay count positions the same way.
        value = self.provider.draw(kind, options)
        if not 0 <= value < n:
            raise ValueError(f"provider {self.provider.name} answered {value} for {n} options")
        self.choices.append(Choice(kind, n, value))
        self.options.append(tuple(options))
        return value

    def values(self) -> list[int]:
        return [c.value for c in self.choices]


#: The largest replay file read, in bytes; checked before parsing.
MAX_REPLAY_BYTES = 64 * 1024 * 1024  # = forge.limits.MAX_REPLAY_BYTES (sim imports no forge)
#: The most choices a replay file may hold.
MAX_REPLAY_CHOICES = 10_000_000
_REPLAY_KEYS = ("args", "choices", "prompt", "seed")
_I64 = range(-(2**63), 2**63)


class ReplayFileError(ValueError):
    """A replay file that cannot be used: names the file, the place and the rule."""

    def __init__(self, path: str, where: str, rule: str, line: int | None = None) -> None:
        self.path, self.where, self.rule, self.line = path, where, rule, line
        self.detail = f"{where}: {rule}" if where else rule
        at = f":{line}" if line else ""
        super().__init__(f"{path}{at}: {self.detail}")


def read_replay(path: str) -> dict:
    """The checked contents of a replay file written by `dump_replay` or `forge explore`:
    `{"choices": [int, ...], "args": str, "prompt": str | None, "seed": int | None}`.

    Raises:
        ReplayFileError: unreadable, too large, not JSON, or not the replay shape.
    """
    def bad(where: str, rule: str, line: int | None = None):
        raise ReplayFileError(path, where, rule, line)

    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_REPLAY_BYTES + 1)
    except OSError as e:
        bad("", f"cannot read replay file: {e.strerror or e}")
    if len(raw) > MAX_REPLAY_BYTES:
        bad("", f"a replay file is at most {MAX_REPLAY_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        bad("", f"not valid UTF-8 (byte {e.start})", raw[:e.start].count(b"\n") + 1)
    except json.JSONDecodeError as e:
        bad("", f"not JSON: {e.msg}", e.lineno)
    except RecursionError:
        bad("", "the JSON is nested too deeply")
    shape = 'a replay file holds {"choices": [[kind, n, value], ...]}'
    if not isinstance(data, dict):
        bad("$", shape)
    for key in data:
        if key not in _REPLAY_KEYS:
            bad(f"$.{key}", "unknown key; expected one of " + ", ".join(_REPLAY_KEYS))
    choices = data.get("choices")
    if not isinstance(choices, list):
        bad("$.choices", shape)
    if len(choices) > MAX_REPLAY_CHOICES:
        bad("$.choices", f"at most {MAX_REPLAY_CHOICES} choices")
    def bad_choice(where: str, rule: str):
        bad(where, f"{rule}; {shape}")

    values = []
    for i, c in enumerate(choices):
        where = f"$.choices[{i}]"
        if not (isinstance(c, list) and len(c) == 3):
            bad_choice(where, "a choice is [kind, n, value]")
        kind, n, value = c
        if not isinstance(kind, str):
            bad_choice(f"{where}[0]", "the kind is a string")
        if not _is_int(n) or not 1 <= n < 2**63:
            bad_choice(f"{where}[1]", "the option count is a whole number from 1 to 2^63-1")
        if not _is_int(value) or not 0 <= value < n:
            bad_choice(f"{where}[2]", f"the value is a whole number from 0 to n-1 ({n - 1})")
        values.append(value)
    args = data.get("args", "")
    if not isinstance(args, str):
        bad("$.args", "the run's arguments are a string")
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        bad("$.prompt", "the prompt path is a string")
    seed = data.get("seed")
    if seed is not None and not (_is_int(seed) and seed in _I64):
        bad("$.seed", "the seed is a whole number within 64 bits")
    return {"choices": values, "args": args, "prompt": prompt, "seed": seed}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_replay(path: str) -> list[int]:
    """The choice values of a replay file (see `read_replay`)."""
    return read_replay(path)["choices"]


def dump_replay(chooser: Chooser, **meta) -> str:
    body = dict(sorted(meta.items()))
    body["choices"] = [c.to_json() for c in chooser.choices]
    return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"
