"""Campaigns spread over processes: explore's seeds in chunks, and shards of them.

`explore_campaign` runs the seeds of a random or PCT search in chunks on a
`forge.pool.Pool` and merges the chunks' results *in seed order* into the
report one process would make: the same runs (up to and including the
first failing seed), distinct traces, outcomes, horizon and finding.  A
chunk that fails stops at its first failing seed; later chunks are dropped.
The failure is shrunk here, in this process, exactly as the serial search
shrinks it (`forge.sim.explore.finding`), so the replay record is the same.

PCT learns its horizon from the runs before each one, so a chunk is run
*speculatively* with the horizon known when it was sent.  Merging checks it:
a chunk whose starting horizon is not the one the runs before it give is
sent again with the right one.  The horizon grows only when a run makes more
real decisions than every run before it, so few chunks are sent twice.

A strategy whose campaign starts afresh every so many seeds (coverage's
lanes, `forge.sim.coverage`) declares that count as its `chunk`, and its
chunks are exactly its lanes, so a worker grows the same corpus the serial
search grows.  A worker's failing run comes back with its choices and its
description, and the finding replays those choices here: a strategy that
learns from earlier seeds cannot draw it again from its seed alone.

Shards (`--shard I/N`, a CI matrix) cut the seed range into N contiguous
parts.  A shard's report carries what merging needs (`shard_section`: its
distinct trace hashes, its replay record, and a fingerprint of the
campaign), and `merge_shards` gives the one-process report.  PCT cannot be
sharded: a later shard would need every earlier shard's horizon.  Neither
can the exhaustive strategy: it walks one choice tree in one order under one
`--runs` budget, and its reduction prunes a subtree because an equivalent
one was run earlier in that order.  It is spread over workers instead by
subtrees (`walk_campaign`, `forge.sim.exhaustive.spread`): each worker walks
a slice of a subtree and hands back the rest, and the steps are folded here
in the serial order, so the report is the serial one.  The refusals are one
line (`check_spread`).

What does not live here: the pool and its backends (`forge.pool`), the
serial search (`forge.sim.explore`), the run and its record
(`forge.runspec`, `forge.repro`), the command line (`forge.commands.explore`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

import attrs

from forge.errors import InputError
from forge.pool import LOCAL, Backend, Pool
from forge.probes import coverage
from forge.repro import ExploreOutcome, outcome_of, prepare
from forge.run.record import record
from forge.run.spec import RunSpec
from forge.runspec import Expectation, in_mode
from forge.sim.chooser import Chooser, ReplayProvider
from forge.sim.exhaustive import Entry, Slice, Walk, slice_of, spread
from forge.sim.explore import PROBES, Report, check_all, finding, tally
from forge.sim.strategies import SEARCH, STRATEGIES, lookup

#: Seeds a worker runs per task: enough to hide the cost of a round trip,
#: few enough that a failure early in the range wastes little.
CHUNK = 25
#: Chunks in flight per worker, so a worker never waits for the merge.
AHEAD = 3


@attrs.frozen
class SeedRun:
    """One schedule's result, as the merge needs it."""

    seed: int
    trace_sha: str
    outcome: str
    failed: bool
    #: PCT's real decisions (what the horizon learns from); 0 for random.
    steps: int = 0
    #: The kinds of the faults it fired (`Chooser.faults_fired`).
    faults_fired: tuple[str, ...] = ()
    #: The probes it reached (`forge.sim.explore.PROBES`).
    probes: tuple[str, ...] = ()
    #: A failing run's choice values and how it was drawn
    #: (`Provider.describe`), which the finding replays: a strategy that
    #: learns from earlier seeds could not draw it again from its seed alone.
    choices: tuple[int, ...] = ()
    drawn: dict = attrs.field(factory=dict, eq=False)
    #: Whether it ran in orders mode (`Chooser.orders`; a portfolio's PCT
    #: member's run does), which its choices replay only in.
    orders: bool = False


@attrs.frozen
class Chunk:
    """A worker's answer for seeds [first, first + count): its runs, stopped
    after the first failing one, and the PCT horizon it started from."""

    first: int
    horizon: int | None
    runs: tuple[SeedRun, ...]


@attrs.frozen
class Campaign:
    outcome: ExploreOutcome
    #: The distinct trace hashes of the runs in the report, sorted.
    traces: tuple[str, ...] = attrs.field(repr=False)


