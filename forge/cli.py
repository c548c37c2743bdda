"""The `forge` command.

Subcommands: `run` (a prompt on the reference engine), `explore` (many
schedules of one prompt, checking invariants), `replay` (one recorded
schedule), `spec` (the clause catalogue), `conformance` (the suite against an
implementation), `impl-serve` (the reference engine behind the subprocess
protocol) and `mutants` (the suite against deliberately wrong engines).

Exit codes: 0 success; 1 the run (or suite) failed; 2 bad input - an
unreadable or invalid prompt, case, script or flag - reported in one line
that names the file, the place and the rule.  No subcommand ever shows a
Python traceback for bad input.
"""

from __future__ import annotations

import json
import sys

import click

from forge.errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class ForgeGroup(click.Group):
    """Turns bad input anywhere into one line and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as e:
            click.echo(f"forge: {e.render()}", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except click.UsageError:
            raise
        except ValueError as e:
            click.echo(f"forge: {e}", err=True)
            ctx.exit(EXIT_BAD_INPUT)

    def main(self, *args, **kwargs):
        # click's own usage errors exit 2, matching our bad-input code.
        return super().main(*args, **kwargs)


@click.group(cls=ForgeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="forge-kit", prog_name="forge")
def main() -> None:
    """The forge kit: a deterministic reference engine and conformance suite
    for the task semantics of promptforge prompts.

    \b
    Run a prompt on a virtual clock:      forge run examples/two-tasks.md
    Try 200 random schedules of it:       forge explore examples/two-tasks.md --runs 200
    Run the conformance suite:            forge conformance
    Test another engine over a pipe:      forge conformance --impl 'node my-engine.js'
    """


def _load_prompt(path: str):
    from forge.prompt import load_prompt

    return load_prompt(path)


def build_harness(store_dir=None, concurrency=8, model_script=None, operator_script=None,
                  store_files=None, cancel_at=None):
    from forge.store import MemoryStore
    from forge.harness import Harness

    if store_dir is not None:
        try:
            store = MemoryStore.from_folder(store_dir)
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot seed the store from this folder: {e}", file=store_dir) from None
    else:
        store = MemoryStore(store_files or {})
    harness = Harness(store=store, ceiling=concurrency, cancel_at=cancel_at)
    if model_script is not None:
        from forge.scripts import load_model_script

        harness.model = load_model_script(model_script)
    if operator_script is not None:
        from forge.scripts import load_operator_script

        harness.operator = load_operator_script(operator_script)
    return harness


def make_chooser(seed: int | None, strategy: str | None):
    from sim.chooser import Canonical, Chooser, RandomProvider
    from sim.strategies import make_provider

    if strategy:
        return Chooser(make_provider(strategy))
    if seed is not None:
        return Chooser(RandomProvider(seed))
    return Chooser(Canonical())


@main.command()
@click.argument("prompt", type=click.Path(dir_okay=False))
@click.option("--args", "args_text", default="", help="The run's argument string (read as `args`).")
@click.option("--seed", type=int, default=None,
              help="Explore a random schedule drawn from this seed (default: the canonical schedule).")
@click.option("--strategy", default=None, metavar="SPEC",
              help="Scheduling strategy: canonical, random:SEED, pct:SEED[:DEPTH] or replay:FILE.")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Seed the in-memory store from the files in this folder.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="The harness's ceiling on tasks running at once.")
@click.option("--model-script", type=click.Path(dir_okay=False), default=None,
              help="A JSON model script that answers model rounds.")
@click.option("--operator-script", type=click.Path(dir_okay=False), default=None,
              help="A JSON operator script that answers input.ask().")
@click.option("--cancel-at", type=float, default=None, metavar="SECONDS",
              help="Have the host cancel the run at this virtual instant.")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the trace (JSON lines, one per scheduling step and harness exchange).")
@click.option("--replay-out", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the run's choice sequence, for `--strategy replay:FILE`.")
@click.option("--max-instructions", type=click.IntRange(min=1000), default=None,
              help="Lua instruction budget for the whole run (ends runaway loops).")
@click.option("--json", "as_json", is_flag=True, help="Print the observation as one JSON object.")
def run(prompt, args_text, seed, strategy, store_dir, concurrency, model_script, operator_script,
        cancel_at, trace_file, replay_out, max_instructions, as_json):
    """Run PROMPT on the reference engine, on a virtual clock.

    The same prompt, arguments, scripts and seed give the same result and
    the same trace bytes on every machine.

    \b
    Exit codes: 0 the run succeeded, 1 it failed or was cancelled,
    2 bad input (the prompt, a script or a flag).
    """
    from forge.engine.run import RunConfig, observation_json, run_prompt
    from forge.lua.runtime import DEFAULT_MAX_INSTRUCTIONS
    from sim.chooser import dump_replay

    parsed = _load_prompt(prompt)
    harness = build_harness(store_dir, concurrency, model_script, operator_script,
                            cancel_at=cancel_at)
    chooser = make_chooser(seed, strategy)
    config = RunConfig(args=args_text, seed=seed or 0,
                       max_instructions=max_instructions or DEFAULT_MAX_INSTRUCTIONS)
    result = run_prompt(parsed, harness, chooser, config)
    obs = result.observation()
    if trace_file:
        with open(trace_file, "w", encoding="utf-8") as f:
            f.write(result.trace.lines())
    if replay_out:
        with open(replay_out, "w", encoding="utf-8") as f:
            f.write(dump_replay(chooser, prompt=prompt, args=args_text))
    if as_json:
        click.echo(observation_json(obs))
    elif obs["outcome"] == "ok":
        click.echo(obs["result"])
    else:
        error = obs["error"] or {}
        for line in obs["logs"]:
            click.echo(f"log: {line}", err=True)
        click.echo(f"{obs['outcome']}: {error.get('kind')}: {error.get('message')}", err=True)
        if model_script is None and "is not a bound model role" in str(error.get("message")):
            click.echo("hint: this run has no model; give it one with --model-script FILE "
                       "(see examples/*.model.json)", err=True)
    sys.exit(EXIT_OK if obs["outcome"] == "ok" else EXIT_FAILED)


def _register_optional_commands() -> None:
    """Subcommands that live beside their subsystems."""
    import importlib

    for module in ("sim.cli", "conformance.cli", "conformance.mutants_cli", "spec.cli"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                continue
            raise
        mod.register(main)


_register_optional_commands()

__all__ = ["main", "build_harness", "make_chooser", "json"]

if __name__ == "__main__":
    main()
