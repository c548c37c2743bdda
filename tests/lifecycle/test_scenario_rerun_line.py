"""A lifecycle scenario's failure under `forge explore` prints, beside its
replay file, a line that needs no file, as a prompt's does (issue 29, item
3): the campaign's own flags run again from its first seed up to the
failing one, so what a learning strategy (PCT, the portfolio, coverage)
learned on the way draws that seed's schedule as it did.  Run as printed, it
fails with the same shrunk schedule; an exhaustive walk's failure says its
replay file is the way back (kit: failure-database)."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from forge import variation
from forge.cli import main
from forge.commands.explore_report import NO_RERUN
from tests.conftest import EXAMPLES

SCENARIO = str(EXAMPLES / "lifecycle" / "two-retries.scenario.toml")
SITE = "lifecycle.retry-claim-any-status"


def _explore(*args: str):
    return CliRunner().invoke(main, ["explore", *args])


@pytest.mark.parametrize("strategy", ["random", "pct", "portfolio"])
def test_a_scenario_failure_reruns_from_its_line(tmp_path, strategy):
    with variation.switched(SITE):
        first = _explore(SCENARIO, "--strategy", strategy, "--runs", "200", "--start-seed", "5",
                         "--replay-out", str(tmp_path / "first.json"))
        assert first.exit_code == 1, first.output
        line = next(line for line in first.output.splitlines()
                    if line.startswith("or, with no file: ")).removeprefix("or, with no file: ")
        words = shlex.split(line)
        assert words[:3] == ["forge", "explore", SCENARIO]
        assert "--replay-out" not in words and "--database" not in words
        assert words[words.index("--start-seed") + 1] == "5"
        as_json = json.loads(_explore(SCENARIO, "--strategy", strategy, "--runs", "200",
                                      "--start-seed", "5", "--replay-out",
                                      str(tmp_path / "first.json"), "--json").output)
        assert as_json["rerun_command"] == line
        again = _explore(*words[2:], "--replay-out", str(tmp_path / "again.json"))
    assert again.exit_code == 1, again.output
    recorded = json.loads((tmp_path / "first.json").read_text())
    rerun = json.loads((tmp_path / "again.json").read_text())
    # The problem's text carries an object's address (an assertion's
    # rewriting in the scenario's check), so only its first line is compared.
    first_lines = [p.split("\n")[0] for p in recorded["failure"]["problems"]]
    assert [p.split("\n")[0] for p in rerun["failure"]["problems"]] == first_lines
    assert {k: v for k, v in rerun.items() if k != "failure"} == \
        {k: v for k, v in recorded.items() if k != "failure"}


def test_a_walk_s_failure_says_the_replay_file_is_the_way_back(tmp_path):
    with variation.switched(SITE):
        walk = _explore(SCENARIO, "--strategy", "exhaustive", "--replay-out",
                        str(tmp_path / "w.json"))
    assert walk.exit_code == 1, walk.output
    assert NO_RERUN in walk.output and "or, with no file" not in walk.output
