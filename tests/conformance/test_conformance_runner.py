"""The runner's contract with a fake adapter (conformance.runner, conformance.report)."""

import json
import xml.etree.ElementTree as ET

import pytest

from forge.conformance.adapters import Adapter, AdapterError
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.report import clause_coverage
from forge.conformance.runner import load_expectations, run_case, run_suite, select
from forge.errors import InputError


def case(case_id, result="right", *, flags=(), features=("tasks",), clauses=("c.one",),
         seeds=3, operations=None):
    return Case(id=case_id, path=f"{case_id}.toml", clauses=tuple(clauses),
                harness=HarnessSpec(seeds=seeds), expect={"outcome": "ok", "result": result},
                features=tuple(features), flags=tuple(flags),
                prompt=None if operations else f"# {case_id}", operations=operations)


class FakeAdapter(Adapter):
    """Answers "right" except where told; records every (case, seed) it ran."""

    def __init__(self, wrong_on=(), broken=(), features=("tasks",)):
        self.wrong_on = set(wrong_on)      # (case_id, seed) pairs answered wrongly
        self.broken = set(broken)          # case ids that raise AdapterError
        self._features = frozenset(features)
        self.runs = []

    def describe(self):
        return {"name": "fake", "features": sorted(self._features)}

    def features(self):
        return self._features

    def run(self, c, seed):
        self.runs.append((c.id, seed))
        if c.id in self.broken:
            raise AdapterError("implementation crashed", ["Traceback ...", "Boom"])
        result = "wrong" if (c.id, seed) in self.wrong_on else "right"
        if c.operations is not None:
            return {"outcome": "ok", "result": result, "results": [], "tasks": {},
                    "reports": [], "error": None}
        return {"outcome": "ok", "result": result, "error": None, "logs": [], "events": [],
                "tasks": {}, "messages": {}, "store": {}, "virtual_time": 0.0}


def test_summary_line_and_exit_code_when_everything_passes():
    """All passing: exit 0 and the CommonMark summary line last."""
    report = run_suite([case("g/a"), case("g/b")], FakeAdapter)
    assert report.summary_line() == "2 passed, 0 failed, 0 errored, 0 skipped"
    assert report.render_text().splitlines()[-1] == report.summary_line()
    assert report.exit_code == 0


def test_each_bucket_is_counted_and_failures_exit_1():
    """A failure, an error and a skip each land in their bucket; exit code 1."""
    cases = [case("g/pass"), case("g/fail", result="other"), case("g/error"),
             case("g/skip", features=("fanout",))]
    report = run_suite(cases, lambda: FakeAdapter(broken={"g/error"}))
    assert report.summary_line() == "1 passed, 1 failed, 1 errored, 1 skipped"
    assert report.exit_code == 1
    by_id = {r.case_id: r for r in report.results}
    assert by_id["g/fail"].problems == ('result: expected "other", got "right"',)
    assert by_id["g/error"].problems == (
        "implementation crashed\nlast lines of its stderr:\n  Traceback ...\n  Boom",)
    assert by_id["g/skip"].problems == ("implementation lacks feature `fanout`",)


def test_text_report_shows_the_failure_with_a_diff():
    """A failure block names the case, schedule, clauses, mismatch and a unified diff."""
    report = run_suite([case("g/fail", result="other")], FakeAdapter)
    assert report.render_text() == (
        "FAIL g/fail [canonical schedule]\n"
        "  clauses: c.one\n"
        '  result: expected "other", got "right"\n'
        "  --- expected\n"
        "  +++ observed\n"
        "  @@ -1,4 +1,4 @@\n"
        "   {\n"
        '     "outcome": "ok",\n'
        '  -  "result": "other"\n'
        '  +  "result": "right"\n'
        "   }\n"
        "\n"
        "per clause (cases: passed/failed/errored/skipped/expected failures):\n"
        "  c.one  1: 0/1/0/0/0\n"
        "1 clauses cited: 0 passed in every case, 1 not, 0 only skipped\n"
        "probes reached: none; never reached: cancel-queued, abandon-owner-returned, "
        "abandon-owner-failed, abandon-tool-loop-exhausted, abandon-owner-aborted, "
        "abandon-run-terminated, notice-delivered\n"
        "0 passed, 1 failed, 0 errored, 0 skipped\n")


