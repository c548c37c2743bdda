"""How the kept-values quota sizes data (`forge.engine.quotas.data_size`),
checked against the rule as written: text counts its length, every list or
object entry `ENTRY_BYTES` more (an object's key its length too), any other
value but nil one entry (kit: kept-quota)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from forge.engine.quotas import ENTRY_BYTES, KeptQuota, data_size


def as_written(value, entry=ENTRY_BYTES):
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, dict):
        return sum(entry + len(k) + as_written(v, entry) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(entry + as_written(v, entry) for v in value)
    return entry if value is not None else 0


DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner) | st.tuples(inner, inner),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(DATA, st.integers(0, 64))
def test_sizes_follow_the_rule(value, entry):
    assert data_size(value, entry) == as_written(value, entry)


def test_a_spawn_of_nothing_costs_three_entries():
    # A task started with no input, no item and an empty `var`.
    assert data_size((None, None, [])) == 3 * ENTRY_BYTES


def test_deep_data_is_sized_without_recursion():
    value: list = []
    for _ in range(50_000):            # far past Python's recursion limit
        value = [value]
    assert data_size(value) == 50_000 * ENTRY_BYTES


def test_the_quota_names_what_went_over():
    quota = KeptQuota(limit=10)
    assert quota.take(10, "a result") is None
    message = quota.take(1, "the input of task 0.3")
    assert message == ("result budget exhausted: the run's results, error messages, notes and "
                       "task data would take more than 10 bytes (the input of task 0.3)")
