"""`rules.ids` tested where it lives: the child counter every taker goes
through, entry ids, spawn order and the depth cap, on plain chain records
(no run, no Lua).  A state machine drives the counter's protocol - spawns,
calls, timed and untimed waits, section entries - against a model that
counts indexes itself."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from forge.engine.rules import ids


@attrs.define
class Chain:
    """What the counter needs of a chain (`ids.Counted`)."""

    id: str = "0"
    kind: str = "root"
    depth: int = 0
    child_counter: int = 0
    entry_counter: int = 0
    task: object = None


def test_spawns_and_calls_share_one_counter():
    """A call then a spawn are a chain's children .0 and .1; a task id extends
    its owner's (tasks.ids.one-child-counter, tasks.ids.child-extends-owner)."""
    walk = Chain("0")
    assert ids.take_for_call(walk) == "0.0"
    assert ids.take(walk) == "0.1"
    task = Chain("0.1", kind="task", depth=1)
    assert ids.take(task) == "0.1.0"


def test_a_timed_wait_takes_an_index_and_an_untimed_one_none():
    """After spawning 0.0 and one timed wait the next spawn is 0.2; an untimed
    wait takes nothing (tasks.timeout-ids.timed-wait-takes-index,
    tasks.timeout-ids.no-index)."""
    walk = Chain("0")
    assert ids.take(walk) == "0.0"
    ids.wait_parks(walk, timed=False)
    ids.wait_parks(walk, timed=True)
    assert ids.take(walk) == "0.2"


def test_entry_ids_extend_the_chain_id():
    """A task's first section entry is its id plus .0, the next .1; a prompt
    with no H1 pass starts its walk at entry 1 (tasks.ids.sys-id-in-task,
    tasks.ids.root-chain)."""
    task = Chain("0.0", kind="task", depth=1)
    assert ids.enter_section(task) == "0.0.0"
    assert ids.in_first_entry(task) and ids.current_entry(task) == "0.0.0"
    assert ids.enter_section(task) == "0.0.1"
    assert not ids.in_first_entry(task)
    root = Chain("0")
    ids.skip_h1_entry(root)
    assert ids.enter_section(root) == "0.1"


@given(st.lists(st.lists(st.integers(0, 4294967295), min_size=1, max_size=4), min_size=2,
                max_size=8))
def test_spawn_order_compares_components_as_numbers(paths):
    """Spawn order is component-by-component numeric order, so 0.9 precedes
    0.10 (tasks.ids.spawn-order-numeric)."""
    texts = [".".join(map(str, p)) for p in paths]
    assert all(ids.is_task_id(t) for t in texts)
    assert sorted(texts, key=ids.id_key) == [".".join(map(str, p)) for p in sorted(paths)]
    assert ids.id_key("0.9") < ids.id_key("0.10")


@given(st.text(max_size=12))
def test_only_dotted_decimal_paths_are_ids(text):
    """An id is plain decimal components 0..4294967295 joined by single dots
    (tasks.ids.child-extends-owner, tasks.id-errors.wait-set-member)."""
    parts = text.split(".")
    plain = all(p.isascii() and p.isdigit() and (p == "0" or not p.startswith("0"))
                and int(p) <= ids.MAX_COMPONENT for p in parts)
    assert ids.is_task_id(text) == plain


def test_the_depth_cap_refuses_the_ninth_level():
    """Depths 1-8 are allowed; a call or fanout that would land at depth 9
    is refused with the recursion cap message (tasks.spawn-errors.depth-cap,
    tasks.spawn-errors.fanout-depth-cap)."""
    assert ids.depth_refusal(Chain(depth=7), "call") is None
    assert ids.depth_refusal(Chain(depth=8), "call") == "call recursion exceeded cap of 8"
    assert ids.depth_refusal(Chain(depth=8), "fanout") == "fanout recursion exceeded cap of 8"


class Counter(RuleBasedStateMachine):
    """Whatever mix of spawns, calls, waits and section entries a chain makes,
    its children are numbered by one counter that only grows: every spawn and
    call takes the next index, a timed wait that parks skips one, an untimed
    wait and a section entry take none (tasks.ids.one-child-counter,
    tasks.timeout-ids.timed-wait-takes-index, tasks.timeout-ids.no-index,
    tasks.ids.fanout-shares-counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.chain = Chain("0.3", kind="task", depth=1)
        self.expected = 0
        self.given: list[str] = []

    @rule()
    def spawn(self):
        self.given.append(ids.take(self.chain))
        assert self.given[-1] == f"0.3.{self.expected}"
        self.expected += 1

    @rule()
    def call(self):
        self.given.append(ids.take_for_call(self.chain))
        assert self.given[-1] == f"0.3.{self.expected}"
        self.expected += 1

    @rule(arms=st.integers(1, 3))
    def fanout(self, arms):
        for _ in range(arms):       # each arm is a task: it takes its index like a spawn
            self.given.append(ids.take(self.chain))
            assert self.given[-1] == f"0.3.{self.expected}"
            self.expected += 1

    @rule(timed=st.booleans())
    def wait(self, timed):
        ids.wait_parks(self.chain, timed=timed)
        self.expected += timed

    @rule()
    def enter(self):
        entries = self.chain.entry_counter
        assert ids.enter_section(self.chain) == f"0.3.{entries}"

    @invariant()
    def ids_are_distinct_and_in_spawn_order(self):
        assert len(set(self.given)) == len(self.given)
        assert sorted(self.given, key=ids.id_key) == self.given
        assert self.chain.child_counter == self.expected


test_counter = Counter.TestCase
