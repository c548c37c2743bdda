"""`forge conformance --matrix FILE [--matrix-with REPORT]...`: the
cross-engine matrix, cases x engines grouped by clause with an interop
score, drawn as a static page and checked in headless Chromium
(kit: conformance.matrix)."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

from click.testing import CliRunner

from forge.cli import main
from forge.conformance import matrix

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKETCH = f"{sys.executable} {ROOT / 'tests' / 'conformance' / 'sketch_engine.py'}"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def conformance(*args: str):
    return CliRunner().invoke(main, ["conformance", *args])


def _column(name: str, **statuses: str) -> matrix.Column:
    return matrix.Column(name, {case.replace("_", "/"): (status, ("tasks.cancel.idempotent",))
                                for case, status in statuses.items()}, name)


def test_the_interop_score_counts_cases_passing_on_every_engine():
    a = _column("a", x_one="passed", x_two="passed", x_three="failed")
    b = _column("b", x_one="passed", x_two="skipped", x_three="passed", x_four="passed")
    built = matrix.build([a, b])
    assert (built.shared, built.interop) == (3, 1)
    assert built.groups == {"tasks.cancel": ["x/four", "x/one", "x/three", "x/two"]}
    page = matrix.render([a, b])
    assert "Interop score: <b>33.3%</b> - 1 of the 3 cases every run selected" in page


def test_a_report_that_is_none_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    done = conformance("-k", "decisions/spawn-join", "--matrix", str(tmp_path / "m.html"),
                       "--matrix-with", str(bad))
    assert done.exit_code == 2
    assert f"{bad}: not a forge conformance JSON report" in done.output
    done = conformance("-k", "decisions/spawn-join", "--matrix-with", str(bad))
    assert done.exit_code == 2
    assert "--matrix-with: adds a column to --matrix, which is not given" in done.output


def test_chromium_draws_the_matrix_of_three_engines(tmp_path, chromium, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    ref, sketch = tmp_path / "ref.json", tmp_path / "sketch.json"
    assert conformance("-k", "decisions/", "--json", str(ref)).exit_code == 0
    assert conformance("-k", "decisions/", "--impl", SKETCH, "--json", str(sketch)).exit_code == 1
    page = tmp_path / "matrix.html"
    done = conformance("-k", "decisions/", "--impl", f"{SKETCH} --bug cancel-forgets-queued",
                       "--matrix", str(page), "--matrix-with", str(ref),
                       "--matrix-with", str(sketch))
    assert done.exit_code == 1, done.output
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    cases = len(json.loads(ref.read_text())["cases"])
    assert dom.count('<tr class="case">') == cases
    rows = re.findall(r'<tr class="case"><td>([^<]*)</td>(.*?)</tr>', dom)
    cells = {case: re.findall(r'class="(\w+)"', rest) for case, rest in rows}
    # this run (the buggy sketch), the reference, the sketch without the bug
    assert cells["decisions/cancel-queued"] == ["fail", "pass", "pass"]
    assert cells["decisions/spawn-join"] == ["pass", "pass", "pass"]
    assert cells["decisions/store-ops"] == ["skip", "pass", "skip"]
    assert dom.count('<tr class="group"') == len(set(matrix.group_of(
        c["clauses"]) for c in json.loads(ref.read_text())["cases"]))
    assert "sketch (this run)" in dom and f"sketch ({sketch})" in dom
    shared_pass = sum(1 for v in cells.values() if v == ["pass"] * 3)
    assert (f"Interop score: <b>{shared_pass / cases:.1%}</b> - {shared_pass} of the {cases} "
            "cases every run selected pass on every engine") in dom
