"""Liveness monitors (forge.liveness): each hot state is left in time on every schedule
of the reference, and each liveness mutant - a lost wake-up on a slot's release, a woken
task never re-admitted, a join of every member never woken, a cancel of a parked task
that never lands - is reported as a violation naming where the state turned hot, with
the hot suffix marked in the story and the timeline.

Clauses held: tasks.concurrency.admit-spawn-order, tasks.wait.join-any-parks-or-returns,
tasks.immediate.ended-wait-at-once, tasks.cancel.marks-cancelled,
tasks.immediate.checks-answered-at-once.
"""

from __future__ import annotations

import json

import pytest

from forge import variation
from forge.repro import explore_prompt, prepare
from forge.sim.chooser import Canonical, Chooser, Provider
from forge.sim.explore import check_all
from forge.sim.fair import FairProvider
from forge.runspec import Expectation, spec_from_flags
from forge.timeline import hot_suffixes, render_html
from forge.verdict import Verdict
from tests.conftest import EXAMPLES

LIVENESS = str(EXAMPLES / "explore" / "watch-liveness.md")
FAIRNESS = str(EXAMPLES / "explore" / "watch-fairness.md")
ANY_END = Expectation(same_ids=False, ending=Verdict(allow_failed=True))


def test_the_reference_leaves_every_hot_state_on_every_schedule():
    for path in [LIVENESS, *map(str, sorted((EXAMPLES / "explore").glob("watch-*.md")))]:
        out = explore_prompt(spec_from_flags(path, concurrency=2), expect=ANY_END, runs=60)
        assert out.failure is None, (path, out.failure and out.failure.problems)


@pytest.mark.parametrize("site, says", [
    ("admission.release-admits-nobody", "stayed queued while a slot was free for it"),
    ("admission.wake-waits-for-slot", "stayed queued while a slot was free for it"),
    ("waits.last-end-wakes-nobody", "stayed parked on its tasks.join of 0.0, 0.1 after they ended"),
    ("endings.cancel-lost-when-parked", "was cancelled by its owner and never ended cancelled"),
])
def test_each_liveness_mutant_is_a_violation_with_its_hot_suffix(site, says):
    with variation.switched(site):
        out = explore_prompt(spec_from_flags(LIVENESS), expect=ANY_END, runs=100)
    assert out.failure is not None
    problem = next(p for p in out.failure.problems if says in p)
    assert "(hot from trace record " in problem
    story = "\n".join(out.failure.story)
    assert "HOT from here: " in story and "VIOLATION " in story
    assert story.index("HOT from here: ") <= story.index("VIOLATION ")
    hot = hot_suffixes(out.failure.observation)
    assert hot and says in hot[0][1]
    records = [json.loads(line) for line in out.failure.trace.splitlines()]
    assert 'class="hot"' in render_html(records, {}, None, hot)


def test_liveness_mutants_are_declared_sites_in_the_catalogue():
    from forge.conformance.mutants import CATALOGUE

    liveness = {m.site for m in CATALOGUE if m.category == "liveness"}
    assert len(liveness) >= 4
    assert all(variation.find(site) for site in liveness)


class _Listing(Provider):
    """Answers from a list, then 0; keeps what each chain pick offered."""

    def __init__(self, answers):
        self.answers, self.offered = list(answers), []

    def draw(self, kind, options):
        if kind == "chain":
            self.offered.append([options[i] for i in range(len(options))])
        return self.answers.pop(0) if self.answers else 0


