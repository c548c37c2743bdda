"""Choosers: canonical, seeded, replayed - and replay tolerates drift."""

from __future__ import annotations

import json

import pytest

from forge.sim.chooser import (
    Canonical,
    Chooser,
    RandomProvider,
    ReplayProvider,
    SplitMix64,
    dump_replay,
    load_replay,
)
from forge.sim.pct import PCTProvider
from forge.sim.strategies import make_provider

OPTIONS = ("a", "b", "c")


def draw_many(provider, n=50):
    chooser = Chooser(provider)
    return [chooser.choose("chain", OPTIONS) for _ in range(n)]


def test_splitmix_is_a_fixed_sequence():
    """The stream is specified, so a seed means the same schedule on every machine."""
    rng = SplitMix64(0)
    assert [rng.next_u64() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


def test_canonical_always_picks_the_first_option():
    assert set(draw_many(Canonical())) == {0}


def test_random_is_reproducible_from_its_seed():
    assert draw_many(RandomProvider(7)) == draw_many(RandomProvider(7))
    assert draw_many(RandomProvider(7)) != draw_many(RandomProvider(8))


def test_pct_is_reproducible_and_in_range():
    values = draw_many(PCTProvider(3, depth=3))
    assert values == draw_many(PCTProvider(3, depth=3))
    assert all(0 <= v < 3 for v in values)


def test_replay_reproduces_and_then_goes_canonical():
    recorded = draw_many(RandomProvider(5), 10)
    replayed = draw_many(ReplayProvider(recorded), 12)
    assert replayed[:10] == recorded and replayed[10:] == [0, 0]


def test_replay_records_the_first_misalignment():
    provider = ReplayProvider([1, 9, 2])
    chooser = Chooser(provider)
    assert [chooser.choose("chain", OPTIONS) for _ in range(3)] == [1, 0, 2]
    assert provider.misaligned_at == 1


def test_single_option_choices_are_recorded_and_keep_replay_aligned():
    chooser = Chooser(RandomProvider(1))
    assert chooser.choose("chain", ("only",)) == 0
    assert chooser.values() == [0]
    replay = Chooser(ReplayProvider([0, 2]))
    assert replay.choose("chain", ("only",)) == 0
    assert replay.choose("chain", OPTIONS) == 2


def test_replay_files_round_trip(tmp_path):
    chooser = Chooser(RandomProvider(11))
    for _ in range(5):
        chooser.choose("latency:store", ("x1", "x0", "x2"))
    path = tmp_path / "r.json"
    path.write_text(dump_replay(chooser, prompt="p.md"))
    assert load_replay(str(path)) == chooser.values()


@pytest.mark.parametrize("body, message", [
    ("not json", "not JSON"),
    (json.dumps({"choices": [["k", 2]]}), "a replay file holds"),
])
def test_bad_replay_files_are_refused_with_the_file_named(tmp_path, body, message):
    path = tmp_path / "bad.json"
    path.write_text(body)
    with pytest.raises(ValueError) as e:
        load_replay(str(path))
    assert str(path) in str(e.value) and message in str(e.value)


@pytest.mark.parametrize("spec", ["canonical", "random:3", "pct:3", "pct:3:2"])
def test_strategies_parse(spec):
    make_provider(spec)


@pytest.mark.parametrize("spec", ["fast", "random:x", "pct:", "canonical:1"])
def test_unknown_strategies_are_refused(spec):
    with pytest.raises(ValueError, match="unknown strategy"):
        make_provider(spec)


class _Live:
    """A live sequence of labels, as the kernel hands its ready chains."""

    def __init__(self, labels):
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.labels[i]


def test_options_handed_as_a_live_view_are_kept_as_what_they_offered():
    """A decision among a live view keeps its count, the first option and the one
    taken, in O(1), so a run with thousands of ready chains does not copy them all
    at every step; tuples and lists are kept whole (kit: speed)."""
    from forge.sim.chooser import Offered

    chooser = Chooser(ReplayProvider([2, 1, 1]))
    live = _Live([f"task:0.{i}" for i in range(5000)])
    assert chooser.choose("chain", live) == 2
    assert chooser.choose("latency:store", ("x1.0", "x2.0")) == 1
    assert chooser.choose("chain", ["root:0", "task:0.1"]) == 1
    kept = chooser.options[0]
    assert kept == Offered(5000, "task:0.0", 2, "task:0.2")
    assert len(kept) == 5000 and kept[0] == "task:0.0" and kept[2] == "task:0.2"
    with pytest.raises(IndexError):
        kept[3]
    live.labels.clear()                         # the view moves on; what was kept does not
    assert kept[2] == "task:0.2"
    assert chooser.options[1:] == [("x1.0", "x2.0"), ("root:0", "task:0.1")]


def test_faults_fired_reads_the_fault_choices_answered_with_the_fault():
    """A fault is a `fault:KIND` choice between `none` and the fault: answered 1
    it fired.  A drawn cancel's follow-up (which step) is no fault of its own."""
    from forge.harness import FaultPlan, Faults

    chooser = Chooser(ReplayProvider([1, 0, 1, 1, 1]))
    faults = Faults(FaultPlan(("store", "cancel"), budget=5, cancel_steps=3), chooser)
    assert faults.fires("store", "refuse write a")
    assert not faults.fires("store", "refuse read b")
    assert faults.cancel_step() == 2            # fires, then picks "before step 2"
    assert faults.fires("store", "refuse append c")
    assert chooser.faults_fired() == ["store", "cancel", "store"]
    assert [c.kind for c in chooser.choices] == ["fault:store", "fault:store", "fault:cancel",
                                                 "fault:cancel_step", "fault:store"]
