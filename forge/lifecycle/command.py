"""``forge explore`` and ``forge replay`` on a lifecycle scenario file.

The two commands hand a path ending in ``.scenario.toml`` or
``.scenario.json`` here (``scenario.is_scenario``), and ``forge replay`` a
lifecycle replay file (``replayfile.is_lifecycle_replay``); this module runs
it (``campaign``) and prints the outcome in the commands' manner: a summary, the
shrunk failing schedule step by step, a replay file, and the exit codes 0 (every
schedule passed, or the replayed one), 1 (one failed), 2 (bad input, raised as
``InputError``: a bad file, a prompt's flag, a replay of another scenario, or a
replay that drifted from its record), 3 (an exhaustive search stopped before
covering the tree).

It also holds ``forge lifecycle check HISTORY.jsonl`` (``register`` adds the
``lifecycle`` group to ``forge``): a store history judged by
``linearizability.check``; exit 0 linearizable, 1 not (the minimal
sub-history printed, and drawn with ``--html``), 2 a bad history file.

Lives here: printing and exit codes, and which of the commands' flags a
scenario takes (``EXPLORE_FLAGS``, ``REPLAY_FLAGS``; ``forge.commands.params.flags_given`` reads
them off a command's context). Does not live here: the flags themselves (the
commands own them), running schedules (``campaign``), the replay file
(``replayfile``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import click

from forge.commands.jsonflag import JsonGroup, emit_json, json_option, on_stdout
from forge.commands.params import OutputPath, write_output
from forge.deferred import deferred
from forge.errors import InputError
from forge.lifecycle import campaign, history as hist, replayfile
from forge.lifecycle.probes import check_required
from forge.lifecycle.scenario import load
from forge.run.record import kit_version
from forge.sim.strategies import lookup

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.commands import explore_report
    from forge.lifecycle import contract, history_html, linearizability
else:
    explore_report = deferred("forge.commands.explore_report")
    contract = deferred("forge.lifecycle.contract")
    history_html = deferred("forge.lifecycle.history_html")
    linearizability = deferred("forge.lifecycle.linearizability")

#: The flags of ``forge explore`` a scenario takes; every other one is a prompt's.
EXPLORE_FLAGS = ("--runs", "--start-seed", "--strategy", "--pct-depth", "--max-deviations",
                 "--no-reduce", "--replay-out", "--json", "--require")
#: The flags of ``forge replay`` a lifecycle replay takes (it always prints its
#: schedule step by step: that is its story).
REPLAY_FLAGS = ("--json", "--story")


def check_flags(path: str, given: Iterable[str], takes: tuple[str, ...], what: str) -> None:
    """Refuse a flag given that ``what`` does not take, naming the file."""
    for flag in given:
        if flag not in takes:
            raise InputError(f"{flag} is a prompt's flag; {what} takes only "
                             + ", ".join(takes), file=path)


def explore_file(path: str, runs: int, start_seed: int, strategy: str, pct_depth: int,
                 max_deviations: int | None, no_reduce: bool, replay_out: str,
                 json_out: str | None, given: Iterable[str] = (),
                 required: Sequence[str] = (), rerun_args: Sequence[str] | None = None) -> int:
    """Explore the scenario at ``path``; answers the exit code. ``given``: the
    flags given (``forge.commands.params.flags_given``), each of which must be in
    ``EXPLORE_FLAGS``; ``required``: the probes (``forge.lifecycle.probes``) a
    schedule must reach, or the exploration fails; ``rerun_args``: the
    arguments as given, for a failure's line with no file."""
    check_flags(path, given, EXPLORE_FLAGS, "a lifecycle scenario")
    check_required(required)
    scenario = load(path)
    for note in scenario.notes:
        click.echo(f"note: {note}", err=True)
    out = campaign.run(scenario, strategy, runs, start_seed, pct_depth, not no_reduce,
                       max_deviations)
    f = out.failure
    rerun = None
    if f is not None:
        write_output(replay_out, campaign.replay_body(path, out))
        rerun = explore_report.rerun_line(rerun_args, f.seed, f.provider, strategy,
                                          first=start_seed, scenario=True)
    reached = {"probes": out.probes,
               "probes_missed": [name for name, n in out.probes.items() if not n],
               "required_unreached": [name for name in required if not out.probes.get(name)]}
    emit_json(json_out, json.dumps({**reached,
            "scenario": out.scenario, "strategy": out.strategy, "reduced": out.reduced,
            "partial_order_reduction": out.por,
            "runs": out.runs, "distinct_schedules": out.distinct, "complete": out.complete,
            "bounded": out.bounded, "unfinished": out.unfinished, "pct_horizon": out.horizon,
            "failures": [] if f is None else [{
                "seed": f.seed, "problems": list(f.problems), "choices": len(f.found),
                "shrunk": list(f.shrunk), "deviations": f.deviations,
                "proven_minimal": f.proven, "strategy": f.provider,
                "steps": [list(s) for s in f.steps],
                "hot": [{"step": step, "problem": p} for step, p in f.hot]}],
            "replay": replay_out if f else None, "rerun_command": rerun}, sort_keys=True))
    if not on_stdout(json_out):
        steps = "host calls and store operations" if not out.reduced else "store operations"
        por = ", one per class of equivalent schedules" if out.por else ""
        click.echo(f"{out.scenario}: {out.runs} schedules ({steps} as steps{por}), "
                   f"{out.distinct} distinct")
        walks = lookup(strategy).walks
        if walks and f is None and out.por:
            click.echo("covered every class of equivalent schedules" if out.complete else
                       "STOPPED at --runs before covering every class of equivalent schedules")
        elif walks and f is None:
            click.echo(f"{'covered the whole tree' if out.complete else 'STOPPED at --runs'}: "
                       f"{out.bounded} beyond the deviation bound, {out.unfinished} unfinished")
        explore_report.show_probes(reached)
        if f is not None:
            at = f" at seed {f.seed}" if f.seed is not None else ""
            click.echo(f"FAILED{at}: " + "; ".join(f.problems))
            minimal = "a proven local minimum" if f.proven else "not proven minimal"
            click.echo(f"shrunk from {len(f.found)} to {len(f.shrunk)} choices, "
                       f"{f.deviations} deviations from canonical ({minimal}); the schedule:")
            for line in campaign.story(f.steps, f.hot):
                click.echo(line)
            click.echo(f"reproduce with: forge replay {path} {replay_out}")
            click.echo(f"or, with no file: {rerun}" if rerun is not None
                       else explore_report.NO_RERUN)
    if f is not None or reached["required_unreached"]:
        return 1
    return 3 if not out.complete else 0


