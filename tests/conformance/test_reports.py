"""The suite's reports as CI reads them (conformance.report, docs/report.md).

JUnit XML validates against the shipped strict XSD (conformance/schema/
junit.xsd, through xmlschema) and reads back through junitparser with its
times, timestamp, hostname and per-case clause properties; the JSON report
validates against report.schema.json; expected failures are their own count
everywhere; --write-expectations writes a file that makes the same run pass.
"""

from __future__ import annotations

from pathlib import Path

import json
import os
import shutil

import junitparser
import pytest
import xmlschema
from click.testing import CliRunner

from forge.conformance import schemas
from forge.conformance.case import DEFAULT_CASES_DIR
from forge.conformance.report import (
    ERRORED,
    PASSED,
    SKIPPED,
    SKIPPED_BY_EXPECTATIONS,
    CaseResult,
    Report,
)
from forge.cli import main

XSD = schemas.SCHEMA_DIR / "junit.xsd"


@pytest.fixture
def cases(tmp_path):
    """The shipped example cases, one of them made to fail and one to error."""
    root = tmp_path / "cases"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", root / "examples")
    two = root / "examples" / "two-tasks.toml"
    two.write_text(two.read_text().replace('result = "alpha text + beta text"',
                                           'result = "beta text + alpha text"'))
    return root


def forge(*args):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def reports(cases, tmp_path):
    """One run's JUnit and JSON reports and its output, with one expected failure."""
    known = tmp_path / "known.toml"
    known.write_text('[examples]\nleak-check = "fail"\nchecked-join = "skip"\n')
    leak = cases / "examples" / "leak-check.toml"
    leak.write_text(leak.read_text().replace('[expect]\noutcome = "ok"', '[expect]\noutcome = "failed"'))
    junit, report = tmp_path / "r.xml", tmp_path / "r.json"
    result = forge("conformance", "--cases", str(cases), "--expectations", str(known),
                   "--junit", str(junit), "--json", str(report))
    return result, junit.read_text(), json.loads(report.read_text())


def test_junit_validates_against_the_shipped_strict_xsd(reports):
    _, xml, _ = reports
    xmlschema.XMLSchema(str(XSD)).validate(xml)


def test_the_xsd_is_strict_about_what_ci_needs(reports):
    """Without time, timestamp or hostname, or with a bad time, the XML is refused."""
    _, xml, _ = reports
    schema = xmlschema.XMLSchema(str(XSD))
    for broken in (xml.replace(' hostname="', ' host="'),
                   xml.replace(' timestamp="', ' stamp="'),
                   xml.replace('<testcase name="two-tasks" classname="examples" time="',
                               '<testcase name="two-tasks" classname="examples" t="'),
                   xml.replace('time="0.', 'time="-0.', 1)):
        assert broken != xml
        assert not schema.is_valid(broken)


def test_junitparser_reads_times_hostname_and_clause_properties(reports, tmp_path):
    _, xml, _ = reports
    path = tmp_path / "again.xml"
    path.write_text(xml)
    suite = next(iter(junitparser.JUnitXml.fromfile(str(path))))
    assert suite.hostname and suite.timestamp and suite.time >= 0
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 1, 0, 2)
    by_name = {case.name: case for case in suite}
    two = by_name["two-tasks"]
    assert two.time >= 0 and two.classname == "examples"
    assert isinstance(two.result[0], junitparser.Failure)
    props = {(p.get("name"), p.get("value")) for p in two._elem.find("properties")}
    assert ("clause", "tasks.glance.example-two-tasks") in props
    assert ("status", "failed") in props and ("schedules", "canonical") in props
    leak = by_name["leak-check"]
    assert isinstance(leak.result[0], junitparser.Skipped)
    assert leak.result[0].message.startswith("expected failure: ")
    suite_props = {p.name: p.value for p in suite.properties()}
    assert suite_props["expected_failures"] == "1"


def test_expected_failures_are_their_own_count(reports):
    result, _, data = reports
    assert result.exit_code == 1      # two-tasks fails
    assert result.stdout.splitlines()[-1] == ("0 passed, 1 failed, 0 errored, 1 skipped, "
                                              "1 expected failure")
    assert data["summary"] == {"passed": 0, "failed": 1, "errored": 0, "skipped": 1,
                               "expected_fail": 1}


