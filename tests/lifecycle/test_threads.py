"""The Manager under real threads: the per-parent cap holds for concurrent
spawns, concurrent retries produce one run, and a task_status waiter on the
thread clock wakes when another thread finishes the task.

Clause ids: lifecycle.spawn.concurrency-slot / lifecycle.retry.concurrency-slot /
lifecycle.race.concurrent-retries / lifecycle.race.retry-vs-cap /
lifecycle.status.wait-bounded.
"""

from __future__ import annotations

import threading

import pytest
from lifecycle_host import FakeHost

from forge.lifecycle.clock import ThreadClock
from forge.lifecycle.contract import _race
from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import RunOutcome, SpawnRequest, TaskStatus
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore

STORES = {"memory": MemoryStore, "sqlite": lambda: SqliteStore(":memory:")}


def _spawn(mgr, parent="p"):
    try:
        return mgr.spawn(SpawnRequest(parent_session_id=parent, agent_name="a", input="go"))
    except TaskError as e:
        return e


@pytest.mark.parametrize("kind", sorted(STORES))
def test_concurrent_spawns_respect_the_cap(kind):
    for _round in range(20):
        h = FakeHost(store=STORES[kind](), max_concurrent_per_parent=2)
        h.mgr.recover()
        got = _race(h.store, [lambda: _spawn(h.mgr) for _ in range(8)])
        made = [g for g in got if not isinstance(g, TaskError)]
        assert len(made) == 2 and len(h.store.list_non_terminal("p")) == 2
        assert all(str(g).startswith("tasks: this conversation already has 2 tasks running")
                   for g in got if isinstance(g, TaskError))
        assert h.mgr._parents == {}  # the lock table drains


@pytest.mark.parametrize("kind", sorted(STORES))
def test_concurrent_retries_launch_one_run(kind):
    for _round in range(20):
        h = FakeHost(store=STORES[kind]())
        h.mgr.recover()
        t = h.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go"))
        h.mgr.on_run_finished(t.child_session_id, RunOutcome(status=TaskStatus.FAILED,
                                                             run_id=t.run_id, err="x"))

        def retry():
            try:
                return h.mgr.retry(t.id)
            except TaskError as e:
                return e
        got = _race(h.store, [retry for _ in range(6)])
        assert sum(not isinstance(g, TaskError) for g in got) == 1
        assert [r.retry for r in h.launches] == [False, True]
        assert h.store.get(t.id).attempt == 2


def test_status_waiter_wakes_when_another_thread_finishes():
    clock = ThreadClock(poll=3600.0)  # an hour's poll: only the notify can wake it
    h = FakeHost(clock=clock, max_status_wait=3600)
    h.mgr.recover()
    t = h.mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go"))
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(h.mgr.status(t.id, 3600)),
                              daemon=True)
    waiter.start()
    h.mgr.on_run_finished(t.child_session_id, RunOutcome(status=TaskStatus.COMPLETED,
                                                         run_id=t.run_id, text="done"))
    waiter.join(60)
    assert seen and seen[0].status is TaskStatus.COMPLETED
