"""Lifecycle benchmarks: store transitions and whole task lives, ratios in one run.

    python benchmarks/lifecycle.py [--seconds S] [--json]

Measures, in-process:
- store transitions/s (a create, a finalize, a retry claim and its release,
  a settle: one "cycle" of five transactions) on the SQLite store, on a file
  in WAL mode (synchronous FULL, the default, and NORMAL) and in memory,
  against the memory store as the baseline;
- whole task lives/s through the Manager (spawn, a failed run, a retry, a
  completion, the model reading the result) on each store;
- race steps/s: random stop/retry/finish races applied to the Manager on the
  memory store, against a plain spawn-and-complete loop as the baseline;
- interleavings/s of the races on the simulator (forge.lifecycle.explore,
  driven by sim's chooser) over the six two-actor races, exhaustively, on the
  memory store (CPU time), against the plain spawn-and-complete baseline, with
  each race's interleavings before reduction (every host call a step), with
  store steps only, and after partial-order reduction (forge.lifecycle.dpor:
  DPOR with sleep sets).
Each figure is the median of five timed rounds; ratios compare numbers taken
in the same process.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import random
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from timing import rate  # noqa: E402
from forge.lifecycle.explore import explore  # noqa: E402
from forge.lifecycle.scenario import races as shipped_races  # noqa: E402
from forge.lifecycle.manager import Config, Manager  # noqa: E402
from forge.lifecycle.records import (  # noqa: E402
    RunOutcome,
    SpawnRequest,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.sqlite_store import SqliteStore  # noqa: E402
from forge.lifecycle.store import MemoryStore  # noqa: E402


#: Stores wait on the disk (fsync), so these figures are wall-clock rates.
WALL = time.perf_counter


def store_cycle(store):
    ids = itertools.count()

    def cycle():
        n = next(ids)
        tid, run = f"t{n}", f"r{n}"
        store.create(Task(id=tid, run_id=run, parent_session_id="p",
                          child_session_id=f"s{n}", label="job"))
        store.finalize(tid, run, TaskStatus.FAILED, "boom", "boom")
        store.retry_claim(tid, run + "b", 3)
        store.release_retry_claim(tid, run + "b", "no start", "no start")
        store.settle(tid, run + "b")
    return cycle


def manager_life(store):
    mgr = Manager(Config(store=store, sessions=getattr(store, "sessions", lambda: None)(),
                         launcher=lambda req: None,
                         stopper=lambda run, graceful: StopOutcome.CANCELLED))
    mgr.recover()

    def life():
        t = mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go"))
        mgr.on_run_finished(t.child_session_id, RunOutcome(status=TaskStatus.FAILED,
                                                           run_id=t.run_id, err="boom"))
        r = mgr.retry(t.id)
        mgr.on_run_finished(t.child_session_id, RunOutcome(status=TaskStatus.COMPLETED,
                                                           run_id=r.run_id, text="done"))
        mgr.status(t.id)
    return life


def interleavings():
    """One random race per call, as the model machine's rules apply them."""
    rng = random.Random(7)
    stop_answer = [StopOutcome.CANCELLED]

    def stopper(run, graceful):
        return stop_answer[0]
    mgr = Manager(Config(store=MemoryStore(), launcher=lambda req: None, stopper=stopper,
                         max_concurrent_per_parent=10**9))
    mgr.recover()

    def step():
        t = mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go"))
        end = lambda st, run=t.run_id: mgr.on_run_finished(  # noqa: E731
            t.child_session_id, RunOutcome(status=st, run_id=run, text="x", err="e"))
        race = rng.randrange(4)
        if race == 0:  # stop vs completion
            stop_answer[0] = StopOutcome.ALREADY_FINISHED
            mgr.c.clock.call_later(0.5, lambda: end(TaskStatus.COMPLETED))
            mgr.stop(t.id)
        elif race == 1:  # failure, retry, stale outcome of the first run
            end(TaskStatus.FAILED)
            mgr.retry(t.id)
            end(TaskStatus.COMPLETED)
            mgr.stop(t.id)
        elif race == 2:  # pause, stop claims before the approval
            end(TaskStatus.INPUT_REQUIRED)
            mgr.stop(t.id)
            mgr.resume_after_approval(t.id)
        else:  # graceful stop, the run ends after its turn
            stop_answer[0] = StopOutcome.AFTER_TURN
            mgr.stop(t.id, graceful=True)
            mgr.on_run_finished(t.child_session_id, RunOutcome(
                status=TaskStatus.COMPLETED, run_id=t.run_id, graceful_stop=True))
        stop_answer[0] = StopOutcome.CANCELLED
    return step


