"""The report of `forge explore`: its JSON (`report_json`) and its words
(`show`), one dict printed either way.  The reference's explore, the
`merge` of shard reports, and `forge explore --impl` (`forge.conformance.cli`)
all print through here, so a merged report is the serial one byte for byte
and a foreign engine's report reads like the reference's.

What does not live here: exploring (`forge.repro`, `forge.conformance.impl_explore`),
the command's flags (`forge.commands.explore`).
"""

from __future__ import annotations

import json
import shlex

import click

from forge.commands.jsonflag import emit_json, on_stdout
from forge.difference import differences_of
from forge.sim.strategies import DEFAULT


def report_json(report, failure, replay_out: str, user_probes=(), required=()) -> dict:
    """The report as `--json` prints it (and `merge` re-assembles it): with
    each probe's count of runs that reached it (`forge.probes`, the users'
    probes named `user_probes` too), those never reached, and the
    `required` ones no run reached."""
    from forge import probes

    command = f"forge replay {shlex.quote(replay_out)}"
    reached = probes.coverage(report.probes, user_probes)
    return {
        "probes": reached,
        "probes_missed": [name for name, count in reached.items() if not count],
        "required_unreached": probes.unreached(reached, required),
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
        "faults": report.faults,
        "accept": _accept(failure),
        # Each shrunk-run problem's structured difference (None: it has none).
        "differences": differences_of(failure.problems) if failure else None,
        # Which strategy drew the failing run (a portfolio's member, say).
        "found_by": found_by(report.findings[0].provider) if report.findings else None,
    }


def found_by(provider: dict) -> str | None:
    """The strategy that drew a run, from its description: its name, and
    its depth when it has one (`pct depth 2`)."""
    name = provider.get("strategy") if isinstance(provider, dict) else None
    if name is not None and "depth" in provider:
        return f"{name} depth {provider.get('depth')}"
    return name


def _accept(failure) -> str | None:
    """Why the run's ending failed the schedule and the flag that accepts it
    (`forge.verdict`), when that is what failed it."""
    from forge import verdict

    if failure is None or not any(map(verdict.is_ending_problem, failure.problems)):
        return None
    return verdict.why(failure.observation)


#: `forge explore` flags a one-seed rerun leaves out (they spread, bound or
#: write the campaign, not what one schedule does), each taking a value.
_NOT_RERUN = ("--runs", "--start-seed", "--replay-out", "--workers", "--shard", "--backend",
              "--address", "--database", "--pct-horizon")


def rerun_line(argv, seed: int | None, provider: dict | None = None,
               strategy: str | None = None) -> str | None:
    """The one-line reproduction that needs no file: `forge explore` with the
    campaign's own flags (`argv`, its command line's tokens as given) but one schedule, the failing
    seed's, and no database, which finds and shrinks the same failure again.
    Seed N draws the same schedule in any campaign, given the horizon PCT
    had learned by then (`provider`, the run's description, names it):
    `--pct-horizon` gives it.  `strategy`, the campaign's, is named when
    the flags do not name it and the line's own default is another (a
    shard's).  None for an exhaustive walk's failure, which has no seed:
    its replay file is the way back; None too for a coverage-guided run,
    whose prefix came from the corpus earlier seeds grew, not from its seed."""
    if seed is None or argv is None or "prefix" in (provider or {}):
        return None
    kept, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token in _NOT_RERUN:
            skip = True
        elif token.startswith(tuple(f + "=" for f in _NOT_RERUN)) or token == "--json" \
                or token.startswith("--json="):
            pass
        else:
            kept.append(token)
    named = any(t == "--strategy" or t.startswith("--strategy=") for t in kept)
    if strategy is not None and not named and strategy != DEFAULT:
        kept += ["--strategy", strategy]
    horizon = (provider or {}).get("horizon")
    learned = ["--pct-horizon", str(horizon)] if isinstance(horizon, int) else []
    return shlex.join(["forge", "explore", *kept, "--start-seed", str(seed), "--runs", "1",
                       *learned, "--database", "none"])


