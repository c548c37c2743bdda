"""Is a store's concurrent history linearizable? The checker behind
``forge lifecycle check``.

A history is linearizable when every operation can be given one instant
between its call and its return (any instant after its call, or none at all,
for an operation whose outcome is unknown) such that, run one at a time in
that order, the sequential specification answers what each operation
answered. The specification is the in-memory store itself (``MemoryStore``,
every variation site off): a state is what it holds, a step is one method
call on a copy restored from that state.

The search is Wing and Gong's, with Lowe's refinements as Porcupine
(Horn and Kroening's P-compositionality) uses them: the history's calls and
returns in time order in a linked list; take the first call whose operation
the specification accepts from the current state, lift it (and its return)
out of the list, go on from the head; meet a return whose call is still in
the list, and the last choice is undone (back-tracking); a set of (which
operations are linearized, state) pairs already explored cuts every
repeated branch. Operations on different tasks commute, so the history is
first split into independent parts - one per task, joined where an
operation reads several (a per-parent cap or listing joins that parent's
tasks; a whole-store read or the restart sweep joins all) - and each part
is searched alone; ids (``next_id``) are a part of their own.

On failure the checker shrinks the failing part to a minimal
non-linearizable sub-history: dropping any one of its operations (but the
creates of the tasks the others name) makes it linearizable.

Lives here: partitioning, the search, shrinking, ``check`` and ``Verdict``.
Does not live here: the history's format and recording (``history``), its
HTML view (``history_html``), the command (``command``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from forge.lifecycle.history import Operation, decode_args, encode, error_kind
from forge.lifecycle.store import MemoryStore, restore
from forge.variation import all_off

INFINITY = float("inf")
_WHOLE = ("list_all", "fail_orphans", "owed", "session_tree", "delete_session_tree")
_BY_PARENT = ("list_by_parent", "list_non_terminal")
_CAPPED = {"create": 1, "retry_claim": 3}  # the max_live argument's position


@attrs.frozen
class Verdict:
    """What ``check`` decided. ``minimal``: a minimal non-linearizable
    sub-history of the first failing part (empty when linearizable)."""

    ok: bool
    operations: int
    parts: int
    minimal: tuple[Operation, ...] = ()

    def text(self) -> str:
        if self.ok:
            return (f"linearizable: {self.operations} operations in {self.parts} "
                    f"independent part{'s' if self.parts != 1 else ''}")
        parts = f"{self.parts} part{'s' if self.parts != 1 else ''}"
        lines = [f"not linearizable: these {len(self.minimal)} operations have no legal order "
                 f"(of {self.operations} in {parts}; without any one of them, a create of a "
                 "task the others name aside, one exists):"]
        for op in self.minimal:
            ret = "?" if op.unknown else op.ret
            lines.append(f"  process {op.process} [{op.call}, {ret}] {op.describe()}")
        return "\n".join(lines)


# -- the sequential specification -------------------------------------------
class Model:
    """The memory store as a state machine over hashable states, memoised.

    Ids are the one place the specification is looser than the memory store's
    counter: ``next_id`` must answer an id no earlier ``next_id`` answered
    (every store counts its own way, and a reopened database goes on from
    where it was), so a state is the store's snapshot and the ids answered."""

    def __init__(self) -> None:
        self._stores: dict[str, tuple] = {"": ((), (), 0)}
        self._steps: dict[tuple[str, int], str | None] = {}

    @staticmethod
    def initial() -> str:
        return "\x00[]"

    def step(self, state: str, index: int, op: Operation) -> str | None:
        """The state after ``op`` from ``state``, or None when the specification
        would have answered otherwise (an unknown outcome accepts any answer)."""
        memo = (state, index)
        if memo in self._steps:
            return self._steps[memo]
        self._steps[memo] = after = self._step(state, op)
        return after

    def _step(self, state: str, op: Operation) -> str | None:
        rows, _, ids = state.partition("\x00")
        if op.op == "next_id":
            if op.unknown:
                return state
            issued = json.loads(ids)
            if not isinstance(op.result, str) or op.result in issued:
                return None
            return rows + "\x00" + json.dumps(sorted([*issued, op.result]))
        store = restore(*self._stores[rows])
        try:
            answer: Any = encode(getattr(store, op.op)(*decode_args(op.op, op.args)))
        except Exception as exc:  # noqa: BLE001 - the specification's own refusals
            kind = error_kind(exc)
            answer = {"error": kind or type(exc).__name__}
        if not op.unknown and not _same(answer, op.result):
            return None
        snap = store.snapshot()
        key = json.dumps([encode(snap[0]), encode(snap[1])], sort_keys=True)
        self._stores.setdefault(key, snap)
        return key + "\x00" + ids


