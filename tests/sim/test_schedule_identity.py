"""The explorer's schedule identity (`forge.runspec.schedule_identity`): two
schedules count as one exactly when their observations are equal, as the
digest of the whole observation's JSON (`observation_sha256`) told them
apart before, so `distinct` counts stay what they were (kit: explore-report)."""

from __future__ import annotations

import pathlib

import pytest

from forge.run.record import observation_sha256
from forge.runspec import Runner, schedule_identity, spec_from_flags
from forge.sim.chooser import Chooser, RandomProvider

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
PROMPTS = [("two-tasks.md", {}), ("seeded-task.md", {}), ("race.md", {"model_script": "race.model.json"}),
           ("explore/store-race.md", {"args": "2"}), ("explore/refused-write.md", {}),
           ("explore/watch-tie.md", {}), ("leaky-walk.md", {})]


@pytest.mark.parametrize(("name", "flags"), PROMPTS)
def test_identity_splits_schedules_as_the_whole_observation_does(name, flags):
    flags = {k: str(EXAMPLES / v) if k.endswith("_script") else v for k, v in flags.items()}
    runner = Runner(spec_from_flags(str(EXAMPLES / name), **flags))
    by_identity: dict[str, str] = {}
    by_digest: dict[str, str] = {}
    for seed in range(40):
        run, crash = runner.attempt(Chooser(RandomProvider(seed), seed=seed))
        assert crash is None
        obs = run.observation()
        identity, digest = schedule_identity(obs, run), observation_sha256(obs)
        assert by_identity.setdefault(identity, digest) == digest
        assert by_digest.setdefault(digest, identity) == identity


def test_the_kits_checks_are_kept_by_identity_and_the_users_run_every_schedule():
    from forge.repro import explore_prompt, prepare
    from forge.runspec import Expectation, KitChecks

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    runner, _, checks = prepare(spec, Expectation())
    kit = checks[0]
    assert isinstance(kit, KitChecks)
    for seed in range(30):
        obs, identity = runner.subject(Chooser(RandomProvider(seed), seed=seed))
        assert kit(obs) == [p for check in kit.checks for p in check(obs)] == []
    assert 1 <= len(kit.kept) <= 2          # two-tasks shows two observations
    assert kit(dict(obs)) == []             # not the last observation: checked afresh
    calls = []
    explore_prompt(spec, runs=25, extra_checks=[lambda o: calls.append(1) or []])
    assert len(calls) == 25


def test_kept_problems_are_the_problems_a_fresh_check_finds():
    from forge import variation
    from forge.repro import prepare
    from forge.runspec import Expectation

    spec = spec_from_flags(str(EXAMPLES / "explore" / "watch-delivery.md"))
    with variation.switched("delivery.double-delivery"):
        runner, _, checks = prepare(spec, Expectation())
        kit = checks[0]
        for seed in range(6):
            obs, _ = runner.subject(Chooser(RandomProvider(seed), seed=seed))
            fresh = [p for check in kit.checks for p in check(obs)]
            assert fresh and kit(obs) == fresh
