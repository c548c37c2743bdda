"""The engine reads its own records into a segment's footprint (kit: explore.reduction).

`forge.engine.footprint.touched` is what the partial-order reduction's
independence rests on; the simulator (`forge.sim.orders`) takes it as a
function and spells none of the engine's record or event vocabulary.
"""

from __future__ import annotations

import pathlib

from forge.engine.footprint import touched
from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness, LatencyModel
from forge.prompt import parse_prompt
from forge.sim.chooser import Chooser
from forge.sim.orders import GLOBAL
from forge.store import MemoryStore

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


WRITES = """---
name: writes
description: Main writes 1 byte, 60 bytes, 1 byte
promptforge: 0
---

# Writes

## Main

```lua
store.write('m', '1')
store.write('n', string.rep('x', 60))
store.write('o', '1')
return 'done'
```
"""


def _run(store_bytes: int, **config):
    harness = Harness(store=MemoryStore(max_bytes=store_bytes),
                      latency_model=LatencyModel(orders=True))
    chooser = Chooser()
    run = run_prompt(parse_prompt(WRITES, "t.md"), harness, chooser, RunConfig(**config))
    return run, chooser.completions.segments()


def test_a_step_that_leaves_the_store_past_half_its_quota_is_global():
    """Main's steps, each ending when its write has landed: under a quota of
    100 bytes the 60-byte write and every store operation after it are
    global; under 200 bytes, the store stays at or under half and only
    main's return (its run ends) is."""
    _, tight = _run(100)
    _, roomy = _run(200)
    assert [GLOBAL in s.keys for s in tight] == [False, True, True, True]
    assert [GLOBAL in s.keys for s in roomy] == [False, False, False, True]
    assert [s.keys - {GLOBAL} for s in tight] == [s.keys - {GLOBAL} for s in roomy]


def test_each_quota_past_half_and_used_makes_a_segment_global():
    """A reading is per quota; a segment is global when it used one (the
    store's peaks: when it made any store operation) and left it past half
    its limit - not at half, and not when it did not use it."""
    run, _ = _run(100, max_entries=10, max_kept_bytes=1000, max_steps=40,
                  max_instructions=1_000_000)
    quotas = run.quotas
    assert quotas.limits[2:] == (100, quotas.limits[3], 10, 1000, 40, 1_000_000)
    zero = (0,) * len(quotas.limits)
    for n, limit in enumerate(quotas.limits):
        used_by = quotas.used_by[n]
        half, past = list(zero), list(zero)
        half[n], past[n] = limit // 2, limit // 2 + 1
        past[used_by] = max(past[used_by], 1)
        half[used_by] = max(half[used_by], 1)
        assert GLOBAL in quotas.touched([], [], zero, tuple(past)), n
        assert GLOBAL not in quotas.touched([], [], zero, tuple(half)), n
        unused = list(past)
        before = list(zero)
        before[used_by] = unused[used_by]
        if used_by == n:
            before[n] = unused[n]
        assert GLOBAL not in quotas.touched([], [], tuple(before), tuple(unused)), n
    assert quotas.touched([{"what": "step", "chain": 1}], [], None, None) == {"chain:1"}


def test_the_simulator_spells_none_of_the_engines_record_vocabulary():
    """The reading lives in the engine: no `sim/` module names the event
    kinds or record fields it keys by."""
    words = ('"section_started"', '"store_"', '"lua"', '"store."', '"harness"')
    for path in sorted((ROOT / "sim").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not [w for w in words if w in text], path
