"""`forge replay`: run again the schedule a replay file records, and re-check it.

`forge replay FILE` needs nothing else: the file holds the prompt's path and
sha256, the harness, the scripts, the faults, the seed, the expectation and
every choice.  `forge replay PROMPT FILE` uses PROMPT instead of the
recorded path (its sha256 must match).  Harness flags given override the
recording (a what-if run; the choices may then drift).  `--trace FILE`
writes the run's trace, as `forge run --trace` does, for `forge trace`.
`forge replay FILE` on a lifecycle replay file replays its race; with
SCENARIO, SCENARIO must hold the recorded text (`forge.lifecycle.command`).

A record of an engine under test (`forge explore --impl`) holds that
engine's observation, the part the spec fixes: the reference's run of the
same choices is compared with it by the spec's equivalence
(`forge.conformance.equivalence`), and a difference is printed as a diff
and fails the replay; if the reference asks other decisions, that is said
in one line (a difference too) and the comparison goes on.

Exit codes: 1 the recorded failure reproduces (it is printed), or the
reference differs from the recorded engine; 0 the run passes what the file
expects; 2 the file is unusable, names another prompt, or the run drifted
from the record (at the index printed).

What does not live here: replaying and checking (`forge.repro`),
the file's syntax (`forge.sim.replayfile`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from forge.commands.jsonflag import JsonCommand, emit_json, json_option, on_stdout
from forge.commands.params import (InputPath, OutputPath, flags_given, harness_kwargs,
                                   harness_options, write_output)
from forge.deferred import deferred
from forge.engine.run import observation_json
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import repro
    from forge.lifecycle import command as lifecycle_command, replayfile, scenario
else:
    repro = deferred("forge.repro")
    lifecycle_command = deferred("forge.lifecycle.command")
    replayfile = deferred("forge.lifecycle.replayfile")
    scenario = deferred("forge.lifecycle.scenario")


@click.command(cls=JsonCommand)
@click.argument("files", nargs=-1, required=True, metavar="[PROMPT] REPLAY_FILE",
                type=InputPath(dir_okay=False))
@harness_options(recorded=True)
@json_option("The run's observation")
@click.option("--story", is_flag=True, help="Print the run as a story in virtual time.")
@click.option("--trace", "trace_file", type=OutputPath(), default=None,
              help="Write the run's trace (JSON lines, as forge run --trace; draw it with "
                   "forge trace).")
def replay(files, json_out, story, trace_file, **harness):
    """Run the schedule recorded in REPLAY_FILE again and re-check what it expects.

    The file holds the whole run (prompt text and hash, harness, scripts,
    faults, seed, expectation, every choice); PROMPT, if given, must hash
    to the recorded sha256.  A harness flag given overrides the recording
    (a what-if run: its choices may drift).

    \b
    Exit codes: 1 the recorded failure reproduces (or, for a record of an
    engine under test, the reference differs from its observation by the
    spec's equivalence), 0 the run passes what the file expects, 2 an
    unusable file, another prompt, or drift from the record (named by its
    index).
    """
    if len(files) > 2:
        raise click.UsageError("give REPLAY_FILE, or PROMPT and REPLAY_FILE")
    prompt, path = (None, files[0]) if len(files) == 1 else files
    if ((prompt is not None and scenario.is_scenario(prompt))
            or replayfile.is_lifecycle_replay(path)):
        # A lifecycle race (docs/lifecycle.md); it refuses the prompt's flags.
        sys.exit(lifecycle_command.replay_file(prompt, path, json_out,
                                               given=flags_given(click.get_current_context())))

    overrides = harness_kwargs(harness)
    outcome = repro.replay_file(path, prompt=prompt, overrides=overrides)
    if trace_file is not None:      # the run as it went, drifted or not
        write_output(trace_file, outcome.trace)
    if outcome.other_kit is not None:
        click.echo(f"note: {path} was written by {outcome.other_kit}", err=True)
    # A record of an engine under test: the reference asking other decisions
    # than that engine did is a difference (`outcome.differences` says it),
    # and the observations are still compared past there.
    foreign = outcome.differences is not None
    if outcome.drift is not None and not overrides and not foreign:
        raise InputError(f"the run drifted from the record at {outcome.drift.describe()} "
                         "(a different kit or engine?)", file=path, kind="replay")
    if outcome.drift is not None and overrides:
        click.echo(f"note: with the flags given the run left the record at "
                   f"{outcome.drift.describe()}", err=True)
    if outcome.identical is False and outcome.drift is None and outcome.other_kit is not None:
        # The observation's format is the kit's to change between versions
        # (fields added, records kept): not a bug, a record from elsewhere.
        raise InputError(f"the run took the recorded choices but its observation differs from "
                         f"the one kit {outcome.other_kit} recorded (sha256 "
                         f"{outcome.recorded_sha256[:12]}...): observations change between kit "
                         f"versions; replay it with kit {outcome.other_kit}", file=path,
                         kind="replay")
    if outcome.identical is False and outcome.drift is None:
        raise InputError(f"the run took the recorded choices but its observation differs "
                         f"(sha256 {outcome.observation_sha256[:12]}..., recorded "
                         f"{outcome.recorded_sha256[:12]}...): please report this", file=path,
                         kind="replay")
    obs = outcome.observation
    emit_json(json_out, observation_json(obs))
    as_json = on_stdout(json_out)    # then the words go to standard error
    if not as_json:
        click.echo(f"{obs['outcome']}: {obs['result'] if obs['outcome'] == 'ok' else obs['error']}")
    if story:
        for line in outcome.story:
            click.echo("  " + line, err=as_json)
    for problem in outcome.problems:
        click.echo(f"FAILED: {problem}", err=as_json)
    if outcome.identical:
        what = "the recorded failure" if outcome.problems else "the recorded run"
        click.echo(f"{what}, reproduced byte for byte (observation sha256 "
                   f"{outcome.observation_sha256[:16]}...)", err=True)
    elif foreign and outcome.differences:
        for line in outcome.differences:
            click.echo(line, err=as_json)
    elif foreign:
        click.echo("the reference's run is the recorded engine's behaviour by the spec's "
                   "equivalence (docs/observation.md)", err=True)
    elif outcome.identical is None and not overrides:
        click.echo("note: the file holds no observation of this engine to compare with (a "
                   "legacy file, or a run of an engine under test written before records "
                   "held one)", err=True)
    sys.exit(1 if outcome.problems or outcome.differences else 0)
