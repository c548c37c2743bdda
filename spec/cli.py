"""`forge spec`: list, search and render the clause catalogue; report coverage.

`-k` selects clauses as `forge conformance -k` selects cases
(`forge.conformance.runner.matches`: regular expressions searched in the
id and the statement, any of several); a selection of no clause is bad
input.  The listing's flags (`--feature`, `-k`, `--json`) are refused
before a subcommand (`forge spec --feature tasks render DIR`), which would
ignore them; `coverage` takes its own `--feature` and `--json`.
`coverage --cases` reads cases as `forge conformance` does
(`forge.conformance.cli.load_suite`): a folder or one case file.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import TYPE_CHECKING

import click

from forge.commands.jsonflag import JsonGroup, emit_json, json_option, on_stdout
from forge.commands.params import InputPath, OutputPath, Regex, write_output
from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import _toml, runner
    from forge.conformance import catalogue as conformance_catalogue, cli as conformance_cli
else:
    _toml = deferred("forge.conformance._toml")
    conformance_catalogue = deferred("forge.conformance.catalogue")
    conformance_cli = deferred("forge.conformance.cli")
    runner = deferred("forge.conformance.runner")


#: Where `forge spec render` writes without OUT_DIR (relative to the current folder).
RENDER_DIR = "docs/spec"


def register(main: click.Group) -> None:
    main.add_command(spec)


def _only_features(clauses: list[dict], wanted) -> list[dict]:
    """The clauses of the features asked for; an unknown feature is bad input."""
    if not wanted:
        return clauses
    known = sorted({c["feature"] for c in clauses})
    unknown = [f for f in wanted if f not in known]
    if unknown:
        raise InputError(f"--feature: no clause has feature {', '.join(f'`{f}`' for f in unknown)}"
                         f"{conformance_catalogue.did_you_mean(unknown, known)}; "
                         f"the catalogue's features are {', '.join(known)}")
    return [c for c in clauses if c["feature"] in wanted]


def _catalogue() -> list[dict]:
    directory = conformance_catalogue.default_catalogue_dir()
    if directory is None:
        raise InputError("the clause catalogue (spec/*.toml) is not installed")
    return conformance_catalogue.load_catalogue(directory)


@click.group(cls=JsonGroup, invoke_without_command=True)
@click.option("--feature", multiple=True, help="Only clauses of this feature (repeatable).")
@click.option("-k", "patterns", metavar="PATTERN", multiple=True, type=Regex(),
              help="Only clauses whose id or statement matches PATTERN (a regular expression, "
                   "searched, as in forge conformance -k). Repeat for any of several.")
@json_option("The clauses")
@click.pass_context
def spec(ctx, feature, patterns, json_out):
    """List the clauses of the specifications.

    \b
    forge spec                          every clause, one line each
    forge spec --feature tasks-model    the model side of the Tasks chapter
    forge spec -k timeout               clauses about timeouts
    forge spec coverage                 clauses no conformance case checks
    forge spec render DIR               the readable Markdown form

    Exit code 2 when -k and --feature select no clause.  The listing's
    flags go before a subcommand only when it is none (a subcommand takes
    its own, after its name).
    """
    sub = ctx.invoked_subcommand
    if sub is not None:
        conformance_cli.refuse_flags(
            ctx, lambda flag: False,
            f"a flag of the `forge spec` listing, which `forge spec {sub}` would ignore "
            f"(`forge spec {sub} --help` lists its own flags, given after its name)")
        return
    clauses = _catalogue()
    clauses = [c for c in _only_features(clauses, feature)
               if runner.matches(patterns, c["id"], c.get("statement", ""))]
    if not clauses:
        raise InputError("no clause matches the selection (-k / --feature)")
    emit_json(json_out, json.dumps(clauses, sort_keys=True, indent=1))
    if on_stdout(json_out):
        return
    for c in clauses:
        click.echo(f"{c['id']:58} {c.get('statement', '')}")
    click.echo(f"{len(clauses)} clauses", err=True)


@spec.command()
@click.option("--cases", "cases_dir", type=InputPath(exists=True), default=None,
              help="A case directory or one case file (default: the installed conformance "
                   "cases).")
@click.option("--feature", multiple=True, help="Only this feature's clauses (repeatable).")
@json_option("The coverage")
@click.option("--counts", is_flag=True,
              help="Also count the cases citing each clause: min, median and the clauses "
                   "fewer than three cases cite, chapter by chapter.")
def coverage(cases_dir, feature, json_out, counts):
    """Report, feature by feature, the clauses no case covers.

    Exit code 0 when every clause of the chosen features (--feature, or
    every feature) is cited by a case, 1 when one is not, 2 for an unknown
    feature.
    """
    catalogue = _catalogue()
    cases, _ = conformance_cli.load_suite(cases_dir)
    clauses = _only_features(catalogue, feature)
    covered = {cid for case in cases for cid in case.clauses}
    by_feature: dict[str, dict] = {}
    for c in clauses:
        entry = by_feature.setdefault(c["feature"], {"total": 0, "covered": 0, "uncovered": []})
        entry["total"] += 1
        if c["id"] in covered:
            entry["covered"] += 1
        else:
            entry["uncovered"].append(c["id"])
    per_chapter = _case_counts(clauses, cases) if counts else None
    if json_out is not None:
        out = dict(by_feature)
        if per_chapter is not None:
            out = {"features": by_feature, "chapters": per_chapter}
        emit_json(json_out, json.dumps(out, sort_keys=True, indent=1))
    if not on_stdout(json_out):
        for feature, entry in sorted(by_feature.items()):
            click.echo(f"{feature:14} {entry['covered']:4}/{entry['total']:<4} covered")
            for cid in entry["uncovered"]:
                click.echo(f"    uncovered: {cid}")
        for chapter, entry in (per_chapter or {}).items():
            click.echo(f"{chapter}: {entry['clauses']} clauses, cases per clause min "
                       f"{entry['min']}, median {entry['median']:g}, "
                       f"{len(entry['below_3'])} cited by fewer than 3")
            for cid, n in entry["below_3"].items():
                click.echo(f"    {n} case{'' if n == 1 else 's'}: {cid}")
    sys.exit(1 if any(e["uncovered"] for e in by_feature.values()) else 0)


def _case_counts(clauses: list[dict], cases) -> dict[str, dict]:
    """Per catalogue chapter (its file's `meta.chapter`), how many cases cite
    each chosen clause: min, median, and the clauses fewer than three cite."""
    import statistics

    cited: dict[str, int] = {}
    for case in cases:
        for cid in set(case.clauses):
            cited[cid] = cited.get(cid, 0) + 1
    chosen = {c["id"] for c in clauses}
    out: dict[str, dict] = {}
    for path in sorted(pathlib.Path(conformance_catalogue.default_catalogue_dir()).glob("*.toml")):
        _, data = _toml.read_toml(path)
        ids = [c["id"] for c in data.get("clause", []) if c.get("id") in chosen]
        if not ids:
            continue
        numbers = [cited.get(cid, 0) for cid in ids]
        out[data.get("meta", {}).get("chapter", path.stem)] = {
            "clauses": len(ids), "min": min(numbers), "median": statistics.median(numbers),
            "below_3": {cid: n for cid, n in zip(ids, numbers) if n < 3}}
    return out


@spec.command()
@click.argument("out_dir", type=OutputPath(directory=True), default=RENDER_DIR)
def render(out_dir):
    """Write the readable form of each catalogue file to OUT_DIR/<name>.md.

    OUT_DIR defaults to docs/spec, under the current folder (the kit's own
    docs, from a checkout's root); it is created if missing.
    """
    out = pathlib.Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create this folder: {e.strerror or e}", file=out_dir) from None
    for path in sorted(pathlib.Path(conformance_catalogue.default_catalogue_dir()).glob("*.toml")):
        _, data = _toml.read_toml(path)
        meta = data.get("meta", {})
        lines = [f"# {meta.get('chapter', path.stem)}: clause catalogue", "",
                 f"Generated from `spec/{path.name}` by `forge spec render`; do not edit by hand.",
                 ""]
        section = None
        for c in data.get("clause", []):
            if c.get("section") != section:
                section = c.get("section")
                lines += [f"## {section}", ""]
            span = c.get("lines")
            where = f" (seed lines {span[0]}-{span[1]})" if span else ""
            lines.append(f"- **`{c['id']}`** [{c['feature']}]{where}: {c.get('statement', '')}")
            for s in c.get("strings", []):
                lines.append(f"  - exact: `` {s} ``")
        lines.append("")
        target = out / f"{path.stem}.md"
        write_output(str(target), "\n".join(lines))
        click.echo(f"wrote {target}")
