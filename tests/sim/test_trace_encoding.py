"""The trace's bytes: each record is canonical JSON (sorted keys, no spaces,
UTF-8 as is), one per line, and the hash is over exactly those lines.

`forge.sim.trace` builds the C encoder once instead of letting `json` build
one per record; these tests hold its text to `json.dumps` with the
canonical options, for any JSON data a record can carry.
"""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, strategies as st

from forge.sim.trace import Trace, canonical_json

_SCALARS = (st.none() | st.booleans() | st.integers() | st.text()
            | st.floats(allow_nan=False, allow_infinity=False))
_DATA = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)


def _reference(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@given(st.dictionaries(st.text(max_size=8), _DATA, max_size=6))
def test_a_record_is_written_as_json_dumps_writes_it(record):
    """The C encoder built once writes what `json.dumps` would (kit: determinism.trace)."""
    assert canonical_json(record) == _reference(record)


@given(st.lists(st.dictionaries(st.sampled_from(["chain", "task", "é", "members"]), _DATA,
                                max_size=3), max_size=5))
def test_the_hash_is_over_the_records_lines(extra):
    """The hash covers exactly the trace's lines (kit: determinism.trace)."""
    trace = Trace()
    for i, fields in enumerate(extra):
        trace.emit(i, "step", **fields)
    lines = "".join(_reference(r) + "\n" for r in trace.records)
    assert trace.lines() == lines
    assert trace.sha256() == hashlib.sha256(lines.encode("utf-8")).hexdigest()


def test_a_trace_longer_than_one_slice_hashes_every_record():
    """Hashing in slices misses no record (kit: determinism.trace)."""
    trace = Trace()
    for i in range(10_000):
        trace.emit(i, "step", chain=str(i % 7))
    lines = "".join(_reference(r) + "\n" for r in trace.records)
    assert trace.sha256() == hashlib.sha256(lines.encode("utf-8")).hexdigest()