def replay_file(path: str | None, replay: str, json_out: str | None,
                given: Iterable[str] = ()) -> int:
    """Run the schedule recorded in ``replay`` again, on the scenario the file
    holds, or on the scenario at ``path`` (which must be that one); answers the
    exit code. ``given``: the flags given, each of which must be in ``REPLAY_FLAGS``.

    Raises:
        InputError: a bad replay or scenario file, a prompt's flag, a scenario
            other than the recorded one, or a run that drifted from the record.
    """
    check_flags(replay, given, REPLAY_FLAGS, "a lifecycle replay")
    recorded = replayfile.read(replay)
    scenario = replayfile.scenario_of(recorded, replay, path)
    for note in scenario.notes:
        click.echo(f"note: {note}", err=True)
    if recorded.kit is not None and recorded.kit != kit_version():
        click.echo(f"note: {replay} was written by {recorded.kit}", err=True)
    got = campaign.replay(scenario, recorded)
    if got.drift is not None:
        raise InputError(f"the run drifted from the record at {got.drift.describe()} "
                         "(a different kit or engine?)", file=replay, kind="replay")
    if recorded.text is None:
        click.echo(f"note: {replay} is an older kit's replay file: it holds no scenario "
                   f"to check {path} against, only the choices", err=True)
    emit_json(json_out, json.dumps({"problems": list(got.problems),
                                    "steps": [list(s) for s in got.steps],
                                    "rows": [list(r) for r in got.rows],
                                    "hot": [{"step": step, "problem": p}
                                            for step, p in got.hot]}, sort_keys=True))
    if not on_stdout(json_out):
        for line in campaign.story(got.steps, got.hot):
            click.echo(line)
        click.echo("FAILED: " + "; ".join(got.problems) if got.problems else "ok")
    return 1 if got.problems else 0


