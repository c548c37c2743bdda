"""`forge conformance` and `forge impl-serve`: the suite's command line.

`register(main)` adds both commands to the `forge` group (forge.cli looks
this module up).  Bad input - a malformed case, expectations file or flag,
an implementation's hello that breaks the protocol, a report file the
system refuses - raises `InputError`, which the group prints as one line
with exit code 2; several at once (every malformed case file of a
directory) are printed one line each (`refuse_all`).

Also the pieces the conformance commands (`forge mutants`, `forge spec`,
`forge explore --impl`) share, so each rule is kept once: `load_suite`
(the catalogue, then the cases checked against it), `refuse_flags` (flags
the chosen mode would ignore: `--fuzz` refuses the suite's, the suite
`--fuzz`'s), `write_flagged` (an output file whose late failure names its
flag), and `explore_impl_command` (`forge explore --impl`, printed as the
reference's exploration is).

What does not live here: anything the commands do (`runner`, `serve`,
`impl_explore`, `fuzz`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from forge.commands.jsonflag import JsonCommand, emit_json, json_option, on_stdout
from forge.commands.params import (BoundedInt, InputPath, OutputPath, Regex, STDOUT, Seconds, TEXT,
                                   flags_given, harness_kwargs, write_output)
from forge.conformance.catalogue import default_catalogue_dir, did_you_mean, load_catalogue
from forge.conformance.features import FEATURES
from forge.conformance.report import (ERRORED, FAILED, INTERRUPTED, UNEXPECTED_PASS, dumps,
                                      terminal_safe)
from forge.deferred import deferred, loaded
from forge.errors import InputError
from forge.conformance.limit_flags import impl_limit_options, known_differences_option
from forge.limits import I64_MAX
from forge.run.options import RULES
from forge.run.record import read_replay, spec_from_record
from forge.runspec import Expectation, spec_from_flags
from forge.sim.replayfile import write_record
from forge.sim.strategies import lookup

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import failuredb, progress as progress_hook
    from forge.commands import explore_report
    from forge.conformance import (
        adapters,
        case as case_files,
        equivalence,
        fuzz,
        impl_explore,
        level2,
        matrix,
        programs,
        runner,
        serve,
    )
else:
    failuredb = deferred("forge.failuredb")
    progress_hook = deferred("forge.progress")
    explore_report = deferred("forge.commands.explore_report")
    adapters = deferred("forge.conformance.adapters")
    case_files = deferred("forge.conformance.case")
    equivalence = deferred("forge.conformance.equivalence")
    fuzz = deferred("forge.conformance.fuzz")
    impl_explore = deferred("forge.conformance.impl_explore")
    level2 = deferred("forge.conformance.level2")
    matrix = deferred("forge.conformance.matrix")
    programs = deferred("forge.conformance.programs")
    runner = deferred("forge.conformance.runner")
    serve = deferred("forge.conformance.serve")

#: Ctrl-C (forge.cli's EXIT_INTERRUPTED: 128 + SIGINT).
EXIT_INTERRUPTED = 130

#: Names a mutant (conformance/mutants.py) for `forge impl-serve` to serve.
MUTANT_VAR = "FORGE_MUTANT"

#: The most programs one `--fuzz` runs.
MAX_FUZZ = 1_000_000

#: The flags `--fuzz` takes; it refuses every other flag of `forge conformance`.
FUZZ_FLAGS = ("--fuzz", "--impl", "--seed", "--fuzz-case", "--known-differences", "--timeout",
              "--max-run-seconds", "--max-decisions")
#: The flags only `--fuzz` takes; the suite refuses them.
FUZZ_ONLY = ("--seed", "--fuzz-case", "--known-differences")

CONFORMANCE_HELP = """Run the conformance suite against an implementation.

By default the suite installed with the kit runs against the reference
engine in this process.  With --impl, it runs against any program that
speaks the JSON-lines protocol of docs/protocol.md on stdin/stdout.

Each case runs on the canonical schedule, and cases flagged any-schedule
also on random ones.  Failures are shown with their mismatches and a
unified diff of expected vs observed; the last line is always
`N passed, N failed, N errored, N skipped` (then `, N expected failures`
when there are any).

