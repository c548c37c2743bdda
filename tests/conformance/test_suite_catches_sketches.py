"""The suite catches sketches (issue: a suite that catches sketches): a
porter's quick sketch of the Tasks chapter passes at most 80% of the cases
it attempts.

The sketch is `porter_sketch.py`: the reference served over the pipe at
level 2 with eight shortcuts a porter takes in an afternoon switched on
together (ids per kind, FIFO timers, one error path, a `cancel` that
checks liveness, `pending` that lists every spawn, `join_any` keeping the
last ended), declaring only the chapter's features.  It gets everything
else right, so what it passes is what none of the shortcuts touches.
Measured when the `sketches/` cases were added: 249 of 291 (85.6%) before,
253 of 321 (78.8%) after.
"""

from __future__ import annotations

import pathlib
import sys

from forge.conformance.adapters import SubprocessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.conformance.report import ERRORED, FAILED, PASSED
from forge.conformance.runner import run_suite

HERE = pathlib.Path(__file__).resolve().parent
SKETCH = [sys.executable, str(HERE / "porter_sketch.py")]
#: The most of what it attempts a sketch may pass.
CEILING = 0.80


def test_a_porters_sketch_passes_at_most_80_percent_of_what_it_attempts(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(HERE.parents[1]))
    cases = load_cases(DEFAULT_CASES_DIR)
    report = run_suite(cases, lambda: SubprocessAdapter(SKETCH, timeout=60))
    counts = report.counts()
    attempted = counts[PASSED] + counts[FAILED] + counts[ERRORED]
    assert counts[ERRORED] == 0, report.summary_line()
    assert attempted >= 300, report.summary_line()      # the chapter's cases, models aside
    assert counts[PASSED] <= CEILING * attempted, \
        f"{counts[PASSED]}/{attempted} = {counts[PASSED] / attempted:.1%} passed"
    # Each case added for it fails on the sketch, but those only a shortcut
    # it does not take would catch (a porter's sketch takes others).
    sketches = {r.case_id: r.status for r in report.results if r.case_id.startswith("sketches/")}
    passing = sorted(c for c, status in sketches.items() if status == PASSED)
    assert passing == [
        "sketches/cancelled-join-entry-in-a-task",
        "sketches/cancelled-reraised-in-task-later",
        "sketches/consumed-raised-in-h1-kind-lua",
        "sketches/join-same-instant-entries-in-set-order",
    ]
