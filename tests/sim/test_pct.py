"""PCT counts scheduling decisions only, learns its horizon, leaves every
other draw its own uniform distribution, orders completions by priority in
orders mode, and meets its bound on a depth-2 ordering bug."""

from __future__ import annotations

from collections import Counter

from forge.sim.chooser import Chooser, SplitMix64
from forge.sim.strategies import make_provider
from forge.sim.explore import explore
from forge.sim.pct import PCTCampaign, PCTProvider, completion_chain
from tests.sim.subjects import example

STORE_RACE = "explore/store-race.md"
SLOWEST = "explore/slowest-first.md"
BETWEEN = "explore/between-writes.md"
SCHEDULING = ("chain", "complete")


def scheduling(chooser):
    return sum(1 for c in chooser.choices if c.n > 1 and c.kind in SCHEDULING)


def test_only_scheduling_decisions_count_as_steps():
    # PCT's runs are in orders mode; over the pipe (`forge explore --impl`)
    # an engine draws durations, so PCT counts steps under the menu too.
    for orders in (False, True):
        subject = example(STORE_RACE, "2", orders=orders)
        for seed in range(5):
            provider = PCTProvider(seed, depth=3, horizon=10)
            chooser = Chooser(provider, orders=orders)
            subject(chooser)
            assert any(c.n == 1 for c in chooser.choices)
            # Duration draws have five options, and are not steps.
            assert orders or any(c.kind == "latency:store" for c in chooser.choices)
            assert provider.steps == scheduling(chooser)


def test_other_draws_move_no_priority_and_no_change_point():
    """The same scheduling decisions, with any number of duration and fault
    draws between them, get the same answers: those draws come from a
    stream of their own and are not steps."""
    labels = [("chain", ("task:0.0", "task:0.1", "task:0.2")),
              ("complete", ("0.0#1 store a", "0.1#1 store b", "timeout")),
              ("chain", ("task:0.1", "task:0.2")),
              ("complete", ("0.2#1 store c", "0.1#2 store b"))] * 3
    for seed in range(40):
        answers = []
        for extra in (0, 1, 3):
            provider = PCTProvider(seed, depth=3, horizon=8)
            got = []
            for kind, options in labels:
                for _ in range(extra):
                    provider.draw("latency:store", ("x1.0", "x0.0", "x0.5", "x2.0", "x5.0"))
                    provider.draw("fault:store", ("none", "refuse write a"))
                got.append(provider.draw(kind, options))
            assert provider.steps == len(labels)
            answers.append(got)
        assert answers[0] == answers[1] == answers[2], seed


def test_durations_and_faults_keep_random_s_distribution():
    """A duration is uniform over its menu whatever the chain's priority (it
    was the chain's rank mapped onto the menu, so the middle entries were
    rare), and a fault fires half the time."""
    durations, faults = Counter(), Counter()
    for seed in range(400):
        provider = PCTProvider(seed, depth=2, horizon=4)
        provider.draw("chain", ("task:0.0", "task:0.1"))
        durations[provider.draw("latency:store", ("x1.0", "x0.0", "x0.5", "x2.0", "x5.0"))] += 1
        faults[provider.draw("fault:model", ("none", "fail a round"))] += 1
    assert set(durations) == set(range(5)) and min(durations.values()) > 55
    assert 160 < faults[1] < 240


def test_a_completion_names_its_chain():
    assert completion_chain("0.1#2 store alpha") == "0.1"
    assert completion_chain("0#1 model") == "0"
    assert completion_chain("timeout") is None


def test_the_horizon_is_learned_from_earlier_runs():
    subject = example(STORE_RACE, "2", orders=True)
    campaign = PCTCampaign(depth=3)
    seen = []
    for seed in range(8):
        provider = campaign.provider(seed)
        # The first run only measures; later ones place change points in
        # the largest count of scheduling decisions seen so far.
        assert provider.horizon == (max(seen) if seen else None)
        chooser = Chooser(provider)
        subject(chooser)
        campaign.learn(provider)
        seen.append(scheduling(chooser))
    assert campaign.horizon == max(seen)


def test_change_points_fall_inside_the_run():
    subject = example(SLOWEST, orders=True)
    campaign = PCTCampaign(depth=3)
    reached = total = 0
    for seed in range(60):
        horizon = campaign.horizon
        provider = campaign.provider(seed)
        subject(Chooser(provider))
        campaign.learn(provider)
        if provider.change_points:
            total += 1
            assert len(provider.change_points) == 2
            assert all(1 <= point < horizon for point in provider.change_points)
            reached += min(provider.change_points) < provider.steps
    # Runs differ in length here (a task whose writes all land first leaves
    # fewer decisions between two pending completions), so a change point
    # can fall past a short run's end; the first falls inside most runs.
    assert total == 59 and reached >= 0.8 * total


def test_priorities_order_completions_in_orders_mode():
    """Without change points, the tasks end in their priority order: the
    highest-priority pending completion always fires first."""
    subject = example(STORE_RACE, "2", orders=True)
    names = {"task:0.0": "alpha", "task:0.1": "beta", "task:0.2": "gamma"}
    orders = set()
    for seed in range(40):
        provider = PCTProvider(seed, depth=1, horizon=None)
        obs, _ = subject(Chooser(provider))
        by_priority = [names[label] for label in provider.ranking if label in names]
        assert obs["result"] == " ".join(by_priority)
        orders.add(obs["result"])
    assert len(orders) == 6


