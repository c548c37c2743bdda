"""The history checker (``forge lifecycle check``): recorded histories of the
real stores are linearizable, broken ones are not and shrink to a minimal
sub-history, unknown outcomes are either, the checker agrees with a
brute-force one on every small generated history, and the page draws in
headless Chromium.

Clause ids: lifecycle.store.transactional / lifecycle.finalize.single-winner /
lifecycle.retry.cas.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import threading
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forge
from forge.lifecycle.history import Operation, Recorder, encode, read, write
from forge.lifecycle.linearizability import Model, check, linearizable, partition
from forge.lifecycle.records import Task
from forge.lifecycle.sqlite_store import SqliteStore
from forge.lifecycle.store import MemoryStore

ROOT = Path(forge.__file__).resolve().parents[1]


def _row(tid: str, parent: str = "p") -> Task:
    return Task(id=tid, run_id="r1", parent_session_id=parent, child_session_id=f"s-{tid}",
                label=tid)


def _op(process, op, args, result, call, ret):
    return Operation(process, op, tuple(encode(list(args))), encode(result), call, ret)


def _threads(store, processes: int = 4, rounds: int = 60, seed: int = 7) -> list[Operation]:
    rec = Recorder(store)

    def work(p: int) -> None:
        rng = random.Random(seed * 100 + p)
        for k in range(rounds):
            tid = f"t{rng.randrange(6)}"
            roll = rng.random()
            try:
                if roll < 0.2:
                    rec.create(_row(tid), 3)
                elif roll < 0.45:
                    rec.finalize(tid, "r1", rng.choice(["completed", "failed"]), "s", "r")
                elif roll < 0.6:
                    rec.retry_claim(tid, f"r{p}-{k}", 3, 3)
                elif roll < 0.7:
                    rec.get(tid)
                elif roll < 0.8:
                    rec.list_by_parent("p")
                elif roll < 0.9:
                    rec.settle(tid, "r1")
                else:
                    rec.next_id("t")
            except (KeyError, ValueError, Exception):
                pass
    threads = [threading.Thread(target=work, args=(p,), name=f"w{p}") for p in range(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rec.history


@pytest.mark.parametrize("make", [MemoryStore, SqliteStore], ids=["memory", "sqlite"])
def test_a_recorded_threaded_history_of_a_real_store_is_linearizable(make):
    history = _threads(make())
    verdict = check(history)
    assert verdict.ok, verdict.text()
    assert verdict.operations == len(history) > 200


def test_two_winners_of_one_attempt_are_not_linearizable_and_shrink():
    """(lifecycle.finalize.single-winner) Two finalizes of one attempt that both
    won have no legal order; the sub-history shown loses its illegality
    without any one of its operations but the create."""
    won = _row("t1")
    history = [
        _op(1, "create", [won], won, 0, 1),
        _op(2, "get", ["other"], {"error": "not_found"}, 2, 3),
        _op(1, "finalize", ["t1", "r1", "completed", "a", "a"],
            attrs.evolve(won, status="completed", summary="a", result="a"), 4, 8),
        _op(2, "finalize", ["t1", "r1", "failed", "b", "b"],
            attrs.evolve(won, status="failed", summary="b", result="b"), 5, 9),
        _op(3, "get", ["t1"], attrs.evolve(won, status="failed", summary="b", result="b"), 10, 11),
    ]
    verdict = check(history)
    assert not verdict.ok
    minimal = list(verdict.minimal)
    assert minimal[0].op == "create" and ("other",) not in [op.args for op in minimal], (
        "the read of another task is no part of it")
    assert not linearizable(minimal)
    for i in range(1, len(minimal)):
        assert linearizable(minimal[:i] + minimal[i + 1:]), f"{minimal[i].describe()} is spare"
    assert verdict.text().startswith(f"not linearizable: these {len(minimal)} operations")


def test_a_stale_read_after_a_returned_write_is_not_linearizable():
    """A get that starts after a finalize returned must see it (real-time order)."""
    row = _row("t1")
    done = attrs.evolve(row, status="completed", summary="s", result="r")
    history = [_op(1, "create", [row], row, 0, 1),
               _op(1, "finalize", ["t1", "r1", "completed", "s", "r"], done, 2, 3),
               _op(2, "get", ["t1"], row, 4, 5)]
    assert not check(history).ok
    overlapping = history[:2] + [_op(2, "get", ["t1"], row, 2, 5)]
    assert check(overlapping).ok, "a get overlapping the finalize may see either"


def test_an_unknown_outcome_may_have_happened_or_not():
    """A finalize whose process died mid-call (no return) may land at any moment
    after its call, or never; a later read decides which, and both are legal."""
    row = _row("t1")
    done = attrs.evolve(row, status="completed", summary="s", result="r")
    crashed = _op(1, "finalize", ["t1", "r1", "completed", "s", "r"], None, 2, None)
    for seen in (row, done):
        assert check([_op(1, "create", [row], row, 0, 1), crashed,
                      _op(2, "get", ["t1"], seen, 5, 6)]).ok
    other = attrs.evolve(row, status="failed", summary="x", result="x")
    assert not check([_op(1, "create", [row], row, 0, 1), crashed,
                      _op(2, "get", ["t1"], other, 5, 6)]).ok


def test_parts_split_by_task_and_join_where_an_operation_reads_several():
    a, b, c = _row("a"), _row("b"), _row("c", parent="q")
    history = [_op(1, "create", [a], a, 0, 1), _op(2, "create", [b], b, 0, 1),
               _op(3, "create", [c], c, 0, 1), _op(1, "next_id", ["t"], "t1", 2, 3)]
    assert len(partition(history)) == 4
    joined = history + [_op(1, "list_by_parent", ["p"], [b, a], 4, 5)]
    assert sorted(map(len, partition(joined))) == [1, 1, 3]
    whole = history + [_op(1, "list_all", [], [a, b, c], 4, 5)]
    assert sorted(map(len, partition(whole))) == [1, 4], "ids stay a part of their own"


# -- agreement with brute force ---------------------------------------------------
def _brute(history: list[Operation]) -> bool:
    """Every order that respects real time, each unknown operation in it or not."""
    unknown = [i for i, op in enumerate(history) if op.unknown]
    for drop in itertools.chain.from_iterable(
            itertools.combinations(unknown, k) for k in range(len(unknown) + 1)):
        ops = [op for i, op in enumerate(history) if i not in drop]
        for order in itertools.permutations(range(len(ops))):
            if any(ops[order[y]].ret is not None and ops[order[y]].ret < ops[order[x]].call
                   for x in range(len(order)) for y in range(x + 1, len(order))):
                continue
            model, state = Model(), Model.initial()
            for j in order:
                state = model.step(state, j, ops[j])
                if state is None:
                    break
            else:
                return True
    return False


CALLS = [
    ("create", lambda tid: [_row(tid), 1]),
    ("finalize", lambda tid: [tid, "r1", "completed", "s", "s"]),
    ("finalize", lambda tid: [tid, "r1", "failed", "f", "f"]),
    ("retry_claim", lambda tid: [tid, "r2", 3]),
    ("get", lambda tid: [tid]),
    ("settle", lambda tid: [tid, "r1"]),
    ("list_by_parent", lambda tid: ["p"]),
    ("next_id", lambda tid: ["t"]),
]


@st.composite
def histories(draw):
    """Up to 5 operations on two tasks, answered by running them in some order
    on the reference store (not always an order their times allow), with
    random, often overlapping, intervals and some unknown outcomes."""
    n = draw(st.integers(1, 5))
    calls = [(CALLS[draw(st.integers(0, len(CALLS) - 1))], draw(st.sampled_from("ab")))
             for _ in range(n)]
    order = draw(st.permutations(range(n)))
    store = MemoryStore()
    answers = {}
    for j in order:
        (name, args), tid = calls[j]
        try:
            answers[j] = encode(getattr(store, name)(*args(tid)))
        except Exception as exc:  # noqa: BLE001 - the store's refusals are answers too
            from forge.lifecycle.history import error_kind
            answers[j] = {"error": error_kind(exc)}
    out = []
    for j, ((name, args), tid) in enumerate(calls):
        call = draw(st.integers(0, 8))
        ret = None if draw(st.integers(0, 5)) == 0 else call + draw(st.integers(0, 4))
        out.append(Operation(j % 3, name, tuple(encode(args(tid))), answers[j], call, ret))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_checker_agrees_with_brute_force(history):
    assert check(history).ok == _brute(history)


# -- the command -------------------------------------------------------------------
def _forge(*args, cwd):
    return subprocess.run([sys.executable, "-m", "forge", *args], capture_output=True,
                          text=True, cwd=cwd, env={**__import__("os").environ,
                                                   "PYTHONPATH": str(ROOT)})


def _bad_history(tmp_path: Path) -> Path:
    won = _row("t1")
    path = tmp_path / "history.jsonl"
    write(str(path), [
        _op(1, "create", [won], won, 0, 1),
        _op(1, "finalize", ["t1", "r1", "completed", "a", "a"],
            attrs.evolve(won, status="completed", summary="a", result="a"), 4, 8),
        _op("b", "finalize", ["t1", "r1", "failed", "b", "b"],
            attrs.evolve(won, status="failed", summary="b", result="b"), 5, None)])
    path.write_text(path.read_text().replace('"return": null', '"return": 9'))
    return path


def test_the_command_exits_1_with_the_minimal_history_and_0_when_linearizable(tmp_path):
    bad = _bad_history(tmp_path)
    done = _forge("lifecycle", "check", str(bad), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0].startswith("not linearizable: these 3 operations")
    good = tmp_path / "good.jsonl"
    write(str(good), _threads(MemoryStore(), processes=2, rounds=20))
    done = _forge("lifecycle", "check", str(good), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["linearizable"] is True
    assert read(str(good))  # what the command read is what was written


@pytest.mark.parametrize("text,rule", [
    ("{", "line 1: not JSON"),
    ('{"process": 1, "op": "explode", "args": [], "call": 1}', "'explode' is not a store operation"),
    ('{"process": 1, "op": "get", "args": [], "call": 1, "return": 2, "result": null}',
     "get takes 1 to 1 arguments"),
    ('{"process": 1, "op": "get", "args": ["t"], "call": 5, "return": 2, "result": null}',
     "return comes before call"),
])
def test_a_bad_history_is_one_line_and_exit_2(tmp_path, text, rule):
    path = tmp_path / "h.jsonl"
    path.write_text(text + "\n")
    done = _forge("lifecycle", "check", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and rule in done.stderr
    assert "h.jsonl" in done.stderr


def test_chromium_draws_the_minimal_history(tmp_path, chromium):
    bad = _bad_history(tmp_path)
    page = tmp_path / "why.html"
    done = _forge("lifecycle", "check", str(bad), "--html", str(page), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking",
                          f"--user-data-dir={tmp_path / 'p'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert dom.count('class="lane"') == 2 and dom.count('class="op"') == 3
    assert "not linearizable: 3 operations with no legal order" in dom


def test_a_cut_of_a_linearizable_history_stays_linearizable():
    """``history.cut``: the first n calls, those running at the cut unknown."""
    from forge.lifecycle.history import cut

    history = _threads(MemoryStore(), processes=4, rounds=40)
    for n in (1, 7, 50, 100):
        part = cut(history, n)
        assert len(part) == n and check(part).ok
    assert cut(history, 10**6) == sorted(history, key=lambda op: op.call)


def test_calls_inside_a_transaction_are_answered_when_it_commits(tmp_path):
    """(lifecycle.finalize.cas) A call made inside the store's transaction takes
    effect at the commit: the recorder gives it the commit's time as its
    return, and a transaction that does not commit leaves its calls unknown -
    a create recorded as done before a kill rolled it back had made a true
    history look non-linearizable."""
    ticks = iter(range(1, 1000))
    rec = Recorder(SqliteStore(str(tmp_path / "t.db")), process="p", clock=lambda: next(ticks))
    with rec.transaction():
        rec.create(_row("t1"))
        inside = rec.history[:]
    assert inside == []          # held until the commit
    [done] = rec.history
    assert done.op == "create" and done.ret == 3 and done.call == 1   # the commit's tick
    try:
        with rec.transaction():
            rec.create(_row("t2"))
            raise RuntimeError("the caller gave up")
    except RuntimeError:
        pass
    assert rec.history[-1].op == "create" and rec.history[-1].unknown
    assert [t.id for t in rec.store.list_all()] == ["t1"]   # rolled back
    assert check(rec.history).ok
