"""The portfolio, `forge explore`'s default strategy: each seed is drawn by random, PCT at
depths 1-3 or the tie-seeking strategy in turn; the report names the member that found a
failure, whose own spelling draws it again; it finds a depth-1 ordering bug in at least
95 of 100 campaigns and reaches timeout ties (tasks.timeouts.tie-member-wins)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from forge.cli import main
from forge.sim.chooser import Chooser, SplitMix64
from forge.sim.explore import explore
from forge.sim.strategies import DEFAULT, lookup, make_provider
from forge.sim.strategies.portfolio import MEMBERS, PortfolioCampaign
from tests.conftest import EXAMPLES
from tests.sim.subjects import example

ONE_ORDER = "explore/one-order.md"


def beta_first(obs: dict) -> list[str]:
    return ["Beta ended first"] if obs["result"] == "0.1" else []


def test_seeds_rotate_over_the_members_and_each_run_names_its_member():
    campaign = PortfolioCampaign()
    drawn = [campaign.provider(seed).describe() for seed in range(5)]
    assert [(d["strategy"], d.get("depth")) for d in drawn] == \
        [(name, depth) for name, depth in MEMBERS]
    assert DEFAULT == "portfolio" and lookup("portfolio").unshardable


def test_the_pct_members_learn_one_horizon_from_pct_runs_only():
    subject = example(ONE_ORDER)
    campaign = PortfolioCampaign()
    for seed in range(10):
        provider = campaign.provider(seed)
        subject(Chooser(provider, seed=seed))
        campaign.learn(provider)
    assert campaign.horizon and campaign.horizon > 0


def test_a_depth_one_bug_is_found_in_at_least_95_of_100_campaigns():
    subject = example(ONE_ORDER)
    found = 0
    for c in range(100):
        rng = SplitMix64(c)
        seeds = [rng.next_u64() for _ in range(100)]
        found += bool(explore(subject, seeds, [beta_first], strategy="portfolio",
                              shrink_budget=0).findings)
    assert found >= 95


def test_a_member_s_finding_is_drawn_again_by_its_own_spelling():
    subject = example(ONE_ORDER)
    report = explore(subject, range(100), [beta_first], strategy="portfolio", shrink_budget=0)
    found = report.findings[0]
    spelled = {"random": "random:{seed}", "ties": "ties:{seed}",
               "pct": "pct:{seed}:{depth}:{horizon}"}[found.provider["strategy"]]
    provider = make_provider(spelled.format(**found.provider))
    obs, _ = subject(Chooser(provider, seed=found.seed))
    assert beta_first(obs)


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


def test_explore_without_strategy_runs_the_portfolio_and_says_who_found_it(tmp_path):
    prompt = str(EXAMPLES / "explore" / "one-order.md")
    out = forge("explore", prompt, "--expect-result", "0.0", "--start-seed", "0",
                "--replay-out", str(tmp_path / "r.json"))
    assert out.exit_code == 1
    assert "found by the portfolio's " in out.output
    data = json.loads(forge("explore", prompt, "--expect-result", "0.0", "--start-seed", "0",
                            "--replay-out", str(tmp_path / "r.json"), "--json").output)
    assert data["found_by"] in ("random", "ties", "pct depth 1", "pct depth 2", "pct depth 3")
    replayed = forge("replay", str(tmp_path / "r.json"))
    assert replayed.exit_code == 1


def test_a_shard_without_strategy_draws_random_seeds_and_the_portfolio_refuses_shards():
    prompt = str(EXAMPLES / "explore" / "one-order.md")
    sharded = forge("explore", prompt, "--runs", "10", "--shard", "1/2", "--json")
    assert sharded.exit_code == 0, sharded.output
    refused = forge("explore", prompt, "--runs", "10", "--shard", "1/2", "--strategy",
                    "portfolio")
    assert refused.exit_code == 2
    assert "portfolio learns its PCT members' horizon" in refused.output


def test_a_pct_member_runs_the_run_its_spelling_names():
    """A portfolio's PCT member runs in orders mode, as `--strategy pct`
    does, so its finding, described as `pct:SEED:DEPTH:HORIZON`, is drawn
    again - the same choices, the same observation - by `forge run
    --strategy` of that spelling (here `forge.api.run_prompt`), and its
    replay file records orders mode."""
    import forge.api as api
    from forge.repro import explore_prompt
    from forge.runspec import Expectation, spec_from_flags

    race = EXAMPLES / "explore" / "store-race.md"
    spec = spec_from_flags(str(race), args="2")
    expect = Expectation(invariants=True, result="alpha beta gamma")
    for start in range(100):
        outcome = explore_prompt(spec, expect=expect, strategy=DEFAULT, runs=50,
                                 start_seed=start, shrink_budget=0)
        found = outcome.report.findings[0]
        if found.provider["strategy"] == lookup("pct").name and found.provider["horizon"]:
            break
    drawn = found.provider
    spelled = f"pct:{drawn['seed']}:{drawn['depth']}:{drawn['horizon']}"
    again = api.run_prompt(race, strategy=spelled, args="2")
    assert tuple(again.choices) == found.choices
    assert again.result == found.observation["result"] != "alpha beta gamma"
    assert outcome.failure.record["run"]["latency"]["orders"] is True
