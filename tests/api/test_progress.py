"""Progress: a bar on a terminal, a plain periodic line in a log, no colour; plain summaries."""

from __future__ import annotations

import io
import pathlib
import re
import subprocess
import sys

from forge.progress import Progress, duration, plain_counts, reporter

ROOT = pathlib.Path(__file__).resolve().parents[2]
SGR = re.compile(r"\x1b\[[0-9;]*m")


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_plain_line_every_interval_and_at_the_end():
    """Off a terminal: one line per `every` seconds with elapsed and estimate, and a last one."""
    clock, log = _Clock(), io.StringIO()
    show = reporter(40, "mutants", stream=log, every=10.0, clock=clock)
    for done in range(1, 41):
        clock.now += 1.0
        show(done, f"m{done}")
    assert log.getvalue().splitlines() == [
        "mutants: 10/40 (25%), 10s elapsed, about 30s left",
        "mutants: 20/40 (50%), 20s elapsed, about 20s left",
        "mutants: 30/40 (75%), 30s elapsed, about 10s left",
        "mutants: 40/40 (100%), 40s elapsed",
    ]


def test_a_terminal_gets_a_bar_with_elapsed_time_and_an_estimate():
    """On a terminal: click's bar, redrawn in place, with elapsed time, position and ETA."""
    clock, tty = _Clock(), _Terminal()
    with Progress(4, "schedules", stream=tty, clock=clock) as progress:
        for done in range(1, 5):
            clock.now += 65.0
            progress.update(done, f"seed {done}")
    out = tty.getvalue()
    assert "\r" in out and "schedules (1m05s elapsed)" in out and "1/4" in out
    assert "seed 2" in out and "4/4" in out
    assert not SGR.search(out), "no colour codes, whatever NO_COLOR says"


def test_term_dumb_gets_the_plain_lines(monkeypatch):
    """`TERM=dumb` on a terminal: plain lines, no redrawing."""
    monkeypatch.setenv("TERM", "dumb")
    tty = _Terminal()
    show = reporter(2, "cases", stream=tty, clock=_Clock())
    show(1)
    show(2)
    assert tty.getvalue() == "cases: 2/2 (100%), 0s elapsed\n"


def test_durations_and_counts_read_as_words():
    """Durations as 7s / 1m05s / 2h03m; count tables as `298 ok, 2 failed`, never a repr."""
    assert [duration(s) for s in (7.4, 65, 7380)] == ["7s", "1m05s", "2h03m"]
    assert plain_counts({"ok": 298, "failed": 2}) == "298 ok, 2 failed"
    assert plain_counts({}) == "none"


def test_forge_mutants_reports_progress_in_a_log():
    """`forge mutants` with stderr not a terminal ends with a plain progress line."""
    done = subprocess.run([sys.executable, "-m", "forge", "mutants", "-k", "ids-one-based",
                           "--seeds", "1", "--case-seeds", "0"],
                          capture_output=True, text=True, cwd=ROOT)
    assert "mutation score: 1/1" in done.stdout
    assert re.fullmatch(r"mutants: 1/1 \(100%\), \d+s elapsed\n", done.stderr)
