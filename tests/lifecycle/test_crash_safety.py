"""Crash safety of the SQLite store: a worker process is killed with SIGKILL at
seeded random moments, over and over, on one database file.

The worker logs each store call before it starts and after it returns. The
test replays every returned call on a MemoryStore (which passes the same
contract) and requires the reopened database to equal that replay - or the
replay plus the one call that was in flight, if its transaction committed
before the kill. So no committed ending is lost, no transaction is half
applied, and every owed report (debt row) survives. After the last kill,
recovery fails each interrupted task and reports it exactly once.

Clause ids: lifecycle.store.transactional / lifecycle.durable.debt-atomic /
lifecycle.race.crash-between-finalize-and-hook / lifecycle.restart.recover-at-startup /
lifecycle.race.restart-during-attempt.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import forge
from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import Task, TaskStatus
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore
from killing import kill_amid_work

KILLS = 100
WORKER = r'''
import json, random, sys
from forge.lifecycle.records import Task
from forge.lifecycle.sqlite_store import SqliteStore

path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
store = SqliteStore(path)
print("READY", flush=True)
k = 0
while True:
    k += 1
    rows = store.list_all()
    live = [t for t in rows if t.status.value in ("working", "input_required")]
    failed = [t for t in rows if t.status.value == "failed"]
    pick = lambda ts: ts[rng.randrange(len(ts))]
    choice = rng.random()
    if choice < 0.25 or not rows:
        tid = f"t{seed}_{k}"
        call = ("create", [dict(id=tid, run_id=f"r{seed}_{k}", parent_session_id="p",
                                child_session_id=f"s{seed}_{k}", label="job", state={"k": k})])
    elif choice < 0.5 and live:
        t = pick(live)
        call = ("finalize", [t.id, t.run_id, rng.choice(["completed", "failed", "cancelled"]),
                             "sum", "full result", {"end": k}])
    elif choice < 0.6 and failed:
        t = pick(failed)
        call = ("retry_claim", [t.id, f"r{seed}_{k}", 3])
    elif choice < 0.65 and live:
        t = pick(live)
        call = ("release_retry_claim", [t.id, t.run_id, "no start", "retry could not start"])
    elif choice < 0.72 and live:
        t = pick(live)
        call = ("mark_input_required", [t.id, t.run_id])
    elif choice < 0.77 and live:
        t = pick(live)
        call = ("reclaim_working", [t.id, t.run_id])
    elif choice < 0.82 and live:
        t = pick(live)
        call = ("advance", [t.id, t.run_id, f"r{seed}_{k}", {"step": k}])
    elif choice < 0.86:
        call = ("fail_orphans", [])
    elif choice < 0.93:
        t = pick(rows)
        call = ("settle", [t.id, t.run_id])
    elif choice < 0.96:
        t = pick(rows)
        call = ("finalize", [t.id, "stale-run", "completed", "late", "late"])
    else:
        call = ("delete", [pick(rows).id])
    print(json.dumps(["BEGIN", call]), flush=True)
    op, args = call
    if op == "create":
        store.create(Task(**args[0]))
    else:
        getattr(store, op)(*args)
    print(json.dumps(["DONE", call]), flush=True)
'''


def _apply(store, call) -> None:
    op, args = call
    if op == "create":
        store.create(Task(**args[0]))
    else:
        getattr(store, op)(*args)


def _state(store) -> tuple:
    rows = tuple((t.id, t.run_id, t.status, t.attempt, t.summary, t.result,
                  json.dumps(t.state, sort_keys=True), t.continuations)
                 for t in store.list_all())
    return rows, tuple(store.owed())


def _clone(log: list) -> MemoryStore:
    mem = MemoryStore()
    for call in log:
        _apply(mem, call)
    return mem


def test_sigkill_at_random_points_loses_nothing_committed(tmp_path: Path) -> None:
    db = str(tmp_path / "tasks.db")
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(Path(forge.__file__).resolve().parent.parent)}
    rng = random.Random(20261201)
    log: list = []  # every call whose transaction is known to have committed
    in_flight_committed = 0
    calls_total = 0
    for kill in range(KILLS):
        lines = kill_amid_work([sys.executable, str(worker), db, str(kill)], env, rng, 0.03)
        pending = None
        for line in lines:
            try:
                kind, call = json.loads(line)
            except ValueError:
                break  # a line cut by the kill
            if kind == "BEGIN":
                pending = call
            else:
                log.append(call)
                pending = None
                calls_total += 1
        reopened = SqliteStore(db)
        got = _state(reopened)
        reopened.close()
        expected = _state(_clone(log))
        if got != expected and pending is not None:
            # the call in flight committed before the kill took its "DONE" line
            log.append(pending)
            expected = _state(_clone(log))
            in_flight_committed += 1
        assert got == expected, f"kill {kill}: the database is not the replay of what committed"
    assert calls_total > KILLS  # the kills landed amid real work
    print(f"{KILLS} kills, {calls_total} calls returned, "
          f"{in_flight_committed} committed in flight")

    # recovery after the last kill: every interrupted task failed and reported once
    store = SqliteStore(db)
    working = [t.id for t in store.list_all() if t.status is TaskStatus.WORKING]
    reported: list[str] = []
    mgr = Manager(Config(store=store, launcher=lambda req: None,
                         on_finished=lambda t: reported.append(t.id)))
    mgr.recover()
    assert reported == working
    assert {d.task_id for d in store.owed()} >= set(working)
    mgr.recover()
    assert reported == working  # a second sweep finds nothing to report
