"""The hostile catalogue (`tests/hostile/catalogue.py`) is whole and within the guarantee.

Each entry runs in detail elsewhere at a CI-sized budget (`tests/engine/test_sandbox.py`,
`tests/hostile/test_entry_points.py`); `benchmarks/hostile.py` runs them all in processes of
their own under the default budgets and measures each against its ceiling.
"""

from __future__ import annotations

import pytest

from tests.engine import test_sandbox as sandbox
from tests.hostile import catalogue, test_entry_points as entry_points
from tests.conftest import run_text

#: The run error kinds a hostile prompt may end in.
KINDS = {"Lua", "Budget", "Backstop", "Quota"}


def test_every_known_case_is_in_the_catalogue():
    """Every sandbox escape, runaway prompt, hostile value, prompt Lua reached from Python and
    long-instruction loop the tests know is an entry (kit: budget.cpu-backstop)."""
    names = set(catalogue.ENTRIES)
    groups = {"escape": sandbox.ESCAPES, "runaway": sandbox.RUNAWAY,
              "value": sandbox.HOSTILE_VALUES, "python-lua": entry_points.ENTRIES,
              "python-lua-unrun": entry_points.UNRUN, "backstop": entry_points.BACKSTOP}
    for group, cases in groups.items():
        assert {f"{group}/{name}" for name in cases} <= names
    assert len(names) == sum(map(len, groups.values()))


@pytest.mark.parametrize("name", sorted(catalogue.ENTRIES))
def test_each_entry_names_its_ending_and_a_ceiling_within_the_guarantee(name):
    """Each entry ends in a known run error kind, and its CPU and memory ceilings are within
    the documented guarantee: 10 s of CPU and 1 GB (kit: budget.cpu-backstop)."""
    entry = catalogue.ENTRIES[name]
    assert entry.kind in KINDS
    assert 0 < entry.cpu_seconds <= catalogue.MAX_CPU_SECONDS
    assert 0 < entry.rss_mb <= catalogue.MAX_RSS_MB
    assert entry.text.startswith("---\n")


@pytest.mark.parametrize("name", sorted(n for n in catalogue.ENTRIES if n.startswith("escape/")))
def test_each_escape_entry_ends_as_its_catalogue_says(name):
    """The cheap entries run here as the catalogue states them (kit: budget.cpu-backstop)."""
    entry = catalogue.ENTRIES[name]
    obs = run_text(entry.text, max_cpu_seconds=5.0)
    assert obs["error"]["kind"] == entry.kind
    assert entry.phrase in obs["error"]["message"]
