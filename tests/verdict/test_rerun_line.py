"""Every failure `forge explore` finds prints, beside its replay file, a
one-line reproduction that needs no file (issue 29, item 3): `forge explore`
with the campaign's own flags and one schedule, the failing seed's; run as
printed, it fails with the same problems and the same shrunk schedule."""

from __future__ import annotations

import shlex

from click.testing import CliRunner

from forge.cli import main
from forge.commands.explore_report import rerun_line
from tests.conftest import EXAMPLES

HEADLINE = EXAMPLES / "first" / "headline.md"


def forge(args):
    return CliRunner().invoke(main, list(args))


def _failure(output: str) -> list[str]:
    """The failure's lines: its problems and shrunk schedule, not the counts
    or the ways to reproduce it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("FAILED at seed"))
    return [line for line in lines[start:] if not line.startswith(("reproduce with", "or, with"))]


def test_the_line_without_a_file_reproduces_the_failure(tmp_path):
    first = forge(["explore", str(HEADLINE), "--runs", "50", "--start-seed", "3",
                   "--workers", "1", "--replay-out", str(tmp_path / "r.replay.json"),
                   "--json", str(tmp_path / "report.json")])
    assert first.exit_code == 1, first.output
    lines = [line for line in first.stdout.splitlines() if line.startswith("or, with no file: ")]
    assert len(lines) == 1
    line = lines[0].removeprefix("or, with no file: ")
    words = shlex.split(line)
    assert words[:2] == ["forge", "explore"]
    # The campaign's flags stay; those that spread, bound or write it go.
    assert "--replay-out" not in words and "--json" not in words and "--workers" not in words
    again = forge(words[1:])
    assert again.exit_code == 1, again.output
    assert _failure(again.stdout) == _failure(first.stdout)
    assert again.stdout.splitlines()[0] == "1 schedules, 1 distinct, outcomes: 1 failed"


def test_the_line_keeps_the_run_flags_as_given():
    line = rerun_line(("P.md", "--runs=500", "--args", "2", "--json", "--faults", "store",
                       "--json=out.json", "--start-seed", "9", "--expect-result", "a b"), 12)
    assert line == ("forge explore P.md --args 2 --faults store --expect-result 'a b' "
                    "--start-seed 12 --runs 1 --database none")


def test_an_exhaustive_failure_has_no_seed_and_no_line():
    assert rerun_line(("P.md", "--strategy", "exhaustive"), None) is None
