"""`forge replay`: run a prompt again under a schedule recorded in a replay file.

What does not live here: the replay file format and its checks
(`sim.chooser.read_replay`), and building a run (`forge.assembly`).
"""

from __future__ import annotations

import sys

import click

from forge.commands.params import TEXT


@click.command()
@click.argument("prompt", type=click.Path(dir_okay=False))
@click.argument("replay_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--args", "args_text", default=None, type=TEXT,
              help="Override the arguments in the replay file.")
@click.option("--json", "as_json", is_flag=True)
def replay(prompt, replay_file, args_text, as_json):
    """Run PROMPT (or a lifecycle scenario) again under the schedule recorded in REPLAY_FILE."""
    from forge.lifecycle.scenario import is_scenario
    if is_scenario(prompt):  # a lifecycle race (docs/lifecycle.md), not a prompt
        from forge.lifecycle.command import replay_file as replay_scenario
        sys.exit(replay_scenario(prompt, replay_file, as_json))
    from forge.assembly import build_harness, load_prompt, read_replay
    from forge.engine.run import RunConfig, observation_json, run_prompt
    from sim.chooser import Chooser, ReplayProvider

    recorded = read_replay(replay_file)
    args = args_text if args_text is not None else recorded["args"]
    provider = ReplayProvider(recorded["choices"])
    run = run_prompt(load_prompt(prompt), build_harness(), Chooser(provider), RunConfig(args=args))
    obs = run.observation()
    if provider.misaligned_at is not None:
        click.echo(f"warning: the replay drifted at choice {provider.misaligned_at} "
                   "(the prompt changed since it was recorded?)", err=True)
    if as_json:
        click.echo(observation_json(obs))
    else:
        click.echo(f"{obs['outcome']}: {obs['result'] if obs['outcome'] == 'ok' else obs['error']}")
    sys.exit(0 if obs["outcome"] == "ok" else 1)