def test_the_json_report_is_versioned_and_validates(reports):
    _, _, data = reports
    assert schemas.violations("report", data) == []
    assert (data["format"], data["version"]) == ("forge-conformance-report", 1)
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["examples/two-tasks"]["schedules"] == ["canonical"]
    assert by_id["examples/checked-join"]["schedules"] == []
    clause = next(c for c in data["clauses"] if c["id"] == "tasks.glance.example-two-tasks")
    assert clause["cases"] == clause["failed"] == 1


def test_an_any_schedule_case_reports_every_seed_it_ran(tmp_path):
    report = tmp_path / "r.json"
    result = forge("conformance", "-k", "^examples/two-tasks$", "--json", str(report))
    assert result.exit_code == 0, result.output
    (case,) = json.loads(report.read_text())["cases"]
    assert case["schedules"] == ["canonical", *range(1, case["seeds"] + 1)] and case["seeds"] > 0
    assert case["duration"] > 0


def test_write_expectations_turns_failures_into_a_file_the_next_run_passes_with(cases, tmp_path):
    out = tmp_path / "expect.toml"
    first = forge("conformance", "--cases", str(cases), "--write-expectations", str(out))
    assert first.exit_code == 1
    assert '"examples/two-tasks" = "fail"' in out.read_text()
    again = forge("conformance", "--cases", str(cases), "--expectations", str(out))
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[-1] == ("2 passed, 0 failed, 0 errored, 0 skipped, "
                                             "1 expected failure")


def test_reports_to_standard_output_leave_the_summary_on_stderr(cases):
    result = forge("conformance", "--cases", str(cases), "--junit", "-")
    xmlschema.XMLSchema(str(XSD)).validate(result.stdout)
    assert result.stderr.splitlines()[-1] == "2 passed, 1 failed, 0 errored, 0 skipped"


def test_unknown_names_are_bad_input_with_a_suggestion():
    result = forge("conformance", "--features", "tasksx")
    assert result.exit_code == 2
    assert "no case needs `tasksx` (did you mean `tasks`?)" in result.stderr
    result = forge("spec", "coverage", "--feature", "fanot")
    assert result.exit_code == 2
    assert "(did you mean `fanout`?)" in result.stderr


def test_spec_coverage_exit_code_follows_the_chosen_features(tmp_path):
    """0 when every clause of the chosen features has a case, 1 when one has none."""
    assert forge("spec", "coverage").exit_code == 0
    assert forge("spec", "coverage", "--feature", "fanout").exit_code == 0
    few = tmp_path / "few"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", few / "examples")
    partial = forge("spec", "coverage", "--cases", str(few), "--feature", "tasks")
    assert partial.exit_code == 1 and "uncovered: " in partial.stdout


def test_spec_coverage_counts_the_cases_citing_each_clause(tmp_path):
    """--counts gives min, median and the clauses fewer than three cases cite, per
    chapter; with the three example cases every cited clause has one case."""
    few = tmp_path / "few"
    shutil.copytree(DEFAULT_CASES_DIR / "examples", few / "examples")
    result = forge("spec", "coverage", "--cases", str(few), "--feature", "tasks", "--counts",
                   "--json")
    tasks = json.loads(result.stdout)["chapters"]["Tasks"]
    assert tasks["min"] == 0 and tasks["median"] == 0
    assert len(tasks["below_3"]) == tasks["clauses"]
    assert tasks["below_3"]["tasks.glance.example-two-tasks"] == 1
    text = forge("spec", "coverage", "--counts").stdout
    assert "Tasks: 271 clauses, cases per clause min " in text


def test_only_one_report_may_go_to_standard_output():
    """`--json - --junit -` wrote both reports, mixed, to stdout: refused before
    the run, naming the second flag (kit: reports.outputs)."""
    result = forge("conformance", "-k", "^examples/two-tasks$", "--json", "-", "--junit", "-")
    assert result.exit_code == 2
    assert result.stderr == ("forge: --junit: standard output (-) already takes the --json "
                             "report; give --junit a file\n")
    assert result.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_the_system_refuses_names_its_flag_and_keeps_the_summary(tmp_path,
                                                                          monkeypatch):
    """`--json /proc/version` lost the text summary and `--junit` named no flag: a
    report that cannot be written is refused naming the flag and the file, after
    the summary, with every other report still written (kit: reports.outputs).
    The up-front check would refuse /dev/full before the run; it is switched
    off here to stand for a disk that fills while the suite runs."""
    from forge.commands import params

    monkeypatch.setattr(params, "_open_problem", lambda path: None)
    junit = tmp_path / "r.xml"
    result = forge("conformance", "-k", "^examples/two-tasks$", "--json", "/dev/full",
                   "--junit", str(junit))
    assert result.exit_code == 2
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 errored, 0 skipped"
    refusals = [line for line in result.stderr.splitlines() if line.startswith("forge: ")]
    assert refusals == ["forge: --json: /dev/full: cannot write this file: "
                        "No space left on device"]
    assert "<testsuite" in junit.read_text()