def test_the_fair_scheduler_is_the_inner_ones_for_its_prefix_then_oldest_ready_first():
    """(tasks.glance.owner-keeps-running)"""
    inner = _Listing([2, 1])
    fair = FairProvider(inner, prefix=1)
    assert fair.draw("chain", ["a", "b", "c"]) == 2           # the prefix: the inner's pick
    assert fair.draw("latency:store.write", ["x1.0", "x2.0"]) == 1   # not a pick: the inner's
    # a and b have waited since the first pick (a offered first), d is new:
    # oldest first, whatever the order they are offered in.
    assert fair.draw("chain", ["d", "b", "a"]) == 2
    assert fair.draw("chain", ["d", "b"]) == 1
    assert fair.draw("chain", ["e", "d"]) == 1
    assert fair.describe()["fair_from"] == 2 and fair.name == "fair(provider)"
    with pytest.raises(ValueError):
        FairProvider(inner, prefix=-1)


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_the_reference_runs_every_ready_chain_within_its_fair_bound(strategy):
    """(tasks.glance.owner-keeps-running, tasks.spawn.every-function-suspends)"""
    for path in [FAIRNESS, LIVENESS, str(EXAMPLES / "explore" / "store-race.md")]:
        for prefix in (0, 3, 8):
            out = explore_prompt(spec_from_flags(path, concurrency=3), expect=ANY_END, runs=40,
                                 strategy=strategy, fair=prefix)
            assert out.failure is None, (path, prefix, out.failure and out.failure.problems)


def test_a_passed_over_chain_hidden_from_the_picks_breaks_the_fair_bound_with_its_hot_suffix():
    """kernel.passed-over-waits-for-idle: the ready-chain monitor alone finds it
    (tasks.glance.owner-keeps-running)."""
    with variation.switched("kernel.passed-over-waits-for-idle"):
        out = explore_prompt(spec_from_flags(FAIRNESS), expect=ANY_END, runs=50, fair=2)
        runner, _, checks = prepare(spec_from_flags(FAIRNESS), ANY_END)
        canonical, _ = runner.subject(Chooser(Canonical()))
    assert check_all(canonical, checks) == []     # the canonical schedule passes nobody over
    assert out.failure is not None
    problem = next(p for p in out.failure.problems if "ReadyChainNotRun" in p or
                   "fair step" in p)
    assert "stayed ready through 1 fair step without running" in problem
    assert "(hot from trace record " in problem
    story = "\n".join(out.failure.story)
    assert "HOT from here: " in story
    assert story.index("HOT from here: ") <= story.index("VIOLATION ")
    hot = hot_suffixes(out.failure.observation)
    assert hot and "fair step" in hot[0][1]
    records = [json.loads(line) for line in out.failure.trace.splitlines()]
    assert 'class="hot"' in render_html(records, {}, None, hot)


def test_the_picks_of_the_wrong_kernel_never_offer_the_passed_over_chain():
    """What the mutant does, seen from the scheduler: after a pick passes
    task 0.0 over, the next picks offer only the other task's chains."""
    runner = prepare(spec_from_flags(FAIRNESS), ANY_END)[0]
    picks = _Listing([0, 1])
    with variation.switched("kernel.passed-over-waits-for-idle"):
        runner.run(Chooser(picks))
    assert picks.offered[1] == ["task:0.0", "task:0.1"]
    assert picks.offered[2] == [picks.offered[2][0]] and "0.1" in picks.offered[2][0]
    honest = _Listing([0, 1])
    runner.run(Chooser(honest))
    assert "task:0.0" in honest.offered[2]


class _Facts:
    """What ReadyChainNotRun reads off a run: the ready labels and the picks."""

    def __init__(self):
        from types import SimpleNamespace

        self.scheduler = SimpleNamespace(ready=[])
        self.answers = _Listing([])
        self.chooser = Chooser(self.answers)

    def pick(self, value, ready):
        self.answers.answers.append(value)
        self.chooser.choose("chain", ("task:picked", *ready))
        self.scheduler.ready = list(ready)


def _step(i, chain):
    return {"i": i, "t": 0, "what": "step", "chain": chain, "kind": "task"}


