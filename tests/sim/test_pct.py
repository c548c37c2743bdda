"""PCT counts real decisions, learns its horizon, orders completions by
priority, and finds a depth-2 ordering bug that random rarely hits."""

from __future__ import annotations

from forge.sim.chooser import Chooser, SplitMix64
from forge.sim.strategies import make_provider
from forge.sim.explore import explore
from forge.sim.pct import PCTCampaign, PCTProvider, duration_order
from tests.sim.subjects import example

STORE_RACE = "explore/store-race.md"
SLOWEST = "explore/slowest-first.md"


def real(chooser):
    return sum(1 for c in chooser.choices if c.n > 1)


def test_only_real_decisions_count_as_steps():
    subject = example(STORE_RACE, "2")
    for seed in range(5):
        provider = PCTProvider(seed, depth=3, horizon=10)
        chooser = Chooser(provider)
        subject(chooser)
        assert any(c.n == 1 for c in chooser.choices)
        assert provider.steps == real(chooser)


def test_the_horizon_is_learned_from_earlier_runs():
    subject = example(STORE_RACE, "2")
    campaign = PCTCampaign(depth=3)
    seen = []
    for seed in range(8):
        provider = campaign.provider(seed)
        # The first run only measures; later ones place change points in
        # the largest count of real decisions seen so far.
        assert provider.horizon == (max(seen) if seen else None)
        chooser = Chooser(provider)
        subject(chooser)
        campaign.learn(provider)
        seen.append(real(chooser))
    assert campaign.horizon == max(seen)


def test_change_points_fall_inside_the_run():
    subject = example(SLOWEST)
    campaign = PCTCampaign(depth=3)
    reached = total = 0
    for seed in range(60):
        provider = campaign.provider(seed)
        subject(Chooser(provider))
        campaign.learn(provider)
        if provider.change_points:
            total += 1
            reached += max(provider.change_points) < provider.steps
    assert total == 59 and reached == total


def test_priorities_order_same_instant_completions():
    """Without change points, the tasks end in their priority order: the
    three writes are issued at one instant and complete by priority."""
    subject = example(STORE_RACE, "1")
    names = {"task:0.0": "alpha", "task:0.1": "beta", "task:0.2": "gamma"}
    orders = set()
    for seed in range(40):
        provider = PCTProvider(seed, depth=1, horizon=None)
        obs, _ = subject(Chooser(provider))
        by_priority = [names[label] for label in provider.ranking if label in names]
        assert obs["result"] == " ".join(by_priority)
        orders.add(obs["result"])
    assert len(orders) == 6


def test_duration_labels_order_by_multiplier():
    assert duration_order(("x1.0", "x0.0", "x0.5", "x2.0", "x5.0")) == [1, 2, 0, 3, 4]
    assert duration_order(("fast", "slow")) is None


def campaign_finds(strategy: str, campaign: int, runs: int = 100) -> bool:
    rng = SplitMix64(campaign)
    seeds = [rng.next_u64() for _ in range(runs)]
    report = explore(example(SLOWEST), seeds,
                     [lambda o: ["Gamma ended first"] if o["result"] == "0.2" else []],
                     strategy=strategy, pct_depth=2, shrink_budget=0)
    return bool(report.findings)


def test_pct_finds_the_depth_two_race_in_every_campaign_of_a_sample():
    assert all(campaign_finds("pct", c) for c in range(10))


def test_a_pct_finding_is_reproduced_by_its_strategy_spelling():
    subject = example(SLOWEST)
    report = explore(subject, range(100), [lambda o: ["g"] if o["result"] == "0.2" else []],
                     strategy="pct", pct_depth=2, shrink_budget=0)
    found = report.findings[0]
    d = found.provider
    spec = f"pct:{d['seed']}:{d['depth']}:{d['horizon']}"
    chooser = Chooser(make_provider(spec))
    obs, _ = subject(chooser)
    assert tuple(chooser.values()) == found.choices and obs["result"] == "0.2"