\b
Examples:
  forge conformance
  forge conformance -k two-tasks -k 'tasks\\.leak\\.'
  forge conformance --features fanout,tasks-model --workers 4
  forge conformance --impl 'node my-engine.js' --timeout 30 \\
      --expectations my-engine.expect.toml --json report.json --junit report.xml
  forge conformance --impl 'forge impl-serve'      # the protocol, end to end

An --impl observation that breaks the shipped schema (docs/observation.md)
errors its case, naming each field by its JSON pointer.  Expected failures (an
expectations file's "fail") are a count of their own; --write-expectations
turns this run's failures into such a file.

Skips are grouped by reason above the closing line; a run where every
case was skipped says so there (and still exits 0).  Only one report may
go to standard output (-).

\b
Exit codes: 0 every case passed, was skipped or failed as expected, 1 a
case failed or errored, 2 bad input (a case, a flag, a file, or an --impl
hello that breaks docs/protocol.md, such as an unknown feature name).
"""

SERVE_HELP = """Serve the reference engine over the conformance protocol.

Reads protocol messages from stdin and answers on stdout, one JSON object a
line (docs/protocol.md): a hello, then one observation per run, until bye or
end of input.  This is what `forge conformance --impl CMD` talks to, and the
worked example for anyone implementing the protocol.  With --level 2 the
kit decides the engine's schedule: every open decision is asked over the
pipe.  FORGE_MUTANT=ID serves that mutant of the reference instead.

\b
Examples:
  forge conformance --impl 'forge impl-serve'
  forge conformance --impl 'forge impl-serve --level 2'
  FORGE_MUTANT=tie-goes-to-timeout forge explore --impl 'forge impl-serve --level 2' P.md
"""


@click.command("conformance", cls=JsonCommand, help=CONFORMANCE_HELP)
@click.option("--impl", metavar="CMD", default=None,
              help="The implementation's command line (shell-style quoting). "
                   "Default: the reference engine, in process.")
@click.option("--cases", "cases_path", metavar="DIR", default=None, type=InputPath(),
              help="A directory of cases (searched recursively) or one case file. "
                   "Default: the suite installed with the kit.")
@click.option("-k", "patterns", metavar="PATTERN", multiple=True, type=Regex(),
              help="Only cases whose id or a cited clause id matches PATTERN "
                   "(a regular expression, searched). Repeat for any of several.")
@click.option("--features", "feature_args", metavar="NAMES", multiple=True,
              help="Only cases needing any of these features, comma-separated or repeated "
                   f"({', '.join(FEATURES)}; docs/cases.md says what each covers).")
@click.option("--expectations", metavar="FILE", default=None, type=InputPath(),
              help='Known results, TOML or JSON: {case_id = "fail" | "skip"}. '
                   "An expected failure that passes counts as failed.")
@click.option("--workers", type=BoundedInt.of(RULES["workers"]), default=1, show_default=True,
              help="Cases run at once.")
@json_option("The report (docs/report.md: every case with its duration and schedules, "
             "per-clause tallies, coverage by feature)")
@click.option("--junit", "junit_file", metavar="FILE", default=None, type=OutputPath(),
              help="Write a JUnit XML report (schema/junit.xsd; - for stdout).")
@click.option("--matrix", "matrix_file", metavar="FILE", default=None, type=OutputPath(),
              help="Write a static HTML page of cases x engines (this run, and each "
                   "--matrix-with report), grouped by clause, with the interop score.")
@click.option("--matrix-with", "matrix_with", metavar="REPORT", multiple=True, type=InputPath(),
              help="A saved --json report of another run, a column of --matrix. Repeat for "
                   "several engines.")
@click.option("--write-expectations", "expectations_out", metavar="FILE", default=None,
              type=OutputPath(),
              help="Write an expectations file that accepts this run: every case that "
                   "failed or errored as \"fail\" (- for stdout).")
@click.option("--timeout", type=Seconds.of(RULES["timeout"]), default=10.0, show_default=True,
              help="Seconds an --impl program gets to answer each run before the case errors.")
@impl_limit_options
@click.option("--catalogue", "catalogue_dir", metavar="DIR", default=None, type=InputPath(),
              help="The clause catalogue (spec/*.toml) cases must cite and coverage counts. "
                   "Default: the one shipped with the kit.")
@click.option("--dump-cases", is_flag=True,
              help="Print the selected cases as JSON and exit without running them.")
@click.option("-v", "--verbose", is_flag=True, help="List every case, not only failures.")
@click.option("-q", "--quiet", is_flag=True,
              help="Only the failures and the summary line (no per-clause tally).")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop at the first case that fails or errors.")
@click.option("--maxfail", type=BoundedInt(1, I64_MAX), default=None, metavar="N",
              help="Stop once N cases failed or errored.")
@click.option("--lf", "--last-failed", "last_failed", is_flag=True,
              help="Run only the cases that failed or errored last time (kept in the failure "
                   "database, .forge/ by default); all of them when none did.")
@click.option("--collect-only", is_flag=True,
              help="List the ids of the cases that would run, and run none.")
@click.option("--database", default=None, metavar="DIR", type=TEXT,
              help="The failure database --lf reads and every run updates (default .forge, "
                   "or FORGE_DATABASE; none keeps none).")
@click.option("--fuzz", "fuzz_count", type=BoundedInt(1, MAX_FUZZ), default=None, metavar="N",
              help="Instead of the suite: run N random task programs on the reference and on "
                   "--impl (level 2) under one schedule each, and write the first difference, "
                   "shrunk, as a case file (needs Hypothesis, the test extra). Takes only "
                   "--impl, --seed, --fuzz-case, --timeout and the run bounds.")
@click.option("--seed", "fuzz_seed", type=BoundedInt(), default=0, show_default=True,
              help="--fuzz only: the seed of the programs and schedules.")
@click.option("--fuzz-case", metavar="FILE", type=OutputPath(), default="forge-fuzz.case.toml",
              show_default=True, help="--fuzz only: where the shrunk difference's case file goes.")
@known_differences_option
@click.pass_context
def conformance(ctx, impl, cases_path, patterns, feature_args, expectations, workers, json_out,
                junit_file, matrix_file, matrix_with, expectations_out, timeout, run_seconds,
                max_decisions, catalogue_dir, dump_cases, verbose, quiet, exitfirst, maxfail,
                last_failed, collect_only, database, fuzz_count, fuzz_seed, fuzz_case,
                known_differences):
    if fuzz_count is not None:
        refuse_flags(ctx, FUZZ_FLAGS.__contains__,
                     f"not for --fuzz, which takes only {', '.join(FUZZ_FLAGS[1:])}")
        ctx.exit(fuzz_command(impl, fuzz_count, fuzz_seed, fuzz_case, timeout,
                              {"run_seconds": run_seconds, "max_decisions": max_decisions},
                              known_differences))
    refuse_flags(ctx, lambda flag: flag not in FUZZ_ONLY,
                 "for --fuzz only, which is not given")
    if matrix_with and matrix_file is None:
        raise InputError("adds a column to --matrix, which is not given",
                         file="--matrix-with")
    others = [_matrix_column(path) for path in matrix_with]
    outputs = {"--json": json_out, "--junit": junit_file, "--matrix": matrix_file,
               "--write-expectations": expectations_out}
    on_stdout = [flag for flag, path in outputs.items() if path == STDOUT]
    if len(on_stdout) > 1:
        raise InputError(f"standard output (-) already takes the {on_stdout[0]} report; "
                         f"give {on_stdout[1]} a file", file=on_stdout[1])
    cases, catalogue = load_suite(cases_path, catalogue_dir)
    features = [f.strip() for arg in feature_args for f in arg.split(",") if f.strip()]
    known_features = sorted({f for case in cases for f in case.features})
    unknown = [f for f in features if f not in known_features]
    if unknown:
        raise InputError(f"--features: no case needs {', '.join(f'`{f}`' for f in unknown)}"
                         f"{did_you_mean(unknown, known_features)}; "
                         f"the suite's features are {', '.join(known_features)}")
    selected = runner.select(cases, patterns, features)
    if not selected:
        raise InputError("no case matches the selection (-k / --features)")

    db = failuredb.database(database)
    suite_key = _suite_key(impl, cases_path)
    if last_failed:
        selected = _last_failed(selected, failuredb.last_failed(db, suite_key))
    if dump_cases:
        click.echo(json.dumps([c.to_json() for c in selected], indent=2, ensure_ascii=False))
        return
    if collect_only:
        for case in selected:
            click.echo(case.id)
        click.echo(f"{len(selected)} case{'s' if len(selected) != 1 else ''} selected")
        return
    expected = runner.load_expectations(expectations) if expectations else {}
    stale = runner.stale_expectations(expected, cases)
    if stale:
        click.echo(f"forge: warning: the expectations file names no case: {', '.join(stale)}",
                   err=True)

    show = progress_hook.reporter(len(selected), "cases")
    maxfail = 1 if exitfirst else maxfail

    def progress(done: int, total: int, case_id: str) -> None:
        show(done, case_id)

    if impl is not None:
        argv = _impl_argv(impl)
        try:
            report = runner.run_suite(
                selected,
                lambda: adapters.SubprocessAdapter(argv, timeout=timeout, run_seconds=run_seconds,
                                                   max_decisions=max_decisions),
                workers=workers, expectations=expected, catalogue=catalogue, progress=progress,
                maxfail=maxfail)
        except adapters.HelloError as e:
            raise InputError(e.reason, file="--impl") from None
    else:
        report = runner.run_suite(selected, adapters.InProcessAdapter, workers=workers,
                                  processes=True, expectations=expected, catalogue=catalogue,
                                  progress=progress, maxfail=maxfail)

    renderings = {"--json": lambda: dumps(report), "--junit": report.to_junit,
                  "--matrix": lambda: matrix.render(
                      [matrix.column(report.to_json(), "this run"), *others]),
                  "--write-expectations": report.expectations_toml}
    unwritten = []
    for flag, path in outputs.items():
        if path is not None:
            try:
                write_flagged(flag, path, renderings[flag]())
            except InputError as e:
                unwritten.append(e)
    # With a report on standard output, the human summary goes to stderr;
    # it is shown even when a report could not be written.
    click.echo(report.render_text(verbose, quiet), nl=False, err=bool(on_stdout))
    failuredb.record_last_failed(db, suite_key, (r.case_id for r in report.results),
                                 (r.case_id for r in report.results
                                  if r.status in (FAILED, ERRORED, UNEXPECTED_PASS)))
    refuse_all(unwritten)
    if report.stopped is not None and report.stopped.startswith(INTERRUPTED):
        ctx.exit(EXIT_INTERRUPTED)
    ctx.exit(report.exit_code)


def _matrix_column(path: str):
    """The --matrix column of a saved JSON report.

    Raises:
        InputError: naming the file, when it is no such report.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return matrix.column(data, path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise InputError(f"not a readable JSON report: {e}", file=path) from None
    except ValueError as e:
        raise InputError(str(e).split(": ", 1)[1], file=path) from None


@click.command("impl-serve", help=SERVE_HELP)
@click.option("--level", type=click.IntRange(1, 2), default=1, show_default=True,
              help="2: ask the kit for every scheduling decision (docs/protocol.md, Level 2), "
                   "when the kit's hello offers it.")
def impl_serve(level):
    with serve.switch_mutant(os.environ.get(MUTANT_VAR)):
        sys.exit(serve.serve(sys.stdin.buffer, sys.stdout.buffer, level))


def register(main: click.Group) -> None:
    main.add_command(conformance)
    main.add_command(impl_serve)


def _suite_key(impl: str | None, cases_path: str | None) -> str:
    """Which suite run `--lf` remembers: the implementation's command line
    and the case folder (each run of another engine keeps its own)."""
    import hashlib

    where = str(Path(cases_path).resolve()) if cases_path else "installed"
    return hashlib.sha256(f"{impl or 'reference'}\0{where}".encode("utf-8")).hexdigest()


def _last_failed(selected: list, ids: list[str] | None) -> list:
    """The selected cases that failed last time, or all of them (with a
    note) when none of them did."""
    chosen = [c for c in selected if c.id in set(ids or ())]
    if chosen:
        click.echo(f"--lf: running the {len(chosen)} case{'s' if len(chosen) != 1 else ''} "
                   "that failed last time", err=True)
        return chosen
    click.echo("--lf: no case of this selection failed last time; running all of them",
               err=True)
    return selected


def _impl_argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise InputError(f"--impl: cannot split the command line: {e}") from None
    if not argv:
        raise InputError("--impl: the command is empty")
    if shutil.which(argv[0]) is None:
        raise InputError(f"--impl: no such command `{argv[0]}`")
    return argv


def refuse_flags(ctx: click.Context, takes, rule: str) -> None:
    """Refuse, in one line naming them, the flags given to `ctx`'s command
    that `takes(flag)` says the chosen mode does not take (a flag given its
    default value by omission is not given); `rule` says why.  The one way
    a command refuses flags that would be ignored (`forge conformance
    --fuzz`, `forge spec` before a subcommand)."""
    unused = [flag for flag in flags_given(ctx) if not takes(flag)]
    if unused:
        raise InputError(rule, file=", ".join(unused))


def under_flag(flag: str, error: InputError) -> InputError:
    """`error` about a file a flag named, re-worded to name the flag first:
    `--json: report.json: cannot write this file: ...`."""
    return InputError(error.render(), file=flag)


def write_flagged(flag: str, path: str, text: str) -> None:
    """Write an output file (`write_output`) a flag named.

    Raises:
        InputError: naming the flag and the file, when the system refuses.
    """
    try:
        write_output(path, text)
    except InputError as e:
        raise under_flag(flag, e) from None


def load_suite(cases_path: str | None, catalogue_dir: str | None = None) -> tuple[list, list | None]:
    """(cases, catalogue), loaded as every command loads them: the clause
    catalogue (`--catalogue`, by default the shipped one), then the cases at
    `cases_path` (a folder or one case file; by default the shipped suite),
    each refused if it cites a clause id the catalogue lacks.

    Raises:
        InputError: a catalogue that cannot be used (naming --catalogue when
            it was given), or the malformed case files, each on its own line.
    """
    catalogue_path = Path(catalogue_dir) if catalogue_dir else default_catalogue_dir()
    try:
        catalogue = load_catalogue(catalogue_path) if catalogue_path is not None else None
    except InputError as e:
        raise (under_flag("--catalogue", e) if catalogue_dir else e) from None
    known = {c["id"] for c in catalogue} if catalogue is not None else None
    try:
        return case_files.load_cases(cases_path or case_files.DEFAULT_CASES_DIR, known), catalogue
    except case_files.CaseErrors as e:
        refuse_all(list(e.errors))
        raise  # refuse_all raised the last one


def refuse_all(errors: list[InputError]) -> None:
    """Refuse several pieces of bad input at once: each but the last is
    printed as the `forge` group prints a refusal (`forge: ` and one line; a
    test holds the two alike), and the last is raised for the group to
    print, with exit code 2.  Nothing for none."""
    if not errors:
        return
    for error in errors[:-1]:
        click.echo("forge: " + " ".join(error.render().split()), err=True)
    raise errors[-1]


def explore_impl_command(impl: str, prompt: str, harness: dict, *, expect, runs: int,
            start_seed: int, strategy: str, pct_depth: int, max_deviations: int | None,
            reduce: bool, replay_out: str, json_out: str | None, timeout: float = 10.0,
            limits: dict | None = None, differential: bool = True,
            known_path: str | None = None, pct_horizon: int | None = None,
            rerun_args: tuple[str, ...] | None = None) -> int:
    """`forge explore --impl CMD PROMPT` (or a replay file as PROMPT); the exit
    code: 0 every schedule passed, 1 one failed (an implementation that
    errors, crashes or breaks level 2 included, as under `forge
    conformance`), 3 an exhaustive search stopped at --runs.  The report is
    the reference's (`forge.commands.explore_report`: its JSON, and its summary
    lines), told through the implementation's decisions instead of a trace.
    `forge.commands.explore` hands over here (`rerun_args`: its flags as
    given, for the failure's one-line rerun); the work is
    `forge.conformance.impl_explore`'s.

    Raises:
        InputError: a bad prompt, flag or replay file, or an implementation
            whose hello breaks the protocol or does not speak level 2.
    """
    argv = _impl_argv(impl)
    limits = limits or {}
    known = (equivalence.KnownDifferences.load(known_path) if known_path
             else equivalence.KnownDifferences())
    if prompt.endswith(".json"):        # a replay file: run its schedule through the pipe
        data = read_replay(prompt)["record"]
        if data is None:
            raise InputError("a replay file to run through --impl is a format-1 record "
                             "(what `forge explore` writes)", file=prompt)
        spec = spec_from_record(data, prompt)
        impl_explore.check_replayable(prompt, data, spec)
        with adapters.SubprocessAdapter(argv, timeout=timeout, **limits) as adapter:
            problems, drift = impl_explore.replay_impl(adapter, spec, data["run"]["seed"],
                                                       data["choices"],
                                                       Expectation.from_json(data["expect"]),
                                                       differential, known)
        verdict = replay_verdict(data, problems, drift)
        emit_json(json_out, json.dumps({"problems": problems, "drift": drift,
                                        "verdict": verdict}, sort_keys=True))
        if not on_stdout(json_out):
            click.echo(terminal_safe(f"drifted: the engine now asks other decisions than the "
                                     f"record holds: {drift}") if drift
                       else "replayed the recorded schedule")
            if problems:
                click.echo(terminal_safe("FAILED: " + "; ".join(problems)))
            elif verdict == DRIFTED:
                click.echo("no problem on the run as it went (answered canonically past the "
                           "drift" + (", compared with the reference" if differential else "")
                           + "): the recorded failure may be fixed, on another schedule")
            elif verdict == FIXED:
                click.echo("fixed: the recorded failure no longer shows ("
                           + terminal_safe("; ".join(data["failure"].get("problems") or ())
                                           or "recorded as failing") + ")")
            else:
                click.echo("passed")
        return REPLAY_EXIT[verdict]
    spec = spec_from_flags(prompt, **harness_kwargs(harness))
    ran = [0]       # schedules run, for the partial summary after Ctrl-C
    with adapters.SubprocessAdapter(argv, timeout=timeout, **limits) as adapter:
        try:
            outcome = impl_explore.explore_impl(adapter, spec, expect=expect, strategy=strategy,
                                                runs=runs, start_seed=start_seed,
                                                pct_depth=pct_depth,
                                                max_deviations=max_deviations, reduce=reduce,
                                                differential=differential, known=known,
                                                progress=lambda n: ran.__setitem__(0, n),
                                                pct_horizon=pct_horizon)
        except KeyboardInterrupt:   # what ran, then exit 130 (forge.cli)
            click.echo(f"interrupted after {ran[0]} of {runs} schedules; no failure among those "
                       f"checked (from start seed {start_seed})", err=True)
            raise
    report = outcome.report
    found = report.findings[0] if report.findings else None
    not_run = outcome.not_run
    if outcome.record is not None:
        write_flagged("--replay-out", replay_out, write_record(outcome.record))
    again = f"forge explore --impl {shlex.quote(impl)} {shlex.quote(replay_out)}"
    # The reference's report, with the implementation's story in place of a
    # trace's (no divergence: the kit cannot see a foreign engine's trace).
    data = {**explore_report.report_json(report, None, replay_out),
            "problems": list(outcome.problems),
            "story": list(outcome.story), "diff": list(outcome.diff),
            "watchers_not_run": not_run,
            "replay": replay_out if found else None,
            "replay_command": again if found else None,
            "rerun_command": explore_report.rerun_line(rerun_args, found.seed, found.provider,
                                                       strategy, first=start_seed)
            if found else None}
    emit_json(json_out, json.dumps(data, sort_keys=True))
    if on_stdout(json_out):
        return 1 if found is not None else 0 if report.complete else 3
    # The summary lines as the reference prints them (outcomes are the
    # implementation's words, so escaped); the failure, told here.
    explore_report.show({**data, "failures": [],
                         "outcomes": {terminal_safe(k): v for k, v in data["outcomes"].items()}},
                        None, outcome.explored and lookup(strategy).walks, ())
    if not_run:
        click.echo("watchers that could not run on the engine's reports: "
                   + "; ".join(f"{name}: {why}" for name, why in not_run.items()))
    if found is not None:
        click.echo(terminal_safe(f"FAILED {impl_explore.where(found)}: "
                                 + "; ".join(found.problems)))
        if outcome.explored:
            click.echo(terminal_safe(
                f"shrunk from {len(found.choices)} to {len(found.shrunk)} choices, "
                f"{found.deviations} deviations from canonical; the shrunk run: "
                + "; ".join(outcome.problems)))
            if outcome.story:
                click.echo("its decisions that differ from canonical:")
                for line in outcome.story:
                    click.echo(terminal_safe("  " + line))
            else:
                click.echo("its decisions that differ from canonical: none (it fails on the "
                           "canonical schedule)")
        else:
            click.echo("no other schedule was tried: the implementation fails the canonical one")
        for line in outcome.diff:
            click.echo(terminal_safe(line))
        click.echo(f"reproduce with: {again}")
        rerun = data["rerun_command"]
        click.echo(terminal_safe(f"or, with no file: {rerun}") if rerun is not None
                   else explore_report.NO_RERUN)
        return 1
    return 0 if report.complete else 3


#: `forge explore --impl CMD FILE.replay.json`'s verdicts and their exit
#: codes: the record's failure shows again (1), it is gone on the very
#: schedule recorded (FIXED, 4), the engine now asks other decisions (1: the
#: schedule is not the one recorded, so neither can be said), or a record
#: that held no failure replays and passes (0).
FAILS, FIXED, DRIFTED, PASSES = "fails", "fixed", "drifted", "passes"
REPLAY_EXIT = {FAILS: 1, FIXED: 4, DRIFTED: 1, PASSES: 0}


def replay_verdict(record: dict, problems: list[str], drift: str | None) -> str:
    """What replaying `record` through an engine found (`REPLAY_EXIT`)."""
    if problems:
        return FAILS
    if drift:
        return DRIFTED
    return FIXED if record.get("failure") else PASSES


def fuzz_command(impl: str | None, count: int, seed: int, case_path: str,
                 timeout: float, limits: dict | None = None,
                 known_path: str | None = None) -> int:
    """`forge conformance --impl CMD --fuzz N --seed S`; the exit code (1: a difference).

    Raises:
        InputError: no --impl, an implementation that does not speak level 2,
            or no Hypothesis installed.
    """
    if impl is None:
        raise InputError("--fuzz compares an implementation with the reference: give --impl CMD",
                         file="--fuzz")
    try:  # Hypothesis is optional: without it, this is where the command stops
        loaded(fuzz), loaded(programs)
    except ImportError as e:
        raise InputError(str(e), file="--fuzz") from None

    known = (equivalence.KnownDifferences.load(known_path) if known_path
             else equivalence.KnownDifferences())
    show = progress_hook.reporter(count, "programs")
    with adapters.SubprocessAdapter(_impl_argv(impl), timeout=timeout, **(limits or {})) as adapter:
        try:
            level = adapter.level
        except adapters.AdapterError as e:
            raise InputError(e.render(), file="--impl") from None
        if level != level2.LEVEL:
            raise InputError(f"`{impl}` speaks level 1 (its hello has no \"level\": 2): the kit "
                             "cannot give it the reference's schedule", file="--impl")
        try:
            report = fuzz.fuzz(adapter, count, seed, progress=lambda n: show(n, "program"),
                               known=known)
        except KeyboardInterrupt:   # what ran, then exit 130 (forge.cli)
            progress_hook.interrupted(show, f"no difference reported (seed {seed})")
            raise
    per = report.seconds_per_program * 1000
    click.echo(f"{report.programs} programs, {report.shrink_runs} shrink runs, "
               f"{report.seconds:.1f} s ({per:.1f} ms a program, both engines)")
    found = report.difference
    if found is None:
        click.echo(f"no difference from the reference in {report.programs} programs "
                   f"(seed {seed})")
        return 0
    click.echo("DIFFERENT from the reference, shrunk to "
               f"{found.program.count(chr(10)) + 1} lines and answers {list(found.answers)}:")
    for line in found.fields:
        click.echo(terminal_safe("  " + line))
    # After the difference is shown, so a file the system refuses loses nothing shown.
    write_flagged("--fuzz-case", case_path, fuzz.case_text(found, seed))
    click.echo(f"the case is in {case_path}; add it under a case directory to keep it")
    return 1
