"""Every failure `forge explore` finds prints, beside its replay file, a
one-line reproduction that needs no file (issue 29, item 3): `forge explore`
with the campaign's own flags and one schedule, the failing seed's, and the
horizon PCT had learned by then (`--pct-horizon`); run as printed, it fails
with the same problems and the same shrunk schedule, whichever member of the
default portfolio found it (kit: failure-database)."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.commands.explore_report import rerun_line
from forge.sim.strategies import DEFAULT
from forge.sim.strategies.portfolio import MEMBERS
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


RACE = str(EXAMPLES / "explore" / "store-race.md")
#: A campaign whose every member finds the race: three tasks' writes in
#: any order but the canonical one break the expected result.
RACE_FLAGS = ("--args", "2", "--expect-result", "alpha beta gamma")


def _start_seed_found_by(member: tuple[str, int | None]) -> int:
    """A start seed whose portfolio campaign fails first on `member`'s seed;
    a PCT member of depth 2 or more after an earlier PCT run, so that its
    schedule depends on the horizon the campaign learned."""
    from forge.repro import explore_prompt
    from forge.runspec import Expectation, spec_from_flags

    spec = spec_from_flags(RACE, args="2")
    expect = Expectation(invariants=True, result="alpha beta gamma")
    for start in range(400):
        found = explore_prompt(spec, expect=expect, strategy=DEFAULT, runs=50,
                               start_seed=start, shrink_budget=0).report.findings[0].provider
        learned = (found.get("depth") or 0) < 2 or found.get("horizon", 0) > 0
        if (found["strategy"], found.get("depth")) == member and learned:
            return start
    raise AssertionError(f"no campaign's failure was found by {member}")


@pytest.mark.parametrize("member", MEMBERS, ids=[f"{n}{d or ''}" for n, d in MEMBERS])
def test_every_portfolio_member_s_failure_reruns_from_its_line(tmp_path, monkeypatch, member):
    """The default strategy's members each find the race in some campaign;
    the line printed for it (a PCT member's with the horizon its campaign
    had learned) runs that schedule again with no file, and finds and
    shrinks the same failure: the same record, observation and choices."""
    monkeypatch.chdir(tmp_path)
    start = _start_seed_found_by(member)
    first = forge(["explore", RACE, *RACE_FLAGS, "--start-seed", str(start), "--runs", "50",
                   "--database", "none", "--replay-out", "first.replay.json"])
    assert first.exit_code == 1, first.output
    line = next(line for line in first.output.splitlines()
                if line.startswith("or, with no file: ")).removeprefix("or, with no file: ")
    words = shlex.split(line)
    recorded = json.loads((tmp_path / "first.replay.json").read_text())
    drawn = recorded["strategy"]
    assert (drawn["strategy"], drawn.get("depth")) == member
    if "horizon" in drawn:
        assert words[words.index("--pct-horizon") + 1] == str(drawn["horizon"])
    again = forge(words[1:])
    assert again.exit_code == 1, again.output
    rerun = json.loads((tmp_path / "forge-failure.replay.json").read_text())
    for key in ("observation_sha256", "trace_sha256", "choices", "strategy", "failure", "run"):
        assert rerun[key] == recorded[key], key
    assert _failure(again.output) == _failure(first.output)


def test_a_shard_s_line_names_the_strategy_its_campaign_drew_with():
    """A shard draws with its own default (`DEFAULT_SHARDED`); the line,
    which runs no shard, names it, and the horizon only for a PCT run."""
    from forge.sim.strategies import DEFAULT_SHARDED

    line = rerun_line(("P.md", "--shard", "2/4"), 7, {"strategy": DEFAULT_SHARDED, "seed": 7},
                      DEFAULT_SHARDED)
    assert line == (f"forge explore P.md --strategy {DEFAULT_SHARDED} --start-seed 7 --runs 1 "
                    "--database none")
    assert rerun_line(("P.md",), 7, {"horizon": 12}, DEFAULT).endswith(
        "--start-seed 7 --runs 1 --pct-horizon 12 --database none")


def _line(output: str) -> list[str]:
    """The printed line with no file, as words."""
    return shlex.split(next(line for line in output.splitlines()
                            if line.startswith("or, with no file: "))
                       .removeprefix("or, with no file: "))


def test_merged_shards_print_the_failing_shard_s_line_and_it_reruns(tmp_path, monkeypatch):
    """`forge explore merge` prints the line too, in words and as the JSON's
    `rerun_command`: the failing shard's, which runs no shard and finds
    the same shrunk failure."""
    monkeypatch.chdir(tmp_path)
    for i in (1, 2):
        shard = forge(["explore", RACE, *RACE_FLAGS, "--runs", "40", "--shard", f"{i}/2",
                       "--replay-out", f"s{i}.replay.json", "--json", f"s{i}.json"])
        assert shard.exit_code in (0, 1), shard.output
    merged = forge(["explore", "merge", "s1.json", "s2.json", "--replay-out", "m.replay.json"])
    assert merged.exit_code == 1, merged.output
    words = _line(merged.output)
    assert "--shard" not in words and words[:2] == ["forge", "explore"]
    as_json = forge(["explore", "merge", "s1.json", "s2.json", "--replay-out", "m.replay.json",
                     "--json"])
    assert json.loads(as_json.stdout)["rerun_command"] == shlex.join(words)
    again = forge([*words[1:], "--replay-out", "again.replay.json"])
    assert again.exit_code == 1, again.output
    recorded = json.loads((tmp_path / "m.replay.json").read_text())
    rerun = json.loads((tmp_path / "again.replay.json").read_text())
    for key in ("observation_sha256", "trace_sha256", "choices", "strategy", "failure"):
        assert rerun[key] == recorded[key], key


def test_a_coverage_failure_reruns_its_lane_up_to_the_failing_seed(tmp_path, monkeypatch):
    """A coverage-guided run's schedule grows from the corpus its lane's
    earlier seeds built, so its seed alone does not draw it: the line runs
    the lane again from its first seed up to the failing one, and finds the
    same shrunk failure."""
    from forge.sim.strategies import lookup

    lane = lookup("coverage").chunk
    monkeypatch.chdir(tmp_path)
    first = forge(["explore", RACE, *RACE_FLAGS, "--strategy", "coverage", "--runs", "500",
                   "--start-seed", "3", "--database", "none", "--replay-out", "c.replay.json",
                   "--json", "c.json"])
    assert first.exit_code == 1, first.output
    seed = json.loads((tmp_path / "c.json").read_text())["failures"][0]["seed"]
    words = _line(first.output)
    start = 3 + (seed - 3) // lane * lane
    assert words[words.index("--start-seed") + 1] == str(start)
    assert words[words.index("--runs") + 1] == str(seed - start + 1)
    again = forge([*words[1:], "--replay-out", "again.replay.json"])
    assert again.exit_code == 1, again.output
    recorded = json.loads((tmp_path / "c.replay.json").read_text())
    rerun = json.loads((tmp_path / "again.replay.json").read_text())
    for key in ("observation_sha256", "trace_sha256", "choices", "strategy", "failure"):
        assert rerun[key] == recorded[key], key
    assert _failure(again.output) == _failure(first.output)


def test_a_failure_with_no_line_says_the_replay_file_is_the_way_back(tmp_path, monkeypatch):
    """An exhaustive walk's failure has no seed; a coverage failure the
    database kept has lost its lane's first seed: each says so, and the JSON's
    `rerun_command` is null."""
    from forge.commands.explore_report import NO_RERUN

    monkeypatch.chdir(tmp_path)
    walk = forge(["explore", RACE, *RACE_FLAGS, "--strategy", "exhaustive", "--runs", "200",
                  "--database", "none"])
    assert walk.exit_code == 1, walk.output
    assert NO_RERUN in walk.output and "or, with no file" not in walk.output
    assert "the replay file above is the way back" in NO_RERUN
    flags = [RACE, *RACE_FLAGS, "--strategy", "coverage", "--runs", "500", "--start-seed", "3",
             "--database", ".db"]
    assert forge(["explore", *flags]).exit_code == 1
    saved = forge(["explore", *flags])
    assert saved.exit_code == 1 and "FAILED again" in saved.output, saved.output
    assert NO_RERUN in saved.output
    as_json = forge(["explore", *flags, "--json"])
    assert json.loads(as_json.stdout)["rerun_command"] is None