@click.group("lifecycle", cls=JsonGroup)
def lifecycle() -> None:
    """Tools for the task lifecycle manager's stores (docs/lifecycle-store.md)."""


@lifecycle.command("check")
@click.argument("history", metavar="HISTORY.jsonl")
@click.option("--html", "html_out", default=None, metavar="FILE",
              help="Write the minimal non-linearizable sub-history as an HTML page.")
@json_option("The verdict")
def check_command(history: str, html_out: str | None, json_out: str | None) -> None:
    """Decide whether a store's concurrent HISTORY (JSON lines, one store
    operation each) is linearizable against the memory store's semantics.

    \b
    Examples:
      forge lifecycle check history.jsonl
      forge lifecycle check history.jsonl --html why.html

    \b
    Exit codes: 0 passed (the history is linearizable), 1 failed (it is not),
    2 bad input (the history or a flag).
    """
    import sys

    if html_out is not None:
        html_out = OutputPath().convert(html_out, None, None)
    verdict = linearizability.check(hist.read(history))
    emit_json(json_out, json.dumps({"linearizable": verdict.ok, "operations": verdict.operations,
                                    "parts": verdict.parts,
                                    "minimal": [json.loads(op.to_json()) for op in verdict.minimal]},
                                   sort_keys=True))
    if not on_stdout(json_out):
        click.echo(verdict.text())
    if html_out is not None:
        title = ("linearizable" if verdict.ok else
                 f"not linearizable: {len(verdict.minimal)} operations with no legal order")
        write_output(html_out, history_html.render(verdict.minimal, title))
    sys.exit(0 if verdict.ok else 1)


@lifecycle.command("contract")
@click.argument("factory", metavar="MODULE:FACTORY")
@click.option("-k", "names", multiple=True, metavar="CHECK",
              help="Run only this check (repeatable); default every one.")
def contract_command(factory: str, names: tuple[str, ...]) -> None:
    """Run the store contract (with its recorded-history checks) against the
    store FACTORY makes: a zero-argument callable importable as MODULE:NAME
    (the current folder is on the import path) answering a fresh, empty store.

    \b
    Examples:
      forge lifecycle contract forge.lifecycle.store:MemoryStore
      forge lifecycle contract mystore:make_store -k connections_history_is_linearizable

    \b
    Exit codes: 0 every check passed, 1 a check failed, 2 bad input (a
    FACTORY that does not import, an unknown check).
    """
    import importlib
    import os
    import sys

    module, _, name = factory.partition(":")
    if not module or not name:
        raise InputError(f"{factory!r} is not MODULE:FACTORY")
    unknown = [n for n in names if n not in contract.CHECKS]
    if unknown:
        raise InputError(f"-k {unknown[0]}: no such check; one of "
                         + ", ".join(sorted(contract.CHECKS)), kind="argument")
    sys.path.insert(0, os.getcwd())
    try:
        make = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise InputError(f"cannot import {module}: {exc}") from None
    except AttributeError:
        raise InputError(f"{module} has no {name}") from None
    chosen = list(names) or list(contract.CHECKS)
    failures = []
    for done, check in enumerate(chosen):
        try:
            failures.extend(contract.run_contract(make, [check]))
        except KeyboardInterrupt:   # what ran, then exit 130 (forge.cli)
            for line in failures:
                click.echo(f"FAIL {line}")
            click.echo(f"interrupted after {done} of {len(chosen)} checks; "
                       f"{len(failures)} failures among them", err=True)
            raise
        except Exception as exc:  # noqa: BLE001 - the user's store failing is a finding
            failures.append(f"{check}: raised {type(exc).__name__}: {exc}")
    for line in failures:
        click.echo(f"FAIL {line}")
    click.echo(f"{len(chosen) - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


def register(main: click.Group) -> None:
    main.add_command(lifecycle)