def between_writes(obs: dict) -> list[str]:
    """The planted depth-2 bug of `between-writes.md`: Alpha's first write
    lands, then all of Beta's, then the rest of Alpha's."""
    order = "".join(e["section"][0] for e in obs["events"] if e["kind"] == "store_write_succeeded")
    return ["all of Beta's writes fell between Alpha's first two"] if order == "ABBBAA" else []


def test_pct_meets_its_bound_on_a_depth_two_bug():
    """Per run, PCT of depth 2 finds the bug at least as often as
    1 / (n * k) for n actors and k scheduling decisions (the learned
    horizon); random finds it about half as often."""
    subject = example(BETWEEN, orders=True)
    campaign = PCTCampaign(depth=2)
    hits = runs = 0
    chains = set()
    for seed in range(1, 601):
        provider = campaign.provider(seed)
        chooser = Chooser(provider, seed=seed)
        obs, _ = subject(chooser)
        campaign.learn(provider)
        chains.update(label for label in provider.ranking)
        runs += 1
        hits += bool(between_writes(obs))
    n, k = len(chains), campaign.horizon
    assert (n, k) == (3, 6)
    assert hits / runs >= 1 / (n * k), (hits, runs, n, k)


def campaign_finds(subject, check, strategy: str, campaign: int, depth: int = 2,
                   runs: int = 100) -> bool:
    rng = SplitMix64(campaign)
    seeds = [rng.next_u64() for _ in range(runs)]
    report = explore(subject, seeds, [check], strategy=strategy, pct_depth=depth,
                     shrink_budget=0)
    return bool(report.findings)


def test_pct_finds_the_depth_two_bug_in_every_campaign_of_a_sample():
    subject = example(BETWEEN, orders=True)
    assert all(campaign_finds(subject, between_writes, "pct", c) for c in range(20))


def gamma_first(obs: dict) -> list[str]:
    return ["Gamma ended first"] if obs["result"] == "0.2" else []


def test_a_pct_finding_is_reproduced_by_its_strategy_spelling():
    for subject in (example(SLOWEST), example(BETWEEN, orders=True)):
        report = explore(subject, range(200), [gamma_first, between_writes],
                         strategy="pct", pct_depth=2, shrink_budget=0)
        found = report.findings[0]
        d = found.provider
        spec = f"pct:{d['seed']}:{d['depth']}:{d['horizon']}"
        chooser = Chooser(make_provider(spec))
        obs, _ = subject(chooser)
        assert tuple(chooser.values()) == found.choices
        assert gamma_first(obs) or between_writes(obs)


class _ListPCT(PCTProvider):
    """PCT as first written, over a ranking list alone and the whole list of
    options at every choice: the oracle the priority numbers, the sorted
    ranking and the followed ready set are held to (O(n * known) a
    decision, which made a run with a thousand chains ready at once take
    seconds).  It shares only the change points and the other draws' stream
    with the class under test."""

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
            if len(labels) <= 1:
                return 0
            if self._change_point():
                self._demote(self._best_of(labels))
            return labels.index(self._best_of(labels))
        if len(options) <= 1:
            return 0
        if kind != "complete":
            return self.data.below(len(options))
        chains = {label.partition(":")[2]: label for label in self.ranking if ":" in label}
        actors = [chains.get(label.partition("#")[0], label) if "#" in label else label
                  for label in options]
        for actor in actors:
            self._know(actor)
        if self._change_point():
            self._demote(self._best_of(actors))
        return actors.index(self._best_of(actors))

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
    points and completion picks included, on the examples and on a run with
    200 chains ready at once (kit: explore.pct)."""
    from forge.engine.run import RunConfig, run_prompt
    from forge.harness import Harness
    from forge.prompt import parse_prompt

    subjects = [example(STORE_RACE, "2"), example(SLOWEST, "1"),
                example(STORE_RACE, "2", orders=True), example(BETWEEN, orders=True)]
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


def test_the_kit_s_pct_runs_in_orders_mode_where_its_bound_holds():
    """`forge explore --strategy pct` (here `forge.api.explore`) runs PCT in
    orders mode, where which completion fires next is a scheduling decision:
    on slowest-first (a depth-2 bug: Gamma's six writes before Alpha's and
    Beta's one) it finds the bug in most campaigns of 100 runs, where under
    the duration menu it found it in 7 of 20, as random does.  A finding
    reruns from its spelling with `forge run --strategy pct:...` (here
    `forge.api.run_prompt`), which runs in orders mode too."""
    import forge.api as api
    from tests.conftest import EXAMPLES

    def gamma_ended_first(obs: api.Observation) -> list[str]:
        # The API hands checks an `Observation`: `gamma_first` on it would
        # raise, and a raising check fails every campaign at its first run.
        return ["Gamma ended first"] if obs.result == "0.2" else []

    path = EXAMPLES / SLOWEST
    found = 0
    for campaign in range(20):
        report = api.explore(path, strategy="pct", runs=100, start_seed=campaign * 1000,
                             checks=[gamma_ended_first], shrink_budget=0)
        if not report.ok:
            assert report.failures[0].problems == ("check gamma_ended_first: Gamma ended first",)
            found += 1
    assert found >= 15, found
    subject = example(SLOWEST, orders=True)
    first = next(r.findings[0].provider for r in (
        explore(subject, range(c * 1000, c * 1000 + 100), [gamma_first], strategy="pct",
                shrink_budget=0) for c in range(20)) if r.findings)
    spelling = f"pct:{first['seed']}:{first['depth']}:{first['horizon']}"
    assert api.run_prompt(path, strategy=spelling).result == "0.2"
