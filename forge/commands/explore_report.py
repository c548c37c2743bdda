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
from typing import TYPE_CHECKING

import click

from forge import probes, verdict
from forge.commands.jsonflag import emit_json, on_stdout
from forge.deferred import deferred
from forge.difference import differences_of
from forge.sim.strategies import DEFAULT, lookup

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import progress
else:
    progress = deferred("forge.progress")


def report_json(report, failure, replay_out: str, user_probes=(), required=(),
                rerun: str | None = None) -> dict:
    """The report as `--json` prints it (and `merge` re-assembles it): with
    each probe's count of runs that reached it (`forge.probes`, the users'
    probes named `user_probes` too), those never reached, the `required`
    ones no run reached, and the failure's line with no file (`rerun`,
    `rerun_line`; a shard's is the one `merge` prints)."""
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
        "rerun_command": rerun if failure else None,
        "story": list(failure.story) if failure else None,
        "divergence": list(failure.divergence) if failure else None,
        "faults_fired": [list(f) for f in failure.fired] if failure else None,
        "faults": report.faults_fired,
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
    if failure is None or not any(map(verdict.is_ending_problem, failure.problems)):
        return None
    return verdict.why(failure.observation)


#: `forge explore` flags a one-seed rerun leaves out (they spread, bound or
#: write the campaign, not what one schedule does), each taking a value.
_NOT_RERUN = ("--runs", "--start-seed", "--replay-out", "--workers", "--shard", "--backend",
              "--address", "--database", "--pct-horizon")


def rerun_line(argv, seed: int | None, provider: dict | None = None,
               strategy: str | None = None, first: int | None = None,
               scenario: bool = False) -> str | None:
    """The one-line reproduction that needs no file: `forge explore` with the
    campaign's own flags (`argv`, its command line's tokens as given) but the failing seed's schedule,
    and no database, which finds and shrinks the same failure again.
    Seed N draws the same schedule in any campaign, given the horizon PCT
    had learned by then (`provider`, the run's description, names it):
    `--pct-horizon` gives it.  A strategy whose campaign grows afresh every
    `chunk` seeds (coverage's corpus) draws seed N from what the chunk's
    earlier seeds grew, so its line runs the chunk again from its start up
    to N; `first` is the first seed of the seeds this process ran (None:
    not known, as for a failure the database kept, and then no line).
    `strategy`, the campaign's, is named when the flags do not name it and
    the line's own default is another (a shard's).  None too for an
    exhaustive walk's failure, which has no seed: its replay file is the
    way back (`NO_RERUN` says so).  A lifecycle `scenario`'s campaign,
    which takes neither a horizon nor a database, is run again from its
    first seed up to N: what it learned on the way draws N as it did."""
    if seed is None or argv is None:
        return None
    chunk = lookup(strategy).chunk if strategy is not None else None
    start, runs = seed, 1
    if scenario:
        if first is None or seed < first:
            return None
        start, runs = first, seed - first + 1
    elif chunk is not None:
        if first is None or seed < first:
            return None
        start = first + (seed - first) // chunk * chunk
        runs = seed - start + 1
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
    learned = ["--pct-horizon", str(horizon)] if isinstance(horizon, int) and not scenario \
        else []
    unkept = [] if scenario else ["--database", "none"]
    return shlex.join(["forge", "explore", *kept, "--start-seed", str(start), "--runs",
                       str(runs), *learned, *unkept])


#: What a failure with no one-line rerun prints in its place.
NO_RERUN = ("no line without a file reproduces this failure (its schedule is not drawn by "
            "a seed alone): the replay file above is the way back")


def show(data: dict, json_out: str | None, walks: bool, shrunk_problems,
          faults_asked: bool = False, strategy: str | None = None) -> None:
    """Print the report: JSON, or in words (the faults fired over all
    schedules when --faults asked for them, even if none fired; which of a
    mixed campaign's strategies drew the failure when it is not
    `strategy`, the campaign's own; the line with no file, or why none)."""
    emit_json(json_out, json.dumps(data, sort_keys=True))
    if on_stdout(json_out):
        return
    click.echo(f"{data['runs']} schedules, {data['distinct_schedules']} distinct, "
               f"outcomes: {progress.plain_counts(data['outcomes'])}")
    if faults_asked or data.get("faults"):
        click.echo(f"faults fired: {progress.plain_counts(data.get('faults', {}))}")
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
        rerun = data.get("rerun_command")
        click.echo(f"or, with no file: {rerun}" if rerun is not None else NO_RERUN)


def show_probes(data: dict) -> None:
    """The probes reached, with their counts, and those never reached."""
    reached = {name: count for name, count in data["probes"].items() if count}
    click.echo("probes reached: " + (", ".join(f"{n} {c}" for n, c in reached.items())
                                     or "none"))
    if data.get("probes_missed"):
        click.echo("never reached: " + ", ".join(data["probes_missed"]))
    if data.get("required_unreached"):
        click.echo("REQUIRED and never reached: " + ", ".join(data["required_unreached"]))


def saved_json(still, replay_out: str, rerun: str | None) -> dict:
    """The JSON report of a kept failure that fails again: every field of a
    campaign's report (`report_json`), of a campaign that ran no new
    schedule and whose one failure is the kept one (not shrunk again; no
    story, which its replay file tells), with `saved_failure`, its file, and
    `problems`, the run's."""
    return {
        "probes": {}, "probes_missed": [], "required_unreached": [],
        "runs": 0, "distinct_schedules": 0, "outcomes": {},
        "failures": [{"seed": still.seed, "problems": list(still.problems),
                      "choices": len(still.choices), "shrunk": list(still.choices),
                      "deviations": sum(1 for c in still.choices if c),
                      "proven_minimal": False, "strategy": dict(still.strategy)}],
        "complete": False, "pruned": 0, "bounded": 0, "unfinished": 0, "redundant": 0,
        "pct_horizon": still.strategy.get("horizon"),
        "replay": replay_out, "replay_command": f"forge replay {shlex.quote(replay_out)}",
        "rerun_command": rerun, "story": None, "divergence": None, "faults_fired": None,
        "faults": {}, "accept": None, "differences": differences_of(still.problems),
        "found_by": found_by(still.strategy),
        "saved_failure": str(still.path), "problems": list(still.problems),
    }


def show_saved(still, replay_out: str, json_out: str | None, rerun: str | None = None) -> None:
    """A failure the database kept (`forge.failuredb`) that fails again: it
    is the campaign's failure, found before any new schedule ran (`rerun`:
    the line with no file that draws the seed it was first found at)."""
    command = f"forge replay {shlex.quote(replay_out)}"
    emit_json(json_out, json.dumps(saved_json(still, replay_out, rerun), sort_keys=True))
    if on_stdout(json_out):
        return
    click.echo(f"FAILED again: a failure saved in {still.path.parent} by an earlier campaign "
               "of this prompt and settings still fails (it is replayed before new schedules; "
               "it is dropped once it passes):")
    for p in still.problems:
        click.echo("  " + p.replace("\n", "\n  "))
    click.echo(f"reproduce with: {command}")
    click.echo(f"or, with no file: {rerun}" if rerun is not None else NO_RERUN)