def _fresh(ops: Sequence[Operation]) -> list[Operation]:
    """A part of ``next_id`` calls alone is linearizable exactly when no two
    answered the same id (any order then works); else the first such pair."""
    first: dict[Any, Operation] = {}
    for op in ops:
        if op.unknown:
            continue
        if op.result in first:
            return [first[op.result], op]
        first[op.result] = op
    return []


def _same(spec: Any, got: Any) -> bool:
    """Answers compare as JSON, ignoring a row's ``seq`` (each store numbers rows
    its own way; the order of a listing is what matters)."""
    return _strip(spec) == _strip(got)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "seq"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


# -- partitioning -----------------------------------------------------------
def partition(history: Sequence[Operation]) -> list[list[int]]:
    """Indices of ``history`` in independent parts (each in history order),
    ordered by their first operation."""
    parent_of: dict[str, str] = {}
    tasks_of_child: dict[str, list[str]] = {}
    tasks_of_parent: dict[str, list[str]] = {}
    for op in history:
        if op.op == "create" and isinstance(op.args[0], dict):
            row = op.args[0]
            tid, parent, child = (str(row.get("id")), str(row.get("parent_session_id")),
                                  str(row.get("child_session_id")))
            parent_of.setdefault(tid, parent)
            tasks_of_parent.setdefault(parent, []).append(tid)
            tasks_of_child.setdefault(child, []).append(tid)

    def keys(op: Operation) -> list[str]:
        if op.op in _WHOLE:
            return ["*"]
        if op.op == "next_id":
            return ["ids"]
        if op.op in _BY_PARENT:
            return [f"p:{op.args[0]}"]
        if op.op == "by_child_session":
            return [f"c:{op.args[0]}"]
        tid = str(op.args[0]["id"]) if op.op == "create" else str(op.args[0])
        out = [f"t:{tid}"]
        at = _CAPPED.get(op.op)
        if at is not None and len(op.args) > at and _positive(op.args[at]):
            out.append(f"p:{parent_of.get(tid, '')}")
        return out

    touched = [keys(op) for op in history]
    uf = _UnionFind()
    for ks in touched:
        for k in ks[1:]:
            uf.union(ks[0], k)
    used = {k for ks in touched for k in ks}
    if "*" in used:
        for k in used - {"ids"}:
            uf.union("*", k)
        for tid in parent_of:
            uf.union("*", f"t:{tid}")
    for k in sorted(used):
        if k.startswith("p:"):
            for tid in tasks_of_parent.get(k[2:], []):
                uf.union(k, f"t:{tid}")
        elif k.startswith("c:"):
            for tid in tasks_of_child.get(k[2:], []):
                uf.union(k, f"t:{tid}")
    parts: dict[str, list[int]] = {}
    for i, ks in enumerate(touched):
        parts.setdefault(uf.find(ks[0]), []).append(i)
    return list(parts.values())


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class _UnionFind:
    def __init__(self) -> None:
        self.up: dict[str, str] = {}

    def find(self, k: str) -> str:
        self.up.setdefault(k, k)
        root = k
        while self.up[root] != root:
            root = self.up[root]
        while self.up[k] != root:
            self.up[k], k = root, self.up[k]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.up[max(ra, rb)] = min(ra, rb)