class _ListPCT(PCTProvider):
    """PCT as first written, over a ranking list alone and the whole list of
    options at every choice: the oracle the priority numbers, the sorted
    ranking and the followed ready set are held to (O(n * known) a
    decision, which made a run with a thousand chains ready at once take
    seconds).  It shares only the change points with the class under test."""

    ranking = None          # a plain list here, not the sorted view

    def __init__(self, *args):
        super().__init__(*args)
        self.ranking = []

    def _know(self, label):
        if label not in self.ranking:
            self.ranking.insert(self.rng.below(len(self.ranking) + 1), label)

    def _demote(self, label):
        self.ranking.remove(label)
        self.ranking.append(label)

    def draw(self, kind, options):
        if kind == "chain":
            labels = list(options)
            for label in labels:
                self._know(label)
            if len(labels) > 1:
                if self._change_point():
                    self._demote(self._best_of(labels))
                pick = labels.index(self._best_of(labels))
            else:
                pick = 0
            self.current = labels[pick]
            return pick
        if len(options) <= 1:
            return 0
        order = duration_order(options) if kind.startswith("latency:") else None
        if order is None or self.current is None:
            self._change_point()
            return self.rng.below(len(options))
        if self._change_point():
            self._demote(self.current)
        rank = self.ranking.index(self.current)
        spread = max(len(self.ranking) - 1, 1)
        return order[rank * (len(order) - 1) // spread]

    def _best_of(self, labels):
        live = set(labels)
        return next(label for label in self.ranking if label in live)


def _wide(n: int) -> str:
    return ("---\nname: wide\ndescription: d\npromptforge: 0\n---\n\n# Wide\n\n## Main\n\n"
            f"```lua\nlocal hs = {{}}\nfor i = 1, {n} do hs[i] = tasks.spawn('### W') end\n"
            "local r = tasks.join(hs)\nlocal t = {}\nfor i = 1, #r do t[i] = r[i].result end\n"
            "return table.concat(t, ',')\n```\n\n### W\n\n```lua\nstore.write('f/' .. sys.taskid, 'x')\n"
            "return sys.taskid\n```\n")


def test_priority_numbers_answer_as_the_ranking_list_did():
    """The same seed makes the same choices as the list-only PCT, change
    points and duration orders included, on the examples and on a run with
    200 chains ready at once (kit: explore.pct)."""
    from forge.engine.run import RunConfig, run_prompt
    from forge.harness import Harness
    from forge.prompt import parse_prompt

    subjects = [example(STORE_RACE, "2"), example(SLOWEST, "1")]
    for subject in subjects:
        for seed in range(30):
            for depth, horizon in ((1, None), (3, 12), (5, 40)):
                fast, slow = Chooser(PCTProvider(seed, depth, horizon)), \
                    Chooser(_ListPCT(seed, depth, horizon))
                subject(fast)
                subject(slow)
                assert fast.values() == slow.values(), (seed, depth, horizon)
    wide = parse_prompt(_wide(200), "wide.md")
    for seed in range(4):
        runs = [run_prompt(wide, Harness(ceiling=210), Chooser(cls(seed, 4, 300)),
                           RunConfig(max_tasks=420))
                for cls in (PCTProvider, _ListPCT)]
        assert runs[0].chooser.values() == runs[1].chooser.values()
        assert runs[0].observation() == runs[1].observation()
        assert runs[0].chooser.provider.ranking == runs[1].chooser.provider.ranking


def test_the_followed_ready_set_answers_as_the_whole_list_did_on_every_case():
    """Every conformance case's prompt (cancellations, abandonments, timeouts
    and model turns make chains leave the ready list without being picked)
    under PCT makes the choices the list-only PCT makes, which reads the whole
    list of ready chains at every choice (kit: explore.pct)."""
    from forge.conformance.adapters import _reference_run
    from forge.conformance.case import DEFAULT_CASES_DIR, load_cases

    cases = [c for c in load_cases(DEFAULT_CASES_DIR) if c.prompt is not None]
    compared = 0
    for n, case in enumerate(cases):
        seed = n % 7
        choosers = [Chooser(cls(seed, 3, 16)) for cls in (PCTProvider, _ListPCT)]
        runs = [_reference_run(case.prompt, case.harness, seed, case.path, chooser)[1]
                for chooser in choosers]
        if runs[0] is None:
            continue
        assert choosers[0].values() == choosers[1].values(), case.id
        compared += any(c.kind == "chain" and c.n > 2 for c in choosers[0].choices)
    assert compared > 30


def test_priorities_are_renumbered_when_a_gap_runs_out():
    """Labels put again and again just under the top one halve the same gap
    each time: past 20 halvings no integer is left in it, and the priorities
    are renumbered, still in ranking order and distinct."""
    provider = PCTProvider(1)
    expected: list[str] = []
    for i in range(200):
        rank = 1 if len(expected) >= 2 else len(expected)
        expected.insert(rank, f"c{i}")
        provider._place(f"c{i}", rank)
    assert provider.ranking == expected
    priorities = [provider.priority[label] for label in provider.ranking]
    assert priorities == sorted(priorities, reverse=True)
    assert len(set(priorities)) == len(priorities)
