"""The lifecycle races' probes (forge.lifecycle.probes): each race outcome is a named
probe tied to a clause, the shipped races reach every one of them, and `forge explore
SCENARIO` lists how often each was reached and which never were (text and --json);
`--require PROBE` fails an exploration that never reached it.

Clauses held: lifecycle.finalize.single-winner, lifecycle.finalize.run-bound,
lifecycle.retry.cas, lifecycle.stop.chases-current-run, lifecycle.stop.unknown-run,
lifecycle.stop.already-finished-waits, lifecycle.stop.lost-outcome-recorded,
lifecycle.restart.fails-working, lifecycle.restart.keeps-paused.
"""

from __future__ import annotations

import json
import tomllib

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.lifecycle import campaign
from forge.lifecycle.probes import CATALOGUE, NAMES
from forge.lifecycle.scenario import races
from tests.conftest import EXAMPLES, ROOT

RACES = races()


def _scenario(race: str) -> str:
    return str(EXAMPLES / "lifecycle" / f"{race}.scenario.toml")


def test_each_probe_names_a_lifecycle_clause_and_a_race_of_the_notes():
    spec = tomllib.loads((ROOT / "spec" / "lifecycle.toml").read_text(encoding="utf-8"))
    clauses = {c["id"] for c in spec["clause"]}
    race_ids = {r["id"] for r in spec["race"]}
    for probe in CATALOGUE:
        assert probe.clause in clauses, probe
        assert any(race in probe.says for race in race_ids), probe
    assert len(set(NAMES)) == len(NAMES)


def test_the_shipped_races_reach_every_probe():
    reached: set[str] = set()
    for scenario in RACES.values():
        out = campaign.run(scenario, strategy="exhaustive", runs=2000)
        assert out.failure is None and set(out.probes) == set(NAMES)
        reached |= {name for name, n in out.probes.items() if n}
    assert reached == set(NAMES)


@pytest.mark.parametrize("race, probe", [
    ("two-retries", "retry-claim-lost"),
    ("two-finishers", "finalize-cas-lost"),
    ("retry-vs-stop", "stop-chased-retry"),
    ("stop-vs-lost-outcome", "stop-recorded-lost-outcome"),
    ("stop-vs-finished-run", "stop-outcome-landed-late"),
    ("sweep-vs-approval", "sweep-failed-orphan"),
    ("sweep-vs-approval", "sweep-kept-paused"),
    ("stop-vs-approval", "resume-lost-to-stop"),
])
def test_a_race_reaches_its_outcome_under_random_schedules_too(race, probe):
    out = campaign.run(RACES[race], strategy="random", runs=60)
    assert out.probes[probe] > 0, out.probes


def test_explore_lists_the_probes_in_text_and_json():
    text = CliRunner().invoke(main, ["explore", _scenario("two-retries"), "--strategy",
                                     "exhaustive"])
    assert text.exit_code == 0, text.output
    assert "probes reached: retry-claim-lost " in text.output
    assert "never reached: finalize-cas-lost, " in text.output
    data = json.loads(CliRunner().invoke(main, ["explore", _scenario("two-retries"),
                                                "--strategy", "exhaustive", "--json"]).output)
    assert set(data["probes"]) == set(NAMES)
    assert data["probes"]["retry-claim-lost"] > 0
    assert "finalize-cas-lost" in data["probes_missed"]
    assert data["required_unreached"] == []


def test_require_fails_an_exploration_that_never_reached_its_probe():
    ok = CliRunner().invoke(main, ["explore", _scenario("two-retries"), "--strategy",
                                   "exhaustive", "--require", "retry-claim-lost"])
    assert ok.exit_code == 0, ok.output
    missed = CliRunner().invoke(main, ["explore", _scenario("two-retries"), "--strategy",
                                       "exhaustive", "--require", "sweep-failed-orphan"])
    assert missed.exit_code == 1
    assert "REQUIRED and never reached: sweep-failed-orphan" in missed.output
    data = json.loads(CliRunner().invoke(main, ["explore", _scenario("two-retries"), "--json",
                                                "--require", "sweep-failed-orphan"]).output)
    assert data["required_unreached"] == ["sweep-failed-orphan"]


def test_require_of_an_unknown_probe_is_refused_in_one_line():
    got = CliRunner().invoke(main, ["explore", _scenario("two-retries"), "--require",
                                    "timeout-tie"])
    assert got.exit_code == 2
    line = got.output.strip()
    assert "\n" not in line and "no lifecycle probe is called 'timeout-tie'" in line
    assert "retry-claim-lost" in line
