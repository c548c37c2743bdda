"""Schedules already watched (`forge.watched`): a schedule whose choices are a watched
run's is not run again, or runs unwatched, and takes that run's violations and identity,
giving what a watched run gives; one the prediction got wrong runs again, watched
(kit: explore-report)."""

from __future__ import annotations

import pathlib

from forge import variation
from forge.conformance import oracles
from forge.runspec import Runner, spec_from_flags
from forge.sim.chooser import Chooser, RandomProvider, ReplayProvider
from forge.watched import Seen, Watched

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _counting(monkeypatch) -> list[int]:
    watched: list[int] = []
    real = oracles.watchers

    def counted(run, kinds=oracles.WATCHERS):
        watched.append(1)
        return real(run, kinds)

    monkeypatch.setattr(oracles, "watchers", counted)
    return watched


def test_a_schedule_seen_before_runs_unwatched_and_gives_what_a_watched_run_gives(monkeypatch):
    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    watched = _counting(monkeypatch)
    memo, fresh = Runner(spec), Runner(spec)
    schedules = set()
    for seed in range(40):
        got = memo.subject(Chooser(RandomProvider(seed), seed=seed))
        fresh._watched = Watched()              # keeps nothing: every run is watched
        want = fresh.subject(Chooser(RandomProvider(seed), seed=seed))
        assert got == want
        schedules.add(got[1])
    # The memo runner watched each distinct schedule once; the other, every one.
    assert len(watched) == 40 + len(schedules) and len(schedules) == 2


def test_a_confirmed_run_gives_the_watched_runs_observation(monkeypatch):
    """A schedule confirmed to be a watched run gives that run's observation
    without building its own, and gives what a watched run gives."""
    from forge.engine.run import Run

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    runner, fresh = Runner(spec), Runner(spec)
    built: list[int] = []
    real = Run.observation

    def counted(self):
        built.append(1)
        return real(self)

    monkeypatch.setattr(Run, "observation", counted)
    identities = set()
    for seed in range(20):
        got = runner.subject(Chooser(RandomProvider(seed), seed=seed))
        fresh._watched = Watched()
        assert got == fresh.subject(Chooser(RandomProvider(seed), seed=seed))
        identities.add(got[1])
    # Each runner built the observation of the 20 fresh runs, and the memo
    # runner only those of the two distinct schedules it watched.
    assert len(identities) == 2 and len(built) == 20 + 2
    assert all(s.observation is not None for s in _leaves(runner._watched.roots[False]))


