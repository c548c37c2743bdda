"""Exploring a prompt and replaying what it found: plain functions over a `RunSpec`.

`explore_prompt` runs a spec under many schedules (`forge.sim.explore`,
`forge.sim.exhaustive`), re-runs the shrunk failure and returns it with its
self-contained replay record, its story and its first divergence from the
canonical run.  `replay_file` reads a replay file, rebuilds the run it
records, re-checks the recorded expectation and says whether the failure
reproduced, where the choices drifted, and whether the trace is the
recorded one byte for byte.  `check_bound` refuses a deviation bound a
strategy would ignore, `check_seeds` a seed range past 64 bits.  A
`Shelf` keeps a campaign's set-up (its runner, canonical run and kit
checks) for the next campaign of the same spec (the Python API's).  These
return frozen values; the click commands
(`forge.commands.explore`, `forge.commands.replay`) only print them, and the
Python API (`forge.api`) wraps them in its public frozen values.  Neither
this module nor `forge.runspec` imports the command line or the API.

What does not live here: the run's definition and the record's fields
(`forge.runspec`), the file's syntax (`forge.sim.replayfile`), the
search strategies and the shrinker (`sim`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from forge import variation
from forge.deferred import deferred
from forge.errors import InputError
from forge.limits import I64_MAX
from forge.lua.backstop import BACKSTOP_KIND
from forge.run.options import ARGS
from forge.run.record import (failure_section, kit_version, observation_sha256, read_replay,
                               record, spec_from_record)
from forge.run.spec import RunSpec
from forge.runspec import (Expectation, KitChecks, Runner, crashed, in_mode, spec_overridden,
                           spec_from_flags, with_violations)
from forge.sim.chooser import Canonical, Chooser, Drift, RecordedProvider, ReplayProvider
from forge.sim.explore import Report, explore
from forge.sim.replayfile import write_record
from forge.sim.strategies import SEARCH, STRATEGIES, lookup

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import equivalence
    from forge.sim import exhaustive
else:
    equivalence = deferred("forge.conformance.equivalence")
    exhaustive = deferred("forge.sim.exhaustive")

#: The most lines a story prints (its head and tail are kept).
STORY_LINES = 40


@attrs.frozen
class Failure:
    """The shrunk failing run, run again: what a replay file records."""

    seed: int
    problems: tuple[str, ...]
    record: dict = attrs.field(eq=False, repr=False)
    story: tuple[str, ...] = ()
    divergence: tuple[str, ...] = ()
    #: The faults that fired in it, `(kind, where)`.
    fired: tuple[tuple[str, str], ...] = ()
    #: The shrunk run's observation and trace (JSON lines, for `forge trace`).
    observation: dict = attrs.field(factory=dict, eq=False, repr=False)
    trace: str = attrs.field(default="", eq=False, repr=False)


@attrs.frozen
class ExploreOutcome:
    report: Report
    spec: RunSpec
    expect: Expectation
    failure: Failure | None = None


@attrs.frozen
class ReplayOutcome:
    spec: RunSpec
    observation: dict = attrs.field(eq=False, repr=False)
    #: The recorded expectation's problems on this run (empty: it passes).
    problems: tuple[str, ...] = ()
    #: The first choice that did not match the record, if any.
    drift: Drift | None = None
    #: The recorded run's observation sha256 (None: a legacy file, or flags
    #: changed the run).
    recorded_sha256: str | None = None
    #: The kit version that wrote the file, when it is not this one.
    other_kit: str | None = None
    story: tuple[str, ...] = ()
    #: The problems the file records for the run it was written from (empty:
    #: it recorded a passing run).
    recorded_problems: tuple[str, ...] = ()
    trace: str = attrs.field(default="", eq=False, repr=False)
    #: The choice values this run made.
    choices: tuple[int, ...] = attrs.field(default=(), eq=False, repr=False)
    #: For a record of an engine under test that holds its observation:
    #: how this run differs from it by the spec's equivalence, as a readable
    #: diff (empty: the same behaviour); None for any other record.
    differences: tuple[str, ...] | None = None
    #: The same comparison as values: each normative difference
    #: (`forge.conformance.equivalence.Difference`, the reference's side
    #: first), and where this run asked other decisions than the record
    #: holds (None: the same ones).
    compared: tuple[Any, ...] = ()
    other_decisions: str | None = None

    @property
    def observation_sha256(self) -> str:
        return observation_sha256(self.observation)

    @property
    def identical(self) -> bool | None:
        """The observation (trace included) is the recorded one byte for byte
        (None: nothing to compare)."""
        return None if self.recorded_sha256 is None else \
            self.recorded_sha256 == self.observation_sha256


def explore_prompt(spec: RunSpec, *, expect: Expectation = Expectation(),
                   strategy: str = SEARCH, runs: int = 200, start_seed: int = 0,
                   pct_depth: int = 3, max_deviations: int | None = None, reduce: bool = True,
                   shrink_budget: int = 3000, pct_horizon: int | None = None,
                   progress: Callable[[int], None] | None = None,
                   extra_checks: Sequence[Callable[[dict], list[str]]] = (),
                   probes: Sequence = (), fair: int | None = None,
                   kept: Shelf | None = None, kept_as: Hashable = None) -> ExploreOutcome:
    """Run `spec` under `runs` schedules; the first failure comes back shrunk.

    `extra_checks` run beside `expect`'s on every schedule (the Python API's
    checks given as callables): being code, they are not in the replay
    record, which keeps only the problems they found.  `probes` are users'
    probes (`forge.probes.UserProbe`) counted beside the catalogue's.
    `pct_horizon` is where PCT's learned horizon starts (None: learned
    from the first run), as a failure's one-line rerun gives it.  `fair`
    makes each schedule fair after its first `fair` chain picks
    (`forge.sim.fair`), what the ready-chain liveness bound assumes.
    `kept` holds campaign set-ups between calls (`Shelf`), `kept_as` names
    the set-up `spec` came from (the same for the same prompt text and
    options): the campaign takes its set-up from there and gives it back."""
    check_bound(strategy, max_deviations)
    walks = lookup(strategy).walks
    spec = in_mode(spec, strategy)
    # A mutant's canonical run is not the reference's: the sites switched on are in the key.
    key = None if kept is None or kept_as is None else (
        kept_as, spec.orders, expect, variation.switched_on())
    made = kept.take(key) if key is not None else None
    runner, canonical, kit = made if made is not None else set_up(spec, expect)
    runner.probes = tuple(probes)       # this campaign's (a kept runner had another's)
    checks = [kit, *expect.named_checks(), *extra_checks]
    if walks:
        report = exhaustive.exhaustive(runner.subject, checks, limit=runs, reduce=reduce,
                                       max_deviations=max_deviations, shrink_budget=shrink_budget)
    else:
        report = explore(runner.subject, range(start_seed, start_seed + runs), checks,
                         strategy=strategy, pct_depth=pct_depth, shrink_budget=shrink_budget,
                         progress=progress, horizon=pct_horizon, fair=fair)
    outcome = outcome_of(runner, canonical, checks, expect, report)
    if key is not None:
        kept.give(key, (runner, canonical, kit))
    return outcome


def check_bound(strategy: str, max_deviations: int | None) -> None:
    """Refuse a deviation bound for a strategy that does not read one (it
    counts a walk's deviations; a strategy that draws each schedule whole
    would ignore it).

    Raises:
        InputError: naming `--max-deviations`.
    """
    bounded = [s.name for s in STRATEGIES if "max_deviations" in s.parameters]
    if max_deviations is not None and "max_deviations" not in lookup(strategy).parameters:
        raise InputError(f"bounds only the {' and '.join(bounded)} strategy's walk "
                         f"of the choice tree; {strategy} draws each schedule whole, so leave "
                         f"it out or use --strategy {' or '.join(bounded)}",
                         file="--max-deviations")


def check_seeds(start_seed: int, runs: int) -> None:
    """Refuse a seed range that leaves 64 bits: schedule i runs at seed
    `start_seed + i`, and a seed is a 64-bit integer like every other.

    Raises:
        InputError: naming `--start-seed`.
    """
    last = start_seed + runs - 1
    if last > I64_MAX:
        raise InputError(f"the last seed, {start_seed} plus {runs} runs less one, is {last}: "
                         "past 64 bits", file="--start-seed")


def prepare(spec: RunSpec, expect: Expectation,
            extra_checks: Sequence[Callable[[dict], list[str]]] = (),
            probes: Sequence = ()) -> tuple:
    """The runner of `spec` (trying users' `probes` on every schedule), its
    canonical run, and the checks every schedule must pass (which depend on
    the canonical observation)."""
    runner, canonical, kit = set_up(spec, expect, probes)
    return runner, canonical, [kit, *expect.named_checks(), *extra_checks]


def set_up(spec: RunSpec, expect: Expectation, probes: Sequence = ()) -> tuple:
    """What a campaign of `spec` under `expect` needs before its first
    schedule: the runner, the canonical run and the kit's checks
    (`KitChecks`, which depend on the canonical observation)."""
    runner = Runner(spec, probes)
    canonical = runner.run(Chooser(Canonical()))
    return runner, canonical, KitChecks(runner, expect.kit_checks(
        canonical.observation(), faulty=bool(spec.fault_plan)))


class Shelf:
    """Campaign set-ups (`set_up`) kept from one campaign to the next of the
    same spec and expectation: the runner with its parsed prompt and the
    runs it watched (`forge.watched`), the canonical run, and the kit's
    checks with the problems they found by schedule identity.  A set-up is
    a function of what it is kept by, so a campaign that takes one gives
    what a fresh one gives, without the canonical run or watching again the
    schedules watched before.

    A campaign takes its set-up off the shelf (`take`) and gives it back
    when it is done (`give`), so two campaigns at once (in two threads)
    never share one: the second makes its own.  At most `most` are kept,
    the oldest going first, and only small ones (`SMALL_NODES`,
    `SMALL_BYTES`): a prompt with many distinct schedules gains little
    from the runs watched and would keep much memory."""

    #: The most decisions a kept set-up's watched runs hold.
    SMALL_NODES = 20_000
    #: The most bytes of observations they hold (`forge.watched.MAX_OBSERVATION_BYTES`).
    SMALL_BYTES = 2 * 1024 * 1024

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: dict[Hashable, tuple] = {}
        self._lock = threading.Lock()

    def take(self, key: Hashable) -> tuple | None:
        with self._lock:
            return self._kept.pop(key, None)

    def give(self, key: Hashable, made: tuple) -> None:
        watched = made[0]._watched
        if watched.nodes > self.SMALL_NODES or watched.observation_bytes > self.SMALL_BYTES:
            return
        with self._lock:
            self._kept.pop(key, None)
            while self._kept and len(self._kept) >= self.most:
                del self._kept[next(iter(self._kept))]
            if self.most > 0:
                self._kept[key] = made


def outcome_of(runner: Runner, canonical, checks: Sequence[Callable[[dict], list[str]]],
               expect: Expectation, report: Report) -> ExploreOutcome:
    """The outcome of a search whose report is `report`: its first finding, if
    any, run again to give the replay record, the story and the divergence.
    Serial, parallel (`forge.campaign`) and merged searches all end here."""
    if not report.findings:
        return ExploreOutcome(report, runner.spec, expect)
    found = report.findings[0]
    # A member of a mixed search in orders mode (a portfolio's PCT) records
    # the mode its run took, so the file replays it as it ran.
    spec = attrs.evolve(runner.spec, orders=True) if found.orders else runner.spec
    seed = found.seed if found.seed is not None else 0
    chooser = Chooser(ReplayProvider(found.shrunk), seed=seed, orders=spec.orders)
    run, crash = runner.attempt(chooser)
    obs = crashed(run, crash) if crash is not None else run.observation()
    if (obs.get("error") or {}).get("kind") == BACKSTOP_KIND:
        # Where the backstop stops a run depends on the machine and its load:
        # no verdict, story or replay file may claim to reproduce it.
        raise InputError(f"the schedule at seed {seed} ran past the CPU-time backstop "
                         f"({obs['error'].get('message', '')}); a runaway prompt has no "
                         "reproducible ending, so nothing is judged or recorded: run it with "
                         f"forge run {spec.prompt_path} --seed {seed} to see it, or raise "
                         "--max-cpu-seconds",
                         file=spec.prompt_path)
    problems = tuple(p for check in checks for p in check(with_violations(obs, run)))
    fired = tuple(run.harness.injector.fired) if run.harness.injector else ()
    story = tuple(tell(run.trace.records, chooser, run.harness.injector,
                       run.trace.violations, obs.get("effects", ()), obs.get("error")))
    failure = failure_section(problems, obs["outcome"], found.deviations, found.proven, fired)
    rec = record(spec, expect, seed, chooser.choices, obs, failure=failure,
                 strategy=found.provider)
    divergence = tuple(first_divergence(canonical.trace.records, run.trace.records)
                       or observation_divergence(canonical.observation(), obs))
    return ExploreOutcome(report, runner.spec, expect,
                          Failure(seed, problems, rec, story, divergence, fired,
                                  with_violations(obs, run),
                                  run.trace.lines()))


def replay_file(path: str, *, prompt: str | None = None,
                overrides: dict | None = None) -> ReplayOutcome:
    """Run the replay file at `path` again and re-check what it expects.

    `prompt` stands in for the recorded prompt path (its sha256 must match);
    `overrides` are `spec_from_flags` keywords that change the recorded run
    (a what-if: the choices will likely drift).

    Raises:
        InputError: an unusable file, or a prompt that does not match its hash.
    """
    data = read_replay(path)
    rec = data["record"]
    if rec is None:
        # The legacy shape: only choices, arguments and a prompt path.
        where = prompt if prompt is not None else data["prompt"]
        if where is None:
            raise InputError("this legacy replay file names no prompt: give PROMPT before the "
                             "file", file=path, kind="replay")
        spec = spec_from_flags(where, **{ARGS.name: data[ARGS.name], **(overrides or {})})
        # It held a run that did not end ok to have failed: the default verdict.
        expect, recorded_sha, seed = Expectation(same_ids=False), None, data["seed"] or 0
        other_kit, recorded_problems = None, ()
    else:
        spec = spec_from_record(rec, path, prompt)
        if overrides:
            spec = spec_overridden(spec, overrides)
        expect = Expectation.from_json(rec["expect"])
        # A record with no trace sha256 is of an engine under test (`forge
        # explore --impl`): its observation is not the reference's to compare.
        recorded_sha = None if overrides or rec["trace_sha256"] is None \
            else rec["observation_sha256"]
        seed = rec["run"]["seed"]
        other_kit = rec["kit"] if rec["kit"] != kit_version() else None
        recorded_problems = tuple((rec.get("failure") or {}).get("problems", ()))
    runner = Runner(spec)
    canonical = runner.run(Chooser(Canonical())).observation()
    provider = RecordedProvider(data["triples"]) if rec is not None else \
        ReplayProvider(data["choices"])
    chooser = Chooser(provider, seed=seed)
    run, crash = runner.attempt(chooser)
    obs = crashed(run, crash) if crash is not None else run.observation()
    checks = expect.checks(canonical, faulty=bool(spec.fault_plan), where=path)
    problems = tuple(p for check in checks for p in check(with_violations(obs, run)))
    drift = getattr(provider, "drift", None)
    story = tuple(tell(run.trace.records, chooser, run.harness.injector, run.trace.violations,
                       obs.get("effects", ()), obs.get("error")))
    lines, found, other = None, (), None
    if rec is not None and rec.get("observation") is not None and not overrides:
        lines, found, other = _against_engine(obs, rec["observation"], drift)
    return ReplayOutcome(spec, obs, problems, drift, recorded_sha, other_kit, story,
                         recorded_problems, run.trace.lines(), tuple(chooser.values()), lines,
                         found, other)


def _against_engine(obs: dict, recorded: dict,
                    drift: Drift | None) -> tuple[tuple[str, ...], tuple[Any, ...], str | None]:
    """How the reference's run `obs` differs from an engine's recorded
    observation by the spec's equivalence (docs/observation.md): its
    readable diff, the reference on the `-` side; first, when the reference
    asked other decisions than the record holds (`drift`, the place
    `decisions`), that one line (the run went on canonically past it).
    Also the differences themselves, and that line alone (or None)."""
    other = (f"the recorded engine asked other decisions than the reference does, at "
             f"{drift.describe()} (answered canonically from there)") if drift else None
    found = equivalence.compare(obs, recorded)
    lines = ([other] if other else []) + [
        line.replace("the implementation differs from the reference",
                     "the recorded engine differs from the reference", 1)
        for line in equivalence.render(found, obs, recorded)]
    return tuple(lines), tuple(found), other


def replay_text(spec: RunSpec, chooser: Chooser, observation: dict, *,
                expect: Expectation = Expectation(), problems=()) -> str:
    """The replay file of a run made outside `explore_prompt`, such as a
    Hypothesis example drawn with `forge.sim.hypothesis.schedules()` and run with
    `Runner(spec).run(chooser)`: `forge replay` re-checks `expect` on it."""
    failure = {"problems": list(problems), "outcome": observation["outcome"]} \
        if problems else None
    return write_record(record(spec, expect, chooser.seed, chooser.choices,
                               observation, failure=failure,
                               strategy=chooser.provider.describe()))


# -- telling a run ---------------------------------------------------------------------------

def _seconds(ns: int) -> str:
    return f"{ns / 1e9:.3f}s"


def describe(rec: dict, every: bool = False, effect: dict | None = None) -> str | None:
    """One trace record as a line of the story, or None for bookkeeping records
    (with `every`, those get a line too).  A harness operation's line says
    how it ended when its `effect` (the observation's entry for it) is
    given, else when it was due: in orders mode, or when its chain stopped
    waiting, the trace's duration is not when it ended."""
    what, t = rec.get("what"), _seconds(rec.get("t", 0))
    if what == "step":
        return f"{t}  {rec.get('kind')} chain {rec.get('chain')} runs"
    if what in ("harness", "harness_unanswered"):
        detail = {k: v for k, v in rec.items()
                  if k not in ("what", "t", "i", "chain", "op", "duration")}
        extra = " " + " ".join(f"{k}={v}" for k, v in sorted(detail.items())) if detail else ""
        return f"{t}  chain {rec.get('chain')} starts {rec.get('op')}{extra}, {_ending(rec, effect)}"
    if what == "spawn":
        return f"{t}  chain {rec.get('owner')} spawns task {rec.get('task')} ({rec.get('target')})"
    if what == "task_end":
        return f"{t}  task {rec.get('task')} ends: {rec.get('end')}"
    if what == "deliver":
        return f"{t}  task {rec.get('task')}'s result reaches chain {rec.get('chain')}"
    if what == "run_end":
        error = f" ({rec.get('error')})" if rec.get("error") else ""
        return f"{t}  the run ends {rec.get('outcome')}{error}"
    if what == "event" and rec.get("event") not in ("complete", None):
        return f"{t}  {rec.get('event')}"
    if not every:
        return None
    if what == "event":
        return f"{t}  a harness operation completes"
    rest = {k: v for k, v in rec.items() if k not in ("what", "t", "i")}
    return f"{t}  {what} " + " ".join(f"{k}={v}" for k, v in sorted(rest.items()))


def _ending(rec: dict, effect: dict | None) -> str:
    """How a harness operation ended, in words (`describe`)."""
    if rec.get("what") == "harness_unanswered":
        return "never answered"
    answer = effect.get("answer") if effect is not None else None
    if answer == "answered" and isinstance(effect.get("due"), int | float):
        return f"done at {effect['due']:.3f}s"
    if answer == "dropped" and isinstance(effect.get("dropped_at"), int | float):
        return f"dropped at {effect['dropped_at']:.3f}s"
    if answer == "dropped":
        return "its answer dropped (nobody waited for it any more)"
    if answer == "pending":
        return "still pending when the run ended"
    return f"due at {_seconds(rec.get('t', 0) + rec.get('duration', 0))}"


def tell(records: list[dict], chooser: Chooser, injector=None, violations=(),
         effects=(), error: dict | None = None) -> list[str]:
    """The run as a short story in virtual time, each fired fault in its place
    (`injector`: the run's `forge.harness.Faults`) and each violation a watcher
    found right after the step that showed it (`violations`: the trace's),
    then its non-canonical choices, each with the option canonical would have
    taken.  `effects` (the observation's, one per harness operation in the
    order issued, as the trace's `harness` and `harness_unanswered` records
    are) say how each operation ended.  `error` (the observation's) gives
    the run's ending its message: the trace records only the error's kind."""
    marks: dict[int, list[str]] = {}
    if injector is not None:
        for (kind, label), at in zip(injector.fired, injector.at):
            when = records[at - 1]["t"] if at else 0
            marks.setdefault(at, []).append(f"{_seconds(when)}  FAULT {kind}: {label}")
    after: dict[int, list[str]] = {}
    for v in violations:
        if v.hot_from is not None:
            # A liveness violation: mark where its hot state began; the
            # records after that line are the suffix that never left it.
            after.setdefault(v.hot_from, []).append(
                f"{_seconds(v.hot_from_t or 0)}  HOT from here: {v.problem}")
        after.setdefault(v.i, []).append(f"{_seconds(v.t)}  VIOLATION {v.problem}")
    lines = []
    issued = 0
    for index, rec in enumerate(records):
        lines.extend(marks.pop(index, ()))
        effect = None
        if rec.get("what") in ("harness", "harness_unanswered"):
            effect = effects[issued] if issued < len(effects) else None
            issued += 1
        line = describe(rec, effect=effect)
        if line is not None and rec.get("what") == "run_end" and isinstance(error, dict) \
                and error.get("message"):
            line += ": " + " ".join(str(error["message"]).split())[:300]
        if line is not None:
            lines.append(line)
        lines.extend(after.pop(index, ()))
    for rest in marks.values():
        lines.extend(rest)
    if len(lines) > STORY_LINES:
        lines = _abridged(lines)
    deviations = [
        f"choice {i} {c.kind}: {options[c.value]} (canonical: {options[0]})"
        for i, (c, options) in enumerate(zip(chooser.choices, chooser.options)) if c.value]
    if deviations:
        lines.append("non-canonical choices:" if deviations else "")
        lines.extend("  " + d for d in deviations)
    return lines


def _abridged(lines: list[str]) -> list[str]:
    """The head and tail of a long story, and every fault with a line either side."""
    half = STORY_LINES // 2
    keep = set(range(half)) | set(range(len(lines) - half, len(lines)))
    for i, line in enumerate(lines):
        if "  FAULT " in line or "  VIOLATION " in line or "  HOT from here: " in line:
            keep |= {i - 1, i, i + 1}
    out, last = [], -1
    for i in sorted(k for k in keep if 0 <= k < len(lines)):
        if i > last + 1:
            out.append(f"... {i - last - 1} more steps ...")
        out.append(lines[i])
        last = i
    return out


def first_divergence(canonical: list[dict], failing: list[dict]) -> list[str]:
    """The first trace record where the failing run leaves the canonical one."""
    def bare(rec: dict) -> dict:
        return {k: v for k, v in rec.items() if k != "i"}

    index, longer, name = _parting(canonical, failing, lambda a, b: bare(a) == bare(b))
    if index is None:
        return []
    if longer is None:
        return [f"step {index}: canonical   {describe(canonical[index], True)}",
                f"step {index}: this run    {describe(failing[index], True)}"]
    return [f"step {index}: only {name} goes on: {describe(longer[index], True)}"]


def observation_divergence(canonical: dict, failing: dict) -> list[str]:
    """Where two observations with the same trace first differ: the first
    differing event, else the first differing field (a refused store write,
    say, leaves the trace as it was)."""
    a, b = canonical.get("events", []), failing.get("events", [])
    index, longer, name = _parting(a, b, lambda x, y: x == y)
    if index is not None and longer is None:
        return [f"same trace; event {index}: canonical {_event(a[index])}",
                f"same trace; event {index}: this run  {_event(b[index])}"]
    if index is not None:
        return [f"same trace; event {index}: only {name} has {_event(longer[index])}"]
    for key in sorted(set(canonical) | set(failing)):
        if key != "trace_sha256" and canonical.get(key) != failing.get(key):
            return [f"same trace; {key}: canonical {canonical.get(key)!r}, this run "
                    f"{failing.get(key)!r}"[:300]]
    return []


def _parting(canonical: list, this_run: list, same: Callable[[Any, Any], bool]
             ) -> tuple[int | None, list | None, str]:
    """Where two sequences first part: (index, None, "") at the first pair
    that is not `same`; else (index, the longer, its name) where one goes on
    past the other's end; else (None, None, "")."""
    for index, (x, y) in enumerate(zip(canonical, this_run)):
        if not same(x, y):
            return index, None, ""
    index = min(len(canonical), len(this_run))
    if len(canonical) > index:
        return index, canonical, "canonical"
    if len(this_run) > index:
        return index, this_run, "this run"
    return None, None, ""


def _event(event: dict) -> str:
    task = (event.get("provenance") or {}).get("task")
    rest = {k: v for k, v in event.items() if k not in ("kind", "provenance", "execution")}
    extra = " " + " ".join(f"{k}={v}" for k, v in sorted(rest.items())) if rest else ""
    return f"{event.get('kind')} (task {task}){extra}"[:200]
