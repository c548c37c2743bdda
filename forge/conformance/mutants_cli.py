"""`forge mutants`: the suite and the schedule invariants against each mutant.

Progress goes to stderr (`forge.progress`): a bar on a terminal, a plain
line every few seconds in a log.
"""

from __future__ import annotations

import json
import sys

import click

from forge.commands.params import BoundedInt, InputPath, OutputPath, write_output

#: The most random schedules per prompt or case the flags take (each is a run per mutant).
MAX_SEEDS = 10_000


def register(main: click.Group) -> None:
    main.add_command(mutants)


@click.command()
@click.option("--cases", "cases_dir", type=InputPath(exists=True), default=None,
              help="Case directory (default: the installed suite).")
@click.option("-k", "pattern", default=None, help="Only mutants whose id contains this text.")
@click.option("--seeds", type=BoundedInt(0, MAX_SEEDS), default=10, show_default=True,
              help="Random schedules per example prompt in the invariant check.")
@click.option("--case-seeds", type=BoundedInt(0, MAX_SEEDS), default=3, show_default=True,
              help="Random schedules per any-schedule case (the suite itself uses 20).")
@click.option("--json", "json_file", type=OutputPath(), default=None,
              help="Write the kill matrix as JSON.")
@click.option("--workers", type=click.IntRange(min=1, max=64), default=1, show_default=True,
              help="Worker processes; each mutant runs in one (the matrix is the same).")
def mutants(cases_dir, pattern, seeds, case_seeds, json_file, workers):
    """Run the conformance suite and the invariants against every mutant.

    A mutant is a deliberately wrong variant of the reference engine (see
    forge/conformance/mutants.py).  It is killed when a case fails or errors, or a
    schedule breaks an invariant.  Prints the kill matrix and the mutation
    score; exit code 1 when a mutant that is not marked equivalent survives.
    """
    from forge.conformance.case import DEFAULT_CASES_DIR, CaseErrors, load_cases
    from forge.conformance.cli import refuse_all
    from forge.conformance.mutants import CATALOGUE, kill_matrix, with_fewer_schedules
    from forge.progress import reporter

    try:
        loaded = load_cases(cases_dir or DEFAULT_CASES_DIR)
    except CaseErrors as e:
        refuse_all(list(e.errors))
    cases = with_fewer_schedules(loaded, case_seeds)
    selected = [m for m in CATALOGUE if not pattern or pattern in m.id]
    show = reporter(len(selected), "mutants")
    matrix = kill_matrix(selected, cases, seeds, workers=workers,
                         progress=lambda n, m: show(n, m.id))
    rows = [{"id": m.id, "category": m.category, "description": m.description,
             "site": m.site, "killed": bool(killers), "killers": killers[:5],
             "equivalent": m.equivalent}
            for m, killers in zip(selected, matrix)]
    for row in rows:
        mark = "killed " if row["killed"] else ("equiv. " if row["equivalent"] else "SURVIVED")
        by = ", ".join(row["killers"][:3]) if row["killed"] else (row["equivalent"] or row["description"])
        click.echo(f"{mark} {row['category']:12} {row['id']:36} {by}")
    scored = [r for r in rows if not r["equivalent"]]
    killed = sum(1 for r in scored if r["killed"])
    score = killed / len(scored) if scored else 1.0
    click.echo(f"mutation score: {killed}/{len(scored)} = {score:.1%}")
    if json_file:
        write_output(json_file, json.dumps({"mutants": rows, "killed": killed,
                                            "total": len(scored), "score": score},
                                           indent=1, sort_keys=True))
    sys.exit(0 if killed == len(scored) else 1)
