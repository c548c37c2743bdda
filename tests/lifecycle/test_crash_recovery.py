"""A durable Manager on SQLite: ``kill -9`` at random points of a Manager's work
(spawns, endings, retries, stops), then a restart's ``recover``; and two
processes spawning into one database at once.

After every kill the test restarts the way a host does (a new Manager over the
same file, ``recover``) and requires: every spawn that returned still has its
row (nothing lost); no task, run or child session id was handed out twice, in
this process's life or any earlier one (nothing duplicated - ids come from the
database, not a process counter); every hidden child session belongs to a row
and every row's child session exists (no orphan: spawn writes the two in one
transaction, and ``recover`` sweeps what a repository without one leaves); and
every row is in a legal state (no working row survives the sweep, attempts
within the ceiling, every owed wake-up names its row's current, terminal,
reportable ending). The two spawning processes record every store call they
make (``history.Recorder``), and the two histories together are linearizable.

Sizes: ``FORGE_CRASH_KILLS`` kills (default 25, a few seconds) and
``FORGE_SPAWN_RACE_SECONDS`` of two-process spawning (default 1.5); the
closing note of issue 30 ran 500 kills and 60 seconds.

Clause ids: lifecycle.restart.recover-at-startup / lifecycle.store.transactional /
lifecycle.spawn.rollback-detached / lifecycle.identity.task-vs-run.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import forge
from forge.lifecycle.history import Recorder, cut, read
from forge.lifecycle.linearizability import check
from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import TaskStatus
from forge.lifecycle.sqlite_store import SqliteStore
from killing import kill_amid_work

KILLS = int(os.environ.get("FORGE_CRASH_KILLS", "25"))
RACE_SECONDS = float(os.environ.get("FORGE_SPAWN_RACE_SECONDS", "1.5"))
MAX_ATTEMPTS = 3

WORKER = r'''
import json, random, sys
from forge.lifecycle.errors import TaskError
from forge.lifecycle.history import Recorder
from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import RunOutcome, SpawnRequest, StopOutcome
from forge.lifecycle.sqlite_store import SqliteStore

path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
store = Recorder(SqliteStore(path, synchronous="NORMAL"), process=f"worker{seed}",
                 journal=open(path + ".journal", "a", encoding="utf-8"))
mgr = Manager(Config(store=store, sessions=store.sessions(), launcher=lambda req: None,
                     stopper=lambda run, graceful: StopOutcome.CANCELLED,
                     max_concurrent_per_parent=1000))
mgr.recover()
print("READY", flush=True)
while True:
    rows = store.store.list_all()  # choosing what to do is no part of the history
    live = [t for t in rows if t.status.value == "working"]
    failed = [t for t in rows if t.status.value == "failed" and t.attempt < 3]
    pick = lambda ts: ts[rng.randrange(len(ts))]
    choice = rng.random()
    if choice < 0.4 or not rows:
        req = SpawnRequest(parent_session_id=f"p{rng.randrange(3)}", agent_name="a", input="job")
        print(json.dumps(["BEGIN", "spawn"]), flush=True)
        t = mgr.spawn(req)
        print(json.dumps(["DONE", "spawn", t.id, t.run_id, t.child_session_id]), flush=True)
        continue
    if choice < 0.7 and live:
        t = pick(live)
        status = rng.choice(["completed", "failed"])
        print(json.dumps(["BEGIN", "finish"]), flush=True)
        mgr.on_run_finished(t.child_session_id, RunOutcome(status=status, run_id=t.run_id,
                                                            text="out", err="boom"))
    elif choice < 0.85 and failed:
        print(json.dumps(["BEGIN", "retry"]), flush=True)
        try:
            t = mgr.retry(pick(failed).id)
        except TaskError:
            pass
        else:
            print(json.dumps(["RUN", t.run_id]), flush=True)
    elif live:
        print(json.dumps(["BEGIN", "stop"]), flush=True)
        try:
            mgr.stop(pick(live).id)
        except TaskError:
            pass
    print(json.dumps(["DONE", "other"]), flush=True)
'''

SPAWNER = r'''
import json, sys, time
from forge.lifecycle.history import Recorder, write
from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import SpawnRequest
from forge.lifecycle.sqlite_store import SqliteStore

path, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw = SqliteStore(path, synchronous="NORMAL")
store = Recorder(raw, process=name)
mgr = Manager(Config(store=store, sessions=raw.sessions(), launcher=lambda req: None,
                     max_concurrent_per_parent=10**9))
print("READY", flush=True)
sys.stdin.readline()  # both start together
end = time.monotonic() + seconds
ids = []
while time.monotonic() < end:
    t = mgr.spawn(SpawnRequest(parent_session_id="p-" + name, agent_name="a", input="x"))
    ids.append([t.id, t.run_id, t.child_session_id])
write(path + "." + name + ".history.jsonl", store.history)
print(json.dumps(ids), flush=True)
'''


#: Histories are checked up to this many calls (``history.cut``): the spawns of
#: one parent form one part (the per-parent cap reads all its tasks), and the
#: restart sweep joins every task, so a part's search grows with calls times rows.
HISTORY_LIMIT = 5_000


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(Path(forge.__file__).resolve().parent.parent)}


def _restart(db: str, kill: int = 0) -> tuple[SqliteStore, Manager, list[str]]:
    """What a host does on start: open, a Manager, recover; who was reported.
    Its store calls go to the journal the workers write."""
    store = SqliteStore(db)
    reported: list[str] = []
    with open(db + ".journal", "a", encoding="utf-8") as journal:
        mgr = Manager(Config(store=Recorder(store, process=f"restart{kill}", journal=journal),
                             sessions=store.sessions(), launcher=lambda req: None,
                             on_finished=lambda t: reported.append(t.id)))
        mgr.recover()
    return store, mgr, reported


def _check_legal(store: SqliteStore, spawned: dict[str, tuple[str, str]]) -> None:
    rows = store.list_all()
    by_id = {t.id: t for t in rows}
    lost = sorted(set(spawned) - set(by_id))
    assert not lost, f"spawns that returned but have no row: {lost}"
    for tid, (_run, child) in spawned.items():
        assert by_id[tid].child_session_id == child
    children = [t.child_session_id for t in rows]
    assert len(set(children)) == len(children), "two rows share a child session"
    sessions = {s.id: s for s in store.sessions().list(include_hidden=True)}
    orphans = sorted(sid for sid, s in sessions.items() if s.hidden and sid not in children)
    assert not orphans, f"hidden sessions no task owns: {orphans}"
    homeless = sorted(c for c in children if c not in sessions)
    assert not homeless, f"rows whose child session is gone: {homeless}"
    for t in rows:
        assert t.status is not TaskStatus.WORKING, f"{t.id} still working after recover"
        assert 1 <= t.attempt <= MAX_ATTEMPTS, f"{t.id} at attempt {t.attempt}"
    for debt in store.owed():
        row = by_id.get(debt.task_id)
        assert row is not None, f"a wake-up owed for a row that is gone: {debt}"
        assert (row.run_id, row.status) == (debt.run_id, debt.status), (
            f"{debt} does not name its row's ending {row.run_id}/{row.status.value}")
        assert row.status in (TaskStatus.COMPLETED, TaskStatus.FAILED)


def test_kill_9_anywhere_then_recover_leaves_a_legal_database(tmp_path: Path) -> None:
    db = str(tmp_path / "tasks.db")
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    rng = random.Random(20261204)
    spawned: dict[str, tuple[str, str]] = {}
    runs_seen: set[str] = set()
    mid_call = 0
    for kill in range(KILLS):
        lines = kill_amid_work([sys.executable, str(worker), db, str(kill)], _env(), rng, 0.04)
        in_call = False
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                break  # a line cut by the kill
            in_call = entry[0] == "BEGIN"
            if entry[:2] == ["DONE", "spawn"]:
                tid, run, child = entry[2:]
                assert tid not in spawned, f"task id {tid} handed out twice"
                for rid in (run,):
                    assert rid not in runs_seen, f"run id {rid} handed out twice"
                    runs_seen.add(rid)
                spawned[tid] = (run, child)
            elif entry[0] == "RUN":
                assert entry[1] not in runs_seen, f"run id {entry[1]} handed out twice"
                runs_seen.add(entry[1])
        mid_call += in_call
        store, _mgr, _reported = _restart(db, kill)
        try:
            _check_legal(store, spawned)
        finally:
            store.close()
    assert len(spawned) > KILLS // 2, "the kills landed before any real work"
    # Every store call of every worker and restart, the killed ones unknown:
    # one linearizable history across all the processes' lives (its first
    # HISTORY_LIMIT calls).
    history = cut(read(db + ".journal"), HISTORY_LIMIT)
    unknown = sum(op.unknown for op in history)
    verdict = check(history)
    assert verdict.ok, verdict.text()
    print(f"{KILLS} kills ({mid_call} mid-call), {len(spawned)} spawns returned, "
          f"{len(runs_seen)} run ids, 0 orphans; {verdict.text()}, {unknown} unknown")


def test_two_processes_spawning_into_one_database_never_collide(tmp_path: Path) -> None:
    db = str(tmp_path / "tasks.db")
    SqliteStore(db).close()  # the schema exists before the race starts
    spawner = tmp_path / "spawner.py"
    spawner.write_text(SPAWNER)
    procs = [subprocess.Popen([sys.executable, str(spawner), db, name, str(RACE_SECONDS)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=_env(), text=True)
             for name in ("a", "b")]
    for proc in procs:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    minted: list[list[str]] = []
    for proc in procs:
        out, err = proc.communicate(timeout=RACE_SECONDS + 60)
        assert proc.returncode == 0, err
        got = json.loads(out.strip().splitlines()[-1])
        assert got, "a spawner spawned nothing"
        minted.extend(got)
    ids = [i for triple in minted for i in triple]
    assert len(set(ids)) == len(ids), "two spawns were handed the same id"
    # what the two processes did to the store, on one clock, is linearizable
    from forge.lifecycle.history import read
    from forge.lifecycle.linearizability import check

    history = sorted((op for name in ("a", "b") for op in read(f"{db}.{name}.history.jsonl")),
                     key=lambda op: op.call)
    verdict = check(cut(history, HISTORY_LIMIT))
    assert verdict.ok, verdict.text()
    store = SqliteStore(db)
    try:
        rows = store.list_all()
        assert sorted(t.id for t in rows) == sorted(t for t, _r, _c in minted)
        sessions = store.sessions().list(include_hidden=True)
        assert sorted(s.id for s in sessions) == sorted(c for _t, _r, c in minted)
    finally:
        store.close()
    print(f"{len(minted)} spawns from 2 processes in {RACE_SECONDS}s, 0 collisions; "
          f"{verdict.text()}")


def test_a_restart_mints_ids_after_the_last_one(tmp_path: Path) -> None:
    """The issue's failing case: a second Manager over the same file spawned
    ``s1`` again and died on ``duplicate session id s1``."""
    from forge.lifecycle.records import SpawnRequest

    db = str(tmp_path / "tasks.db")
    made = []
    for _restart_no in range(3):
        store = SqliteStore(db)
        mgr = Manager(Config(store=store, sessions=store.sessions(), launcher=lambda r: None))
        mgr.recover()
        made.append(mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="x")))
        store.close()
    ids = [i for t in made for i in (t.id, t.run_id, t.child_session_id)]
    assert len(set(ids)) == len(ids), ids


def test_a_crash_between_session_and_row_is_swept_by_recover() -> None:
    """A repository that cannot share the store's transaction (here: memory
    sessions beside an SQLite store) may keep a hidden session whose row never
    came; ``recover`` deletes it and nothing a task owns."""
    from forge.lifecycle.records import SpawnRequest
    from forge.lifecycle.sessions import MemorySessions, Session

    store = SqliteStore()
    sessions = MemorySessions()
    mgr = Manager(Config(store=store, sessions=sessions, launcher=lambda r: None))
    kept = mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="x"))
    sessions.create(Session(id="half-made", title="task: x", hidden=True, parent_id="p"))
    sessions.create(Session(id="p", title="the parent"))
    mgr.recover()
    assert sorted(s.id for s in sessions.list(include_hidden=True)) == sorted(
        ["p", kept.child_session_id])


def test_a_refused_row_is_a_clear_error_and_leaves_no_session() -> None:
    """A row the store refuses (here a duplicate task id from a broken id source)
    is ``tasks: creating task: <reason>``, never a raw ValueError, and its
    session goes with it."""
    import itertools

    import pytest

    from forge.lifecycle.errors import TaskError
    from forge.lifecycle.records import SpawnRequest

    store = SqliteStore()
    n = itertools.count(1)
    mgr = Manager(Config(store=store, sessions=store.sessions(), launcher=lambda r: None,
                         new_id=lambda prefix: "t1" if prefix == "t" else f"{prefix}{next(n)}"))
    mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="x"))
    with pytest.raises(TaskError) as refused:
        mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="y"))
    assert str(refused.value) == "tasks: creating task: tasks: duplicate task id t1"
    assert [s.id for s in store.sessions().list(include_hidden=True)] == ["s1"]
