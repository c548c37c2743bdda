"""`forge mutants`: the suite and the schedule invariants against each mutant.

`--list` prints the catalogue (the ids `FORGE_MUTANT` takes) without running
anything.  `-k` selects mutants by id as `forge conformance -k` selects
cases (`runner.matches`: regular expressions, searched; an empty selection
is bad input), and the cases are loaded as `forge conformance` loads them
(`cli.load_suite`: checked against the clause catalogue).

Progress goes to stderr (`forge.progress`): a bar on a terminal, a plain
line every few seconds in a log.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from forge.commands.jsonflag import JsonCommand, json_option
from forge.commands.params import BoundedInt, InputPath, Regex
from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import progress
    from forge.conformance import cli as conformance_cli, mutants as mutant_catalogue, runner
else:
    progress = deferred("forge.progress")
    conformance_cli = deferred("forge.conformance.cli")
    mutant_catalogue = deferred("forge.conformance.mutants")
    runner = deferred("forge.conformance.runner")

#: The most random schedules per prompt or case the flags take (each is a run per mutant).
MAX_SEEDS = 10_000
#: The most worker processes `--workers` starts.
MAX_WORKERS = 64
#: The flags `--list` takes; it refuses the others (they choose how mutants run).
LIST_FLAGS = ("--list", "-k", "--json")


def register(main: click.Group) -> None:
    main.add_command(mutants)


@click.command(cls=JsonCommand)
@click.option("--cases", "cases_dir", type=InputPath(exists=True), default=None,
              help="A case directory or one case file (default: the installed suite).")
@click.option("-k", "patterns", metavar="PATTERN", multiple=True, type=Regex(),
              help="Only mutants whose id matches PATTERN (a regular expression, searched, "
                   "as in forge conformance -k). Repeat for any of several.")
@click.option("--seeds", type=BoundedInt(0, MAX_SEEDS), default=10, show_default=True,
              help="Random schedules per example prompt in the invariant check.")
@click.option("--case-seeds", type=BoundedInt(0, MAX_SEEDS), default=3, show_default=True,
              help="Random schedules per any-schedule case (the suite itself uses 20).")
@json_option("The kill matrix (with --list: the catalogue)")
@click.option("--workers", type=BoundedInt(1, MAX_WORKERS), default=1, show_default=True,
              help="Worker processes; each mutant runs in one (the matrix is the same).")
@click.option("--list", "list_only", is_flag=True,
              help="List the mutants (id, category, what it gets wrong) and exit: the ids "
                   "FORGE_MUTANT=ID forge impl-serve takes.")
def mutants(cases_dir, patterns, seeds, case_seeds, json_out, workers, list_only):
    """Run the conformance suite and the invariants against every mutant.

    A mutant is a deliberately wrong variant of the reference engine (see
    conformance/mutants.py; --list lists them).  It is killed when a
    case fails or errors, or a schedule breaks an invariant.  Prints the
    kill matrix and the mutation score, and beside it which mutants the
    oracles alone kill (the invariants, watchers and liveness monitors,
    explored over the example prompts with no case and no user check);
    exit code 1 when a mutant that is not marked equivalent survives the
    suite, 2 for bad input (a -k that selects no mutant included).

    \b
    forge mutants --list                    the ids, categories and sites
    forge mutants -k '^tie-' --workers 2    the mutants whose id starts tie-
    """
    selected = [m for m in mutant_catalogue.CATALOGUE if runner.matches(patterns, m.id)]
    if not selected:
        raise InputError("no mutant matches the selection (-k); `forge mutants --list` "
                         "lists them")
    if list_only:
        conformance_cli.refuse_flags(click.get_current_context(), LIST_FLAGS.__contains__,
                                     f"--list runs nothing (it takes {', '.join(LIST_FLAGS[1:])})")
        rows = [{"id": m.id, "category": m.category, "description": m.description,
                 "site": m.site, "equivalent": m.equivalent} for m in selected]
        if json_out:
            conformance_cli.write_flagged("--json", json_out,
                                          json.dumps({"mutants": rows}, indent=1, sort_keys=True))
        if json_out != "-":
            for row in rows:
                same = " (equivalent)" if row["equivalent"] else ""
                click.echo(f"{row['id']:36} {row['category']:12} {row['description']}{same}")
        return
    cases = mutant_catalogue.with_fewer_schedules(conformance_cli.load_suite(cases_dir)[0],
                                                  case_seeds)
    show = progress.reporter(len(selected), "mutants")
    try:
        matrix = mutant_catalogue.kill_matrix(selected, cases, seeds, workers=workers,
                                              progress=lambda n, m: show(n, m.id))
    except KeyboardInterrupt:   # what ran, then exit 130 (forge.cli)
        progress.interrupted(show, "no mutation score: the kill matrix is incomplete")
        raise
    rows = []
    for m, found in zip(selected, matrix):
        oracles = mutant_catalogue.ORACLES
        killers = [k for k in found if not k.startswith(oracles)]
        alone = [k[len(oracles):] for k in found if k.startswith(oracles)]
        rows.append({"id": m.id, "category": m.category, "description": m.description,
                     "site": m.site, "killed": bool(killers), "killers": killers[:5],
                     "oracles_killed": bool(alone), "oracles_killers": alone[:5],
                     "equivalent": m.equivalent})
    for row in rows:
        mark = "killed " if row["killed"] else ("equiv. " if row["equivalent"] else "SURVIVED")
        alone = "oracles" if row["oracles_killed"] else "-      "
        by = ", ".join(row["killers"][:3]) if row["killed"] else (row["equivalent"] or row["description"])
        click.echo(f"{mark} {alone} {row['category']:12} {row['id']:36} {by}",
                   err=json_out == "-")
    scored = [r for r in rows if not r["equivalent"]]
    killed = sum(1 for r in scored if r["killed"])
    by_oracles = sum(1 for r in scored if r["oracles_killed"])
    score = killed / len(scored) if scored else 1.0
    click.echo(f"mutation score: {killed}/{len(scored)} = {score:.1%}", err=json_out == "-")
    click.echo(f"oracles alone (invariants, watchers, liveness monitors over the example "
               f"prompts; no case, no user check): {by_oracles}/{len(scored)} = "
               f"{by_oracles / len(scored) if scored else 1.0:.1%}", err=json_out == "-")
    if json_out:
        conformance_cli.write_flagged("--json", json_out, json.dumps(
            {"mutants": rows, "killed": killed, "oracles_killed": by_oracles,
             "total": len(scored), "score": score}, indent=1, sort_keys=True))
    sys.exit(0 if killed == len(scored) else 1)