@attrs.frozen
class Shard:
    """Shard `index` of `of` (1-based): which part of the seed range it runs."""

    index: int
    of: int

    def seeds(self, start_seed: int, runs: int) -> range:
        low = start_seed + (self.index - 1) * runs // self.of
        high = start_seed + self.index * runs // self.of
        return range(low, high)


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N.

    Raises:
        InputError: naming `--shard`.
    """
    index, slash, of = text.partition("/")
    if not slash or not index.isdigit() or not of.isdigit() or len(text) > 20:
        raise InputError(f"a shard is I/N such as 2/4, got {text[:40]!r}", file="--shard")
    shard = Shard(int(index), int(of))
    if not 1 <= shard.index <= shard.of:
        raise InputError(f"a shard I/N needs 1 <= I <= N, got {text!r}", file="--shard")
    return shard


def check_spread(strategy: str, workers: int, shard: Shard | None, backend: Backend) -> None:
    """Refuse a strategy that cannot be spread as asked (see the module
    docstring), by what it declares (`forge.sim.strategies`).

    Raises:
        InputError: naming the flag.
    """
    chosen = lookup(strategy)
    if chosen.unshardable is not None and shard is not None:
        sharding = [s.name for s in STRATEGIES if s.explores and s.unshardable is None]
        raise InputError(f"{chosen.name} {chosen.unshardable}, so its seeds cannot be cut into "
                         f"shards; use --workers, or --strategy {' or '.join(sharding)}",
                         file="--shard")


# -- in a worker ----------------------------------------------------------------------------

#: What every task of a campaign shares, built once per worker process.
_WORKER: dict = {}


def _setup(spec: RunSpec, expect: Expectation, extra_checks: tuple, strategy: str,
           pct_depth: int, probes: tuple = ()) -> None:
    runner, _, checks = prepare(spec, expect, extra_checks, probes)
    _WORKER.update(runner=runner, checks=checks, strategy=strategy, pct_depth=pct_depth)


def _run_chunk(task: tuple[int, int, int | None]) -> Chunk:
    first, count, horizon = task
    subject, checks = _WORKER["runner"].subject, _WORKER["checks"]
    strategy, depth = _WORKER["strategy"], _WORKER["pct_depth"]
    runs, campaign = [], lookup(strategy).campaign(depth, horizon)
    for seed in range(first, first + count):
        provider = campaign.provider(seed)
        chooser = Chooser(provider, seed=seed)
        obs, sha = subject(chooser)
        steps = getattr(provider, "steps", 0)
        campaign.learn(provider, obs)    # as the serial search learns (`forge.sim.explore`)
        failed = bool(check_all(obs, checks))
        drawn = (tuple(chooser.values()), provider.describe()) if failed else ((), {})
        runs.append(SeedRun(seed, sha, str(obs.get("outcome")), failed, steps,
                            tuple(chooser.faults_fired()), tuple(obs.get(PROBES, ())), *drawn,
                            orders=chooser.orders))
        if failed:
            break
    return Chunk(first, horizon, tuple(runs))


def _setup_walk(spec: RunSpec, expect: Expectation, extra_checks: tuple, reduce: bool,
                max_deviations: int | None, stop_at_first: bool, probes: tuple = ()) -> None:
    runner, _, checks = prepare(spec, expect, extra_checks, probes)
    _WORKER.update(walk=Walk(runner.subject, checks, reduce, max_deviations),
                   stop_at_first=stop_at_first)


def _walk_slice(task: tuple[Entry, int]) -> Slice:
    entry, budget = task
    return slice_of(_WORKER["walk"], entry, budget, _WORKER["stop_at_first"])


# -- in the driving process -----------------------------------------------------------------

#: Runs a worker walks before it hands the rest of its subtree back: enough
#: to hide a round trip, few enough that an idle worker soon gets a subtree.
SLICE = 32


def walk_campaign(spec: RunSpec, *, expect: Expectation = Expectation(), strategy: str, runs: int,
                  workers: int = 2, reduce: bool = True, max_deviations: int | None = None,
                  shrink_budget: int = 3000, where: Backend = LOCAL,
                  extra_checks: Sequence[Callable[[dict], list[str]]] = (),
                  probes: Sequence = ()) -> Campaign:
    """`forge.repro.explore_prompt`'s walk of the tree (`strategy` walks)
    with its subtrees on a pool: the same outcome (a walk is never sharded,
    so it keeps no traces)."""
    spec = in_mode(spec, strategy)
    runner, canonical, checks = prepare(spec, expect, extra_checks, probes)
    walk = Walk(runner.subject, checks, reduce, max_deviations)
    with Pool(workers, _setup_walk, (spec, expect, tuple(extra_checks), reduce, max_deviations,
                                     False, tuple(probes)), where) as pool:
        report = spread(walk, lambda entry, budget: pool.submit(_walk_slice, (entry, budget)),
                        pool.first_done, 2 * workers, limit=runs, shrink_budget=shrink_budget,
                        budget=SLICE)
    return Campaign(outcome_of(runner, canonical, checks, expect, report), ())


def explore_campaign(spec: RunSpec, *, expect: Expectation = Expectation(),
                     strategy: str = SEARCH, seeds: range, workers: int = 2,
                     pct_depth: int = 3, shrink_budget: int = 3000,
                     where: Backend = LOCAL,
                     progress: Callable[[int], None] | None = None,
                     extra_checks: Sequence[Callable[[dict], list[str]]] = (),
                     probes: Sequence = (), pct_horizon: int | None = None) -> Campaign:
    """`forge.repro.explore_prompt` over `seeds` on a pool: the same outcome,
    with the distinct trace hashes a shard report carries (PCT's horizon
    starting at `pct_horizon` if given, as there)."""
    spec = in_mode(spec, strategy)
    runner, canonical, checks = prepare(spec, expect, extra_checks, probes)
    size = lookup(strategy).chunk or CHUNK
    chunks = [(first, min(size, seeds.stop - first)) for first in range(seeds.start, seeds.stop,
                                                                         size)]
    traces: set[str] = set()
    outcomes: dict[str, int] = {}
    faults: dict[str, int] = {}
    probes_hit: dict[str, int] = {}
    # What the runs so far taught the strategy's campaign (PCT: its horizon),
    # learned here in seed order, as the serial search learns it.
    learned = lookup(strategy).campaign(pct_depth, pct_horizon)
    done, failing = 0, None
    with Pool(workers, _setup, (spec, expect, tuple(extra_checks), strategy, pct_depth,
                                tuple(probes)), where) as pool:
        sent: dict[int, object] = {}  # chunk index -> future, in flight

        def send(i: int) -> None:
            first, count = chunks[i]
            sent[i] = pool.submit(_run_chunk, (first, count, learned.horizon))

        ahead = max(1, workers * AHEAD)
        for i in range(min(ahead, len(chunks))):
            send(i)
        for i in range(len(chunks)):
            chunk = sent.pop(i).result()
            if chunk.horizon != learned.horizon:
                # Sent before the horizon grew: run it again with the right one.
                send(i)
                chunk = sent.pop(i).result()
            for run in chunk.runs:
                done += 1
                traces.add(run.trace_sha)
                tally(outcomes, (run.outcome,))
                tally(faults, run.faults_fired)
                tally(probes_hit, run.probes)
                learned.learn(run)      # a run's `steps`, as a provider's
                if run.failed:
                    failing = run
                    break
            if progress:
                progress(done)
            if failing is not None:
                pool.cancel(list(sent.values()))
                break
            if i + ahead < len(chunks):
                send(i + ahead)
    findings = ()
    if failing is not None:
        findings = (_finding(runner, checks, failing, shrink_budget),)
    report = Report(done, len(traces), findings, dict(sorted(outcomes.items())),
                    horizon=learned.horizon,
                    faults_fired=dict(sorted(faults.items())),
                    probes=dict(sorted(probes_hit.items())))
    return Campaign(outcome_of(runner, canonical, checks, expect, report),
                    tuple(sorted(traces)))


def _finding(runner, checks, failing: SeedRun, shrink_budget: int):
    """The finding of a worker's failing run, run again here from its choices."""
    chooser = Chooser(ReplayProvider(failing.choices), seed=failing.seed, orders=failing.orders)
    obs, _ = runner.subject(chooser)
    problems = check_all(obs, checks)
    return finding(runner.subject, failing.seed, chooser, obs, problems, checks, shrink_budget,
                   failing.drawn)


