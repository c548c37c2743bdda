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
from forge.repro import explore_prompt
from forge.runspec import Expectation, spec_from_flags
from forge.timeline import hot_suffixes, render_html
from forge.verdict import Verdict
from tests.conftest import EXAMPLES

LIVENESS = str(EXAMPLES / "explore" / "watch-liveness.md")
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
