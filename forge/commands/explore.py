"""`forge explore`: many schedules of one prompt, checking invariants.

It runs the prompt under a strategy for many seeds, checks every run against
the invariants in `conformance.oracles` (and, with `--expect-result`, the
result), shrinks the first failing schedule, and writes a replay file that
`forge replay` (or `forge run --strategy replay:FILE`) reproduces byte for
byte.

What does not live here: drawing and shrinking schedules (`sim.explore`,
`sim.exhaustive`), the invariants (`conformance.oracles`), and building a run
(`forge.assembly`).
"""

from __future__ import annotations

import json
import sys

import click

from forge.commands.params import TEXT, BoundedInt, OutputPath, write_output

#: The most schedules one `forge explore` tries (each is a whole run).
MAX_RUNS = 10_000_000


def _subject(prompt_path: str, args: str, concurrency: int, model_script, operator_script):
    from forge.assembly import build_harness, load_prompt
    from forge.engine.run import RunConfig, run_prompt

    prompt = load_prompt(prompt_path)
    # Scripts are parsed once, so a bad one is reported before any run.
    build_harness(None, concurrency, model_script, operator_script)

    def subject(chooser):
        harness = build_harness(None, concurrency, model_script, operator_script)
        run = run_prompt(prompt, harness, chooser, RunConfig(args=args))
        obs = run.observation()
        return obs, obs["trace_sha256"]

    return subject


@click.command()
@click.argument("prompt", type=click.Path(dir_okay=False))
@click.option("--runs", type=BoundedInt(1, MAX_RUNS), default=200, show_default=True,
              help="How many schedules to try.")
@click.option("--start-seed", type=BoundedInt(), default=0, show_default=True)
@click.option("--strategy", type=click.Choice(["random", "pct", "exhaustive"]), default="random",
              show_default=True, help="How schedules are drawn (exhaustive walks the choice tree).")
@click.option("--pct-depth", type=BoundedInt(1, 1000), default=3, show_default=True)
@click.option("--max-deviations", type=BoundedInt(0, 1_000_000), default=None,
              help="Exhaustive: only schedules with at most N non-canonical durations.")
@click.option("--no-reduce", "no_reduce", is_flag=True,
              help="Exhaustive: run every interleaving, equivalent ones included.")
@click.option("--args", "args_text", default="", type=TEXT)
@click.option("--concurrency", type=BoundedInt(1, 1_000_000), default=8, show_default=True)
@click.option("--model-script", type=click.Path(dir_okay=False), default=None)
@click.option("--operator-script", type=click.Path(dir_okay=False), default=None)
@click.option("--expect-result", default=None, type=TEXT,
              help="Also require this exact run result.")
@click.option("--same-ids/--no-same-ids", default=True, show_default=True,
              help="Require every schedule to start the same task ids as the canonical one.")
@click.option("--replay-out", type=OutputPath(),
              default="forge-failure.replay.json", show_default=True,
              help="Where to write the shrunk failing schedule.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
def explore(prompt, runs, start_seed, strategy, pct_depth, max_deviations, no_reduce, args_text,
            concurrency, model_script, operator_script, expect_result, same_ids, replay_out,
            as_json):
    """Run PROMPT under many schedules and check invariants on every one.

    \b
    Checks: each task ends exactly once; status tables agree with events;
    every abandon has one sound reason; task ids match the canonical
    schedule (--same-ids); the result equals --expect-result if given.
    A failure is shrunk to a minimal schedule and saved for `forge replay`.

    \b
    Exit codes: 0 every schedule passed, 1 a schedule failed, 2 bad input,
    3 an exhaustive search stopped at --runs before covering the tree.
    """
    from forge.lifecycle.scenario import is_scenario
    if is_scenario(prompt):  # a lifecycle race (docs/lifecycle.md), not a prompt
        from forge.lifecycle.command import explore_file
        sys.exit(explore_file(prompt, runs, start_seed, strategy, pct_depth, max_deviations,
                              no_reduce, replay_out, as_json))
    from conformance import oracles
    from sim.chooser import Canonical, Chooser, Choice
    from sim.exhaustive import exhaustive
    from sim.explore import explore as run_explore

    subject = _subject(prompt, args_text, concurrency, model_script, operator_script)
    canonical, _ = subject(Chooser(Canonical()))
    checks = list(oracles.DEFAULT_CHECKS)
    if same_ids:
        checks.append(oracles.same_ids(canonical))
    if expect_result is not None:
        checks.append(lambda obs: [] if obs.get("result") == expect_result else
                      [f"result {obs.get('result')!r} != {expect_result!r}"])
    show = sys.stderr.isatty() and not as_json

    def progress(n: int) -> None:
        if show and (n % 10 == 0 or n == runs):
            click.echo(f"\r{n}/{runs} schedules", nl=False, err=True)

    if strategy == "exhaustive":
        report = exhaustive(subject, checks, limit=runs, reduce=not no_reduce,
                            max_deviations=max_deviations)
    else:
        seeds = range(start_seed, start_seed + runs)
        report = run_explore(subject, seeds, checks, strategy=strategy, pct_depth=pct_depth,
                             progress=progress)
    if show:
        click.echo("", err=True)
    finding = report.findings[0] if report.findings else None
    if finding is not None:
        choices = [Choice("replayed", max(v + 1, 1), v).to_json() for v in finding.shrunk]
        write_output(replay_out, json.dumps({"prompt": prompt, "args": args_text,
                                             "seed": finding.seed, "choices": choices},
                                            sort_keys=True) + "\n")
    if as_json:
        click.echo(json.dumps({
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
            "replay": replay_out if finding else None,
        }, sort_keys=True))
    else:
        click.echo(f"{report.runs} schedules, {report.distinct_traces} distinct, "
                   f"outcomes {report.outcomes}")
        if strategy == "exhaustive":
            click.echo(f"{'covered the whole tree' if report.complete else 'STOPPED at --runs'}: "
                       f"{report.pruned} pruned as equivalent, {report.bounded} beyond the "
                       f"deviation bound, {report.unfinished} unfinished")
        if finding is not None:
            click.echo(f"FAILED at seed {finding.seed}: " + "; ".join(finding.problems))
            minimal = "a proven local minimum" if finding.proven else "not proven minimal"
            click.echo(f"shrunk from {len(finding.choices)} to {len(finding.shrunk)} choices, "
                       f"{finding.deviations} deviations from canonical ({minimal}); "
                       f"reproduce with: forge replay {prompt} {replay_out}")
    if finding is not None:
        sys.exit(1)
    sys.exit(3 if not report.complete else 0)