def test_any_schedule_runs_extra_seeds_and_reports_the_failing_one():
    """An any-schedule case runs canonical plus seeds 1..N and stops at the first failure."""
    adapter = FakeAdapter(wrong_on={("g/a", 2)})
    result = run_case(adapter, case("g/a", flags=("any-schedule",), seeds=3))
    assert adapter.runs == [("g/a", None), ("g/a", 1), ("g/a", 2)]
    assert (result.status, result.seed) == ("failed", 2)
    adapter = FakeAdapter()
    run_case(adapter, case("g/b", flags=("canonical",)))
    assert adapter.runs == [("g/b", None)]


def test_lifecycle_cases_skip_without_the_lifecycle_adapter():
    """A case with operations is skipped unless the adapter declares lifecycle."""
    c = case("life/a", features=("lifecycle",), operations=[{"op": "spawn"}])
    assert run_case(FakeAdapter(), c).problems == ("lifecycle adapter not available",)
    assert run_case(FakeAdapter(features=("lifecycle",)), c).status == "passed"


def test_an_adapter_that_raises_anything_errors_only_that_case():
    """An unexpected exception inside the adapter is an errored case, not a runner crash."""

    class Exploding(FakeAdapter):
        def run(self, c, seed):
            raise RuntimeError("kaboom")

    report = run_suite([case("g/a"), case("g/b")], Exploding)
    assert report.summary_line() == "0 passed, 0 failed, 2 errored, 0 skipped"
    assert report.results[0].problems == ("the adapter raised RuntimeError: kaboom",)


def test_expectations_turn_known_failures_into_skips_and_catch_stale_ones(tmp_path):
    """fail + fails -> expected failure (skipped bucket); fail + passes -> unexpected pass
    (failed bucket); skip -> not run."""
    path = tmp_path / "known.toml"
    path.write_text('"g/bad" = "fail"\n"g/good" = "fail"\n[g]\nslow = "skip"\n')
    expectations = load_expectations(path)
    assert expectations == {"g/bad": "fail", "g/good": "fail", "g/slow": "skip"}
    adapter = FakeAdapter()
    report = run_suite([case("g/bad", result="other"), case("g/good"), case("g/slow")],
                       lambda: adapter, expectations=expectations)
    assert [r.status for r in report.results] == ["expected-fail", "unexpected-pass", "skipped"]
    assert report.summary_line() == "0 passed, 1 failed, 0 errored, 1 skipped, 1 expected failure"
    assert report.exit_code == 1
    assert ("g/slow", None) not in adapter.runs
    assert "  c.one  3: 0/1/0/1/1" in report.render_text()


def test_expectations_file_in_json_and_bad_values(tmp_path):
    """JSON works too; a value other than fail/skip is bad input naming the entry."""
    good = tmp_path / "known.json"
    good.write_text('{"g/a": "skip"}')
    assert load_expectations(good) == {"g/a": "skip"}
    bad = tmp_path / "bad.toml"
    bad.write_text('"g/a" = "flaky"\n')
    with pytest.raises(InputError) as info:
        load_expectations(bad)
    assert str(info.value) == f'{bad}: expectations: `g/a`: expected "fail" or "skip", got "flaky"'


