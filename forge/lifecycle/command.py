"""``forge explore`` and ``forge replay`` on a lifecycle scenario file.

The two commands hand a path ending in ``.scenario.toml`` or
``.scenario.json`` here (``scenario.is_scenario``); this module runs it
(``campaign``) and prints the outcome in the commands' manner: a summary, the
shrunk failing schedule step by step, a replay file, and the exit codes 0 (every
schedule passed), 1 (one failed), 2 (bad input, raised as ``InputError``), 3
(an exhaustive search stopped before covering the tree).

Lives here: printing and exit codes. Does not live here: the flags (the
commands own them), running schedules (``campaign``).
"""

from __future__ import annotations

import json

import click

from forge.lifecycle import campaign
from forge.lifecycle.scenario import load


def explore_file(path: str, runs: int, start_seed: int, strategy: str, pct_depth: int,
                 max_deviations: int | None, no_reduce: bool, replay_out: str,
                 as_json: bool) -> int:
    """Explore the scenario at ``path``; answers the exit code."""
    from forge.commands.params import write_output

    scenario = load(path)
    out = campaign.run(scenario, strategy, runs, start_seed, pct_depth, not no_reduce,
                       max_deviations)
    f = out.failure
    if f is not None:
        write_output(replay_out, campaign.replay_body(path, out))
    if as_json:
        click.echo(json.dumps({
            "scenario": out.scenario, "strategy": out.strategy, "reduced": out.reduced,
            "partial_order_reduction": out.por,
            "runs": out.runs, "distinct_schedules": out.distinct, "complete": out.complete,
            "bounded": out.bounded, "unfinished": out.unfinished, "pct_horizon": out.horizon,
            "failures": [] if f is None else [{
                "seed": f.seed, "problems": list(f.problems), "choices": len(f.found),
                "shrunk": list(f.shrunk), "deviations": f.deviations,
                "proven_minimal": f.proven, "strategy": f.provider,
                "steps": [list(s) for s in f.steps]}],
            "replay": replay_out if f else None}, sort_keys=True))
    else:
        steps = "host calls and store operations" if not out.reduced else "store operations"
        por = ", one per class of equivalent schedules" if out.por else ""
        click.echo(f"{out.scenario}: {out.runs} schedules ({steps} as steps{por}), "
                   f"{out.distinct} distinct")
        if strategy == "exhaustive" and f is None and out.por:
            click.echo("covered every class of equivalent schedules" if out.complete else
                       "STOPPED at --runs before covering every class of equivalent schedules")
        elif strategy == "exhaustive" and f is None:
            click.echo(f"{'covered the whole tree' if out.complete else 'STOPPED at --runs'}: "
                       f"{out.bounded} beyond the deviation bound, {out.unfinished} unfinished")
        if f is not None:
            at = f" at seed {f.seed}" if f.seed is not None else ""
            click.echo(f"FAILED{at}: " + "; ".join(f.problems))
            minimal = "a proven local minimum" if f.proven else "not proven minimal"
            click.echo(f"shrunk from {len(f.found)} to {len(f.shrunk)} choices, "
                       f"{f.deviations} deviations from canonical ({minimal}); the schedule:")
            for actor, what in f.steps:
                click.echo(f"  {actor:>12}  {what}")
            click.echo(f"reproduce with: forge replay {path} {replay_out}")
    if f is not None:
        return 1
    return 3 if not out.complete else 0


def replay_file(path: str, replay: str, as_json: bool) -> int:
    """Run the schedule recorded in ``replay`` on the scenario at ``path``."""
    from forge.sim.chooser import ReplayFileError, read_replay

    from forge.errors import InputError

    scenario = load(path)
    try:
        recorded = read_replay(replay)
    except ReplayFileError as e:
        raise InputError(e.detail, file=replay, line=e.line) from None
    got = campaign.replay(scenario, recorded)
    if got.drifted_at is not None:
        click.echo(f"warning: the replay drifted at choice {got.drifted_at} "
                   "(the scenario changed since it was recorded?)", err=True)
    if as_json:
        click.echo(json.dumps({"problems": list(got.problems),
                               "steps": [list(s) for s in got.steps],
                               "rows": [list(r) for r in got.rows]}, sort_keys=True))
    else:
        for actor, what in got.steps:
            click.echo(f"  {actor:>12}  {what}")
        click.echo("FAILED: " + "; ".join(got.problems) if got.problems else "ok")
    return 1 if got.problems else 0
