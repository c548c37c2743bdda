"""The `forge` command.

Subcommands: `run` (a prompt on the reference engine), `explore` (many
schedules of one prompt, checking invariants), `replay` (one recorded
schedule), `spec` (the clause catalogue), `conformance` (the suite against an
implementation), `impl-serve` (the reference engine behind the subprocess
protocol), `mutants` (the suite against deliberately wrong engines) and
`trace` (one run's trace drawn as a timeline page).

Exit codes: 0 success; 1 the run (or suite) failed; 2 bad input - an
unreadable or invalid prompt, case, script, replay file or flag - reported
in one line that names the file (or flag), the place and the rule; 3 an
exhaustive exploration stopped at its budget before covering the tree; 70 (as
sysexits' EX_SOFTWARE) a bug in the kit, reported in one line that asks for a
report.  No subcommand
ever shows a Python traceback (limits: docs/limits.md).

`explore` and `replay` live in `forge.commands`; building a harness and a
chooser in `forge.assembly`.
"""

from __future__ import annotations

import os
import sys

import click

from forge.assembly import build_harness, make_chooser
from forge.commands.explore import explore
from forge.commands.jsonflag import JsonCommand, emit_json, json_option, on_stdout
from forge.commands.params import BoundedInt, InputPath, OutputPath, harness_kwargs, harness_options, write_output
from forge.commands.replay import replay
from forge.commands.trace import trace
from forge.engine.run import observation_json
from forge.errors import InputError
from forge.run.options import RULES
from forge.run.record import record
from forge.runspec import Expectation, Runner, in_mode, run_chooser, spec_from_flags
from forge.sim.replayfile import write_record
from forge.sim.strategies import SPELLINGS

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_KIT_BUG = 0, 1, 2, 3, 70
#: Ctrl-C, as a shell reports a process SIGINT ended (128 + 2), not "a schedule failed".
EXIT_INTERRUPTED = 130
#: Set to show the Python traceback of a kit bug instead of the one-line report.
DEBUG_ENV = "FORGE_DEBUG"


class ForgeGroup(click.Group):
    """The one place bad input becomes one line and exit code 2.

    Every subcommand's `InputError` and every click usage error are printed
    as one line on stderr: `forge: FILE-OR-FLAG: place: rule`.  Bad input is
    raised as an `InputError` where it is found; anything else escaping a
    command - a `ValueError` included, which inside the kit means a broken
    invariant (a chooser offered no options, a negative delay), not bad
    input - is a bug in the kit: one line asking for a report, exit code 70
    (the traceback with FORGE_DEBUG=1).
    """

    command_class = JsonCommand

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = EXIT_OK if code is None or not isinstance(code, int) else code
        except InputError as e:
            code = _refuse(e.render(), EXIT_BAD_INPUT)
        except click.MissingParameter as e:
            what = "argument" if isinstance(e.param, click.Argument) else "option"
            name = (getattr(e.param, "metavar", None) or _flag_name(e.param)
                    if e.param is not None else e.param_hint or "parameter")
            ctx = getattr(e, "ctx", None)
            see = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
            code = _refuse(f"missing {what} {name}{see}", e.exit_code)
        except click.BadParameter as e:
            # A flag's own rule: `--flag must be ..., got ...`.
            if e.param is None:
                code = _refuse(e.format_message(), e.exit_code)
            else:
                code = _refuse(f"{_flag_name(e.param)} {e.message}", e.exit_code)
        except click.ClickException as e:
            # Other usage errors (exit 2) and click's file errors: one line, no usage block.
            ctx = getattr(e, "ctx", None)
            see = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
            code = _refuse(e.format_message() + see, e.exit_code)
        except click.Abort:
            code = _refuse("interrupted", EXIT_INTERRUPTED)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001 - the last guard: a kit bug, reported in one line
            if os.environ.get(DEBUG_ENV):
                raise
            code = _refuse(f"a bug in the kit ({type(e).__name__}: {_one_line(str(e))}); please "
                           f"report it with the command line, or rerun with {DEBUG_ENV}=1 for "
                           "the traceback", EXIT_KIT_BUG)
        if standalone_mode:
            sys.exit(code)
        return code


def _flag_name(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return (param.name or "argument").upper()
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs or param.opts or [param.name or "flag"])[0]


def _one_line(text: str, limit: int = 2000) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refuse(message: str, code: int) -> int:
    try:
        click.echo(f"forge: {_one_line(message)}", err=True)
    except OSError:
        pass  # stderr is gone; the exit code still says it
    return code


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

    Exit codes (the same on every command; docs/limits.md): 0 passed, 1
    failed, 2 bad input, 3 an exhaustive search stopped at its budget, 70 a
    bug in the kit, 130 interrupted (Ctrl-C).  Every --json [FILE] prints
    JSON alone (or with -) and writes it to FILE when given one.
    """


@main.command()
@click.argument("prompt", type=InputPath(dir_okay=False))
@click.option("--seed", type=BoundedInt.of(RULES["seed"]), default=None,
              help="Explore a random schedule drawn from this seed (default: the canonical schedule).")
@click.option("--strategy", default=None, metavar="SPEC",
              help=f"Scheduling strategy: {', '.join(SPELLINGS[:-1])} or {SPELLINGS[-1]}.")
@harness_options()
@click.option("--trace", "trace_file", type=OutputPath(), default=None,
              help="Write the trace (JSON lines, one per scheduling step and harness exchange).")
@click.option("--replay-out", type=OutputPath(), default=None,
              help="Write a replay file of this run, for `forge replay FILE`.")
@json_option("The observation")
def run(prompt, seed, strategy, trace_file, replay_out, json_out, **harness):
    """Run PROMPT on the reference engine, on a virtual clock.

    The same prompt, arguments, scripts and seed give the same result and
    the same trace bytes on every machine.

    \b
    Exit codes: 0 the run succeeded, 1 it failed or was cancelled,
    2 bad input (the prompt, a script or a flag).
    """
    spec = spec_from_flags(prompt, **harness_kwargs(harness))
    spec = in_mode(spec, strategy)
    chooser = run_chooser(seed, strategy)
    result = Runner(spec).run(chooser)
    obs = result.observation()
    if trace_file:
        write_output(trace_file, result.trace.lines())
    if replay_out:
        write_output(replay_out, write_record(record(
            spec, Expectation(), chooser.seed, chooser.choices, obs,
            strategy=chooser.provider.describe())))
    emit_json(json_out, observation_json(obs))
    if on_stdout(json_out):
        pass
    elif obs["outcome"] == "ok":
        click.echo(obs["result"])
    else:
        error = obs["error"] or {}
        for line in obs["logs"]:
            click.echo(f"log: {line}", err=True)
        click.echo(f"{obs['outcome']}: {error.get('kind')}: {error.get('message')}", err=True)
        if spec.model is None and "is not a bound model role" in str(error.get("message")):
            click.echo("hint: this run has no model; give it one with --model-script FILE "
                       "(see examples/*.model.json)", err=True)
    sys.exit(EXIT_OK if obs["outcome"] == "ok" else EXIT_FAILED)


def _register_commands() -> None:
    """Subcommands in the CLI layer, and those that live beside their subsystems
    (each such module has `register(main)`; a subsystem not installed is skipped)."""
    import importlib

    main.add_command(explore)
    main.add_command(replay)
    main.add_command(trace)
    for module in ("forge.conformance.cli", "forge.conformance.mutants_cli", "forge.spec.cli",
                   "forge.lifecycle.command"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                continue
            raise
        mod.register(main)


_register_commands()

__all__ = ["main", "build_harness", "make_chooser"]

if __name__ == "__main__":
    main()
