"""What a suite run reports: per-case results, the summary line, clause
coverage, the per-clause tally, and the text, JSON and JUnit renderings.

Statuses and the summary line's buckets (CommonMark's contract: the last
line is `N passed, N failed, N errored, N skipped`, then `, N expected
failures` when there are any; the exit code is 1 when any case failed or
errored):

    passed            -> passed
    failed            -> failed    (an expectation did not hold)
    unexpected-pass   -> failed    (the expectations file says "fail", it passed)
    errored           -> errored   (no observation, or one that breaks the schema)
    skipped           -> skipped   (a feature the implementation lacks, or "skip")
    expected-fail     -> expected failure (failed or errored, and the
                                   expectations file says "fail")

An expected failure is known and accepted, so it does not fail the run, yet
it did not pass: it is a count of its own, not a skip, in the closing line,
the JSON report (`summary.expected_fail`) and JUnit (a `<skipped>` whose
message starts `expected failure:`, and a `status` property).

Skips are not failures, and a run where every case was skipped exits 0 like
any run without a failure; the text report says why cases were skipped in
one line (`skip_line`: the features the implementation lacks, with counts)
and, when nothing ran, says so above the closing line.  The text report is
for a terminal: every control character in it (an implementation's
messages and stderr reach it) is shown as an escape (`terminal_safe`).

The JSON report is versioned (`format`, `version`; docs/report.md,
schema/report.schema.json); `write_expectations` turns a run's failures into
an expectations file (`expectations_toml`).

What does not live here: running cases (`runner`).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from forge.deferred import deferred

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import probes as engine_probes
    from forge.lifecycle import probes as lifecycle_probes
else:
    engine_probes = deferred("forge.probes")
    lifecycle_probes = deferred("forge.lifecycle.probes")

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
    EXPECTED_FAIL: EXPECTED_FAIL,
}
#: The buckets in the order the summary line and `summary` give them.
BUCKETS = (PASSED, FAILED, ERRORED, SKIPPED, EXPECTED_FAIL)
#: `format` and `version` of the JSON report (docs/report.md).
REPORT_FORMAT = "forge-conformance-report"
REPORT_VERSION = 1
#: The reason of a case an expectations file skips.
SKIPPED_BY_EXPECTATIONS = "skipped by the expectations file"
#: Statuses whose case did not run, so its clauses are not covered.
NOT_RUN = frozenset({SKIPPED})
#: Statuses that count against the clauses a case cites.
NOT_CONFORMING = frozenset({FAILED, ERRORED, EXPECTED_FAIL})
#: Characters XML 1.0 cannot carry at all (an implementation's stderr may
#: hold terminal escapes); they are replaced in the JUnit report.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
#: Problems shown per case in the text report; the JSON report has them all.
SHOW_PROBLEMS = 10
#: Skip reasons other than missing features named in the text report's skip line.
SHOW_SKIP_REASONS = 3
#: The text report's line for a run where every selected case was skipped.
NOTHING_RAN = ("no case ran: every selected case was skipped, so this run says nothing "
               "about conformance")
#: What the text report escapes (an implementation's messages and stderr
#: reach it): C0 controls but tab and newline, DEL, C1 controls, the Unicode
#: line and paragraph separators and the bidirectional overrides.
_NOT_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


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
    #: Wall seconds the case took, all its schedules together.
    duration: float = 0.0
    #: The schedules it ran, in order (None: canonical); it stops at the first failure.
    schedules: tuple[int | None, ...] = ()
    #: For a case skipped for want of features: the ones the implementation lacks.
    lacks: tuple[str, ...] = ()
    #: The probes its observations' events reached (`forge.probes.observed`).
    probes: tuple[str, ...] = ()

    @property
    def bucket(self) -> str:
        return BUCKET[self.status]

    def to_json(self) -> dict:
        out = {"id": self.case_id, "status": self.status, "clauses": list(self.clauses),
               "features": list(self.features), "problems": list(self.problems),
               "duration": round(self.duration, 6),
               "schedules": [schedule_json(s) for s in self.schedules],
               "seeds": sum(1 for s in self.schedules if s is not None),
               "probes": list(self.probes)}
        if self.status in (FAILED, ERRORED, EXPECTED_FAIL):
            out["schedule"] = schedule_name(self.seed)
        if self.diff:
            out["diff"] = self.diff
        return out


def schedule_name(seed: int | None) -> str:
    return "canonical" if seed is None else f"random seed {seed}"


def schedule_json(seed: int | None) -> str | int:
    return "canonical" if seed is None else seed


#: How `Report.stopped` begins when Ctrl-C ended the run.
INTERRUPTED = "interrupted (Ctrl-C)"


@attrs.frozen
class Report:
    """A finished suite run."""

    results: tuple[CaseResult, ...]
    #: The implementation's own description (`Adapter.describe`).
    implementation: dict = attrs.field(factory=dict)
    #: Clause coverage by feature (see `clause_coverage`), when a catalogue was given.
    coverage: dict | None = None
    #: When the run started (UTC, ISO 8601 to the second, no zone), where, and
    #: how many wall seconds it took.
    timestamp: str = "1970-01-01T00:00:00"
    hostname: str = "localhost"
    duration: float = 0.0
    #: The catalogue's clause -> feature, for the per-clause tally.
    clause_features: dict = attrs.field(factory=dict)
    #: Why the run ended before every case ran (-x, --maxfail, Ctrl-C), and
    #: how many did not: a line before the summary; None when all ran.
    stopped: str | None = None

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(BUCKETS, 0)
        for r in self.results:
            out[r.bucket] += 1
        return out

    def summary_line(self) -> str:
        c = self.counts()
        line = (f"{c[PASSED]} passed, {c[FAILED]} failed, {c[ERRORED]} errored, "
                f"{c[SKIPPED]} skipped")
        if c[EXPECTED_FAIL]:
            line += f", {c[EXPECTED_FAIL]} expected failure{'s' if c[EXPECTED_FAIL] != 1 else ''}"
        return line

    def skip_line(self) -> str | None:
        """Why cases were skipped, in one line (None when none was):
        `281 skipped: the implementation lacks store (118 cases), models
        (101), ...; skipped by the expectations file (2)`.  A case lacking
        several features counts under each; other reasons count as given,
        the most frequent first, at most `SHOW_SKIP_REASONS` of them."""
        skipped = [r for r in self.results if r.status == SKIPPED]
        if not skipped:
            return None
        lacking: Counter[str] = Counter()
        other: Counter[str] = Counter()
        for r in skipped:
            if r.lacks:
                lacking.update(r.lacks)
            else:
                other[r.problems[0] if r.problems else "no reason given"] += 1
        parts = []
        if lacking:
            ranked = sorted(lacking.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append("the implementation lacks " + ", ".join(
                f"{name} ({n}{' case' + ('s' if n != 1 else '') if i == 0 else ''})"
                for i, (name, n) in enumerate(ranked)))
        ranked = sorted(other.items(), key=lambda kv: (-kv[1], kv[0]))
        parts.extend(f"{reason} ({n})" for reason, n in ranked[:SHOW_SKIP_REASONS])
        if len(ranked) > SHOW_SKIP_REASONS:
            rest = ranked[SHOW_SKIP_REASONS:]
            parts.append(f"{len(rest)} more reasons ({sum(n for _, n in rest)}; -v shows each)")
        return f"{len(skipped)} skipped: " + "; ".join(parts)

    def probes(self) -> dict[str, int]:
        """Each probe an observation's events show (`forge.probes.OBSERVED`)
        and how many cases reached it, 0 for one no case reached; with
        lifecycle cases, each lifecycle race outcome their observations show
        (`forge.lifecycle.probes.OBSERVED`) too, and the Tasks probes only
        if a Tasks case ran."""
        lifecycle = ["lifecycle" in r.features for r in self.results]
        engine = not all(lifecycle) or not lifecycle
        out = dict.fromkeys(engine_probes.OBSERVED if engine else (), 0)
        if any(lifecycle):
            out.update(dict.fromkeys(lifecycle_probes.OBSERVED, 0))
        for r in self.results:
            for name in r.probes:
                if name in out:
                    out[name] += 1
        return out

    def probe_line(self) -> str | None:
        """The probes the cases reached, with counts, and those none reached
        (None when no case ran)."""
        if not any(r.schedules for r in self.results):
            return None
        counts = self.probes()
        line = "probes reached: " + (", ".join(f"{n} {c}" for n, c in counts.items() if c)
                                     or "none")
        missed = [n for n, c in counts.items() if not c]
        return line + (f"; never reached: {', '.join(missed)}" if missed else "")

    def by_clause(self) -> list[dict]:
        """Per clause a case cites: how many cases, and how they went, by bucket."""
        out: dict[str, dict] = {}
        for r in self.results:
            for cid in r.clauses:
                entry = out.get(cid)
                if entry is None:
                    entry = out[cid] = {"id": cid, "feature": self.clause_features.get(cid),
                                        "cases": 0, **dict.fromkeys(_JSON_BUCKETS.values(), 0)}
                entry["cases"] += 1
                entry[_JSON_BUCKETS[r.bucket]] += 1
        return [out[cid] for cid in sorted(out)]

    @property
    def exit_code(self) -> int:
        c = self.counts()
        return 1 if c[FAILED] or c[ERRORED] else 0

    # -- renderings
    def render_text(self, verbose: bool = False, quiet: bool = False) -> str:
        """Every failure and error with its problems and diff, the clauses
        that did not pass (every clause with `verbose`; none with `quiet`),
        the summary line last."""
        blocks = []
        for r in self.results:
            if r.status in (FAILED, ERRORED, UNEXPECTED_PASS) or verbose:
                blocks.append(_text_block(r))
        clauses = self.by_clause()
        shown = [c for c in clauses if verbose or c["failed"] or c["errored"]
                 or c["expected_fail"]] if not quiet else []
        if shown:
            blocks.append("per clause (cases: passed/failed/errored/skipped/expected failures):")
            blocks.extend(f"  {c['id']}  {c['cases']}: {c['passed']}/{c['failed']}/"
                          f"{c['errored']}/{c['skipped']}/{c['expected_fail']}" for c in shown)
        if clauses and not quiet:
            clean = sum(1 for c in clauses if c["passed"] == c["cases"])
            unrun = sum(1 for c in clauses if c["skipped"] == c["cases"])
            blocks.append(f"{len(clauses)} clauses cited: {clean} passed in every case, "
                          f"{len(clauses) - clean - unrun} not, {unrun} only skipped")
        probes = self.probe_line()
        if probes is not None:
            blocks.append(probes)
        skips = self.skip_line()
        if skips is not None:
            blocks.append(skips)
        if self.results and all(r.status == SKIPPED for r in self.results):
            blocks.append(NOTHING_RAN)
        if self.stopped is not None:
            blocks.append(self.stopped)
        blocks.append(self.summary_line())
        return terminal_safe("\n".join(blocks) + "\n")

    def to_json(self) -> dict:
        return {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "implementation": self.implementation,
            "timestamp": self.timestamp,
            "hostname": self.hostname,
            "duration": round(self.duration, 6),
            "summary": {_JSON_BUCKETS[b]: n for b, n in self.counts().items()},
            "cases": [r.to_json() for r in self.results],
            "clauses": self.by_clause(),
            "coverage": self.coverage,
            "probes": self.probes(),
            **({"stopped": self.stopped} if self.stopped is not None else {}),
        }

    def to_junit(self) -> str:
        """JUnit XML valid against schema/junit.xsd (docs/report.md)."""
        c = self.counts()
        suite = ET.Element("testsuite", name="forge conformance", tests=str(len(self.results)),
                           failures=str(c[FAILED]), errors=str(c[ERRORED]),
                           skipped=str(c[SKIPPED] + c[EXPECTED_FAIL]),
                           time=_seconds(self.duration), timestamp=self.timestamp,
                           hostname=_xml_safe(self.hostname) or "localhost")
        props = ET.SubElement(suite, "properties")
        for name, value in (("implementation", self.implementation.get("name", "")),
                            ("report.version", str(REPORT_VERSION)),
                            ("expected_failures", str(c[EXPECTED_FAIL]))):
            ET.SubElement(props, "property", name=name, value=_xml_safe(str(value)))
        for r in self.results:
            group, _, name = r.case_id.rpartition("/")
            case = ET.SubElement(suite, "testcase", name=name, classname=group or "cases",
                                 time=_seconds(r.duration))
            props = ET.SubElement(case, "properties")
            pairs = [("clause", cid) for cid in r.clauses]
            pairs += [("feature", f) for f in r.features]
            pairs += [("status", r.status),
                      ("schedules", " ".join(str(schedule_json(s)) for s in r.schedules))]
            for key, value in pairs:
                ET.SubElement(props, "property", name=key, value=_xml_safe(value))
            first = _xml_safe(r.problems[0] if r.problems else r.status)
            body = _xml_safe(_details(r))
            if r.bucket == FAILED:
                ET.SubElement(case, "failure", message=first, type=r.status).text = body
            elif r.bucket == ERRORED:
                ET.SubElement(case, "error", message=first, type=r.status).text = body
            elif r.bucket == SKIPPED:
                ET.SubElement(case, "skipped", message=first)
            elif r.bucket == EXPECTED_FAIL:
                ET.SubElement(case, "skipped", message="expected failure: " + first)
        root = ET.Element("testsuites", name="forge conformance", tests=str(len(self.results)),
                          failures=str(c[FAILED]), errors=str(c[ERRORED]),
                          skipped=str(c[SKIPPED] + c[EXPECTED_FAIL]),
                          time=_seconds(self.duration))
        root.append(suite)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"

    def expectations_toml(self) -> str:
        """An expectations file that accepts this run: every case that failed
        or errored (or was an expected failure) as "fail", every case the
        expectations file skipped as "skip"; nothing for cases that passed."""
        lines = ["# Known results, written by `forge conformance --write-expectations`.",
                 "# \"fail\": fails today, an expected failure; \"skip\": not run.", ""]
        for r in sorted(self.results, key=lambda r: r.case_id):
            if r.status in (FAILED, ERRORED, EXPECTED_FAIL):
                lines.append(f"{json.dumps(r.case_id, ensure_ascii=False)} = \"fail\"")
            elif r.status == SKIPPED and r.problems == (SKIPPED_BY_EXPECTATIONS,):
                lines.append(f"{json.dumps(r.case_id, ensure_ascii=False)} = \"skip\"")
        return "\n".join(lines) + "\n"


#: Bucket -> its key in the JSON report.
_JSON_BUCKETS = {PASSED: "passed", FAILED: "failed", ERRORED: "errored", SKIPPED: "skipped",
                 EXPECTED_FAIL: "expected_fail"}


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


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
    # Split at newlines only: a CR or another separator in an implementation's
    # text stays in its line, for `terminal_safe` to show as an escape.
    details = _details(r, limit=SHOW_PROBLEMS)
    if details:
        lines.extend("  " + line for line in details.split("\n"))
    return "\n".join(lines) + "\n"


def _details(r: CaseResult, limit: int | None = None) -> str:
    shown = r.problems if limit is None else r.problems[:limit]
    lines = list(shown)
    if len(r.problems) > len(shown):
        lines.append(f"... and {len(r.problems) - len(shown)} more")
    if r.diff:
        lines.extend(r.diff.split("\n"))
    return "\n".join(lines)


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on (ESC, NUL, CR, ...)
    written as a `\\xNN` or `\\uNNNN` escape; newlines and tabs stay."""
    return _NOT_TERMINAL.sub(_escape, text)


def _escape(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def dumps(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