def show(data: dict, json_out: str | None, walks: bool, shrunk_problems,
          faults_asked: bool = False, rerun: str | None = None,
          strategy: str | None = None) -> None:
    """Print the report: JSON, or in words (the faults fired over all
    schedules when --faults asked for them, even if none fired; which of a
    mixed campaign's strategies drew the failure when it is not
    `strategy`, the campaign's own)."""
    from forge.progress import plain_counts

    emit_json(json_out, json.dumps(data, sort_keys=True))
    if on_stdout(json_out):
        return
    click.echo(f"{data['runs']} schedules, {data['distinct_schedules']} distinct, "
               f"outcomes: {plain_counts(data['outcomes'])}")
    if faults_asked or data.get("faults"):
        click.echo(f"faults fired: {plain_counts(data.get('faults', {}))}")
    if "probes" in data:
        show_probes(data)
    if walks:
        click.echo(f"{'covered the whole tree' if data['complete'] else 'STOPPED at --runs'}: "
                   f"{data['pruned']} pruned as equivalent, {data['bounded']} beyond the "
                   f"deviation bound, {data['unfinished']} unfinished")
    if data["failures"]:
        found = data["failures"][0]
        where = "on a schedule of the walk" if found["seed"] is None else \
            f"at seed {found['seed']}"
        # The first line of each: the shrunk run's problems below show their differences.
        click.echo(f"FAILED {where}: " + "; ".join(p.split("\n")[0] for p in found["problems"]))
        if strategy is not None and data.get("found_by") and \
                data["found_by"].split()[0] != strategy:
            click.echo(f"found by the {strategy}'s {data['found_by']} strategy")
        minimal = "a proven local minimum" if found["proven_minimal"] else "not proven minimal"
        click.echo(f"shrunk from {found['choices']} to {len(found['shrunk'])} choices, "
                   f"{found['deviations']} deviations from canonical ({minimal}); the shrunk "
                   "run:")
        for p in shrunk_problems:
            click.echo("  " + p.replace("\n", "\n  "))
        click.echo("the shrunk schedule, in virtual time:")
        for line in data["story"]:
            click.echo("  " + line)
        if data["divergence"]:
            click.echo("first divergence from the canonical run:")
            for line in data["divergence"]:
                click.echo("  " + line)
        if data.get("accept"):
            click.echo(data["accept"])
        click.echo(f"reproduce with: {data['replay_command']}")
        if rerun is not None:
            click.echo(f"or, with no file: {rerun}")


def show_probes(data: dict) -> None:
    """The probes reached, with their counts, and those never reached."""
    reached = {name: count for name, count in data["probes"].items() if count}
    click.echo("probes reached: " + (", ".join(f"{n} {c}" for n, c in reached.items())
                                     or "none"))
    if data.get("probes_missed"):
        click.echo("never reached: " + ", ".join(data["probes_missed"]))
    if data.get("required_unreached"):
        click.echo("REQUIRED and never reached: " + ", ".join(data["required_unreached"]))


def show_saved(still, replay_out: str, json_out: str | None, rerun: str | None = None) -> None:
    """A failure the database kept (`forge.failuredb`) that fails again: it
    is the campaign's failure, found before any new schedule ran (`rerun`:
    the line with no file that draws the seed it was first found at)."""
    command = f"forge replay {shlex.quote(replay_out)}"
    emit_json(json_out, json.dumps({"runs": 0, "saved_failure": str(still.path),
                                    "problems": list(still.problems), "replay": replay_out,
                                    "replay_command": command}, sort_keys=True))
    if on_stdout(json_out):
        return
    click.echo(f"FAILED again: a failure saved in {still.path.parent} by an earlier campaign "
               "of this prompt and settings still fails (it is replayed before new schedules; "
               "it is dropped once it passes):")
    for p in still.problems:
        click.echo("  " + p.replace("\n", "\n  "))
    click.echo(f"reproduce with: {command}")
    if rerun is not None:
        click.echo(f"or, with no file: {rerun}")