# -- the search ---------------------------------------------------------------
def linearizable(ops: Sequence[Operation], model: Model | None = None) -> bool:
    """Whether ``ops`` (one part, or any history) has a legal order."""
    model = model or Model()
    n = len(ops)
    if n == 0:
        return True
    events = sorted([(op.call, 0, j) for j, op in enumerate(ops)]
                    + [(INFINITY if op.ret is None else op.ret, 1, j)
                       for j, op in enumerate(ops)])
    # A doubly linked list of nodes 1..2n after the head 0; node -> (is_call, op).
    size = 2 * n + 1
    nxt, prv = [0] * size, [0] * size
    is_call, op_of = [False] * size, [0] * size
    call_node, ret_node = [0] * n, [0] * n
    for pos, (_t, kind, j) in enumerate(events, 1):
        is_call[pos], op_of[pos] = kind == 0, j
        (call_node if kind == 0 else ret_node)[j] = pos
        prv[pos], nxt[pos - 1] = pos - 1, pos
    nxt[size - 1] = 0  # 0 also ends the list

    def lift(j: int) -> None:
        for node in (call_node[j], ret_node[j]):
            nxt[prv[node]], prv[nxt[node]] = nxt[node], prv[node]

    def unlift(j: int) -> None:
        for node in (ret_node[j], call_node[j]):
            nxt[prv[node]] = prv[nxt[node]] = node

    state = model.initial()
    done = 0  # bit j: op j is linearized
    seen: set[tuple[int, str]] = set()
    stack: list[tuple[int, str]] = []
    node = nxt[0]
    while nxt[0] != 0:
        if node != 0 and is_call[node]:
            j = op_of[node]
            after = model.step(state, j, ops[j])
            if after is not None:
                bits = done | (1 << j)
                if (bits, after) not in seen:
                    seen.add((bits, after))
                    stack.append((j, state))
                    state, done = after, bits
                    lift(j)
                    node = nxt[0]
                    continue
            node = nxt[node]
        else:  # a return whose call is not linearized: undo the last choice
            if not stack:
                return False
            j, state = stack.pop()
            done &= ~(1 << j)
            unlift(j)
            node = nxt[call_node[j]]
    return True


def minimize(ops: Sequence[Operation]) -> list[Operation]:
    """A sub-history of the non-linearizable ``ops`` that is still not
    linearizable but becomes so without any one of its operations - creates
    aside: a create stays while another operation kept names its task, since
    without it every answer about that task would be wrong and the
    sub-history would only say "this task does not exist"."""
    keep = _failing_prefix(list(ops))
    texts = {id(op): json.dumps([op.args, op.result], sort_keys=True) for op in keep}
    chunk = len(keep) // 2
    while chunk >= 1:  # drop whole runs of operations first, halving the run
        i = len(keep) - chunk
        while i >= 0:
            piece, trial = keep[i:i + chunk], keep[:i] + keep[i + chunk:]
            if all(_droppable(op, trial, texts) for op in piece) and not linearizable(trial):
                keep = trial
            i -= chunk
        chunk //= 2
    shrunk = True
    while shrunk:  # until no single drop is possible: an early keeper may go later
        shrunk = False
        # Latest first: an operation after the violation constrains nothing
        # before it, so the tail goes without making new violations to keep.
        for i in range(len(keep) - 1, -1, -1):
            trial = keep[:i] + keep[i + 1:]
            if _droppable(keep[i], trial, texts) and not linearizable(trial):
                keep, shrunk = trial, True
    return keep


def _failing_prefix(ops: list[Operation]) -> list[Operation]:
    """The shortest of the first 8, 16, 32, ... calls (by call time) that is
    already not linearizable; all of ``ops`` when none is."""
    ordered = sorted(ops, key=lambda op: op.call)
    n = 8
    while n < len(ordered):
        if not linearizable(ordered[:n]):
            return ordered[:n]
        n *= 2
    return ordered


def _droppable(op: Operation, others: list[Operation], texts: dict[int, str]) -> bool:
    if op.op != "create" or op.unknown or (isinstance(op.result, dict)
                                           and "error" in op.result):
        return True  # a refused create changed nothing the others could name
    named = json.dumps(str(op.args[0].get("id")))
    return not any(named in texts[id(other)] for other in others)


def check(history: Sequence[Operation]) -> Verdict:
    """Decide ``history``: split it, search each part, shrink the first failure."""
    with all_off():  # the specification is the reference store, whatever is switched
        parts = partition(history)
        for part in parts:
            ops = [history[i] for i in part]
            if all(op.op == "next_id" for op in ops):
                twice = _fresh(ops)
                if twice:
                    return Verdict(False, len(history), len(parts), tuple(twice))
                continue
            if not linearizable(ops):
                return Verdict(False, len(history), len(parts), tuple(minimize(ops)))
    return Verdict(True, len(history), len(parts))


__all__ = ["Model", "Verdict", "check", "linearizable", "minimize", "partition"]