def result(case_id, status=PASSED, problems=(), lacks=()):
    return CaseResult(case_id, status, ("c",), problems=problems, lacks=lacks)


def test_the_summary_groups_skips_by_what_the_implementation_lacks():
    """Skip reasons showed only with -v: one line before the closing one counts
    the skips by missing feature, most first, then other reasons (kit: reports.skips)."""
    report = Report((
        result("g/a"),
        result("g/b", SKIPPED, ["implementation lacks features `store`, `models`"],
               ("store", "models")),
        result("g/c", SKIPPED, ["implementation lacks feature `store`"], ("store",)),
        result("g/d", SKIPPED, [SKIPPED_BY_EXPECTATIONS]),
    ))
    lines = report.render_text().splitlines()
    assert lines[-2:] == [
        "3 skipped: the implementation lacks store (2 cases), models (1); "
        "skipped by the expectations file (1)",
        "1 passed, 0 failed, 0 errored, 3 skipped"]
    assert Report((result("g/a"),)).skip_line() is None


def test_a_run_where_every_case_was_skipped_says_so():
    """0 passed / 445 skipped looked green: the text says nothing ran, and the
    exit code stays 0, as docs/report.md says (kit: reports.skips)."""
    report = Report((result("g/b", SKIPPED, ["implementation lacks feature `store`"],
                            ("store",)),))
    lines = report.render_text().splitlines()
    assert lines[-2] == ("no case ran: every selected case was skipped, so this run says "
                         "nothing about conformance")
    assert report.exit_code == 0


def test_the_text_report_escapes_control_characters():
    """An implementation's error message reached the terminal raw, NUL and ESC
    included; the JSON report keeps it as sent (kit: reports.terminal)."""
    raw = "cannot\x00 do\x1b[2J that\r\u202e"
    report = Report((result("g/a", ERRORED, [f"the implementation reported an error: {raw}"]),))
    text = report.render_text()
    assert "cannot\\x00 do\\x1b[2J that\\x0d\\u202e" in text
    assert not any(c in text for c in "\x00\x1b\r\u202e")
    assert report.to_json()["cases"][0]["problems"] == [
        f"the implementation reported an error: {raw}"]


def test_a_report_file_the_os_refuses_is_refused_before_the_suite_runs():
    """/dev/full takes no byte: the up-front check asks the OS (an empty
    append) and refuses it, naming the flag, before any case runs
    (kit: reports.outputs)."""
    result = forge("conformance", "-k", "^examples/two-tasks$", "--json", "/dev/full")
    assert result.exit_code == 2
    assert "passed" not in result.stdout
    assert "--json cannot write '/dev/full'" in result.stderr


def test_the_report_counts_the_probes_the_cases_reached():
    """Text and JSON list each probe an observation's events show, how many
    cases reached it, and those none did (tasks.stop.unstarted-never-runs,
    tasks.reasons.owner-returned, tasks.model.notices.queued-for-owner)."""
    from forge.conformance.case import load_cases
    from forge.conformance.adapters import InProcessAdapter
    from forge.conformance.runner import run_suite
    from forge.probes import OBSERVED

    root = Path(__file__).resolve().parents[2] / "conformance" / "cases"
    cases = [c for c in load_cases(root) if c.id.startswith(("lifetimes/", "model-tasks/"))]
    report = run_suite(cases, InProcessAdapter)
    counts = report.probes()
    assert list(counts) == list(OBSERVED)
    assert counts["cancel-queued"] > 0 and counts["abandon-owner-returned"] > 0
    assert counts["notice-delivered"] > 0
    assert report.to_json()["probes"] == counts
    assert "probes reached: cancel-queued " in report.render_text()
