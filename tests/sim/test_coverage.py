"""Coverage-guided exploration (`--strategy coverage`): a corpus of choice records that
reached new probes or abstract states, extended run by run.  A campaign is a function
of its seeds, lanes make a spread or sharded search the serial one without overlap, a
finding replays byte for byte, and on a mutant whose bug needs a timeout tie
(tasks.timeouts.tie-member-wins) it needs at most half random's median runs."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

from forge.conformance.mutants import by_id
from forge.repro import explore_prompt, prepare, replay_file
from forge.sim.replayfile import write_record
from forge.runspec import Expectation, spec_from_flags
from forge.sim import coverage
from forge.sim.chooser import Chooser
from forge.sim.coverage import CoverageCampaign, CoverageProvider
from forge.sim.explore import check_all, explore
from forge.sim.strategies import lookup, make_provider
from forge.verdict import Verdict
from tests.conftest import EXAMPLES, ROOT
from tests.sim.subjects import example

STORE_RACE = "explore/store-race.md"
#: What the oracles alone check, as `forge mutants`' oracles column does.
ORACLES = Expectation(same_ids=True, ending=Verdict(allow_failed=True))


def _campaign_runs(subject, seeds) -> list[tuple[int, ...]]:
    """Each seed's choices under one coverage campaign, in seed order."""
    campaign, out = CoverageCampaign(), []
    for seed in seeds:
        provider = campaign.provider(seed)
        chooser = Chooser(provider, seed=seed)
        obs, _ = subject(chooser)
        campaign.learn(provider, obs)
        out.append(tuple(chooser.values()))
    return out


def test_the_strategy_is_declared_once_in_the_registry_and_may_be_sharded():
    strategy = lookup("coverage")
    assert strategy.unshardable is None and strategy.chunk == coverage.LANE
    assert strategy.campaign is CoverageCampaign


def test_a_campaign_is_a_function_of_its_seeds():
    subject = example(STORE_RACE, "2")
    first = _campaign_runs(subject, range(60))
    assert first == _campaign_runs(subject, range(60))
    # It grew a corpus and mutated it: not random's runs, and more distinct ones.
    assert len(set(first)) > 40


_DIGEST = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
from tests.sim.test_coverage import _campaign_runs
from tests.sim.subjects import example
runs = _campaign_runs(example({prompt!r}, "2"), range(40))
print(hashlib.sha256(json.dumps(runs).encode()).hexdigest())
"""


def test_a_campaign_does_not_depend_on_the_hash_seed():
    # Features are sets of strings: nothing may depend on their iteration order.
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", _DIGEST.format(root=str(ROOT),
                                                                    prompt=STORE_RACE)],
                              env=env, capture_output=True, text=True, timeout=120, check=True)
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_lanes_make_shards_the_serial_search_without_overlap(monkeypatch):
    monkeypatch.setattr(coverage, "LANE", 20)
    subject = example(STORE_RACE, "2")
    serial = _campaign_runs(subject, range(0, 60))
    shards = [_campaign_runs(subject, range(a, a + 20)) for a in (0, 20, 40)]
    assert serial == shards[0] + shards[1] + shards[2]
    assert coverage.lanes(range(0, 50)) == [range(0, 20), range(20, 40), range(40, 50)]
    # Each lane started afresh: its first run planned nothing.
    campaign = CoverageCampaign()
    assert [campaign.provider(s).prefix == () for s in (0, 20, 40)] == [True] * 3


def _tie_spec():
    return spec_from_flags(str(EXAMPLES / "explore" / "watch-tie.md"), concurrency=2)


def test_a_finding_replays_byte_for_byte_and_its_spelling_draws_it_again(tmp_path):
    with by_id()["timeout-cancels-members"].applied():
        outcome = explore_prompt(_tie_spec(), expect=ORACLES, strategy="coverage", runs=100)
        failure = outcome.failure
        assert failure is not None
        found = outcome.report.findings[0]
        assert found.provider["strategy"] == "coverage"
        path = tmp_path / "f.replay.json"
        path.write_text(write_record(failure.record))
        replayed = replay_file(str(path))
        assert replayed.identical and replayed.drift is None and replayed.problems
        # The description spells every choice the failing run made.
        spelled = "coverage:{seed}:{prefix}".format(
            seed=found.provider["seed"], prefix=".".join(map(str, found.provider["prefix"])))
        runner, _, checks = prepare(_tie_spec(), ORACLES)
        chooser = Chooser(make_provider(spelled), seed=found.seed)
        obs, _ = runner.subject(chooser)
        assert tuple(chooser.values()) == found.choices and check_all(obs, checks)


def test_the_spelling_replays_a_prefix_then_draws_from_the_seed():
    provider = make_provider("coverage:7:1.0.3")
    assert isinstance(provider, CoverageProvider)
    assert (provider.seed, provider.prefix, provider.rarity) == (7, (1, 0, 3), None)
    assert make_provider("coverage:7").prefix == ()


def _median_first(strategy: str, campaigns: int, budget: int) -> float:
    runner, _, checks = prepare(_tie_spec(), ORACLES)
    firsts = []
    for c in range(campaigns):
        report = explore(runner.subject, range(c * 10_000, c * 10_000 + budget), checks,
                         strategy, shrink_budget=0)
        firsts.append(report.runs if report.findings else budget + 1)
    return statistics.median(firsts)


def test_on_a_timeout_mutant_it_needs_at_most_half_random_s_median_runs():
    with by_id()["timeout-cancels-members"].applied():
        ours, theirs = _median_first("coverage", 20, 100), _median_first("random", 20, 100)
    assert ours <= theirs / 2, (ours, theirs)

