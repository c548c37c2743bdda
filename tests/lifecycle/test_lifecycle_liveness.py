"""The lifecycle manager's liveness monitors (forge.lifecycle.liveness): the reference
leaves every hot state on every schedule of every shipped race, and each liveness
mutant - a stop that never chases its run, a stop that never reports its
cancellation, a retry whose failed launch keeps its claim - is found by the monitors
alone, as a violation naming the step its hot state began at, with the hot suffix
marked in the story (text and --json) and in a replay.

Clauses held: lifecycle.stop.lost-outcome-recorded, lifecycle.stop.chases-current-run,
lifecycle.report.claimed-snapshot, lifecycle.report.cancel-is-delivered,
lifecycle.retry.launch-failure-reverts, lifecycle.restart.fails-working.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from forge import variation
from forge.cli import main
from forge.lifecycle.explore import explore as explore_all
from forge.lifecycle.explore import subject
from forge.lifecycle.scenario import races
from forge.sim.explore import explore
from tests.conftest import EXAMPLES

RACES = races()


def _hot_only(obs: dict) -> list[str]:
    """The monitors' violations alone: no safety oracle, no scenario expectation."""
    return [problem for _step, problem in obs["hot"]]


@pytest.mark.parametrize("race", sorted(RACES))
def test_the_reference_leaves_every_hot_state_with_every_host_call_a_step(race):
    report = explore(subject(RACES[race], reduced=False), range(40), [_hot_only])
    assert not report.findings, report.findings[0].problems


LIVENESS_MUTANTS = [
    ("lifecycle.stop-never-chases-run", "stop-vs-lost-outcome",
     "was asked and the task never ended"),
    ("lifecycle.stop-reports-nothing", "completion-vs-stop", "was never reported to the host"),
    ("lifecycle.failed-launch-keeps-claim", "retry-launch-failure", "which was never launched"),
]


@pytest.mark.parametrize("site, race, says", LIVENESS_MUTANTS)
def test_each_liveness_mutant_is_found_by_the_monitors_alone(site, race, says):
    with variation.switched(site):
        report = explore(subject(RACES[race]), range(60), [_hot_only])
    assert report.findings, site
    problem = next(p for p in report.findings[0].problems if says in p)
    assert "(hot from step " in problem and "to the end of the schedule)" in problem


@pytest.mark.parametrize("site, race, says", LIVENESS_MUTANTS)
def test_a_liveness_violation_marks_its_hot_suffix_in_the_story_and_the_replay(
        site, race, says, tmp_path):
    scenario = str(EXAMPLES / "lifecycle" / f"{race}.scenario.toml")
    replay = str(tmp_path / "failure.replay.json")
    with variation.switched(site):
        got = CliRunner().invoke(main, ["explore", scenario, "--replay-out", replay])
        assert got.exit_code == 1, got.output
        story = got.output
        assert "HOT from here: " in story and says in story
        assert story.index("HOT from here: ") < story.index("VIOLATION at the end of the schedule: ")
        data = json.loads(CliRunner().invoke(main, ["explore", scenario, "--replay-out", replay,
                                                    "--json"]).output)
        hot = data["failures"][0]["hot"]
        assert hot and any(says in h["problem"] for h in hot)
        assert all(0 <= h["step"] < len(data["failures"][0]["steps"]) for h in hot)
        again = CliRunner().invoke(main, ["replay", replay])
        assert again.exit_code == 1
        assert "HOT from here: " in again.output and says in again.output


def test_the_lost_outcome_race_ends_cancelled_on_the_reference():
    got = explore_all(RACES["stop-vs-lost-outcome"], reduced=False)
    assert got.failure is None and got.complete


def test_the_liveness_mutants_are_declared_sites_in_the_catalogue():
    from forge.conformance.mutants import CATALOGUE

    sites = {m.site for m in CATALOGUE}
    assert {site for site, _race, _says in LIVENESS_MUTANTS} <= sites
    assert all(variation.find(site) for site, _race, _says in LIVENESS_MUTANTS)