# -- shards ---------------------------------------------------------------------------------

#: The key of a shard report's own section (absent from a whole report).
SHARD_KEY = "shard"


def fingerprint(spec: RunSpec, expect: Expectation, strategy: str, start_seed: int, runs: int,
                pct_depth: int) -> str:
    """The sha256 naming one campaign: shards merge only when theirs agree."""
    base = record(spec, expect, 0, (), {"trace_sha256": ""})
    for key in ("trace_sha256", "observation_sha256", "choices"):
        base.pop(key)
    base["run"].pop("seed")
    base["campaign"] = {"strategy": strategy, "start_seed": start_seed, "runs": runs,
                        "pct_depth": pct_depth}
    return hashlib.sha256(json.dumps(base, sort_keys=True).encode("utf-8")).hexdigest()


def shard_section(shard: Shard, seeds: range, campaign: Campaign, print_: str) -> dict:
    """What a shard report adds for `merge_shards`."""
    failure = campaign.outcome.failure
    return {"index": shard.index, "of": shard.of, "seeds": [seeds.start, seeds.stop],
            "campaign": print_, "traces": list(campaign.traces),
            "record": failure.record if failure is not None else None}


#: The report fields that add up (or unite) across shards; the rest are
#: the failing shard's (or, with no failure, the first shard's).
_SUMMED = ("runs", "distinct_schedules", "outcomes", "faults", "probes", "probes_missed")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _shard_shape(data: dict) -> str | None:
    """The first field a shard report holds in a shape merging cannot read, or None."""
    section = data[SHARD_KEY]
    fields = (
        ("shard.index", section.get("index"), _count),
        ("shard.of", section.get("of"), _count),
        ("shard.campaign", section.get("campaign"), lambda v: isinstance(v, str)),
        ("shard.traces", section.get("traces"),
         lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v)),
        ("shard.record", section.get("record"), lambda v: v is None or isinstance(v, dict)),
        ("runs", data.get("runs"), _count),
        ("failures", data.get("failures"), lambda v: isinstance(v, list)),
        # Counts by name; a shard written before reports counted faults has none.
        ("outcomes", data.get("outcomes"),
         lambda v: isinstance(v, dict) and all(map(_count, v.values()))),
        ("faults", data.get("faults", {}),
         lambda v: isinstance(v, dict) and all(map(_count, v.values()))),
        ("probes", data.get("probes", {}),
         lambda v: isinstance(v, dict) and all(map(_count, v.values()))),
        # The failing shard's line with no file, which `merge` prints.
        ("rerun_command", data.get("rerun_command"),
         lambda v: v is None or (isinstance(v, str) and v.isprintable())),
    )
    for name, value, ok in fields:
        if not ok(value):
            return f"`{name}` is {json.dumps(value)[:60]}"
    return None