def test_the_ready_chain_bound_counts_fair_steps_only_and_the_clock_bound_any():
    """(tasks.glance.owner-keeps-running) An unfair pick starts the count again;
    two fair steps past a chain's bound of two is a violation; a chain still
    ready when an event is handled is one under any schedule."""
    from forge.liveness import ReadyChainNotRun

    facts = _Facts()
    monitor = ReadyChainNotRun(facts)
    facts.pick(0, ["task:0.0"])                      # 0.1 runs; 0.0 waits, bound 1
    assert list(monitor.see(_step(1, "0.1"))) == []
    facts.pick(1, ["task:0.0", "task:0.2"])          # unfair: the stretch starts again
    assert list(monitor.see(_step(2, "0.3"))) == []
    facts.pick(0, ["task:0.0", "task:0.4"])          # bound 2 from here
    assert list(monitor.see(_step(3, "0.2"))) == []
    facts.pick(0, ["task:0.0", "task:0.5"])
    assert list(monitor.see(_step(4, "0.4"))) == []
    facts.pick(0, ["task:0.0"])
    [hot] = monitor.see(_step(5, "0.5"))
    assert hot.since == 3 and "chain 0.0 stayed ready through 2 fair steps" in hot.problem

    clock = ReadyChainNotRun(_Facts())
    clock.run.scheduler.ready = ["task:0.7"]
    [late] = clock.see({"i": 9, "t": 5, "what": "event", "event": "complete"})
    assert "chain 0.7 was still ready when the clock moved on" in late.problem
    cancel = ReadyChainNotRun(_Facts())
    cancel.run.scheduler.ready = ["task:0.7"]
    assert list(cancel.see({"i": 9, "t": 5, "what": "event", "event": "host_cancel"})) == []


def test_forge_explore_fair_finds_the_starved_chain_and_its_rerun_line_keeps_fair(tmp_path):
    """`forge explore --fair K`: the failure's one-line rerun keeps the flag and
    fails again; the reference passes; --fair refuses what it cannot make fair
    (tasks.glance.owner-keeps-running)."""
    import shlex

    from click.testing import CliRunner

    from forge.cli import main

    args = ["explore", FAIRNESS, "--fair", "2", "--runs", "50", "--database", "none",
            "--replay-out", str(tmp_path / "f.replay.json")]
    with variation.switched("kernel.passed-over-waits-for-idle"):
        found = CliRunner().invoke(main, args)
        assert found.exit_code == 1, found.output
        assert "stayed ready through 1 fair step without running" in found.output
        rerun = next(line for line in found.output.splitlines()
                     if line.startswith("or, with no file: forge explore "))
        words = shlex.split(rerun.partition(": ")[2])
        assert words[words.index("--fair") + 1] == "2"
        again = CliRunner().invoke(main, words[1:] + ["--replay-out",
                                                      str(tmp_path / "g.replay.json")])
        assert again.exit_code == 1 and "fair step" in again.output
    assert CliRunner().invoke(main, args).exit_code == 0
    for more in (["--workers", "2"], ["--strategy", "exhaustive"]):
        refused = CliRunner().invoke(main, args + more)
        assert refused.exit_code == 2 and "--fair: makes the reference engine's" in refused.output


def test_the_python_api_explores_fair_schedules_too():
    """`forge.explore(..., fair=K)` is `--fair K` (tasks.glance.owner-keeps-running)."""
    import forge

    with variation.switched("kernel.passed-over-waits-for-idle"):
        report = forge.explore(FAIRNESS, fair=2, runs=50, allow_failed=True)
    assert not report.ok
    assert "fair step" in report.failures[0].problems[0]
    assert forge.explore(FAIRNESS, fair=2, runs=50).ok
    with pytest.raises(forge.InputError, match="^explore: fair must be at least 0, got -1$"):
        forge.explore(FAIRNESS, fair=-1)
    with pytest.raises(forge.InputError, match="fair makes the reference engine's schedules"):
        forge.explore(FAIRNESS, fair=2, workers=2)
