"""The watchers and checks that read the spec off every schedule: the child counter
(tasks.timeout-ids.timed-wait-takes-index, tasks.timeout-ids.no-index), the depth cap
(tasks.spawn-errors.depth-cap), a timed-out join keeping its finished members
(tasks.timeouts.join-timed-out), a leak failing its owner (tasks.leak.tasks-live,
tasks.model.owner-end.abandoned-quietly) and the four notice shapes
(tasks.model.notices.four-shapes) - each silent on the reference and each killing the
mutant of its rule on its example prompt, with no case and no user check."""

from __future__ import annotations

import pytest

from forge import variation
from forge.repro import explore_prompt
from forge.runspec import Expectation, spec_from_flags
from forge.verdict import Verdict
from tests.conformance_paths import example_spec

ANY_END = Expectation(same_ids=True, ending=Verdict(allow_failed=True))

KILLS = [
    ("ids.one-based", "explore/watch-ids.md", "child counter gives"),
    ("ids.per-section", "explore/watch-ids.md", "child counter gives"),
    ("ids.timed-wait-takes-no-index", "explore/watch-ids.md", "child counter gives"),
    ("ids.untimed-wait-takes-index", "explore/watch-ids.md", "child counter gives"),
    ("ids.call-takes-no-index", "explore/watch-ids.md", "child counter gives"),
    ("ids.string-order", "explore/watch-ids.md", "was admitted before task"),
    ("ids.depth-cap-off-by-one", "explore/watch-depth.md", "past the cap of 8"),
    ("timeouts.timed-join-drops-finished", "explore/watch-ids.md", "dropped the finished"),
    ("endings.leak-not-reported", "leaky-walk.md", "did not fail with tasks_live"),
    ("model.notice-cancel-spelling", "notice-shapes.md", "expected 'was canceled"),
]


@pytest.mark.parametrize("site, prompt, says", KILLS)
def test_each_watcher_kills_its_mutant_alone(site, prompt, says):
    spec = example_spec(prompt)
    with variation.switched(site):
        out = explore_prompt(spec, expect=ANY_END, runs=20, shrink_budget=0)
    assert out.failure is not None, site
    assert any(says in p for p in out.failure.problems), out.failure.problems


@pytest.mark.parametrize("prompt", sorted({p for _, p, _ in KILLS}))
def test_the_reference_passes_them_all(prompt):
    out = explore_prompt(example_spec(prompt), expect=ANY_END, runs=40)
    assert out.failure is None, out.failure and out.failure.problems
