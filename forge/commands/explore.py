"""`forge explore`: many schedules of one prompt, checking invariants.

It builds the run from the same harness flags as `forge run` (seed N here
is `forge run --seed N`), explores it (`forge.repro.explore_prompt`),
prints the shrunk failure as a story with its first divergence from the
canonical run, and writes a self-contained replay file that `forge replay
FILE` alone reproduces.

What does not live here: exploring and recording (`forge.repro`),
drawing and shrinking schedules (`sim`), the invariants (`forge.conformance.oracles`).
"""

from __future__ import annotations

import json
import shlex
import sys

import click

from forge.commands.params import (TEXT, BoundedInt, OutputPath, harness_kwargs,
                                   harness_options, write_output)

#: The most schedules one `forge explore` tries (each is a whole run).
MAX_RUNS = 10_000_000


@click.command()
@click.argument("prompt", type=click.Path(dir_okay=False))
@click.option("--runs", type=BoundedInt(1, MAX_RUNS), default=200, show_default=True,
              help="How many schedules to try.")
@click.option("--start-seed", type=BoundedInt(), default=0, show_default=True)
@click.option("--strategy", type=click.Choice(["random", "pct", "exhaustive"]), default="random",
              show_default=True, help="How schedules are drawn (exhaustive walks the choice tree).")
@click.option("--pct-depth", type=BoundedInt(1, 1000), default=3, show_default=True)
@click.option("--max-deviations", type=BoundedInt(0, 1_000_000), default=None,
              help="Exhaustive: only schedules with at most N non-canonical durations.")
@click.option("--no-reduce", "no_reduce", is_flag=True,
              help="Exhaustive: run every interleaving, equivalent ones included.")
@harness_options()
@click.option("--expect-result", default=None, type=TEXT,
              help="Also require this exact run result.")
@click.option("--same-ids/--no-same-ids", default=True, show_default=True,
              help="Require every schedule to start the same task ids as the canonical one.")
@click.option("--schedule-independent", is_flag=True,
              help="Require every schedule to give the canonical observation, apart from "
                   "what a schedule may change (event order, log order, virtual time).")
@click.option("--check", "checks", multiple=True, metavar="MODULE:FUNCTION", type=TEXT,
              help="Also run this user check on every schedule (repeatable): it takes the "
                   "observation and returns its problems.")
@click.option("--replay-out", type=OutputPath(),
              default="forge-failure.replay.json", show_default=True,
              help="Where to write the shrunk failing schedule.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@click.option("--impl", metavar="CMD", default=None, type=TEXT,
              help="Explore this implementation over the protocol's level 2 (docs/protocol.md); "
                   "PROMPT may then be a replay file to run through it again.")
def explore(prompt, runs, start_seed, strategy, pct_depth, max_deviations, no_reduce,
            expect_result, same_ids, schedule_independent, checks, replay_out, as_json,
            impl, **harness):
    """Run PROMPT under many schedules and check invariants on every one.

    \b
    Checks: each task ends exactly once; status tables agree with events;
    every abandon has one sound reason; task ids match the canonical
    schedule (--same-ids); the result equals --expect-result if given;
    the observation is the canonical one (--schedule-independent); each
    --check MODULE:FUNCTION holds.
    With --faults, the chooser also injects faults (at most --fault-budget
    a run).  A failure is shrunk to a minimal schedule and saved as a
    replay file that `forge replay FILE` reproduces on its own.

    \b
    Exit codes: 0 every schedule passed, 1 a schedule failed, 2 bad input,
    3 an exhaustive search stopped at --runs before covering the tree.
    """
    from forge.lifecycle.scenario import is_scenario
    if is_scenario(prompt):  # a lifecycle race (docs/lifecycle.md), not a prompt
        from forge.lifecycle.command import explore_file
        sys.exit(explore_file(prompt, runs, start_seed, strategy, pct_depth, max_deviations,
                              no_reduce, replay_out, as_json))
    from forge.repro import explore_prompt
    from forge.runspec import Expectation, spec_from_flags
    from forge.sim.replayfile import write_record

    expect = Expectation(invariants=True, same_ids=same_ids, result=expect_result,
                         schedule_independent=schedule_independent, checks_named=tuple(checks))
    if impl is not None:        # a foreign engine, through the pipe (forge.conformance.impl_explore)
        from forge.conformance.cli import explore_impl_command as command
        sys.exit(command(impl, prompt, harness, expect=expect, runs=runs, start_seed=start_seed,
                         strategy=strategy, pct_depth=pct_depth, max_deviations=max_deviations,
                         reduce=not no_reduce, replay_out=replay_out, as_json=as_json))
    spec = spec_from_flags(prompt, **harness_kwargs(harness))
    from forge.progress import Progress, plain_counts

    bar = Progress(runs, "schedules")
    outcome = explore_prompt(spec, expect=expect, strategy=strategy, runs=runs,
                             start_seed=start_seed, pct_depth=pct_depth,
                             max_deviations=max_deviations, reduce=not no_reduce,
                             progress=bar.update)
    bar.close()
    report, failure = outcome.report, outcome.failure
    found = report.findings[0] if report.findings else None
    if failure is not None:
        write_output(replay_out, write_record(failure.record))
    command = f"forge replay {shlex.quote(replay_out)}"
    if as_json:
        click.echo(json.dumps({
            "runs": report.runs,
            "distinct_schedules": report.distinct_traces,
            "outcomes": report.outcomes,
            "failures": [{"seed": f.seed, "problems": list(f.problems),
                          "choices": len(f.choices), "shrunk": list(f.shrunk),
                          "deviations": f.deviations, "proven_minimal": f.proven,
                          "strategy": f.provider}
                         for f in report.findings],
            "complete": report.complete, "pruned": report.pruned, "bounded": report.bounded,
            "unfinished": report.unfinished, "redundant": report.redundant,
            "pct_horizon": report.horizon,
            "replay": replay_out if failure else None,
            "replay_command": command if failure else None,
            "story": list(failure.story) if failure else None,
            "divergence": list(failure.divergence) if failure else None,
            "faults_fired": [list(f) for f in failure.faults] if failure else None,
        }, sort_keys=True))
    else:
        click.echo(f"{report.runs} schedules, {report.distinct_traces} distinct, "
                   f"outcomes: {plain_counts(report.outcomes)}")
        if strategy == "exhaustive":
            click.echo(f"{'covered the whole tree' if report.complete else 'STOPPED at --runs'}: "
                       f"{report.pruned} pruned as equivalent, {report.bounded} beyond the "
                       f"deviation bound, {report.unfinished} unfinished")
        if failure is not None:
            where = "on an exhaustive schedule" if found.seed is None else f"at seed {found.seed}"
            click.echo(f"FAILED {where}: " + "; ".join(found.problems))
            minimal = "a proven local minimum" if found.proven else "not proven minimal"
            click.echo(f"shrunk from {len(found.choices)} to {len(found.shrunk)} choices, "
                       f"{found.deviations} deviations from canonical ({minimal}); the shrunk "
                       "run: " + "; ".join(failure.problems))
            click.echo("the shrunk schedule, in virtual time:")
            for line in failure.story:
                click.echo("  " + line)
            if failure.divergence:
                click.echo("first divergence from the canonical run:")
                for line in failure.divergence:
                    click.echo("  " + line)
            click.echo(f"reproduce with: {command}")
    if failure is not None:
        sys.exit(1)
    sys.exit(3 if not report.complete else 0)
