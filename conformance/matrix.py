"""The cross-engine matrix: several conformance runs side by side, as one static HTML page.

In the spirit of wpt.fyi and Bowtie: one column per engine (a run of
`forge conformance`, or a saved `--json` report of one), one row per case,
the rows grouped by clause group (a cited clause id without its last part:
`tasks.cancel`, `tasks.concurrency`; a case sits under the group of its
first clause), each cell the case's status on that engine - pass, fail,
error, skip, or none when the engine's run did not select the case.  Above
the rows: per group and engine, passed out of run; per engine, its pass
share; and the **interop score**, the share of the cases every engine
selected that pass on every engine (an expected failure counts as not
passing).

`column(report_json)` reads one JSON report (docs/report.md); `render(columns)`
is the page: self-contained (no script, no fetch), every engine's words
escaped.  What does not live here: running the suite (`runner`), the JSON
report itself (`report`), the command's flags (`cli`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import attrs

#: A status -> the cell's class and the word shown.
CELLS = {
    "passed": ("pass", "pass"),
    "failed": ("fail", "fail"),
    "unexpected-pass": ("fail", "unexpected pass"),
    "errored": ("error", "error"),
    "expected-fail": ("xfail", "expected fail"),
    "skipped": ("skip", "skip"),
}
#: The cell of a case an engine's run did not select.
NONE = ("none", "-")


@attrs.frozen
class Column:
    """One engine's run: its name, and each case's (status, clauses)."""

    name: str
    cases: dict[str, tuple[str, tuple[str, ...]]]
    #: Where the column came from (a report's path, or "this run").
    source: str = ""


def column(report: Any, source: str = "report") -> Column:
    """The column of a JSON report (`forge conformance --json`).

    Raises:
        ValueError: naming `source`, when it is not such a report.
    """
    if not isinstance(report, dict) or report.get("format") != "forge-conformance-report":
        raise ValueError(f"{source}: not a forge conformance JSON report (its `format` is not "
                         "\"forge-conformance-report\")")
    cases = report.get("cases")
    if not isinstance(cases, list):
        raise ValueError(f"{source}: `cases` is not a list")
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for i, case in enumerate(cases):
        if (not isinstance(case, dict) or not isinstance(case.get("id"), str)
                or case.get("status") not in CELLS or not isinstance(case.get("clauses"), list)):
            raise ValueError(f"{source}: cases[{i}] has no string `id`, known `status` and "
                             "list of `clauses`")
        out[case["id"]] = (case["status"], tuple(str(c) for c in case["clauses"]))
    implementation = report.get("implementation")
    name = implementation.get("name") if isinstance(implementation, dict) else None
    return Column(name if isinstance(name, str) and name else source, out, source)


def group_of(clauses: Sequence[str]) -> str:
    """The clause group a case sits under: its first clause without the last part."""
    if not clauses:
        return "(no clause)"
    first = clauses[0]
    return first.rsplit(".", 1)[0] if "." in first else first


@attrs.frozen
class Matrix:
    columns: tuple[Column, ...]
    #: Clause group -> its case ids, sorted.
    groups: dict[str, list[str]]
    #: Cases every engine selected, and those of them passing on every engine.
    shared: int
    interop: int

    @property
    def score(self) -> float:
        return self.interop / self.shared if self.shared else 0.0


def _named_apart(columns: Sequence[Column], sources: Sequence[str]) -> list[Column]:
    """`columns`, an engine name two columns share followed by its source."""
    names = [c.name for c in columns]
    return [attrs.evolve(c, name=f"{c.name} ({source})") if names.count(c.name) > 1 else c
            for c, source in zip(columns, sources)]


def build(columns: Sequence[Column]) -> Matrix:
    clauses: dict[str, tuple[str, ...]] = {}
    for col in columns:
        for case_id, (_, cited) in col.cases.items():
            clauses.setdefault(case_id, cited)
    groups: dict[str, list[str]] = {}
    for case_id in sorted(clauses):
        groups.setdefault(group_of(clauses[case_id]), []).append(case_id)
    shared = [c for c in clauses if all(c in col.cases for col in columns)]
    interop = [c for c in shared if all(col.cases[c][0] == "passed" for col in columns)]
    return Matrix(tuple(columns), dict(sorted(groups.items())), len(shared), len(interop))


def _tally(col: Column, ids: Sequence[str]) -> tuple[int, int]:
    """(passed, run) of `ids` on `col`: a skipped or unselected case is not run."""
    statuses = [col.cases[i][0] for i in ids if i in col.cases]
    ran = [s for s in statuses if s != "skipped"]
    return sum(1 for s in ran if s == "passed"), len(ran)


def _share(passed: int, ran: int) -> str:
    return f"{passed}/{ran}" + (f" ({100 * passed / ran:.1f}%)" if ran else "")


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
th.engine { writing-mode: horizontal-tb; }
td.pass { background: #cfeccf; } td.fail { background: #f5c6c6; }
td.error { background: #f3d19c; } td.skip { background: #e6e6e6; color: #666; }
td.xfail { background: #f0e2f5; } td.none { color: #aaa; }
tr.group th { background: #f4f4f8; }
.score { font-size: 1.3em; }
"""


def render(columns: Sequence[Column], title: str = "forge conformance: cross-engine matrix") -> str:
    """The static HTML page of `columns` (see the module's docstring)."""
    matrix = build(_named_apart(columns, [c.source for c in columns]))
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(title)}</title><style>{STYLE}</style></head><body>",
           f"<h1>{e(title)}</h1>",
           f'<p class="score" id="interop">Interop score: <b>{matrix.score:.1%}</b> - '
           f"{matrix.interop} of the {matrix.shared} cases every run selected pass on every "
           "engine.</p>"]
    head = "".join(f'<th class="engine">{e(col.name)}</th>' for col in matrix.columns)
    out.append('<h2>By engine</h2><table id="engines"><tr><th>engine</th><th>passed / run '
               "(skipped not counted)</th></tr>")
    every = [c for ids in matrix.groups.values() for c in ids]
    for col in matrix.columns:
        out.append(f"<tr><td>{e(col.name)}</td><td>{_share(*_tally(col, every))}</td></tr>")
    out.append("</table>")
    out.append(f'<h2>By clause group</h2><table id="groups"><tr><th>clause group</th>{head}</tr>')
    for group, ids in matrix.groups.items():
        cells = "".join(f"<td>{_share(*_tally(col, ids))}</td>" for col in matrix.columns)
        out.append(f'<tr><td><a href="#g-{e(group)}">{e(group)}</a></td>{cells}</tr>')
    out.append("</table>")
    out.append(f'<h2>By case</h2><table id="cases"><tr><th>case</th>{head}</tr>')
    for group, ids in matrix.groups.items():
        out.append(f'<tr class="group" id="g-{e(group)}"><th colspan="{len(columns) + 1}">'
                   f"{e(group)}</th></tr>")
        for case_id in ids:
            cells = []
            for col in matrix.columns:
                status = col.cases.get(case_id, (None, ()))[0]
                cls, word = CELLS.get(status, NONE) if status else NONE
                cells.append(f'<td class="{cls}">{e(word)}</td>')
            out.append(f'<tr class="case"><td>{e(case_id)}</td>{"".join(cells)}</tr>')
    out.append("</table></body></html>")
    return "\n".join(out) + "\n"
