"""`forge mutants`: the suite and the schedule invariants against each mutant."""

from __future__ import annotations

import json
import sys

import click

from forge.commands.params import BoundedInt, OutputPath, write_output

#: The most random schedules per prompt or case the flags take (each is a run per mutant).
MAX_SEEDS = 10_000


def register(main: click.Group) -> None:
    main.add_command(mutants)


def with_fewer_schedules(cases, seeds: int):
    """The cases with at most `seeds` random schedules each (mutants are
    usually killed on the canonical schedule; a few extra catch the rest)."""
    import attrs

    return [attrs.evolve(c, harness=attrs.evolve(c.harness, seeds=min(c.harness.seeds, seeds)))
            for c in cases]


def kills(mutant, cases, explore_prompts, seeds: int) -> list[str]:
    """What kills a mutant: failing case ids, then invariant findings."""
    from conformance.adapters import InProcessAdapter
    from conformance.runner import run_suite
    from forge.engine.run import RunConfig, run_prompt
    from forge.harness import Harness
    from sim import invariants
    from sim.chooser import Canonical, Chooser, RandomProvider

    killers: list[str] = []
    with mutant.applied():
        report = run_suite(cases, InProcessAdapter, workers=1)
        killers += [r.case_id for r in report.results if r.status in ("failed", "errored")]
        for name, prompt in explore_prompts:
            try:
                canonical = run_prompt(prompt, Harness(ceiling=2), Chooser(Canonical()),
                                       RunConfig()).observation()
                checks = (*invariants.DEFAULT_CHECKS, invariants.same_ids(canonical))
                for seed in range(seeds):
                    obs = run_prompt(prompt, Harness(ceiling=2), Chooser(RandomProvider(seed)),
                                     RunConfig()).observation()
                    if [p for c in checks for p in c(obs)]:
                        killers.append(f"explore:{name}:seed {seed}")
                        break
            except Exception as e:  # a mutant may crash the engine: that kills it too
                killers.append(f"explore:{name}: crashed ({type(e).__name__})")
    return killers


@click.command()
@click.option("--cases", "cases_dir", type=click.Path(exists=True), default=None,
              help="Case directory (default: the installed suite).")
@click.option("-k", "pattern", default=None, help="Only mutants whose id contains this text.")
@click.option("--seeds", type=BoundedInt(0, MAX_SEEDS), default=10, show_default=True,
              help="Random schedules per example prompt in the invariant check.")
@click.option("--case-seeds", type=BoundedInt(0, MAX_SEEDS), default=3, show_default=True,
              help="Random schedules per any-schedule case (the suite itself uses 20).")
@click.option("--json", "json_file", type=OutputPath(), default=None,
              help="Write the kill matrix as JSON.")
def mutants(cases_dir, pattern, seeds, case_seeds, json_file):
    """Run the conformance suite and the invariants against every mutant.

    A mutant is a deliberately wrong variant of the reference engine (see
    conformance/mutants.py).  It is killed when a case fails or errors, or a
    schedule breaks an invariant.  Prints the kill matrix and the mutation
    score; exit code 1 when a mutant that is not marked equivalent survives.
    """
    import pathlib

    from conformance.case import DEFAULT_CASES_DIR, load_cases
    from conformance.mutants import CATALOGUE
    from forge.prompt import load_prompt

    cases = with_fewer_schedules(load_cases(cases_dir or DEFAULT_CASES_DIR), case_seeds)
    examples = pathlib.Path(__file__).resolve().parent.parent / "examples"
    explore_prompts = [(p.name, load_prompt(str(p))) for p in sorted(examples.glob("*.md"))
                       if not (examples / (p.stem + ".model.json")).exists()]
    rows = []
    show = sys.stderr.isatty()
    selected = [m for m in CATALOGUE if not pattern or pattern in m.id]
    for n, m in enumerate(selected, 1):
        if show:
            click.echo(f"\r[{n}/{len(selected)}] {m.id:40}", nl=False, err=True)
        killers = kills(m, cases, explore_prompts, seeds)
        rows.append({"id": m.id, "category": m.category, "description": m.description,
                     "killed": bool(killers), "killers": killers[:5],
                     "equivalent": m.equivalent})
    if show:
        click.echo("", err=True)
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
