"""`forge explore`: many schedules of one prompt, checking invariants.

It builds the run from the same harness flags as `forge run` (seed N here
is `forge run --seed N`), explores it (`forge.repro.explore_prompt`),
prints the shrunk failure as a story with its first divergence from the
canonical run, and writes a self-contained replay file that `forge replay
FILE` alone reproduces.

`--workers N` and `--backend dask` spread the seeds (an exhaustive walk's
subtrees) over processes, and
`--shard I/N` runs one part of the seed range (`forge.campaign`); `forge
explore merge A.json B.json ...` (`merge`) joins shard reports into the
report one process gives.  Both print the report from one dict
(`forge.commands.explore_report`), so a merged report is the serial one byte for byte.

What does not live here: exploring and recording (`forge.repro`), spreading
and merging (`forge.campaign`, `forge.pool`),
drawing and shrinking schedules (`sim`), the invariants (`forge.conformance.oracles`).
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import TYPE_CHECKING

import click

from forge import probes as probing
from forge.deferred import deferred
from forge.errors import InputError

from forge.commands.explore_report import report_json, rerun_line, show, show_saved

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import campaign as spread, failuredb, pool, progress, repro
    from forge.conformance import cli as conformance_cli
    from forge.lifecycle import command as lifecycle_command, scenario
else:
    spread = deferred("forge.campaign")
    failuredb = deferred("forge.failuredb")
    pool = deferred("forge.pool")
    progress = deferred("forge.progress")
    repro = deferred("forge.repro")
    conformance_cli = deferred("forge.conformance.cli")
    lifecycle_command = deferred("forge.lifecycle.command")
    scenario = deferred("forge.lifecycle.scenario")

#: Where `forge explore` keeps its arguments as given (`ctx.meta`).
RERUN_ARGS = "forge.explore.args"
from forge.commands.jsonflag import JsonCommand, json_option, spell_json
from forge.commands.params import (BoundedInt, InputPath, OutputPath, Seconds, TEXT, flags_given,
                                   harness_kwargs, harness_options, write_output)
from forge.conformance.limit_flags import LIMIT_FLAGS, differential_options, impl_limit_options
from forge.run.options import RULES
from forge.runspec import Expectation, load_probe, spec_from_flags
from forge.sim.replayfile import write_record
from forge.sim.strategies import DEFAULT, DEFAULT_SHARDED, STRATEGIES, explaining, lookup
from forge.verdict import Verdict

# The flags' help names strategies by what they declare (`forge.sim.strategies`).
_BOUNDED = " and ".join(s.name for s in STRATEGIES if "max_deviations" in s.parameters)
_UNBOUNDED = " and ".join(s.name for s in STRATEGIES
                          if s.explores and "max_deviations" not in s.parameters)


class _ExploreCommand(JsonCommand):
    """`forge explore PROMPT ...`, and `forge explore merge REPORT...`: a
    first argument `merge` is the merge command (a prompt file of that name
    is `./merge`)."""

    def parse_args(self, ctx, args):
        # The flags as given, for the failure's one-line reproduction.
        args = spell_json(self, ctx, args)
        ctx.meta[RERUN_ARGS] = tuple(args)
        return click.Command.parse_args(self, ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        if args and args[0] == "merge":
            return merge.make_context("explore merge", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        if ctx.command is merge:
            return merge.invoke(ctx)
        return super().invoke(ctx)


@click.command(cls=_ExploreCommand)
@click.argument("prompt", type=InputPath(dir_okay=False))
@click.option("--runs", type=BoundedInt.of(RULES["runs"]), default=200, show_default=True,
              help="How many schedules to try.")
@click.option("--start-seed", type=BoundedInt.of(RULES["start_seed"]), default=None,
              help="The first seed (default: a fresh one, printed; FORGE_START_SEED pins it).")
@click.option("--database", default=None, metavar="DIR", type=TEXT,
              help="Where failing schedules are kept and replayed first next time "
                   "(default .forge, or FORGE_DATABASE; none keeps none).")
@click.option("--strategy", type=click.Choice(RULES["strategy"].choices), default=None,
              help=f"How schedules are drawn: {explaining()}.  With --shard the default is "
                   f"{DEFAULT_SHARDED}.")
@click.option("--pct-depth", type=BoundedInt.of(RULES["pct_depth"]), default=3, show_default=True,
              help="PCT's depth d: each run has d - 1 change points and finds a bug of depth d "
                   "with probability at least 1/(n k^(d-1)) for n chains and k scheduling "
                   "decisions (docs/exploring.md).")
@click.option("--pct-horizon", type=BoundedInt.of(RULES["pct_horizon"]), default=None,
              help="Start PCT's horizon (scheduling decisions a run makes) here instead of "
                   "learning it from the first run: a failure's one-line rerun gives it.")
@click.option("--fair", type=BoundedInt.of(RULES["fair"]), default=None, metavar="K",
              help="Make each schedule fair after its first K chain picks: every later pick "
                   "takes the chain ready longest (what the ready-chain liveness bound is "
                   "judged under; one process, not with an exhaustive walk).")
@click.option("--max-deviations", type=BoundedInt.of(RULES["max_deviations"]), default=None,
              help=f"{_BOUNDED.capitalize()} only ({_UNBOUNDED} refuse it): only schedules with at "
                   "most N non-canonical durations.")
@click.option("--no-reduce", "no_reduce", is_flag=True,
              help="Exhaustive: run every interleaving, equivalent ones included.")
@harness_options()
@click.option("--expect-result", default=None, type=TEXT,
              help="Also require this exact run result.")
@click.option("--expect-outcome", type=click.Choice(["ok", "failed", "cancelled"]), default=None,
              help="Require every schedule's run to end so (by default a run that ends "
                   "failed or cancelled fails its schedule).")
@click.option("--expect-error", default=None, metavar="KIND", type=TEXT,
              help="Require every schedule's run to end failed with this error kind "
                   "(Lua, Budget, Determinism, ...).")
@click.option("--allow-failed", is_flag=True,
              help="A schedule's run may end any way; only the checks judge it.")
@click.option("--same-ids/--no-same-ids", default=True, show_default=True,
              help="Require every schedule to start the same task ids as the canonical one.")
@click.option("--schedule-independent", is_flag=True,
              help="Require every schedule to give the canonical observation, apart from "
                   "what a schedule may change (event order, log order, virtual time).")
@click.option("--check", "checks", multiple=True, metavar="MODULE:FUNCTION", type=TEXT,
              help="Also run this user check on every schedule (repeatable): it takes the "
                   "observation and returns its problems.")
@click.option("--probe", "user_probes", multiple=True, metavar="MODULE:FUNCTION", type=TEXT,
              help="Also count the schedules that reach this user probe (repeatable): it "
                   "takes the observation and returns true when the run reached it.")
@click.option("--require", "required", multiple=True, metavar="PROBE", type=TEXT,
              help="Fail the campaign (exit 1) if no schedule reaches this probe "
                   "(repeatable; a built-in probe's name or a --probe MODULE:FUNCTION).")
@click.option("--replay-out", type=OutputPath(),
              default="forge-failure.replay.json", show_default=True,
              help="Where to write the shrunk failing schedule.")
@json_option("The report")
@click.option("--workers", type=BoundedInt.of(RULES["workers"]), default=1, show_default=True,
              help="Run schedules in this many processes (the report is the one-process "
                   "report).")
@click.option("--shard", default=None, metavar="I/N", type=TEXT,
              help="Run only part I of N of the seeds (a CI matrix); with --json, join "
                   "the parts with `forge explore merge`.")
@click.option("--backend", type=click.Choice(["local", "dask"]), default="local",
              show_default=True, help="Where workers run: local processes, or a Dask cluster "
                                      "(the distributed extra).")
@click.option("--address", default=None, metavar="URL", type=TEXT,
              help="The Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a local cluster "
                   "of --workers processes).")
@click.option("--impl", metavar="CMD", default=None, type=TEXT,
              help="Explore this implementation over the protocol's level 2 (docs/protocol.md); "
                   "PROMPT may then be a replay file to run through it again.")
@click.option("--timeout", type=Seconds.of(RULES["timeout"]), default=10.0,
              show_default=True,
              help="With --impl: seconds the program gets to answer each request before the "
                   "schedule fails.")
@impl_limit_options
@differential_options
def explore(prompt, runs, start_seed, database, strategy, pct_depth, pct_horizon, fair,
            max_deviations, no_reduce,
            expect_result, expect_outcome, expect_error, allow_failed, same_ids,
            schedule_independent, checks, user_probes, required, replay_out, json_out, workers,
            shard, backend,
            address, impl, timeout, run_seconds, max_decisions, differential,
            known_differences, **harness):
    """Run PROMPT under many schedules and check invariants on every one.

    \b
    Checks: the run ends ok (unless --expect-outcome, --expect-error or
    --allow-failed says otherwise; under --faults it may end failed or
    cancelled); each task ends exactly once; status tables agree with events;
    every abandon has one sound reason; task ids match the canonical
    schedule (--same-ids); the result equals --expect-result if given;
    the observation is the canonical one (--schedule-independent); each
    --check MODULE:FUNCTION holds.
    The report lists how many schedules reached each probe (a named
    behaviour such as a timeout tie or a cancel of a queued task) and those
    never reached; --require PROBE fails a campaign that never reached it.
    With --faults, the chooser also injects faults (at most --fault-budget
    a run).  A failure is shrunk to a minimal schedule and saved as a
    replay file that `forge replay FILE` reproduces on its own.

    \b
    Exit codes: 0 every schedule passed, 1 a schedule failed, 2 bad input,
    3 an exhaustive search stopped at --runs before covering the tree,
    4 (--impl CMD FILE.replay.json) the recorded failure is fixed.

    \b
    Spread a campaign:  forge explore P.md --runs 2000 --workers 2
    A CI matrix:        forge explore P.md --runs 2000 --shard 1/2 --json > a.json
                        forge explore P.md --runs 2000 --shard 2/2 --json > b.json
                        forge explore merge a.json b.json --json
    """
    given = [f for f in LIMIT_FLAGS if f in flags_given(click.get_current_context())]
    if impl is None and given:
        raise InputError("bounds what an --impl program may take; "
                         "give --impl CMD, or leave it out", file=given[0])

    part = spread.parse_shard(shard) if shard is not None else None
    if strategy is None:
        strategy = DEFAULT_SHARDED if part is not None else DEFAULT
    where = pool.backend(backend, address)
    spread.check_spread(strategy, workers, part, where)
    repro.check_bound(strategy, max_deviations)
    if fair is not None and (part is not None or workers > 1 or where.kind != "local"
                             or impl is not None or lookup(strategy).walks):
        raise InputError("makes the reference engine's schedules fair in one process; leave "
                         "out --workers, --shard, --backend and --impl, and use a strategy "
                         "that draws schedules, not an exhaustive walk", file="--fair")
    fixed = (part is not None or impl is not None or lookup(strategy).walks
             or scenario.is_scenario(prompt))
    start_seed = failuredb.start_seed(start_seed, fixed)
    repro.check_seeds(start_seed, runs)
    if scenario.is_scenario(prompt):
        # a lifecycle race (docs/lifecycle.md); it refuses the prompt's flags
        context = click.get_current_context()
        sys.exit(lifecycle_command.explore_file(
            prompt, runs, start_seed, strategy, pct_depth, max_deviations, no_reduce, replay_out,
            json_out, given=flags_given(context), required=required,
            rerun_args=context.meta.get(RERUN_ARGS)))

    expect = Expectation(invariants=True, same_ids=same_ids, result=expect_result,
                         schedule_independent=schedule_independent, checks_named=tuple(checks),
                         ending=Verdict.of(expect_outcome, expect_error, allow_failed))
    loaded = tuple(load_probe(name) for name in user_probes)
    probing.check_required(required, user_probes)
    if impl is not None:        # a foreign engine, through the pipe (forge.conformance.impl_explore)
        if part is not None or workers > 1 or where.kind != "local":
            raise InputError("--impl explores in one process; --workers, --shard and --backend "
                             "are for the reference engine")
        sys.exit(conformance_cli.explore_impl_command(
            impl, prompt, harness, expect=expect, runs=runs, start_seed=start_seed,
            strategy=strategy, pct_depth=pct_depth, max_deviations=max_deviations,
            reduce=not no_reduce, replay_out=replay_out, json_out=json_out, timeout=timeout,
            limits={"run_seconds": run_seconds, "max_decisions": max_decisions},
            differential=differential, known_path=known_differences, pct_horizon=pct_horizon,
            rerun_args=click.get_current_context().meta.get(RERUN_ARGS)))
    spec = spec_from_flags(prompt, **harness_kwargs(harness))

    db = failuredb.database(database) if part is None else None
    key = failuredb.campaign_key(spec, expect, strategy, pct_depth)
    still = failuredb.replay_saved(db, key, spec, expect) if db is not None else None
    if still is not None:       # a failure saved by an earlier campaign fails again
        write_output(replay_out, still.text)
        drawn = still.strategy.get("seed")
        show_saved(still, replay_out, json_out, rerun_line(
            click.get_current_context().meta.get(RERUN_ARGS), drawn, still.strategy, strategy)
            if isinstance(drawn, int) else None)
        sys.exit(1)

    bar = None
    try:
        if part is not None or workers > 1 or where.kind != "local":
            seeds = part.seeds(start_seed, runs) if part is not None else \
                range(start_seed, start_seed + runs)
            bar = progress.Progress(len(seeds), "schedules")
            if lookup(strategy).walks:
                done = spread.walk_campaign(spec, expect=expect, strategy=strategy, runs=runs,
                                            workers=workers,
                                            reduce=not no_reduce, max_deviations=max_deviations,
                                            where=where, probes=loaded)
            else:
                done = spread.explore_campaign(spec, expect=expect, strategy=strategy,
                                               seeds=seeds, workers=workers,
                                               pct_depth=pct_depth, where=where,
                                               progress=bar.update, probes=loaded,
                                               pct_horizon=pct_horizon)
            outcome = done.outcome
        else:
            bar = progress.Progress(runs, "schedules")
            outcome = repro.explore_prompt(spec, expect=expect, strategy=strategy, runs=runs,
                                           start_seed=start_seed, pct_depth=pct_depth,
                                           max_deviations=max_deviations, reduce=not no_reduce,
                                           progress=bar.update, probes=loaded,
                                           pct_horizon=pct_horizon, fair=fair)
    except KeyboardInterrupt:   # Ctrl-C: what ran, then exit 130 (forge.cli)
        if bar is not None:
            bar.close()
            click.echo(f"interrupted after {bar.done} of {bar.total} schedules (from start "
                       f"seed {start_seed}); no failure among those checked", err=True)
        raise
    bar.close()
    report, failure = outcome.report, outcome.failure
    if failure is not None:
        write_output(replay_out, write_record(failure.record))
        if db is not None:
            db.save(key, write_record(failure.record))
    # A shard's line is the one `merge` prints (its first seed is its own).
    rerun = rerun_line(click.get_current_context().meta.get(RERUN_ARGS),
                       report.findings[0].seed, report.findings[0].provider, strategy,
                       first=seeds.start if part is not None else start_seed) \
        if report.findings else None
    data = report_json(report, failure, replay_out, user_probes, required, rerun)
    if part is not None:
        data[spread.SHARD_KEY] = spread.shard_section(
            part, seeds, done, spread.fingerprint(spec, expect, strategy, start_seed, runs,
                                                  pct_depth))
    show(data, json_out, lookup(strategy).walks, failure.problems if failure else (),
         bool(spec.fault_plan), strategy)
    if failure is not None or data["required_unreached"]:
        sys.exit(1)
    sys.exit(3 if not report.complete else 0)


@click.command(cls=JsonCommand)
@click.argument("reports", nargs=-1, required=True, type=InputPath(dir_okay=False))
@click.option("--replay-out", type=OutputPath(),
              default="forge-failure.replay.json", show_default=True,
              help="Where to write the shrunk failing schedule.")
@json_option("The joined report")
def merge(reports, replay_out, json_out):
    """Join the shard reports REPORTS (`forge explore --shard I/N --json`)
    into the report of one run over all their seeds.

    Every shard of one campaign must be given, once each.  Exit codes as
    `forge explore`: 0 every schedule passed, 1 one failed, 2 bad input.
    """
    loaded = []
    for path in reports:
        try:
            with open(path, encoding="utf-8") as f:
                loaded.append((path, json.load(f)))
        except OSError as e:
            raise InputError(f"cannot read this file: {e.strerror or e}", file=path) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"not a JSON report ({e})", file=path) from None
    data, rec = spread.merge_shards(loaded)
    if rec is not None:
        write_output(replay_out, write_record(rec))
        data["replay"] = replay_out
        data["replay_command"] = f"forge replay {shlex.quote(replay_out)}"
    show(data, json_out, False, rec["failure"]["problems"] if rec else ())
    sys.exit(1 if rec is not None else 0)
