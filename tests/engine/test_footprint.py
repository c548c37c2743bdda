"""The engine reads its own records into a segment's footprint (kit: explore.reduction).

`forge.engine.footprint.touched` is what the partial-order reduction's
independence rests on; the simulator (`forge.sim.orders`) takes it as a
function and spells none of the engine's record or event vocabulary.
"""

from __future__ import annotations

import pathlib

from forge.engine.footprint import touched
from forge.sim.orders import GLOBAL

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quiet_records_and_events_are_keyed():
    """Steps by chain, store operations by path (a glob by every path), a
    task's log lines, store outcomes and section entry by the task."""
    records = [{"what": "step", "chain": 3},
               {"what": "call", "op": "store.read"},
               {"what": "harness", "op": "store", "store": "write", "path": "a.md"},
               {"what": "harness", "op": "store", "store": "glob", "path": "*.md"},
               {"what": "event"}]
    events = [("lua", None, 2, None, None), ("store_write_succeeded", None, 4, None, None),
              ("section_started", None, 5, None, None)]
    assert touched(records, events) == {"chain:3", "path:a.md", "path:*", "log", "task:2",
                                        "task:4", "task:5"}


def test_what_keys_cannot_describe_is_global():
    """A call that is not a store operation, another harness operation, any
    other record, and any other event touch everything."""
    for record in ({"what": "call", "op": "tasks.spawn"}, {"what": "harness", "op": "model"},
                   {"what": "timeout"}):
        assert GLOBAL in touched([record], [])
    assert GLOBAL in touched([], [("task_finished", None, 1, None, None)])
    assert touched([], []) == set()


def test_the_simulator_spells_none_of_the_engines_record_vocabulary():
    """The reading lives in the engine: no `sim/` module names the event
    kinds or record fields it keys by."""
    words = ('"section_started"', '"store_"', '"lua"', '"store."', '"harness"')
    for path in sorted((ROOT / "sim").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not [w for w in words if w in text], path