def plain_lives():
    mgr = Manager(Config(store=MemoryStore(), launcher=lambda req: None,
                         max_concurrent_per_parent=10**9))
    mgr.recover()

    def step():
        t = mgr.spawn(SpawnRequest(parent_session_id="p", agent_name="a", input="go"))
        mgr.on_run_finished(t.child_session_id, RunOutcome(status=TaskStatus.COMPLETED,
                                                           run_id=t.run_id, text="x"))
    return step


#: The two-actor races the issue names (examples/lifecycle).
TWO_ACTOR = ("completion-vs-stop", "retry-vs-stop", "two-retries", "continuation-vs-stop",
             "sweep-vs-retry", "graceful-stop-vs-failing-turn")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per figure")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        file_store = lambda name: SqliteStore(str(pathlib.Path(tmp) / name))  # noqa: E731
        memory_cycles = rate(store_cycle(MemoryStore()), opts.seconds, WALL)
        sqlite_file_cycles = rate(store_cycle(file_store("cycles.db")), opts.seconds, WALL)
        sqlite_normal_cycles = rate(store_cycle(SqliteStore(
            str(pathlib.Path(tmp) / "normal.db"), synchronous="NORMAL")), opts.seconds, WALL)
        sqlite_mem_cycles = rate(store_cycle(SqliteStore(":memory:")), opts.seconds, WALL)
        memory_lives = rate(manager_life(MemoryStore()), opts.seconds, WALL)
        sqlite_file_lives = rate(manager_life(file_store("lives.db")), opts.seconds, WALL)
    races = rate(interleavings(), opts.seconds, WALL)
    shipped = shipped_races()
    counts = {}
    start = time.process_time()
    for name in TWO_ACTOR:
        full = explore(shipped[name], reduced=False)
        coarse = explore(shipped[name], reduced=True, por=False)
        reduced = explore(shipped[name])
        assert not (full.failure or coarse.failure or reduced.failure), name
        counts[name] = {"interleavings": full.interleavings,
                        "store_steps_only": coarse.interleavings,
                        "after_reduction": reduced.interleavings}
    explored = sum(sum(c.values()) for c in counts.values())
    explore_rate = explored / (time.process_time() - start)
    plain = rate(plain_lives(), opts.seconds)
    figures = {
        "store_ops_per_s": {"memory": 5 * memory_cycles, "sqlite_file_wal": 5 * sqlite_file_cycles,
                            "sqlite_file_wal_normal": 5 * sqlite_normal_cycles,
                            "sqlite_memory": 5 * sqlite_mem_cycles},
        "sqlite_file_vs_memory": sqlite_file_cycles / memory_cycles,
        "task_lives_per_s": {"memory": memory_lives, "sqlite_file_wal": sqlite_file_lives},
        "race_steps_per_s": races,
        "plain_lives_per_s": plain,
        "race_step_vs_plain_life": races / plain,
        "explored_interleavings": explored,
        "explored_interleavings_per_s": explore_rate,
        "interleaving_vs_plain_life": explore_rate / plain,
        "races": counts,
    }
    if opts.json:
        print(json.dumps(figures, indent=2))
        return
    ops = figures["store_ops_per_s"]
    print(f"store transitions/s: memory {ops['memory']:,.0f}, SQLite file (WAL) "
          f"{ops['sqlite_file_wal']:,.0f} ({figures['sqlite_file_vs_memory']:.3f}x memory; "
          f"synchronous=NORMAL {ops['sqlite_file_wal_normal']:,.0f}), "
          f"SQLite in memory {ops['sqlite_memory']:,.0f}")
    lives = figures["task_lives_per_s"]
    print(f"task lives/s (spawn, fail, retry, complete, read): memory {lives['memory']:,.0f}, "
          f"SQLite file {lives['sqlite_file_wal']:,.0f}")
    print(f"random race steps/s applied to the Manager (no scheduler): {races:,.0f} "
          f"({figures['race_step_vs_plain_life']:.2f}x a plain spawn-and-complete, "
          f"{plain:,.0f}/s)")
    print(f"exhaustive exploration on the simulator: {explored:,} interleavings of six races "
          f"at {explore_rate:,.0f}/s CPU ({figures['interleaving_vs_plain_life']:.4f}x a plain "
          "spawn-and-complete)")
    for name, c in counts.items():
        print(f"  {name:32} {c['interleavings']:6,} interleavings, "
              f"{c['store_steps_only']:5,} with store steps only, "
              f"{c['after_reduction']:5,} after partial-order reduction")


if __name__ == "__main__":
    main()