def test_select_by_id_clause_regex_and_feature():
    """-k searches case ids and clause ids (a regex; one that is not is refused,
    never taken as a substring); --features keeps cases that need any of the
    named features."""
    cases = [case("g/two-tasks", clauses=("tasks.glance.x",)),
             case("g/leak", clauses=("tasks.leak.y",), features=("tasks", "fanout"))]
    assert [c.id for c in select(cases, ["two"])] == ["g/two-tasks"]
    assert [c.id for c in select(cases, [r"tasks\.leak\."])] == ["g/leak"]
    with pytest.raises(InputError) as refused:
        select(cases, ["(("])
    assert refused.value.render().startswith("patterns: must be a regular expression (")
    assert [c.id for c in select(cases, [], ["fanout"])] == ["g/leak"]
    assert [c.id for c in select(cases, ["two", "leak"])] == ["g/two-tasks", "g/leak"]


def test_workers_keep_case_order():
    """With a thread pool the results still come back in case order."""
    cases = [case(f"g/{i:02}") for i in range(12)]
    report = run_suite(cases, FakeAdapter, workers=4)
    assert [r.case_id for r in report.results] == [c.id for c in cases]
    assert report.summary_line() == "12 passed, 0 failed, 0 errored, 0 skipped"


def test_progress_is_called_per_case():
    """The progress hook sees (done, total, case id) after each case."""
    seen = []
    run_suite([case("g/a"), case("g/b")], FakeAdapter, progress=lambda *a: seen.append(a))
    assert seen == [(1, 2, "g/a"), (2, 2, "g/b")]


def test_json_and_junit_reports():
    """The JSON report has every case and coverage by feature; JUnit has one testcase each."""
    catalogue = [{"id": "c.one", "feature": "tasks"}, {"id": "c.two", "feature": "tasks"},
                 {"id": "f.one", "feature": "fanout"}]
    report = run_suite([case("g/a"), case("g/b", result="other", clauses=("c.two",))],
                       FakeAdapter, catalogue=catalogue)
    data = json.loads(json.dumps(report.to_json()))
    assert data["summary"] == {"passed": 1, "failed": 1, "errored": 0, "skipped": 0,
                               "expected_fail": 0}
    failed = data["cases"][1]
    assert failed.pop("diff").startswith("--- expected\n+++ observed\n")
    assert failed.pop("duration") >= 0
    assert failed == {"id": "g/b", "status": "failed", "clauses": ["c.two"],
                      "features": ["tasks"], "schedule": "canonical", "schedules": ["canonical"],
                      "seeds": 0, "problems": ['result: expected "other", got "right"'],
                      "probes": []}
    assert data["clauses"] == [
        {"id": "c.one", "feature": "tasks", "cases": 1, "passed": 1, "failed": 0, "errored": 0,
         "skipped": 0, "expected_fail": 0},
        {"id": "c.two", "feature": "tasks", "cases": 1, "passed": 0, "failed": 1, "errored": 0,
         "skipped": 0, "expected_fail": 0}]
    assert data["coverage"] == {
        "fanout": {"total": 1, "covered": 0, "uncovered": ["f.one"], "failing": []},
        "tasks": {"total": 2, "covered": 2, "uncovered": [], "failing": ["c.two"]},
    }
    suite = ET.fromstring(report.to_junit()).find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    assert [tc.get("name") for tc in suite.iter("testcase")] == ["a", "b"]
    assert list(suite.iter("testcase"))[1].find("failure").get("message") == 'result: expected "other", got "right"'


def test_skipped_cases_do_not_cover_their_clauses():
    """Coverage counts clauses of cases that ran."""
    report = run_suite([case("g/a", features=("fanout",))], FakeAdapter)
    coverage = clause_coverage(report.results, [{"id": "c.one", "feature": "tasks"}])
    assert coverage == {"tasks": {"total": 1, "covered": 0, "uncovered": ["c.one"],
                                  "failing": []}}


def test_junit_survives_terminal_escapes_in_stderr():
    """Characters XML cannot carry (an implementation's colour codes) are replaced."""

    class Colourful(FakeAdapter):
        def run(self, c, seed):
            raise AdapterError("crashed", ["\x1b[31mred\x1b[0m"])

    suite = ET.fromstring(run_suite([case("g/a")], Colourful).to_junit()).find("testsuite")
    assert "\ufffd[31mred" in suite.find("testcase").find("error").text