def merge_shards(reports: Sequence[tuple[str, dict]]) -> tuple[dict, dict | None]:
    """The one-process report of shard reports `(path, report)`, and the
    replay record of its failure (None: none failed).

    Shards merge in seed order; the first that failed ends the campaign, as
    the first failing seed ends a serial search, so later shards are not
    counted.  The caller sets the report's replay fields.

    Raises:
        InputError: naming the file, for a report that is not a shard's (or
            holds a field in a shape merging cannot read), one of another
            campaign or shard count, a shard given twice, or a shard missing.
    """
    by_index: dict[int, tuple[str, dict]] = {}
    first_path, first = None, None
    for path, data in reports:
        section = data.get(SHARD_KEY) if isinstance(data, dict) else None
        if not isinstance(section, dict):
            raise InputError("not a shard report (write one with forge explore --shard I/N "
                             "--json)", file=path)
        wrong = _shard_shape(data)
        if wrong:
            raise InputError(f"not a shard report as forge explore --shard writes one: {wrong}",
                             file=path)
        if first is None:
            first_path, first = path, section
        elif (section["campaign"], section["of"]) != (first["campaign"], first["of"]):
            raise InputError(f"a shard of another campaign than {first_path} (its prompt, flags, "
                             "seeds or shard count differ)", file=path)
        if section["index"] in by_index:
            raise InputError(f"shard {section['index']}/{section['of']} overlaps "
                             f"{by_index[section['index']][0]}, which is the same shard",
                             file=path)
        by_index[section["index"]] = (path, data)
    if first is None:
        raise InputError("no shard reports given", file="merge")
    missing = [i for i in range(1, first["of"] + 1) if i not in by_index]
    if missing:
        raise InputError(f"shard {missing[0]}/{first['of']} is missing; merge needs every "
                         "shard", file=first_path)
    merged: dict | None = None
    traces: set[str] = set()
    runs, outcomes, faults, probes = 0, {}, {}, {}
    for index in range(1, first["of"] + 1):
        _, data = by_index[index]
        runs += data["runs"]
        traces.update(data[SHARD_KEY]["traces"])
        for key, into in (("outcomes", outcomes), ("faults", faults), ("probes", probes)):
            for name, count in data.get(key, {}).items():
                into[name] = into.get(name, 0) + count
        merged = data
        if data["failures"]:
            break
    assert merged is not None
    out = {k: v for k, v in merged.items() if k != SHARD_KEY and k not in _SUMMED}
    out.update(runs=runs, distinct_schedules=len(traces), outcomes=dict(sorted(outcomes.items())),
               faults=dict(sorted(faults.items())))
    out["probes"] = coverage(probes, list(probes))
    out["probes_missed"] = [name for name, count in out["probes"].items() if not count]
    return out, merged[SHARD_KEY]["record"]
