"""What a suite run reports: per-case results, the summary line, clause
coverage, and the text, JSON and JUnit renderings.

Statuses and the summary line's four buckets (CommonMark's contract: the
last line is `N passed, N failed, N errored, N skipped`, and the exit code
is 1 when any case failed or errored):

    passed            -> passed
    failed            -> failed    (an expectation did not hold)
    unexpected-pass   -> failed    (the expectations file says "fail", it passed)
    errored           -> errored   (no observation: crash, hang, garbage, engine bug)
    skipped           -> skipped   (a feature the implementation lacks, or "skip")
    expected-fail     -> skipped   (failed or errored, and the expectations file says "fail")

Expected failures are counted with the skips because they are known and
accepted, so they must not fail the run, yet they did not pass; the text
report names them on a line of their own.

What does not live here: running cases (`runner`).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

import attrs

PASSED = "passed"
FAILED = "failed"
ERRORED = "errored"
SKIPPED = "skipped"
EXPECTED_FAIL = "expected-fail"
UNEXPECTED_PASS = "unexpected-pass"

BUCKET = {
    PASSED: PASSED,
    FAILED: FAILED,
    UNEXPECTED_PASS: FAILED,
    ERRORED: ERRORED,
    SKIPPED: SKIPPED,
    EXPECTED_FAIL: SKIPPED,
}
#: Statuses whose case did not run, so its clauses are not covered.
NOT_RUN = frozenset({SKIPPED})
#: Statuses that count against the clauses a case cites.
NOT_CONFORMING = frozenset({FAILED, ERRORED, EXPECTED_FAIL})
#: Characters XML 1.0 cannot carry at all (an implementation's stderr may
#: hold terminal escapes); they are replaced in the JUnit report.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
#: Problems shown per case in the text report; the JSON report has them all.
SHOW_PROBLEMS = 10


@attrs.frozen
class CaseResult:
    """How one case went against one implementation."""

    case_id: str
    status: str = attrs.field(validator=attrs.validators.in_(BUCKET))
    clauses: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    #: Mismatch lines (failed), or the reason (errored, skipped, unexpected pass).
    problems: tuple[str, ...] = ()
    #: Unified diff of expected vs observed, for failures.
    diff: str = ""
    #: The schedule the problem showed on: None is the canonical schedule.
    seed: int | None = None

    @property
    def bucket(self) -> str:
        return BUCKET[self.status]

    def to_json(self) -> dict:
        out = {"id": self.case_id, "status": self.status, "clauses": list(self.clauses),
               "features": list(self.features), "problems": list(self.problems)}
        if self.status in (FAILED, ERRORED, EXPECTED_FAIL):
            out["schedule"] = schedule_name(self.seed)
        if self.diff:
            out["diff"] = self.diff
        return out


def schedule_name(seed: int | None) -> str:
    return "canonical" if seed is None else f"random seed {seed}"


@attrs.frozen
class Report:
    """A finished suite run."""

    results: tuple[CaseResult, ...]
    #: The implementation's own description (`Adapter.describe`).
    implementation: dict = attrs.field(factory=dict)
    #: Clause coverage by feature (see `clause_coverage`), when a catalogue was given.
    coverage: dict | None = None

    def counts(self) -> dict[str, int]:
        out = {PASSED: 0, FAILED: 0, ERRORED: 0, SKIPPED: 0}
        for r in self.results:
            out[r.bucket] += 1
        return out

    def summary_line(self) -> str:
        c = self.counts()
        return f"{c[PASSED]} passed, {c[FAILED]} failed, {c[ERRORED]} errored, {c[SKIPPED]} skipped"

    @property
    def exit_code(self) -> int:
        c = self.counts()
        return 1 if c[FAILED] or c[ERRORED] else 0

    # -- renderings
    def render_text(self, verbose: bool = False) -> str:
        """Every failure and error with its problems and diff; the summary line last."""
        blocks = []
        for r in self.results:
            if r.status in (FAILED, ERRORED, UNEXPECTED_PASS) or verbose:
                blocks.append(_text_block(r))
        expected = sum(1 for r in self.results if r.status == EXPECTED_FAIL)
        if expected:
            blocks.append(f"{expected} expected failure{'s' if expected != 1 else ''} "
                          "(listed in the expectations file)")
        blocks.append(self.summary_line())
        return "\n".join(blocks) + "\n"

    def to_json(self) -> dict:
        return {
            "implementation": self.implementation,
            "summary": self.counts(),
            "cases": [r.to_json() for r in self.results],
            "coverage": self.coverage,
        }

    def to_junit(self) -> str:
        c = self.counts()
        suite = ET.Element("testsuite", name="forge conformance", tests=str(len(self.results)),
                           failures=str(c[FAILED]), errors=str(c[ERRORED]),
                           skipped=str(c[SKIPPED]))
        for r in self.results:
            group, _, name = r.case_id.rpartition("/")
            case = ET.SubElement(suite, "testcase", classname=group or "cases", name=name)
            first = _xml_safe(r.problems[0] if r.problems else r.status)
            body = _xml_safe(_details(r))
            if r.bucket == FAILED:
                ET.SubElement(case, "failure", message=first).text = body
            elif r.bucket == ERRORED:
                ET.SubElement(case, "error", message=first).text = body
            elif r.bucket == SKIPPED:
                label = "expected failure: " if r.status == EXPECTED_FAIL else ""
                ET.SubElement(case, "skipped", message=label + first)
        root = ET.Element("testsuites", name="forge conformance")
        root.append(suite)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def clause_coverage(results: Iterable[CaseResult], catalogue: Iterable[dict]) -> dict:
    """Per feature: how many clauses, how many a case that ran cites, which not,
    and which are cited by a case that did not pass."""
    run: set[str] = set()
    failing: set[str] = set()
    for r in results:
        if r.status not in NOT_RUN:
            run.update(r.clauses)
        if r.status in NOT_CONFORMING:
            failing.update(r.clauses)
    out: dict[str, dict] = {}
    for clause in catalogue:
        entry = out.setdefault(clause["feature"], {"total": 0, "covered": 0, "uncovered": [],
                                                   "failing": []})
        entry["total"] += 1
        cid = clause["id"]
        if cid in run:
            entry["covered"] += 1
        else:
            entry["uncovered"].append(cid)
        if cid in failing:
            entry["failing"].append(cid)
    return dict(sorted(out.items()))


def _text_block(r: CaseResult) -> str:
    """One line for a pass or a skip; a block (problems, diff, blank line) otherwise."""
    reason = f": {r.problems[0]}" if r.problems else ""
    if r.status == PASSED:
        return f"PASS {r.case_id}"
    if r.status == SKIPPED:
        return f"SKIP {r.case_id}{reason}"
    if r.status == EXPECTED_FAIL:
        return f"EXPECTED FAIL {r.case_id}{reason}"
    head = {FAILED: "FAIL", ERRORED: "ERROR", UNEXPECTED_PASS: "UNEXPECTED PASS"}[r.status]
    where = "" if r.status == UNEXPECTED_PASS else f" [{schedule_name(r.seed)} schedule]"
    lines = [f"{head} {r.case_id}{where}", "  clauses: " + ", ".join(r.clauses)]
    lines.extend("  " + line for line in _details(r, limit=SHOW_PROBLEMS).splitlines())
    return "\n".join(lines) + "\n"


def _details(r: CaseResult, limit: int | None = None) -> str:
    shown = r.problems if limit is None else r.problems[:limit]
    lines = list(shown)
    if len(r.problems) > len(shown):
        lines.append(f"... and {len(r.problems) - len(shown)} more")
    if r.diff:
        lines.extend(r.diff.splitlines())
    return "\n".join(lines)


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def dumps(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
