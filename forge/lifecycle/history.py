"""Histories of task-store operations: what the linearizability checker judges.

A history is a list of ``Operation``s: which process called which store
method with which arguments, what it answered, and when the call began and
ended. On disk it is JSON lines, one operation each:

    {"process": 3, "op": "finalize", "args": ["t1", "r1", "completed", "s", "r"],
     "result": {"id": "t1", "status": "completed", ...}, "call": 1041, "return": 1187}

``args`` are the method's positional arguments as JSON (a task row is its
fields; a ``state`` left as recorded is simply not given); ``result`` is the
answer as JSON (a row's fields without ``seq``, ``null``, a boolean, a list,
an id) or ``{"error": KIND}`` with KIND ``not_found``, ``refused`` or
``cap_reached``; ``call`` and ``return`` are integers on one clock shared by
every process (``time.monotonic_ns`` on one machine). ``"return": null`` (or
no ``return``) marks an operation whose outcome is unknown - its process
died mid-call, or the store failed in a way that says nothing of whether it
wrote: it may have taken effect at any moment after its call, or never.

Lives here: the record, reading and writing the file (a bad line is an
``InputError`` naming the file, the line and the rule), answers as JSON
(``encode``), and ``Recorder``, a store wrapper that records every call a
set of threads makes through it (several processes each record their own
and the files are concatenated), to a journal file as well when asked (what
a process killed mid-call leaves is its calls so far, the last unknown). Does not live here: judging a history
(``linearizability``), drawing one (``history_html``).
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from forge.errors import InputError
from forge.lifecycle.errors import Refused
from forge.lifecycle.records import Debt, Task, TaskStatus
from forge.lifecycle.store import KEEP, CapReached, MemoryStore, NotFound

#: The store methods a history may hold, with the arity range of their args.
OPERATIONS: dict[str, tuple[int, int]] = {}
for _name in ("create", "get", "by_child_session", "list_by_parent", "list_all",
              "list_non_terminal", "finalize", "retry_claim", "release_retry_claim", "advance",
              "mark_input_required", "reclaim_working", "fail_orphans", "delete",
              "session_tree", "delete_session_tree", "owed", "settle", "next_id"):
    _params = list(inspect.signature(getattr(MemoryStore, _name)).parameters.values())[1:]
    OPERATIONS[_name] = (sum(p.default is inspect.Parameter.empty for p in _params),
                         len(_params))
_TASK_FIELDS = tuple(a.name for a in attrs.fields(Task) if a.name != "seq")
ERRORS = ("not_found", "refused", "cap_reached")


@attrs.frozen
class Operation:
    """One store call. ``ret`` None: its outcome is unknown (``result`` unused)."""

    process: Any
    op: str
    args: tuple
    result: Any
    call: int
    ret: int | None

    @property
    def unknown(self) -> bool:
        return self.ret is None

    def to_json(self) -> str:
        return json.dumps({"process": self.process, "op": self.op, "args": list(self.args),
                           "result": self.result, "call": self.call, "return": self.ret},
                          sort_keys=True, ensure_ascii=False)

    def describe(self) -> str:
        """``finalize("t1", "r1", "completed", ...) -> {...}``, one line."""
        args = ", ".join(_short(a) for a in self.args)
        answer = "?" if self.unknown else _short(self.result, 120)
        return f"{self.op}({args}) -> {answer}"


def _short(value: Any, limit: int = 40) -> str:
    if isinstance(value, dict) and "id" in value and "status" in value:
        text = f"{{{value['id']} {value['status']} run {value['run_id']} #{value['attempt']}}}"
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- answers as JSON ------------------------------------------------------
def encode(value: Any) -> Any:
    """A store's answer (or argument) as the JSON a history holds."""
    if isinstance(value, Task):
        d = {f: getattr(value, f) for f in _TASK_FIELDS}
        d["status"] = TaskStatus(d["status"]).value
        return d
    if isinstance(value, Debt):
        return {"task_id": value.task_id, "run_id": value.run_id,
                "status": TaskStatus(value.status).value, "summary": value.summary}
    if isinstance(value, TaskStatus):
        return value.value
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def error_kind(exc: BaseException) -> str | None:
    """The history's name for a refusal the specification knows; None for any
    other failure (its outcome is unknown)."""
    if isinstance(exc, NotFound):
        return "not_found"
    if isinstance(exc, CapReached):
        return "cap_reached"
    if isinstance(exc, (Refused, ValueError)):
        return "refused"
    return None


def decode_args(op: str, args: Iterable[Any]) -> list[Any]:
    """A history's args as the method's arguments (a row for ``create``)."""
    out = list(args)
    if op == "create":
        fields = dict(out[0])
        fields["status"] = TaskStatus(fields.get("status", "working"))
        out[0] = Task(**fields)
    return out


def cut(history: list[Operation], limit: int) -> list[Operation]:
    """The first ``limit`` calls (by call time), those still running when the
    next began made unknown: a linearizable history cut so stays linearizable
    (each kept call's place in a legal order of the whole is still legal)."""
    ordered = sorted(history, key=lambda op: op.call)
    if len(ordered) <= limit:
        return ordered
    at = ordered[limit].call
    return [op if op.ret is not None and op.ret < at else attrs.evolve(op, ret=None)
            for op in ordered[:limit]]


# -- the file -------------------------------------------------------------
def _refuse(path: str, line: int, rule: str) -> InputError:
    return InputError(f"line {line}: {rule}", file=path)


