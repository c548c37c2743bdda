"""No change to what a campaign reports unnoticed: `forge explore --json` of a few
example prompts - passing and failing, each strategy, faults, and mutants that each
watcher and liveness monitor catches - with a pinned start seed gives the report
and the replay file whose digests are committed in `explore_report_digests.txt`
(kit: explore-report).  Work on the explorer's speed (how watchers are fed, what
is kept between schedules) must leave every byte of them as it was.

A change meant to change a report writes the file again:

    PYTHONPATH=$PWD python3 -m tests.sim.test_explore_reports > tests/sim/explore_report_digests.txt
"""

from __future__ import annotations

import hashlib
import pathlib
import re
import tempfile

import pytest
from click.testing import CliRunner

from forge import variation
from forge.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DIGESTS = pathlib.Path(__file__).with_name("explore_report_digests.txt")

#: (name, mutant site or None, `forge explore` arguments after the prompt's path).
CAMPAIGNS = [
    ("two-tasks portfolio", None, ["two-tasks.md", "--runs", "60"]),
    ("two-tasks random", None, ["two-tasks.md", "--runs", "60", "--strategy", "random"]),
    ("two-tasks pct", None, ["two-tasks.md", "--runs", "60", "--strategy", "pct"]),
    ("two-tasks ties", None, ["two-tasks.md", "--runs", "30", "--strategy", "ties"]),
    ("two-tasks faults", None, ["two-tasks.md", "--runs", "40", "--strategy", "random",
                                "--faults", "store,cancel", "--fault-budget", "2"]),
    ("watch-tie random", None, ["explore/watch-tie.md", "--runs", "60", "--strategy", "random"]),
    ("store-race exhaustive", None, ["explore/store-race.md", "--args", "2",
                                     "--strategy", "exhaustive", "--runs", "100"]),
    ("race portfolio", None, ["race.md", "--model-script", "race.model.json", "--runs", "200"]),
    ("watch-liveness pct", None, ["explore/watch-liveness.md", "--runs", "60", "--strategy", "pct",
                                  "--allow-failed", "--no-same-ids"]),
    ("leaky-walk failing", None, ["leaky-walk.md", "--runs", "10"]),
    ("double delivery", "delivery.double-delivery",
     ["explore/watch-delivery.md", "--runs", "30", "--strategy", "random"]),
    ("newest first", "admission.newest-first",
     ["explore/watch-admission.md", "--runs", "30", "--strategy", "random", "--concurrency", "1"]),
    ("tie to timeout", "timeouts.tie-goes-to-timeout",
     ["explore/watch-tie.md", "--runs", "60", "--strategy", "pct"]),
    ("ids one-based", "ids.one-based",
     ["explore/watch-ids.md", "--runs", "20", "--allow-failed", "--strategy", "random"]),
    ("timed join drops", "timeouts.timed-join-drops-finished",
     ["explore/watch-ids.md", "--runs", "20", "--allow-failed", "--strategy", "random"]),
    ("depth cap", "ids.depth-cap-off-by-one",
     ["explore/watch-depth.md", "--runs", "20", "--allow-failed", "--strategy", "random"]),
    ("leak not reported", "endings.leak-not-reported",
     ["leaky-walk.md", "--runs", "20", "--allow-failed", "--strategy", "random"]),
    ("release admits nobody", "admission.release-admits-nobody",
     ["explore/watch-liveness.md", "--runs", "100", "--allow-failed", "--no-same-ids",
      "--strategy", "random"]),
    ("last end wakes nobody", "waits.last-end-wakes-nobody",
     ["explore/watch-liveness.md", "--runs", "100", "--allow-failed", "--no-same-ids",
      "--strategy", "random"]),
    ("cancel lost when parked", "endings.cancel-lost-when-parked",
     ["explore/watch-liveness.md", "--runs", "100", "--allow-failed", "--no-same-ids",
      "--strategy", "random"]),
]


def _normal(text: str, replay: str) -> str:
    """`text` without what differs between checkouts and temporary folders:
    the kit's version, the repository's place and the replay file's path."""
    text = text.replace(replay, "<replay>").replace(str(ROOT), "<root>")
    return re.sub(r'"kit": "forge-kit [^"]*"', '"kit": "<kit>"', text)


def campaign(name: str, site: str | None, args: list[str]) -> str:
    """One digest line: the campaign's name, and the sha256 of its `--json`
    report, its exit code and its replay file (empty when none was written)."""
    prompt, rest = args[0], args[1:]
    rest = [str(EXAMPLES / a) if a.endswith(".json") else a for a in rest]
    with tempfile.TemporaryDirectory() as tmp:
        replay = str(pathlib.Path(tmp) / "failure.replay.json")
        argv = ["explore", str(EXAMPLES / prompt), *rest, "--start-seed", "7", "--database",
                "none", "--json", "--replay-out", replay]
        if site is None:
            done = CliRunner().invoke(main, argv)
        else:
            with variation.switched(site):
                done = CliRunner().invoke(main, argv)
        assert done.exception is None or isinstance(done.exception, SystemExit), done.output
        path = pathlib.Path(replay)
        written = path.read_text(encoding="utf-8") if path.exists() else ""
        report = done.stdout if hasattr(done, "stdout") else done.output
        text = f"{done.exit_code}\n{_normal(report, replay)}\n{_normal(written, replay)}"
    return f"{name}: {hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def digests():
    for name, site, args in CAMPAIGNS:
        yield campaign(name, site, args)


@pytest.mark.parametrize(("name", "site", "args"), CAMPAIGNS, ids=[c[0] for c in CAMPAIGNS])
def test_each_report_is_the_committed_one(name, site, args):
    expected = {line.split(": ")[0]: line for line in DIGESTS.read_text().splitlines()}
    assert campaign(name, site, args) == expected[name]


def test_the_campaigns_fail_where_they_should():
    """The file is not vacuous: most mutants' campaigns fail, and so the
    digests cover violations, stories and replay files."""
    failing = [name for name, site, args in CAMPAIGNS if site is not None]
    assert len(failing) >= 8
    assert len(DIGESTS.read_text().splitlines()) == len(CAMPAIGNS)


if __name__ == "__main__":
    for line in digests():
        print(line)