def test_a_users_check_or_probe_that_changes_its_data_changes_nothing_the_next_gets(tmp_path,
                                                                                     monkeypatch):
    """Schedules share the kept observation; a check or probe named
    module:function, which gets the raw data, gets a copy of its own."""
    from forge.probes import UserProbe
    from forge.runspec import load_check

    (tmp_path / "careless.py").write_text(
        "def check(obs):\n"
        "    obs['tasks'].clear()\n"
        "    obs['events'].append({'kind': 'not the run\\'s'})\n"
        "    return None\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    check = load_check("careless:check")
    probe = UserProbe(check.fn, "careless")
    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    runner, fresh = Runner(spec), Runner(spec)
    for seed in range(8):
        obs, identity = runner.subject(Chooser(RandomProvider(seed), seed=seed))
        assert check(obs) == [] and probe(obs) is False
        fresh._watched = Watched()
        assert (obs, identity) == fresh.subject(Chooser(RandomProvider(seed), seed=seed))
        assert obs["tasks"] and all(e.get("kind") != "not the run's" for e in obs["events"])


def test_observations_past_the_budget_are_not_kept(monkeypatch):
    import forge.watched as watched_module

    monkeypatch.setattr(watched_module, "MAX_OBSERVATION_BYTES", 10)
    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    runner, fresh = Runner(spec), Runner(spec)
    for seed in range(6):
        fresh._watched = Watched()
        assert runner.subject(Chooser(RandomProvider(seed), seed=seed)) == \
            fresh.subject(Chooser(RandomProvider(seed), seed=seed))
    leaves = _leaves(runner._watched.roots[False])
    assert leaves and all(s.observation is None for s in leaves)
    assert runner._watched.observation_bytes == 0


def _leaves(node) -> list[Seen]:
    found = [node.seen] if node.seen is not None else []
    for below in node.below.values():
        found += _leaves(below)
    return found


def test_violations_are_the_watched_runs_own():
    spec = spec_from_flags(str(EXAMPLES / "explore" / "watch-delivery.md"))
    with variation.switched("delivery.double-delivery"):
        runner = Runner(spec)
        first = [runner.subject(Chooser(RandomProvider(s), seed=s))[0] for s in range(12)]
    assert all(obs.get(oracles.VIOLATIONS) for obs in first)
    again = Runner(spec)
    with variation.switched("delivery.double-delivery"):
        for s, obs in enumerate(first):
            again._watched = Watched()
            assert again.subject(Chooser(RandomProvider(s), seed=s))[0] == obs


def test_a_mutant_does_not_take_the_references_runs():
    spec = spec_from_flags(str(EXAMPLES / "explore" / "watch-delivery.md"))
    runner = Runner(spec)
    clean = runner.subject(Chooser(RandomProvider(0), seed=0))[0]
    assert not clean.get(oracles.VIOLATIONS)
    with variation.switched("delivery.double-delivery"):
        assert runner.subject(Chooser(RandomProvider(0), seed=0))[0].get(oracles.VIOLATIONS)


def test_a_schedule_seen_before_is_not_run_again_and_leaves_its_chooser_as_a_run_would(
        monkeypatch):
    """A schedule that repeats a watched run takes what that run gave without
    running: the engine runs each distinct schedule once, and every chooser
    holds the choices, labels read and faults its own run would have left
    (store faults fire on some schedules of this prompt)."""
    from forge.engine.run import Run

    spec = spec_from_flags(str(EXAMPLES / "explore" / "store-race.md"), faults="store")
    runs: list[int] = []
    real = Run.execute

    def counted(self):
        runs.append(1)
        return real(self)

    memo, fresh = Runner(spec), Runner(spec)
    schedules, fired = set(), 0
    # Past seed 92, a schedule repeats a run through a chain decision whose
    # kept `Offered` took another option (the tree's `taken` labels it).
    for seed in range(120):
        chooser, own = Chooser(RandomProvider(seed), seed=seed), Chooser(RandomProvider(seed),
                                                                           seed=seed)
        fresh._watched = Watched()              # keeps nothing: every schedule runs
        want = fresh.subject(own)
        monkeypatch.setattr(Run, "execute", counted)
        got = memo.subject(chooser)
        monkeypatch.setattr(Run, "execute", real)
        assert got == want, seed
        assert chooser.choices == own.choices and _read(chooser) == _read(own), seed
        assert chooser.faults_fired() == own.faults_fired(), seed
        schedules.add(tuple(chooser.values()))
        fired += bool(own.faults_fired())
    assert len(runs) == len(schedules) < 120 and fired


def _read(chooser: Chooser) -> list[tuple[str, str]]:
    """The labels a run's story reads of each decision: its first option and the one taken."""
    return [(options[0], options[c.value]) for c, options in zip(chooser.choices,
                                                                 chooser.options)]


def _repeating(spec, seed: int):
    """A runner that watched `seed`'s schedule, and the prediction it makes for it."""
    runner = Runner(spec)
    runner.subject(Chooser(RandomProvider(seed), seed=seed))
    prediction = runner._watched.predict(Chooser(RandomProvider(seed), seed=seed))
    assert prediction is not None
    return runner, prediction


def test_a_prediction_the_chooser_does_not_bear_out_runs_the_schedule_watched(monkeypatch):
    """A prediction whose decisions the provider answers otherwise (here, one
    answer changed) gives nothing of its run: the schedule runs, watched, on
    the answers the provider gave so far and its own after them."""
    import attrs

    from forge.watched import Prediction

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    own = Chooser(RandomProvider(5), seed=5)
    want = Runner(spec).subject(own)
    runner, right = _repeating(spec, 5)
    at = next(i for i, (_, n, _) in enumerate(right.seen.choices) if n > 1)
    choices = list(right.seen.choices)
    kind, n, value = choices[at]
    choices[at] = (kind, n, (value + 1) % n)
    wrong = Prediction(attrs.evolve(right.seen, choices=tuple(choices),
                                    violations=("not this run's",),
                                    observation={"outcome": "not this run's"}),
                       right.decisions)
    monkeypatch.setattr(runner._watched, "predict", lambda chooser: wrong)
    watched = _counting(monkeypatch)
    chooser = Chooser(RandomProvider(5), seed=5)
    assert runner.subject(chooser) == want
    assert watched == [1] and chooser.choices == own.choices


def test_a_wrong_prediction_of_a_run_whose_observation_was_not_kept_runs_it_again_watched(
        monkeypatch):
    from forge.watched import Prediction

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    runner = Runner(spec)
    want = Runner(spec).subject(Chooser(RandomProvider(5), seed=5))
    wrong = Seen((("chain", 2, 1),), ("not this run's",), "not its identity")
    monkeypatch.setattr(runner._watched, "predict", lambda chooser: Prediction(wrong, ()))
    watched = _counting(monkeypatch)
    assert runner.subject(Chooser(RandomProvider(5), seed=5)) == want
    assert watched == [1]


def test_a_retraced_chooser_that_diverges_redraws_its_answers_then_asks_its_provider():
    """`Chooser.retrace`: past the first answer that differs, the chooser
    forgets the decisions and gives the provider's answers again, so a run
    made then is the one a fresh chooser of the same provider makes."""
    provider, same = RandomProvider(3), RandomProvider(3)
    decisions = [("chain", ("a", "b", "c"))] * 6
    values = [same.draw(*d) for d in decisions]
    values[3] = (values[3] + 1) % 3
    chooser = Chooser(provider, seed=3)
    assert not chooser.retrace(decisions, values, ("store",))
    assert chooser.values() == [] and chooser.faults_fired() == []
    fresh = Chooser(RandomProvider(3), seed=3)
    # The run asks what the retraced decisions asked up to where they
    # diverged (the same answers lead to the same decisions), then its own.
    asked = decisions[:4] + [("chain", ("a", "b")), ("latency:read", ("x1.0", "x2.0"))] * 5
    assert [chooser.choose(*d) for d in asked] == [fresh.choose(*d) for d in asked]
    assert chooser.provider is provider
    right = Chooser(RandomProvider(3), seed=3)
    assert right.retrace(decisions[:3], values[:3], ("store",))
    assert right.values() == values[:3] and right.faults_fired() == ["store"]


def test_a_twin_answers_as_its_provider_from_counts_or_from_labels():
    from forge.sim.pct import PCTProvider
    from forge.sim.strategies.ties import TieProvider

    provider = RandomProvider(9)
    provider.draw("chain", ("a", "b", "c"))
    twin = provider.twin()
    assert not twin.twin_reads_labels
    assert [twin.draw("x", "ab") for _ in range(20)] == [provider.draw("x", "ab")
                                                         for _ in range(20)]
    # PCT ranks chains by label, ties looks for tie labels: their twins read labels.
    decisions = [("chain", ("task:1", "task:2")), ("chain", ("task:2", "task:3", "task:1")),
                 ("latency:store.read", ("x1.0", "tie-1ns", "tie", "x2.0")),
                 ("chain", ("task:3", "task:4")), ("chain", ("task:4",))]
    for provider in (PCTProvider(3, 3, 5), TieProvider(1)):
        provider.draw(*decisions[0])
        twin = provider.twin()
        assert twin.twin_reads_labels
        assert [twin.draw(*d) for d in decisions[1:] * 5] == [provider.draw(*d)
                                                               for d in decisions[1:] * 5]
    assert ReplayProvider([1]).twin() is None


def _strategy_chooser(name: str, seed: int) -> Chooser:
    from forge.sim.pct import PCTProvider
    from forge.sim.strategies import portfolio
    from forge.sim.strategies.ties import TieProvider

    provider = {"pct": lambda: PCTProvider(seed, 3, 12), "ties": lambda: TieProvider(seed),
                "portfolio": lambda: portfolio.provider_of(seed, 12)}[name]()
    return Chooser(provider, seed=seed)


def test_pct_ties_and_portfolio_schedules_seen_before_run_unwatched_as_random_ones_do(
        monkeypatch):
    """A twin that reads labels (PCT's, ties') predicts from the labels the
    chooser kept whole; each schedule gives what a watched run gives, and
    only the distinct ones are watched (PCT runs in orders mode, random
    does not: each mode has its tree)."""
    watched = _counting(monkeypatch)
    repeated = 0
    for prompt in ("two-tasks.md", "race.md", "explore/watch-tie.md",
                   "explore/slowest-first.md"):
        spec = spec_from_flags(str(EXAMPLES / prompt))
        for name in ("pct", "ties", "portfolio"):
            memo, fresh = Runner(spec), Runner(spec)
            del watched[:]
            schedules = set()
            for seed in range(30):
                chooser, own = _strategy_chooser(name, seed), _strategy_chooser(name, seed)
                got = memo.subject(chooser)
                fresh._watched = Watched()          # keeps nothing: every run is watched
                want = fresh.subject(own)
                assert got == want, (prompt, name, seed)
                # A schedule not run leaves its chooser with its run's choices,
                # and the labels a story reads (the first option, the one taken).
                assert chooser.choices == own.choices, (prompt, name, seed)
                assert _read(chooser) == _read(own), (prompt, name, seed)
                schedules.add((chooser.orders, tuple(chooser.choices)))
            # The fresh runner watched all 30; the memo runner each distinct
            # choice sequence once, and (in a portfolio) once more where a
            # random run kept a decision without its labels before a twin
            # that reads them came by (no prediction was wrong).
            once = 30 + len(schedules)
            assert once <= len(watched) <= once + (name == "portfolio") * len(schedules), \
                (prompt, name, len(schedules))
            repeated += 30 - len(schedules)
    assert repeated > 100


def _violations(runner: Runner, kinds, seed: int, monitors=None) -> list[str]:
    from forge import liveness
    from forge.engine.run import Run

    run = Run(runner.prompt, *runner._with(Chooser(RandomProvider(seed), seed=seed)))
    run.trace.observe((*oracles.watchers(run, kinds),
                       *liveness.monitors(run, monitors or liveness.MONITORS)))
    try:
        run.execute()
    except Exception:  # noqa: BLE001 - what a mutant breaks is not what is compared
        pass
    run.trace.unobserve()
    return [f"{v.by}: {v.text()}" for v in run.trace.violations]


def test_watchers_fed_only_the_records_they_declare_find_what_they_find_fed_every_record():
    """Each watcher's `SEES` names every record kind it reads: fed every record
    instead, it finds the very same violations, on the reference and on the
    mutant each watcher catches (tasks.ids, tasks.spawn-errors.depth-cap,
    tasks.timeouts.join-timed-out, tasks.leak.tasks-live)."""
    import contextlib

    from tests.sim.test_more_watchers import KILLS

    every = tuple(type(k.__name__, (k,), {"SEES": None}) for k in oracles.WATCHERS)
    caught = 0
    for site, prompt, _ in [(None, p, None) for p in sorted({p for _, p, _ in KILLS})] + KILLS:
        runner = Runner(spec_from_flags(str(EXAMPLES / prompt)))
        with variation.switched(site) if site else contextlib.nullcontext():
            for seed in range(4):
                routed = _violations(runner, oracles.WATCHERS, seed)
                assert routed == _violations(runner, every, seed), (site, prompt, seed)
                caught += bool(routed)
    assert caught >= len(KILLS)


def test_a_campaign_that_skips_repeated_schedules_reports_what_one_running_each_reports(
        monkeypatch):
    """Whole campaigns through the API, each strategy that predicts (random,
    PCT, the portfolio), with store faults, and with a mutant whose
    violations make a finding (shrunk, with its story): the report is the
    one a campaign that runs every schedule gives."""
    import forge.api as api

    def campaigns():
        yield "random", api.explore(EXAMPLES / "explore" / "store-race.md", runs=60,
                                    strategy="random", faults="store")
        for strategy in ("pct", "portfolio"):
            yield strategy, api.explore(EXAMPLES / "two-tasks.md", runs=60, strategy=strategy)
        with variation.switched("delivery.double-delivery"):
            yield "mutant", api.explore(EXAMPLES / "explore" / "watch-delivery.md", runs=30,
                                        strategy="random")

    skipping = list(campaigns())
    api._campaigns.cache_clear()        # nothing kept from the campaigns above
    monkeypatch.setattr(Watched, "predict", lambda self, chooser: None)
    running = list(campaigns())
    assert skipping == running
    assert any(r.faults for _, r in skipping) and skipping[-1][1].failures


def test_monitors_fed_only_the_records_they_declare_find_what_they_find_fed_every_record():
    """Each hot-state monitor's `SEES` names every record kind it reads: fed
    every record instead, the monitors find the very same violations, on the
    reference and on each liveness mutant (tasks.concurrency.admit-spawn-order,
    tasks.wait.join-any-parks-or-returns, tasks.cancel.marks-cancelled)."""
    import contextlib

    from forge import liveness

    # The monitors that follow hot states (`_Monitor`) declare what they read;
    # `ReadyChainNotRun` is written for its step and event records alone.
    every = tuple(type(k.__name__, (k,), {"SEES": None}) if issubclass(k, liveness._Monitor)
                  else k for k in liveness.MONITORS)
    assert every != liveness.MONITORS
    runner = Runner(spec_from_flags(str(EXAMPLES / "explore" / "watch-liveness.md")))
    caught = 0
    for site in (None, "admission.release-admits-nobody", "admission.wake-waits-for-slot",
                 "waits.last-end-wakes-nobody", "endings.cancel-lost-when-parked"):
        with variation.switched(site) if site else contextlib.nullcontext():
            for seed in range(12):
                routed = _violations(runner, (), seed, liveness.MONITORS)
                assert routed == _violations(runner, (), seed, every), (site, seed)
                caught += bool(routed)
    assert caught >= 4