def parse_line(path: str, line_no: int, text: str) -> Operation:
    """One JSON line as an Operation, or an InputError naming the rule broken."""
    try:
        d = json.loads(text)
    except ValueError as exc:
        raise _refuse(path, line_no, f"not JSON ({exc.msg})") from None
    if not isinstance(d, dict):
        raise _refuse(path, line_no, "an operation is a JSON object")
    missing = [k for k in ("process", "op", "args", "call") if k not in d]
    if missing:
        raise _refuse(path, line_no, f"an operation needs {', '.join(missing)}")
    op, args, call, ret = d["op"], d["args"], d["call"], d.get("return")
    if op not in OPERATIONS:
        raise _refuse(path, line_no, f"{op!r} is not a store operation; one of "
                      + ", ".join(OPERATIONS))
    low, high = OPERATIONS[op]
    if not isinstance(args, list) or not low <= len(args) <= high:
        raise _refuse(path, line_no, f"{op} takes {low} to {high} arguments as a JSON list")
    for name, value in (("call", call), ("return", ret)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise _refuse(path, line_no, f"{name} is an integer time")
    if call is None:
        raise _refuse(path, line_no, "call is an integer time")
    if ret is not None and ret < call:
        raise _refuse(path, line_no, "return comes before call")
    if ret is not None and "result" not in d:
        raise _refuse(path, line_no, "an operation that returned needs its result")
    result = d.get("result")
    if isinstance(result, dict) and "error" in result and result["error"] not in ERRORS:
        raise _refuse(path, line_no, f"error is one of {', '.join(ERRORS)}")
    try:
        decode_args(op, args)
    except (TypeError, ValueError, AttributeError) as exc:
        raise _refuse(path, line_no, f"create's argument is a task row ({exc})") from None
    process = d["process"]
    if not isinstance(process, (int, str)) or isinstance(process, bool):
        raise _refuse(path, line_no, "process is an integer or a string")
    return Operation(process, op, tuple(args), result, call, ret)


def read(path: str) -> list[Operation]:
    """The history in ``path`` (JSON lines; blank lines skipped). A journal's
    pair - the call with ``"return": null``, later the same call (process,
    op, args, call time) with its answer - reads as the one completed call; a
    call whose answer never came stays unknown."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read it ({exc.strerror})", file=path) from None
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", file=path) from None
    out: list[Operation] = []
    pending: dict[str, int] = {}
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        op = parse_line(path, n, text)
        key = json.dumps([op.process, op.op, list(op.args), op.call], sort_keys=True)
        if not op.unknown and key in pending:
            out[pending.pop(key)] = op
            continue
        if op.unknown:
            pending[key] = len(out)
        out.append(op)
    return out


def write(path: str, history: Iterable[Operation]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for op in history:
            f.write(op.to_json() + "\n")


# -- recording --------------------------------------------------------------
class Recorder:
    """Wraps a store: every call of an ``OPERATIONS`` method through it is
    recorded with its process (``process``, or the calling thread's name),
    arguments, answer and times; other attributes pass through. A call that
    fails in a way no refusal names is recorded with an unknown outcome; a
    call inside the store's ``transaction`` counts as answered when it commits."""

    def __init__(self, store: Any, process: Any = None,
                 clock: Any = time.monotonic_ns, journal: Any = None) -> None:
        self.store = store
        self.process = process
        self.clock = clock
        # A text file written as calls happen: each call as unknown before it
        # starts, then again with its answer, flushed at once - so a process
        # killed mid-call leaves that call unknown in the file (``read``).
        self.journal = journal
        self.history: list[Operation] = []
        self._lock = threading.Lock()
        # Per thread: the calls answered inside the store's transaction, held
        # until it commits (None outside one).
        self._held = threading.local()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.store, name)
        if name not in OPERATIONS:
            return target
        params = list(inspect.signature(getattr(MemoryStore, name)).parameters)[1:]

        def recorded(*args: Any, **kwargs: Any) -> Any:
            bound = dict(zip(params, args))
            bound.update(kwargs)
            values = [bound[p] for p in params if p in bound]
            while values and values[-1] is KEEP:
                values.pop()
            process = (self.process if self.process is not None
                       else threading.current_thread().name)
            start = self.clock()
            if self.journal is not None:
                self._log(Operation(process, name, tuple(encode(values)), None, start, None))
            try:
                answer = target(*args, **kwargs)
            except Exception as exc:
                end = self.clock()
                kind = error_kind(exc)
                self._add(Operation(process, name, tuple(encode(values)),
                                    None if kind is None else {"error": kind}, start,
                                    None if kind is None else end))
                raise
            end = self.clock()
            self._add(Operation(process, name, tuple(encode(values)), encode(answer),
                                start, end))
            return answer
        return recorded

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """The store's own transaction, recorded as what it is: the calls made
        inside it take effect when it commits, so each is recorded as answered
        only then (its return is the commit's time). If it does not commit -
        it raised, or the process died first - they stay unknown, as the
        journal already has them. A nested transaction joins the outer one."""
        begin = getattr(self.store, "transaction", None)
        if begin is None:
            yield None
            return
        if getattr(self._held, "ops", None) is not None:
            with begin() as tx:
                yield tx
            return
        self._held.ops = []
        try:
            with begin() as tx:
                yield tx
        except BaseException:
            dropped, self._held.ops = self._held.ops, None
            for op in dropped:
                self._add(attrs.evolve(op, ret=None))
            raise
        committed, self._held.ops = self._held.ops, None
        end = self.clock()
        for op in committed:
            self._add(op if op.unknown else attrs.evolve(op, ret=end))

    def _add(self, op: Operation) -> None:
        held = getattr(self._held, "ops", None)
        if held is not None:
            held.append(op)
            return
        with self._lock:
            self.history.append(op)
        if self.journal is not None and not op.unknown:
            self._log(op)

    def _log(self, op: Operation) -> None:
        with self._lock:
            self.journal.write(op.to_json() + "\n")
            self.journal.flush()
