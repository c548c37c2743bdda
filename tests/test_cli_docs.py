"""What the docs say about the harness flags, the faults and the trace is
what the commands do: every fault kind the kit offers is documented as
offered, every harness operation is a trace `harness` op, and the examples
of the harness flags run and show the flag's effect (kit: cli.docs)."""

from __future__ import annotations

import re
import subprocess
import sys

from forge.harness import DEFAULT_LATENCY, FAULT_KINDS
from tests.conftest import ROOT
from tests.test_docs_examples import shell_lines

DOCS = ROOT / "docs"


def _row(text: str, start: str) -> str:
    (row,) = [line for line in text.splitlines() if line.startswith(start)]
    return row


def test_exploring_offers_every_fault_kind_the_kit_draws():
    """The flags table lists every kind `--faults` takes, each kind has its
    row in the table of faults, and no page says `tool` is refused."""
    text = (DOCS / "exploring.md").read_text(encoding="utf-8")
    assert f"`{','.join(FAULT_KINDS)}`" in _row(text, "| `--faults KINDS` |")
    faults = text.split("## Faults as choices")[1].split("\n## ")[0]
    for kind in FAULT_KINDS:
        assert _row(faults, f"| `{kind}` | ")
    assert "is refused" not in faults


def test_trace_names_every_harness_operation_and_the_unanswered_record():
    """A `harness` record's `op` is any operation with a latency (the tool's
    `tool` and `reply` fields included), and `harness_unanswered` is listed."""
    text = (DOCS / "trace.md").read_text(encoding="utf-8")
    row = _row(text, "| `harness` |")
    for op in DEFAULT_LATENCY:
        assert f"`{op}`" in row
    assert "`tool` (the alias called) and `reply`" in row
    assert _row(text, "| `harness_unanswered` |")


def test_the_harness_flag_examples_run_and_show_their_effect():
    """scripts.md's examples of --latency, --refuse and --faults run as
    written from the checkout: the runs succeed with the flag's effect on
    show, the explorations find what the text says they find."""
    text = (DOCS / "scripts.md").read_text(encoding="utf-8")
    block = text.split("## Latencies, refusals, cancels, faults")[1]
    commands = [c for _, c in shell_lines(block)]
    assert len(commands) == 4

    def run(command: str) -> subprocess.CompletedProcess:
        code = re.sub(r"\s+#\s.*$", "", command).replace("forge ", f"{sys.executable} -m forge ",
                                                         1)
        return subprocess.run(["bash", "-c", code], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)

    latency, refuse, explored, faulted = (run(c) for c in commands)
    assert latency.returncode == 0 and '"virtual_time":0.5' in latency.stdout
    assert refuse.returncode == 0
    assert refuse.stdout == "alpha store operation failed gamma\n"
    assert explored.returncode == 1 and "schedule-dependent result" in explored.stdout
    assert faulted.returncode == 1 and "result '2 1 2' != '2 2 2'" in faulted.stdout
