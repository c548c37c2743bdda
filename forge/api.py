"""The forge kit's public Python API: the one documented place to drive it from code.

Run a prompt on the reference engine (`run_prompt`), explore many schedules
of it and get a report (`explore`), run a recorded schedule again
(`replay`), run the conformance suite against an engine (`run_conformance`),
and drive the task lifecycle manager (`LifecycleManager` and friends, the
entry points of `forge.lifecycle`).  Everything here is re-exported from
`forge` itself; every other module of the kit is internal and may change.

Every value that crosses this boundary is a frozen attrs class
(`Observation`, `ExploreReport`, `Failure`, `ReplayReport` with its
`EngineComparison` and `EngineDifference`, `ConformanceReport`, `CaseOutcome`) with a `to_json()`; nested JSON data is frozen too (mappings
are read-only, lists are tuples), and all of it pickles and copies (a
report may come back from a worker process).  Bad input - an unreadable
prompt, a malformed script, an unknown strategy, an argument of the wrong
type or out of range - raises `InputError` (a `ValueError`): one line
naming the function, the argument and the rule, worded as `forge` words
the same mistake with the argument in its flag's place.

Every argument is checked before anything runs (`_checked`, by the table
`_rules`): an argument that a `forge` flag also sets follows the core's
rule for that value (`forge.run.options.RULES`, which the flag's click type
applies too), so each bound (the concurrency ceiling, a seed's 64 bits,
`--workers`' cap) is written once and the API cannot drift from the
command line.  The run options' keywords are the options table's rows
(`forge.run.options.OPTIONS`): `_signature` spells them out in each
function's signature, and each is checked by its row's rule or shape.
The rest are checked here for their shape; their content
by the same core functions the commands call (`forge.runspec`,
`forge.store.seed_problem`), whose errors name a flag and are renamed
here to the argument.

What does not live here: a run's definition (`forge.run.spec.RunSpec`),
exploring and replaying (`forge.repro`), the engine (`forge.engine`), the
simulator (`sim`), the suite (`conformance`) - these functions wrap them
thinly, the same core the command line (`forge.cli`, `forge.commands`)
prints, and rewrite none of their rules.  See docs/api.md.
"""

from __future__ import annotations

import difflib as _difflib
import functools as _functools
import inspect as _inspect
import json as _json
import os as _os
import shlex as _shlex
import stat as _stat
import threading as _threading
import time as _time
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Iterator as _Iterator
from typing import TYPE_CHECKING, Any, Literal, Union, Unpack
from typing import ParamSpec as _ParamSpec
from typing import TypeVar as _TypeVar

import attrs as _attrs

from forge.deferred import deferred as _deferred
from forge.errors import InputError
from forge.limits import data_problem as _data_problem
from forge.limits import render_path as _render_path
from forge.run.options import BY_NAME as _BY_NAME
from forge.run.options import NAMED_CHECKS as _NAMED_CHECKS
from forge.run.options import OPERATOR_SCRIPT as _OPERATOR_SCRIPT
from forge.run.options import OPTIONS as _OPTIONS
from forge.run.options import RULES as _RULES
from forge.run.options import Option as _Option
from forge.run.options import PathLike, RunOptions
from forge.run.options import Refusals as _Refusals
from forge.run.values import FilePath as _FilePath
from forge.run.values import Pattern as _Pattern
from forge.run.values import Switch as _Switch
from forge.run.values import Text as _Text
from forge.run.values import check_value as _check_value
from forge.run.values import shown as _shown
from forge.sim.replayfile import write_record as _write_record
from forge.sim.strategies import DEFAULT as _DEFAULT
from forge.sim.strategies import lookup as _lookup
from forge.store import seed_problem as _seed_problem
from forge.verdict import Verdict as _Verdict
from forge.lifecycle.clock import ThreadClock, VirtualClock
from forge.lifecycle.contract import run_contract as run_store_contract
from forge.lifecycle.errors import TaskError
from forge.lifecycle.manager import Config as LifecycleConfig
from forge.lifecycle.manager import Manager as LifecycleManager
from forge.lifecycle.records import RunOutcome, StopOutcome, TaskStatus
from forge.lifecycle.sessions import MemorySessions
from forge.lifecycle.sqlite_store import SqliteStore as SqliteTaskStore
from forge.lifecycle.store import MemoryStore as MemoryTaskStore


# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go"):
# `import forge` (which imports this module) costs about 75 ms of CPU;
# importing these with it would make that about 250 ms (measured with
# `python -X importtime -c "import forge.api"` and the CPU clock): they
# bring in the engine, lupa, the simulator's search and the conformance
# suite, which a caller that only drives the lifecycle manager or reads a
# report never needs.
if TYPE_CHECKING:
    from forge import (
        campaign as _campaign,
        failuredb as _failuredb,
        pool as _pool,
        probes as _probing,
        progress as _progress,
        repro as _repro,
        runspec as _runspec,
    )
    from forge.conformance import (
        adapters as _adapters,
        case as _cases,
        catalogue as _catalogue,
        cli as _conformance_cli,
        report as _report,
        runner as _runner,
        schemas as _schemas,
    )
    from forge.run import record as _record, spec as _spec_values
else:
    _progress = _deferred("forge.progress")
    _runspec = _deferred("forge.runspec")
    _repro = _deferred("forge.repro")
    _campaign = _deferred("forge.campaign")
    _probing = _deferred("forge.probes")
    _failuredb = _deferred("forge.failuredb")
    _pool = _deferred("forge.pool")
    _record = _deferred("forge.run.record")
    _spec_values = _deferred("forge.run.spec")
    _schemas = _deferred("forge.conformance.schemas")
    _conformance_cli = _deferred("forge.conformance.cli")
    _adapters = _deferred("forge.conformance.adapters")
    _cases = _deferred("forge.conformance.case")
    _catalogue = _deferred("forge.conformance.catalogue")
    _report = _deferred("forge.conformance.report")
    _runner = _deferred("forge.conformance.runner")


__all__ = [
    "CaseOutcome",
    "Check",
    "ConformanceReport",
    "EngineComparison",
    "EngineDifference",
    "ExploreReport",
    "Failure",
    "InputError",
    "LifecycleConfig",
    "LifecycleManager",
    "MemorySessions",
    "MemoryTaskStore",
    "Observation",
    "PathLike",
    "ReplayReport",
    "RunOptions",
    "RunOutcome",
    "SqliteTaskStore",
    "StopOutcome",
    "TaskError",
    "TaskStatus",
    "ThreadClock",
    "VirtualClock",
    "explore",
    "replay",
    "run_conformance",
    "run_prompt",
    "run_store_contract",
]

#: A user check: gets each schedule's observation and returns None, True or
#: an empty list when it holds; False, a string or an iterable of strings
#: (its problems) when it does not.  Raising fails it too: an
#: `AssertionError`'s message is the problem.  Named checks follow the same
#: rule (`forge.runspec.UserCheck`).
Check = Callable[["Observation"], Union[Iterable[str], str, bool, None]]
#: A strategy `explore` offers, by name (`forge.sim.strategies.EXPLORING`,
#: the registry each strategy declares itself in; `explore` refuses another).
Strategy = str


# -- frozen JSON -----------------------------------------------------------------------------

class _FrozenMap(Mapping[str, Any]):
    """A read-only mapping of JSON data: what a mapping proxy gives, but it
    pickles and deep-copies (a proxy does neither), so a report can come
    back from a worker process.  Compares equal to a dict with its items.

    One made by `_freeze` from a plain dict holds that dict and freezes its
    values when first read (`_read`): a run's observation holds hundreds of
    values that most callers never read, and freezing them all cost a fifth
    of `run_prompt`.  So `_freeze` is given only dicts nobody changes
    afterwards: the kit's own data, or a copy (`Observation.from_dict`)."""

    __slots__ = ("_data", "_raw")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        self._raw = False

    def _read(self) -> dict[str, Any]:
        if self._raw:
            self._data = {k: v if type(v) in _LEAVES else _freeze(v)
                          for k, v in self._data.items()}
            self._raw = False
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> _Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._read())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_FrozenMap, (self._read(),))


class _LaterMap(_FrozenMap):
    """The `_FrozenMap` of a plain dict nobody changes afterwards, its values
    frozen when first read: made in one call, as a run's observation makes
    some dozens of them per call."""

    __slots__ = ()

    def __init__(self, data: dict[str, Any]) -> None:      # noqa: super: no copy, by design
        self._data, self._raw = data, True


#: The types JSON data's leaves have: frozen already, returned as they are.
_LEAVES = frozenset((str, int, float, bool, type(None)))


def _freeze(value: Any) -> Any:
    """JSON data made read-only: mappings become `_FrozenMap`s, lists tuples.

    Plain dicts, lists and leaves (what the engine builds) are told apart by
    their exact type, which costs a fraction of the abstract classes'
    `isinstance` that any other mapping or sequence still goes through; a
    plain dict's values are frozen when first read (`_LaterMap`)."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        return _LaterMap(value)
    if kind is list or kind is tuple:
        return tuple([v if type(v) in _LEAVES else _freeze(v) for v in value])
    if isinstance(value, Mapping):
        return _FrozenMap({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


_PLAIN_DICT = frozenset((dict,))


class _LaterEntries(tuple):     # type: ignore[type-arg]
    """A tuple of plain dicts nobody changes afterwards (a run's events,
    rounds and effects), each read as its `_LaterMap`: made in one C call,
    where a `_LaterMap` per entry made at once cost half of
    `Observation._of` (two-tasks' 30 events, about 6 us of a `run_prompt`
    call), and most callers read few entries or none.

    It is a tuple (`isinstance`, `len`) and reads as the tuple of frozen
    maps: indexing, slicing, iterating, comparing, `in`, `repr`,
    concatenating and pickling see frozen entries, never the dicts it
    holds (a frozen entry's lists are tuples: a dict would not compare
    equal to it)."""

    __slots__ = ()
    __hash__ = tuple.__hash__

    def _frozen(self) -> tuple[Any, ...]:
        return tuple(map(_LaterMap, tuple.__iter__(self)))

    def __eq__(self, other: object) -> bool:
        return self._frozen() == other

    def __ne__(self, other: object) -> bool:
        return self._frozen() != other

    def __contains__(self, value: object) -> bool:
        return value in self._frozen()

    def index(self, value: Any, *args: Any) -> int:
        return self._frozen().index(value, *args)

    def count(self, value: Any) -> int:
        return self._frozen().count(value)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(map(_LaterMap, tuple.__getitem__(self, i)))
        return _LaterMap(tuple.__getitem__(self, i))

    def __iter__(self) -> _Iterator[Any]:
        return map(_LaterMap, tuple.__iter__(self))

    def __reversed__(self) -> _Iterator[Any]:
        return iter(self._frozen()[::-1])

    def __add__(self, other: Any) -> Any:
        return self._frozen().__add__(other)

    def __radd__(self, other: Any) -> Any:
        return other.__add__(self._frozen()) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        return self._frozen().__mul__(n)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return repr(self._frozen())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._frozen(),))

    def __copy__(self) -> _LaterEntries:
        return self

    def __deepcopy__(self, memo: Any) -> _LaterEntries:
        return self


def _freeze_entries(values: Sequence[Any]) -> tuple[Any, ...]:
    """A list of JSON data frozen (`_freeze`): at once, when every entry is a
    plain dict, as a run's events are (`_LaterEntries`)."""
    if not values or set(map(type, values)) <= _PLAIN_DICT:    # every entry's type is dict
        return _LaterEntries(values)
    frozen: tuple[Any, ...] = _freeze(list(values))
    return frozen


def _thaw(value: Any) -> Any:
    """The plain JSON data back from `_freeze` (or a deep copy of plain JSON data)."""
    if type(value) is _LaterEntries:    # the plain dicts it holds, copied, no map made
        return [_thaw(v) for v in tuple.__iter__(value)]
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def _dumps(data: Any) -> str:
    # The same bytes as `forge run --json` (forge.engine.run.observation_json).
    return _json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# -- observations ----------------------------------------------------------------------------

@_attrs.frozen
class Observation:
    """One run's observation: what the engine reports, as `forge run --json` prints it.

    The fields are the observation's keys (see the README): `outcome`
    (`"ok"`, `"failed"` or `"cancelled"`), `result`, `error`, `logs`,
    `events`, `tasks`, `messages`, `store`, `virtual_time`, `trace_sha256`;
    plus `trace` (the run's trace as JSON lines, for `forge trace`),
    `choices` (the choice values the schedule made) and `drifted_at` (for a
    replay: the first recorded choice that no longer fitted, else None).
    """

    outcome: str
    result: str | None
    error: Mapping[str, Any] | None
    logs: tuple[str, ...]
    events: tuple[Mapping[str, Any], ...]
    tasks: Mapping[str, Mapping[str, Any]]
    messages: Mapping[str, Any]
    store: Mapping[str, Any]
    virtual_time: float
    trace_sha256: str
    trace: str = _attrs.field(default="", repr=False)
    choices: tuple[int, ...] = _attrs.field(default=(), repr=False)
    drifted_at: int | None = None
    #: Every model round with the tools it offered, and every harness
    #: operation with how it ended (docs/observation.md).
    rounds: tuple[Mapping[str, Any], ...] = ()
    effects: tuple[Mapping[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        """The run succeeded."""
        return self.outcome == "ok"

    def to_dict(self) -> dict[str, Any]:
        """The observation as plain JSON data (the keys `forge run --json` prints)."""
        return {
            "outcome": self.outcome, "result": self.result, "error": _thaw(self.error),
            "logs": list(self.logs), "events": _thaw(self.events), "tasks": _thaw(self.tasks),
            "messages": _thaw(self.messages), "store": _thaw(self.store),
            "virtual_time": self.virtual_time, "trace_sha256": self.trace_sha256,
            "rounds": _thaw(self.rounds), "effects": _thaw(self.effects),
        }

    def to_json(self) -> str:
        """One JSON object, byte for byte what `forge run --json` prints."""
        return _dumps(self.to_dict())

    @classmethod
    def from_dict(cls, obs: Mapping[str, Any], trace: str = "", choices: Sequence[int] = (),
                  drifted_at: int | None = None) -> Observation:
        """An observation from its JSON data (as an engine under test reports it).

        Raises:
            InputError: `obs` is not JSON data within the kit's limits, or
                breaks the shipped observation schema
                (`conformance/schema/observation.schema.json`, the
                one the conformance runner holds an engine's observations
                to); or `trace`, `choices` or `drifted_at` is of the wrong kind.
        """
        # A copy: its values are frozen when first read, and `obs` stays the caller's.
        data = _check_observation(obs, trace, choices, drifted_at)
        return cls._of(data, trace, choices, drifted_at)

    @classmethod
    def _of(cls, obs: Mapping[str, Any], trace: str = "", choices: Sequence[int] = (),
            drifted_at: int | None = None) -> Observation:
        """`from_dict` without its checks: for the kit's own observations."""
        return cls(
            outcome=str(obs["outcome"]), result=obs.get("result"),
            error=_freeze(obs.get("error")), logs=tuple(obs.get("logs", ())),
            events=_freeze_entries(obs.get("events", ())),
            tasks=_LaterMap(dict(obs.get("tasks", {}))),        # `_freeze` of a copy
            messages=_LaterMap(dict(obs.get("messages", {}))),
            store=_LaterMap(dict(obs.get("store", {}))),
            virtual_time=float(obs.get("virtual_time", 0.0)),
            trace_sha256=str(obs.get("trace_sha256") or ""), trace=trace,
            choices=tuple(choices), drifted_at=drifted_at,
            rounds=_freeze_entries(obs.get("rounds", ())),
            effects=_freeze_entries(obs.get("effects", ())))


def _check_observation(obs: Any, trace: Any, choices: Any,
                       drifted_at: Any) -> dict[str, Any]:
    """`Observation.from_dict`'s checks: JSON data within the limits
    (`forge.limits.data_problem`), then the shipped observation schema.
    Gives a plain copy of `obs`.

    Raises:
        InputError: naming `Observation.from_dict`, the argument and the place.
    """
    where = "Observation.from_dict"
    if not isinstance(obs, Mapping):
        raise InputError(f"obs must be an observation, a JSON object (a dict), got {_shown(obs)}",
                         file=where)
    data: dict[str, Any] = _thaw(obs)
    found = _data_problem(data)
    if found is not None:
        path, rule = found
        raise InputError(f"obs{_place(_render_path(path))}: {rule}", file=where)
    broken = _schemas.observation_violations(data, limit=1)
    if broken:
        raise InputError(f"obs breaks observation.schema.json at {broken[0]}", file=where)
    if not isinstance(trace, str):
        raise InputError(f"trace must be the trace's JSON lines (a str), got {_shown(trace)}",
                         file=where)
    if isinstance(choices, str | bytes) or not isinstance(choices, Sequence) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in choices):
        raise InputError(f"choices must be a list of choice values (whole numbers from 0), "
                         f"got {_shown(choices)}", file=where)
    if drifted_at is not None and (not isinstance(drifted_at, int) or isinstance(drifted_at, bool)
                                   or drifted_at < 0):
        raise InputError(f"drifted_at must be None or a choice's index (a whole number from 0), "
                         f"got {_shown(drifted_at)}", file=where)
    return data


def _place(path: str) -> str:
    """A place inside an argument, to follow its name: `.rounds[2]`, `[0]`."""
    return path if not path or path.startswith("[") else f".{path}"


# -- checking arguments ----------------------------------------------------------------------
#
# Every keyword of `run_prompt`, `explore`, `replay` and `run_conformance` is checked,
# before anything runs, by one rule in `_rules`.  A value that a `forge` flag also sets
# follows the core's rule for it (`forge.run.options.RULES`: the one place its bounds and
# words live, which the flag's click type applies too), so the API refuses what the
# command line refuses, in its words with the keyword for the flag.  The others are
# checked here for their shape (a list, a mapping, a path or data), their entries by a
# core rule where one exists, and their content by the core functions the commands call
# too; a core refusal that names a flag (`--faults: unknown fault kind`) is renamed to
# the keyword (`_renamed`).

_P = _ParamSpec("_P")
_R = _TypeVar("_R")


@_attrs.frozen
class _Rule:
    """How one keyword is checked: `check(value, name, where)` raises
    `InputError` or returns the value to use (a tuple for any iterable, so
    a generator is not used up by its check); `flag` is the `forge` flag
    that sets the same value, which core refusals name."""

    check: Callable[[Any, str, str], Any]
    flag: str | None = None


#: `_value`'s flag when not given: the value's name in kebab case (`--pct-depth`).
_KEBAB = "--"
#: How many strings a rule remembers it took (`_value`), and the longest.
_TAKEN_KEPT = 64
_TAKEN_LENGTH = 4096


def _value(rule: str | Any, flag: str | None = _KEBAB) -> _Rule:
    """The keyword follows a core rule: `forge.run.options.RULES[rule]` (set by
    the flag `flag`), or the rule object itself (`Text()`, ...)."""
    #: Strings the rule took, each with the rule object that took it (a rule
    #: judges a value alone; the core's may be another by the next call):
    #: a program that runs one prompt many times gives its path every call.
    taken: dict[str, Any] = {}

    def check(value: Any, name: str, where: str) -> Any:
        judge = _RULES[rule] if isinstance(rule, str) else rule
        if type(value) is not str:
            return _check_value(judge, value, name, where)
        if taken.get(value) is judge:
            return value
        checked = _check_value(judge, value, name, where)
        if len(value) <= _TAKEN_LENGTH:
            if len(taken) >= _TAKEN_KEPT:
                taken.clear()
            taken[value] = judge
        return checked

    if flag == _KEBAB:
        flag = "--" + rule.replace("_", "-") if isinstance(rule, str) else None
    return _Rule(check, flag)


def _text(flag: str | None = None) -> _Rule:
    return _value(_Text(), flag)


def _path(flag: str | None = None) -> _Rule:
    return _value(_FilePath(), flag)


def _refusal(name: str, what: str, value: Any, where: str) -> InputError:
    return InputError(f"{name} must be {what}, got {_shown(value)}", file=where)


def _is_list(value: Any) -> bool:
    """An iterable that is a list of entries (not a string, bytes or a mapping)."""
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping)


def _entries(entry: _Rule, what: str, one: bool = False) -> _Rule:
    """A list whose every entry follows `entry` (named `name[i]`); with
    `one`, a lone string is a list of one."""
    def check(value: Any, name: str, where: str) -> Any:
        if one and isinstance(value, str):
            value = (value,)
        if not _is_list(value):
            raise _refusal(name, what, value, where)
        items = tuple(value)
        for i, item in enumerate(items):
            entry.check(item, f"{name}[{i}]", where)
        return items

    return _Rule(check, entry.flag)


def _path_or_data(flag: str, data: tuple[type, ...], what: str) -> _Rule:
    """A file's path, or its JSON data (of the types `data`) within the
    kit's limits (`forge.limits.data_problem`); the script's own schema is
    checked when the run parses it."""
    path = _path(flag)

    def check(value: Any, name: str, where: str) -> Any:
        if isinstance(value, str | _os.PathLike):
            return path.check(value, name, where)
        if not isinstance(value, data):
            raise _refusal(name, what, value, where)
        found = _data_problem(_thaw(_freeze(value)))
        if found is not None:
            place, rule = found
            raise InputError(f"{name}{_place(_render_path(place))}: {rule}", file=where)
        return value

    return _Rule(check, flag)


def _store(flag: str) -> _Rule:
    """A folder (it must be there: `forge.runspec.read_store_folder`), or
    `{path: text}` by the store's own rules for its seed
    (`forge.store.seed_problem`: store paths, strings, the quota)."""
    folder = _path(flag)

    def check(value: Any, name: str, where: str) -> Any:
        if isinstance(value, str | _os.PathLike):
            return folder.check(value, name, where)
        if not isinstance(value, Mapping):
            raise _refusal(name, "a folder's path (a str or an os.PathLike) or {path: text}",
                           value, where)
        found = _seed_problem(dict(value))
        if found is not None:
            path, rule = found
            at = "" if path is None else f"[{repr(path)[:60]}]"
            raise InputError(f"{name}{at}: {rule}", file=where)
        return dict(value)

    return _Rule(check, flag)


def _faults(flag: str) -> _Rule:
    """`"store,model"` or `["store", "model"]`: strings, as `--faults` takes
    them; the kinds are `forge.runspec.parse_faults`'s to check."""
    text = _text(flag)
    kinds = _entries(text, "fault kinds: a str (comma-separated) or a list of str")

    def check(value: Any, name: str, where: str) -> Any:
        if isinstance(value, str):
            return text.check(value, name, where)
        return kinds.check(value, name, where)

    return _Rule(check, flag)


def _refusals(flag: str) -> _Rule:
    """`OP[:PATH]` strings, as `--refuse` takes them, or `{operation: path or
    [paths]}`; each string is `forge.runspec.refuse_pair`'s to split and the
    operations `parse_refuse`'s to check."""
    pairs = _entries(_text(flag), "OP[:PATH] strings or {operation: [paths]}",
                     one=True)

    def check(value: Any, name: str, where: str) -> Any:
        if not isinstance(value, Mapping):
            return pairs.check(value, name, where)
        out: dict[str, tuple[str, ...]] = {}
        for op, paths in value.items():
            if not isinstance(op, str):
                raise _refusal(f"{name}'s operations", "strings", op, where)
            listed = (paths,) if isinstance(paths, str) else paths
            if not _is_list(listed):
                raise _refusal(f"{name}[{op!r}]", "a path or a list of paths", paths, where)
            out[op] = tuple(listed)
            for i, path in enumerate(out[op]):
                if not isinstance(path, str):
                    raise _refusal(f"{name}[{op!r}][{i}]", "a path (a str, or *)", path, where)
        return out

    return _Rule(check, flag)


def _shape(fits: Callable[[Any], bool], what: str, flag: str | None = None) -> _Rule:
    """A value of the right shape (what is in it is the core's to check):
    lists become tuples, mappings dicts."""
    def check(value: Any, name: str, where: str) -> Any:
        if not fits(value):
            raise _refusal(name, what, value, where)
        if isinstance(value, Mapping):
            return dict(value)
        return tuple(value) if _is_list(value) else value

    return _Rule(check, flag)


def _checks(argument: str, fits: Callable[[Any], bool], what: str) -> _Rule:
    """`checks` or `named_checks`: a list, each entry a check (`Check`) or
    a `module:function` name (loaded by `forge.runspec.load_check`); and
    `probes` and `require`, lists of callables and of names the same way."""
    def check(value: Any, name: str, where: str) -> Any:
        if not _is_list(value):
            raise InputError(f"{argument}: a list of checks, each {what}; got {_shown(value)}",
                             file=where)
        items = tuple(value)
        for i, entry in enumerate(items):
            if not fits(entry):
                raise InputError(f"{argument}[{i}]: a check is {what}, got {_shown(entry)}",
                                 file=where)
        return items

    return _Rule(check, _NAMED_CHECKS.flag if argument == _NAMED_CHECKS.name else None)


def _impl() -> _Rule:
    """An implementation's command, a shell-style string or an argv list,
    checked as `--impl` is (`forge.conformance.cli`: it splits, it is not
    empty, its program is found).  Gives the argv."""
    def check(value: Any, name: str, where: str) -> Any:
        if isinstance(value, str):
            return _conformance_cli._impl_argv(value)
        if not _is_list(value) or not all(isinstance(word, str) for word in value):
            raise _refusal(name, "a command: a shell-style str or a list of str", value, where)
        return _conformance_cli._impl_argv(_shlex.join(value))

    return _Rule(check, "--impl")


def _features() -> _Rule:
    """Feature names: a str or a list of str, each comma-separated as
    `--features` takes them.  Gives the names."""
    names = _entries(_text(), "feature names: a str or a list of str", one=True)

    def check(value: Any, name: str, where: str) -> Any:
        return [f.strip() for arg in names.check(value, name, where)
                for f in arg.split(",") if f.strip()]

    return _Rule(check, "--features")


def _expectations() -> _Rule:
    """An expectations file, or `{case_id: "fail" | "skip"}` (the values an
    expectations file may hold, `forge.conformance.runner.EXPECTATIONS`)."""
    path = _path("--expectations")

    def check(value: Any, name: str, where: str) -> Any:
        if isinstance(value, str | _os.PathLike):
            return path.check(value, name, where)
        if not isinstance(value, Mapping):
            raise _refusal(name, 'a file\'s path or {case_id: "fail" | "skip"}', value, where)
        for case_id, expected in value.items():
            if not isinstance(case_id, str) or expected not in _runner.EXPECTATIONS:
                raise _refusal(f"{name}[{repr(case_id)[:60]}]",
                               " or ".join(f'"{e}"' for e in _runner.EXPECTATIONS)
                               + " (keyed by a case id, a str)", expected, where)
        return dict(value)

    return _Rule(check, "--expectations")


#: What a script's JSON data may be, by the option's name, and how its refusal says it.
_SCRIPT_DATA = {_OPERATOR_SCRIPT.name: ((Mapping, list, tuple), "{...} or [...]")}


def _option_rule(option: _Option, data: bool) -> _Rule:
    """The rule of one run option's keyword (`forge.run.options.OPTIONS`),
    by its shape: scripts and the store as data too with `data`
    (run_prompt, explore), as paths alone without (replay, as its flags)."""
    flag = option.flag
    if option.shape == "script":
        kinds, what = _SCRIPT_DATA.get(option.name, ((Mapping,), "{...}"))
        return _path_or_data(flag, kinds, f"a file's path (a str or an os.PathLike) or its "
                                          f"JSON data, {what}") if data else _path(flag)
    if option.shape == "folder":
        return _store(flag) if data else _path(flag)
    if option.shape == "op_seconds":
        return _shape(lambda v: isinstance(v, Mapping), "{operation: seconds}", flag)
    if option.shape == "op_paths":
        return _refusals(flag)
    if option.shape == "kinds":
        return _faults(flag)
    return _value(option.name)


def _harness(data: bool = True) -> dict[str, _Rule]:
    """The run options' keywords (the flags `forge run`, `explore` and
    `replay` share) and the rule of each."""
    return {o.name: _option_rule(o, data) for o in _OPTIONS}


@_functools.cache
def _rules() -> dict[str, dict[str, _Rule]]:
    """Each public function's keywords and the rule each one follows."""
    prompt = {"prompt": _path("PROMPT"), "source": _text(),
              "latency_menu": _shape(_is_list, "a list of multipliers")}
    run = {**_harness(), **prompt, "seed": _value("seed"), "strategy": _text("--strategy"),
           "replay_out": _path("--replay-out")}
    switch = _value(_Switch())
    explore = {
        **_harness(), **prompt,
        **{name: _value(name) for name in ("strategy", "runs", "start_seed", "pct_depth",
                                           "pct_horizon", "fair", "max_deviations",
                                           "workers")},
        "shrink_budget": _value("shrink_budget", flag=None),
        "checks": _checks("checks", callable, "a callable taking an Observation (a check "
                                              "named module:function goes in named_checks)"),
        "named_checks": _checks("named_checks", lambda c: isinstance(c, str),
                                "a string module:function"),
        "probes": _checks("probes", callable, "a callable taking an Observation"),
        "require": _checks("require", lambda c: isinstance(c, str), "a probe's name"),
        "expect_result": _text("--expect-result"), "same_ids": switch, "invariants": switch,
        "expect_outcome": _text("--expect-outcome"), "expect_error": _text("--expect-error"),
        "allow_failed": switch,
        "schedule_independent": switch, "reduce": switch,
        "progress": _shape(callable, "None or a callable taking the count of schedules run"),
        "replay_out": _path("--replay-out"), "backend": _text("--backend"),
        "address": _text("--address"), "database": _path("--database"),
    }
    replay = {**_harness(data=False), "replay_file": _path("REPLAY_FILE"),
              "prompt": _path("PROMPT")}
    conformance = {
        "impl": _impl(), "cases": _path("--cases"), "features": _features(),
        "patterns": _entries(_value(_Pattern(), flag="-k"), "patterns: a str or a list of str",
                             one=True),
        "expectations": _expectations(), "workers": _value("workers"),
        "timeout": _value("timeout"),
    }
    return {"run_prompt": run, "explore": explore, "replay": replay,
            "run_conformance": conformance}


#: Each checked function's signature, by name (`_checked` fills it).
_SIGNATURES: dict[str, _inspect.Signature] = {}
#: Keywords core functions name as they are (`forge.runspec`'s latency checks).
_NAMED_AS_KEYWORDS = ("latency", "latency_menu")


def _check_argument(function: str, name: str, value: Any, where: str) -> Any:
    """`value` of `function`'s keyword `name`, checked by its rule (None is
    taken where it is the default): the value to use.

    Raises:
        InputError: naming `where`, the keyword and the rule.
    """
    if value is None and _SIGNATURES[function].parameters[name].default is None:
        return None
    return _rules()[function][name].check(value, name, where)


def _check_arguments(function: str, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Some keywords of `function` checked, each by its rule, before a call
    (the pytest plugin checks a marker's so): the values to use.

    Raises:
        InputError: naming `where`, for a keyword the function does not take
            or a value its rule refuses.
    """
    out = {}
    parameters = _SIGNATURES[function].parameters
    for name, value in values.items():
        if name not in parameters:
            near = _difflib.get_close_matches(name, parameters, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise InputError(f"{function}() takes no keyword {name!r}{hint}", file=where)
        out[name] = _check_argument(function, name, value, where)
    return out


def _renamed(function: str, error: InputError) -> InputError | None:
    """A core refusal that names a flag (or a keyword bare), as `function`'s:
    naming the function and the keyword; None when it names neither."""
    names = {rule.flag: name for name, rule in _rules()[function].items()
             if rule.flag is not None and rule.flag.startswith("-")}
    names.update((name, name) for name in _NAMED_AS_KEYWORDS if name in _rules()[function])
    option = getattr(error, "option", None)
    if option is not None and option.name in _rules()[function]:
        return InputError(f"{option.name}: {error.message}", file=function, kind=error.kind)
    if error.line is None and error.file in names:
        return InputError(f"{names[error.file]}: {error.message}", file=function,
                          kind=error.kind)
    if error.file is None:
        for flag, name in names.items():
            if error.message.startswith(f"{flag}: "):
                return InputError(name + error.message[len(flag):], file=function,
                                  kind=error.kind)
    return None


def _signature(fn: Callable[..., Any], recorded: bool) -> _inspect.Signature:
    """`fn`'s signature with its `**options` spelled out: one keyword per run
    option (`forge.run.options.OPTIONS`), its default the option's, or None
    (`recorded`: left out, the replay file's value holds)."""
    signature = _inspect.signature(fn)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    if len(params) == len(signature.parameters):
        return signature
    hints = RunOptions.__annotations__
    params += [_inspect.Parameter(o.name, _inspect.Parameter.KEYWORD_ONLY,
                                  default=None if recorded else o.default,
                                  annotation=hints[o.name]) for o in _OPTIONS]
    return signature.replace(parameters=params)


def _checking(fn: Callable[_P, _R], recorded: bool) -> Callable[_P, _R]:
    """`fn` with every keyword given checked by its rule before it runs, and
    core refusals naming a flag renamed to the keyword."""
    function = fn.__name__
    signature = _SIGNATURES[function] = _signature(fn, recorded)
    call: Callable[..., _R] = fn
    parameters = signature.parameters
    positional = tuple(name for name, p in parameters.items()
                       if p.kind is p.POSITIONAL_OR_KEYWORD)
    required = frozenset(name for name, p in parameters.items() if p.default is p.empty)
    #: Each keyword's place in the signature, to check them in its order.
    rank = {name: n for n, name in enumerate(parameters)}
    #: The keywords that take None unchecked, as their default (`_check_argument`).
    none_taken = frozenset(name for name, p in parameters.items() if p.default is None)

    @_functools.wraps(fn)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        # What `signature.bind` gives, without its cost on every call: each
        # public function takes its first arguments by position or keyword
        # and the rest by keyword.  A call that does not fit is bound by the
        # signature, which raises Python's own TypeError.
        given = dict(zip(positional, args))
        if (len(args) > len(positional) or not given.keys().isdisjoint(kwargs)
                or not kwargs.keys() <= rank.keys()
                or not required <= given.keys() | kwargs.keys()):
            signature.bind(*args, **kwargs)
        given.update(kwargs)
        try:
            # In the signature's order, as `bind` gives them: the first
            # argument refused is the one named.
            names = sorted(given, key=rank.__getitem__) if len(given) > 1 else given
            rules = _rules()[function]
            checked_values = {}
            for name in names:      # `_check_argument`, inline: it is every call's
                value = given[name]
                checked_values[name] = value if value is None and name in none_taken \
                    else rules[name].check(value, name, function)
            return call(**checked_values)
        except InputError as e:
            renamed = _renamed(function, e)
            if renamed is None:
                raise
            raise renamed from None

    checked.__signature__ = signature  # type: ignore[attr-defined]
    return checked


def _checked(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """`fn` checked (`_checking`); its run options default to the table's."""
    return _checking(fn, recorded=False)


def _checked_overrides(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """`fn` checked (`_checking`); a run option it is not given is left out."""
    return _checking(fn, recorded=True)


# -- building runs ---------------------------------------------------------------------------

def _script(value: PathLike | Mapping[str, Any] | Sequence[Any] | None, name: str) -> Any:
    """A script (`forge.run.spec.Script`) from a file's path or from its JSON data."""
    if value is None:
        return None
    if isinstance(value, str | _os.PathLike):
        return _runspec.read_script_file(_os.fspath(value))
    return _spec_values.Script(f"<{name} script>", _thaw(_freeze(value)))


#: Recent run set-ups (`_setup`): the spec and its `Runner` by what made them.
_SETUPS: dict[tuple[Any, ...], tuple[Any, Any]] = {}
#: Held while `_SETUPS` changes (a lookup alone needs it not).
_SETUPS_LOCK = _threading.Lock()
#: How many set-ups are kept (the oldest goes first).
_SETUPS_KEPT = 32
#: Recent campaigns' set-ups (`forge.repro.Shelf`: the runner with the runs it
#: watched, the canonical run, the kit's checks), for `explore` again on the
#: same set-up; a few, as each may hold some megabytes.
_CAMPAIGNS_KEPT = 4


@_functools.cache
def _campaigns() -> Any:
    """The shelf of recent campaigns' set-ups (made on first use, as `forge.repro` is imported)."""
    return _repro.Shelf(_CAMPAIGNS_KEPT)


def _setup(prompt: PathLike | None, source: str | None, latency_menu: Sequence[float] | None,
           options: Mapping[str, Any], where: str) -> tuple[Any, Any, Any]:
    """The `forge.run.spec.RunSpec` of the keywords `run_prompt` and `explore`
    share (the prompt, the latency menu and the run options given), its
    `forge.runspec.Runner`, which parses the prompt and the scripts once,
    and what the set-up is kept by (None: it is not kept).

    The prompt file is read again whenever it may have changed, so an edit
    is seen (`_prompt_text`); a call whose
    prompt text, latency menu and options are those of a recent call gets
    that call's set-up again (both are frozen, and a `Runner` runs any
    number of choosers).  Options that name a file or hand over data (a
    script, the store) are read afresh each call, never kept."""
    if (prompt is None) == (source is None):
        raise InputError("give exactly one of prompt (a path) and source (the prompt's text)",
                         file=where)
    if prompt is not None:
        path = _os.fspath(prompt)
        text = _prompt_text(path)
    else:
        path, text = "<source>", str(source)
    key = _setup_key(path, text, latency_menu, options)
    try:
        found = _SETUPS.get(key) if key is not None else None
    except TypeError:           # a mapping among the values (latency, refuse): not kept
        key = found = None
    if found is not None:
        return (*found, key)
    if prompt is not None:      # a file's bad prompt is refused before its options
        _runspec.check_prompt_text(path, text)
    spec = _spec(path, text, latency_menu, options)
    made = (spec, _runspec.Runner(spec))
    if key is not None:
        with _SETUPS_LOCK:      # calls in threads: one evicts while another adds
            while len(_SETUPS) >= _SETUPS_KEPT:
                del _SETUPS[next(iter(_SETUPS))]
            _SETUPS[key] = made
    return (*made, key)


#: Prompt files read lately (`_prompt_text`): by path, the file's status when
#: it was read (`_status`) and its text.
_TEXTS: dict[str, tuple[tuple[int, ...], str]] = {}
#: How long (nanoseconds) before its read a file's last change must lie for
#: its status to vouch for its text (`_prompt_text`): well past a file
#: system's timestamp tick (a jiffy on Linux, two seconds on FAT) and a
#: small clock step.
_SETTLED_NS = 2_000_000_000
#: Only where a file's change time is the kernel's, set on every write and
#: never by a program (on Windows it is the creation time).
_STATUS_VOUCHES = _os.name == "posix"


def _status(st: _os.stat_result) -> tuple[int, ...]:
    """What a file's status says of its content: a write changes its change
    time (which no program sets back, as `touch` and `cp -p` set the
    modification time) and a rename onto it the inode."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def _prompt_text(path: str) -> str:
    """The prompt file's text (`forge.runspec.read_prompt_text`), read again
    only when the file's status (`_status`) is not the one it had when its
    text was read: a status costs one system call where a read costs four,
    and a third of what `run_prompt` spends outside the engine's run.

    A status vouches for a text only when the file's last change lies
    `_SETTLED_NS` before the read began: a file changed again within one
    timestamp tick of a change before the read (the same size, the same
    times) would show the same status with other text, so a text read that
    soon after a change is not kept, and the next call reads the file
    again.  The wall clock is read for that alone; it never shapes a run.
    A path that is not a regular file (a pipe, a device) is read every call."""
    try:
        st = _os.stat(path)
    except (OSError, ValueError):       # refused as the read refuses it, in its words
        return str(_runspec.read_prompt_text(path))
    status = _status(st)
    kept = _TEXTS.get(path)
    if kept is not None and kept[0] == status:
        return kept[1]
    began = _time.time_ns()
    text: str = _runspec.read_prompt_text(path)
    if (_STATUS_VOUCHES and _stat.S_ISREG(st.st_mode)
            and max(st.st_mtime_ns, st.st_ctime_ns) < began - _SETTLED_NS):
        with _SETUPS_LOCK:
            while len(_TEXTS) >= _SETUPS_KEPT:
                del _TEXTS[next(iter(_TEXTS))]
            _TEXTS[path] = (status, text)
    return text


def _setup_key(path: str, text: str, latency_menu: Sequence[float] | None,
               options: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What a set-up is kept by, or None when it may not be kept: an option
    that names a file (its content may change) or holds data.  A key that
    holds a mapping (`latency`, `refuse`) does not hash: `_setup` keeps
    no set-up by it."""
    for name, value in options.items():
        if value is not None and _BY_NAME[name].shape in ("folder", "script"):
            return None
    return (path, text, None if latency_menu is None else tuple(latency_menu),
            tuple(sorted(options.items())) if options else ())


def _spec(path: str, text: str, latency_menu: Sequence[float] | None,
          options: Mapping[str, Any]) -> Any:
    """The `forge.run.spec.RunSpec` of the prompt `text` read from `path`,
    the latency menu and the run options given."""
    given: dict[str, Any] = dict(options)
    made: dict[str, Any] = {}
    for option in _OPTIONS:
        if option.shape == "value" or option.name not in given:
            continue
        value = given.pop(option.name)
        if option.shape == "folder":
            made["store_files"] = dict(value) if isinstance(value, Mapping) else \
                _runspec.read_store_folder(_os.fspath(value) if value is not None else None)
        elif option.shape == "script":
            made[_SCRIPT_ROLE[option.name]] = _script(value, _SCRIPT_ROLE[option.name])
        elif option.shape == "kinds":
            made[option.name] = value if isinstance(value, str) else ",".join(value)
        elif option.shape == "op_seconds":
            made["latency_base"] = dict(value) if value is not None else None
        elif option.shape == "op_paths":
            made["refusals"] = _runspec.parse_refuse(_refuse_pairs(value))
    return _runspec.spec_from_values(
        path, text, latency_menu=tuple(latency_menu) if latency_menu is not None else None,
        **made, **given)


#: The role a script option gives its script (`forge.run.spec.RunSpec`'s field).
_SCRIPT_ROLE = {o.name: o.name.removesuffix("_script") for o in _OPTIONS if o.shape == "script"}


def _overrides(options: Mapping[str, Any]) -> dict[str, Any]:
    """The run options given to `replay` as `forge.runspec.spec_from_flags`
    keywords, as `forge replay`'s flags give them (None: not given)."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        shape = _BY_NAME[name].shape
        if value is None:
            continue
        if shape in ("folder", "script"):
            value = _os.fspath(value)
        elif shape == "op_seconds":
            value = tuple(value.items())
        elif shape == "op_paths":
            value = _refuse_pairs(value)
        elif shape == "kinds" and not isinstance(value, str):
            value = ",".join(value)
        out[name] = value
    return out


def _refuse_pairs(refusals: _Refusals | None) -> list[tuple[str, str]]:
    """`refusals` (the refusal option's value) as the `(operation, path)`
    pairs its flag's `OP[:PATH]` gives (`forge.runspec.refuse_pair`): from
    `OP[:PATH]` strings, or from a case's `{operation: [paths]}`."""
    if refusals is None:
        return []
    if isinstance(refusals, str):
        refusals = [refusals]
    if isinstance(refusals, Mapping):
        return [(str(op), str(path)) for op, paths in refusals.items()
                for path in ([paths] if isinstance(paths, str) else paths)]
    return [_runspec.refuse_pair(str(text)) for text in refusals]


def _write(path: PathLike, text: str) -> str:
    """Write an output file; an OS error is an `InputError` naming it."""
    where = _os.fspath(path)
    try:
        with open(where, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror or e}", file=where) from None
    return where


@_checked
def run_prompt(prompt: PathLike | None = None, *, source: str | None = None,
               seed: int | None = None, strategy: str | None = None,
               latency_menu: Sequence[float] | None = None, replay_out: PathLike | None = None,
               **options: Unpack[RunOptions]) -> Observation:
    """Run one prompt on the reference engine, on a virtual clock: `forge run`.

    Args:
        prompt: the prompt file's path (or give `source`).
        source: the prompt's text, instead of a path.
        seed: draw a random schedule from this seed (default: the canonical one).
        strategy: a strategy spelling as `forge run --strategy` takes it:
            `canonical`, `random:SEED`, `pct:SEED[:DEPTH[:HORIZON]]` or `replay:FILE`.
        latency_menu: the multipliers a schedule picks durations from (the
            first is the canonical schedule's).
        options: the run options (`RunOptions`; one keyword per `forge run`
            flag that defines the run, named as the flag in snake case, its
            default the flag's): scripts and the store are a file's path or
            its JSON data (docs/scripts.md), `faults` a list or
            `"store,model"`, `latency` `{operation: seconds}`, `refuse`
            `OP[:PATH]` strings or `{op: [paths]}`.  docs/api.md lists them.
        replay_out: also write this run's replay file here (`forge replay FILE`).

    Returns:
        The run's `Observation`; the same inputs and seed give the same one.

    Raises:
        InputError: the prompt, a script, the store, a fault, a refusal or the
            strategy is refused (a `replay:FILE` that records another run,
            too), or an argument is of the wrong type or out of range, as
            the flag that sets it refuses it (`seed` past 64 bits, a ceiling
            of 0 tasks, a cancel instant that is NaN, a store path with `..`).
    """
    spec, runner, _ = _setup(prompt, source, latency_menu, options, where="run_prompt")
    moded = _runspec.in_mode(spec, strategy)
    if moded is not spec:       # a strategy that runs in orders mode: a spec of its own
        spec, runner = moded, _runspec.Runner(moded)
    chooser = _runspec.run_chooser(seed, strategy)
    done = runner.run(chooser)
    obs: dict[str, Any] = done.observation()
    trace = done.trace.lines()
    # The finished run goes now, freed by reference counting (`Run._let_go`),
    # before anything below allocates: the collector's pass the run put off
    # (`forge.engine.collection`) then walks the observation alone, not the
    # run's whole graph.
    del done
    if replay_out is not None:
        _write(replay_out, _write_record(_record.record(
            spec, _runspec.Expectation(), chooser.seed, chooser.choices, obs,
            strategy=chooser.provider.describe())))
    return Observation._of(obs, trace=trace, choices=chooser.values())


# -- exploring -------------------------------------------------------------------------------

@_attrs.frozen
class Failure:
    """A failing schedule, shrunk, run again: what broke and how to get it again.

    `choices` is the schedule as drawn (at `seed`; None for an exhaustive
    search), `shrunk` its shrunk form (fewer `deviations` from the canonical
    schedule; `proven` when every one-step neighbour was run and passes);
    `problems` and `observation` are the shrunk run's.  `story` tells the
    shrunk run in virtual time (each fault in its place, then the
    non-canonical choices), `divergence` where it first leaves the canonical
    run, `faults` the faults that fired (kind, what).  `replay_file` is
    where the self-contained replay file was written (None when `explore`
    was given no `replay_out`); `replay_command` (`forge replay FILE`)
    reproduces it in a shell.  `strategy` says how the failing schedule was
    drawn, as its replay file does (`{"strategy": "pct", "seed": 3, "depth":
    2, "horizon": 12}`: a portfolio's member, with the horizon PCT had
    learned; empty for an exhaustive walk's or a kept failure's).
    """

    seed: int | None
    problems: tuple[str, ...]
    choices: tuple[int, ...]
    shrunk: tuple[int, ...]
    deviations: int
    proven: bool
    observation: Observation = _attrs.field(eq=False, repr=False)
    story: tuple[str, ...] = ()
    divergence: tuple[str, ...] = ()
    faults: tuple[tuple[str, str], ...] = ()
    replay_file: str | None = None
    replay_command: str | None = None
    strategy: Mapping[str, Any] = _attrs.field(factory=lambda: _FrozenMap({}), eq=False)

    def to_json(self) -> dict[str, Any]:
        """The failure as JSON data (the fields `forge explore --json` reports)."""
        return {"seed": self.seed, "problems": list(self.problems), "choices": len(self.choices),
                "shrunk": list(self.shrunk), "deviations": self.deviations,
                "proven_minimal": self.proven, "story": list(self.story),
                "divergence": list(self.divergence),
                "faults_fired": [list(f) for f in self.faults], "replay": self.replay_file,
                "replay_command": self.replay_command, "strategy": dict(self.strategy)}


@_attrs.frozen
class ExploreReport:
    """What an exploration found: counts, outcomes, and the failure.

    `runs` schedules ran, `distinct` of them with different traces;
    `outcomes` counts runs by outcome.  `failures` holds the first failing
    schedule, shrunk (or nothing).  An exhaustive search is `complete` when
    it covered its tree; `pruned` subtrees were skipped as equivalent,
    `bounded` beyond the deviation bound, `unfinished` left at the budget.
    `faults` counts the faults fired over all schedules, by kind (empty
    without `faults=`, or when none fired).  `probes` counts the schedules
    that reached each probe (`forge.probes`: the catalogue's and yours),
    every probe listed, 0 for one never reached; `required_unreached` names
    the `require`d probes no schedule reached (then `ok` is False).
    """

    runs: int
    distinct: int
    outcomes: Mapping[str, int]
    failures: tuple[Failure, ...]
    strategy: str
    complete: bool = True
    pruned: int = 0
    bounded: int = 0
    unfinished: int = 0
    faults: Mapping[str, int] = _attrs.field(factory=lambda: _FrozenMap({}))
    probes: Mapping[str, int] = _attrs.field(factory=lambda: _FrozenMap({}))
    required_unreached: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Every schedule passed, an exhaustive search covered its tree, and
        every required probe was reached."""
        return not self.failures and self.complete and not self.required_unreached

    @property
    def probes_missed(self) -> tuple[str, ...]:
        """The probes no schedule reached, in the order `probes` lists them."""
        return tuple(name for name, count in self.probes.items() if not count)

    def summary(self) -> str:
        """The report in one line of plain words."""
        line = (f"{self.runs} schedules ({self.strategy}), {self.distinct} distinct; "
                f"outcomes: {_progress.plain_counts(self.outcomes)}")
        if self.faults:
            line += f"; faults fired: {_progress.plain_counts(self.faults)}"
        if _lookup(self.strategy).walks:
            line += ("; covered the whole tree" if self.complete
                     else f"; stopped at the budget with {self.unfinished} subtrees unfinished")
        if self.required_unreached:
            line += f"; REQUIRED and never reached: {', '.join(self.required_unreached)}"
        if self.failures:
            first = self.failures[0]
            where = "on an exhaustive schedule" if first.seed is None else f"at seed {first.seed}"
            # One line: each problem's first (its difference follows on the next lines).
            line += f"; FAILED {where}: " + "; ".join(p.split("\n")[0] for p in first.problems)
        return line

    def to_json(self) -> str:
        """The report as one JSON object (keys as `forge explore --json` has them)."""
        return _dumps({"runs": self.runs, "distinct_schedules": self.distinct,
                       "outcomes": dict(self.outcomes), "strategy": self.strategy,
                       "failures": [f.to_json() for f in self.failures],
                       "complete": self.complete, "pruned": self.pruned,
                       "bounded": self.bounded, "unfinished": self.unfinished,
                       "faults": dict(self.faults), "probes": dict(self.probes),
                       "probes_missed": list(self.probes_missed),
                       "required_unreached": list(self.required_unreached)})


def _check_name(check: Check) -> str:
    """The NAME a callable check's problems start with (`check NAME: ...`)."""
    return getattr(check, "__name__", None) or type(check).__name__


def _user_checks(checks: Sequence[Check]) -> list[Any]:
    """The callable checks as the explorer's checks over raw observations
    (`forge.runspec.UserCheck`, the rule named checks follow too); each
    entry was checked with the arguments (`_checks`)."""
    return [_runspec.UserCheck(c, _check_name(c), Observation._of) for c in checks]


@_checked
def explore(prompt: PathLike | None = None, *, source: str | None = None,
            strategy: Strategy = _DEFAULT, runs: int = 200, start_seed: int = 0,
            pct_depth: int = 3, pct_horizon: int | None = None, fair: int | None = None,
            checks: Sequence[Check] = (), named_checks: Sequence[str] = (),
            expect_result: str | None = None, expect_outcome: str | None = None,
            expect_error: str | None = None, allow_failed: bool = False,
            same_ids: bool = True, invariants: bool = True,
            schedule_independent: bool = False, latency_menu: Sequence[float] | None = None,
            max_deviations: int | None = None, reduce: bool = True, shrink_budget: int = 3000,
            progress: Callable[[int], None] | None = None,
            probes: Sequence[Callable[[Observation], Any]] = (), require: Sequence[str] = (),
            replay_out: PathLike | None = None, workers: int = 1,
            backend: Literal["local", "dask"] = "local",
            address: str | None = None, database: PathLike | None = None,
            **options: Unpack[RunOptions]) -> ExploreReport:
    """Run a prompt under many schedules, check each one, shrink the first failure:
    `forge explore`.

    Args:
        prompt, source: the prompt's path, or its text.
        strategy: a strategy `forge explore --strategy` offers; by default
            the one it draws with, `portfolio` (each seed drawn by random,
            PCT at depths 1-3 or ties in turn).  Others: `random` (one
            schedule per seed), `pct` (priority-based, `pct_depth` change
            points), `ties`, or `exhaustive` (the whole choice tree, at most
            `runs` schedules; `max_deviations`, `reduce` as `forge explore`
            has them).
        pct_horizon: where PCT's horizon starts instead of being learned
            from the first run (`--pct-horizon`): with `start_seed` a failure's
            seed and `runs=1`, the horizon its `Failure.strategy` names draws
            its schedule again.
        fair: make each schedule fair after its first `fair` chain picks
            (`--fair`): every later pick takes the chain ready longest, what
            the ready-chain liveness bound is judged under
            (`forge.sim.fair`); in one local process, with a strategy that
            draws schedules.  A failure's seed reruns with the same `fair`.
        runs: schedules to try; seeds run from `start_seed` (seed N is
            `run_prompt(seed=N)`).
        checks: your own checks (callables, see `Check`), run on every schedule.
        named_checks: checks named `module:function` (as `--check`), taking
            the observation's JSON data; unlike `checks` they are recorded
            in the replay file, so `forge replay` re-checks them.  Both kinds
            hold and fail by one rule (`forge.runspec.UserCheck`).
        expect_result: also require this exact result.
        expect_outcome, expect_error, allow_failed: how a schedule's run may
            end (`forge.verdict`): by default a run that ends failed or
            cancelled fails its schedule; say `expect_outcome="failed"`,
            `expect_error="Lua"` (ends failed with that error kind) or
            `allow_failed=True` (any ending) when that is the point.
        same_ids: require the canonical schedule's task ids on every schedule.
        invariants: run the kit's invariants (each task ends once, status
            tables agree with events, abandon reasons are sound).
        schedule_independent: require the canonical observation on every
            schedule (apart from what a schedule may change).
        latency_menu, options: the run, as `run_prompt` has them; `faults`
            makes the schedules inject faults too.
        shrink_budget: the most runs shrinking the failure may take.
        progress: called with the number of schedules run so far.
        probes: your own probes (callables taking an `Observation`, named by
            their `__name__`): a schedule reaches one when it returns a true
            value; the report counts them beside the catalogue's.
        require: probe names (the catalogue's or yours) some schedule must
            reach, or the report is not `ok` (`--require`).
        replay_out: write the shrunk failing run's replay file here (for
            `replay` or `forge replay FILE`).
        workers: run the schedules in this many processes (an exhaustive
            walk by subtrees; the report is the one-process report).  `checks` must then be
            picklable on the dask backend (module-level functions are).
        backend, address: `local` processes, or `dask` (the distributed
            extra): the scheduler at `address`, or a local cluster of
            `workers` processes when it is None.
        database: a failure database folder (`forge explore --database`,
            docs/exploring.md; `.forge` is the command's default): failures
            found are kept there, and a kept failure of the same prompt and
            settings is run first, before any new schedule - one that fails
            again is the report's failure (`runs` 0), one that passes now is
            dropped.  None (the default) keeps none.

    Returns:
        An `ExploreReport`; `report.ok` is False when a schedule failed.

    Raises:
        InputError: the prompt, a script, a check or a fault is refused, an
            argument is out of range, or `max_deviations` is given to a
            strategy other than `exhaustive`.
    """
    _repro.check_seeds(start_seed, runs)
    where = _pool.backend(backend, address)
    _campaign.check_spread(strategy, workers, None, where)
    _repro.check_bound(strategy, max_deviations)
    if fair is not None and (workers > 1 or where.kind != "local" or _lookup(strategy).walks):
        raise InputError("explore: fair makes the reference engine's schedules fair in one "
                         "process; leave workers at 1 and backend local, and use a strategy "
                         "that draws schedules, not an exhaustive walk")
    spec, _, kept_as = _setup(prompt, source, latency_menu, options, where="explore")
    extra = _user_checks(checks)
    users = tuple(_probing.UserProbe(p, _check_name(p), Observation._of) for p in probes)
    _probing.check_required(require, [p.name for p in users], where="require")
    expect = _runspec.Expectation(invariants=invariants, same_ids=same_ids, result=expect_result,
                         schedule_independent=schedule_independent,
                         checks_named=tuple(named_checks),
                         ending=_Verdict.of(expect_outcome, expect_error, allow_failed))
    db, key, saved = _from_database(database, spec, expect, strategy, pct_depth, replay_out)
    if saved is not None:
        return saved
    if (workers > 1 or where.kind != "local") and _lookup(strategy).walks:
        outcome = _campaign.walk_campaign(spec, expect=expect, strategy=strategy, runs=runs,
                                          workers=workers, reduce=reduce,
                                          max_deviations=max_deviations,
                                          shrink_budget=shrink_budget, where=where,
                                          extra_checks=extra, probes=users).outcome
    elif workers > 1 or where.kind != "local":
        outcome = _campaign.explore_campaign(spec, expect=expect, strategy=strategy,
                                             seeds=range(start_seed, start_seed + runs),
                                             workers=workers, pct_depth=pct_depth,
                                             shrink_budget=shrink_budget, where=where,
                                             progress=progress, extra_checks=extra,
                                             probes=users, pct_horizon=pct_horizon).outcome
    else:
        outcome = _repro.explore_prompt(spec, expect=expect, strategy=strategy, runs=runs,
                                        start_seed=start_seed, pct_depth=pct_depth,
                                        max_deviations=max_deviations, reduce=reduce,
                                        shrink_budget=shrink_budget, progress=progress,
                                        extra_checks=extra, probes=users,
                                        pct_horizon=pct_horizon, fair=fair,
                                        kept=_campaigns(), kept_as=kept_as)
    report, found = outcome.report, outcome.failure
    failures: tuple[Failure, ...] = ()
    if found is not None:
        first = report.findings[0]
        path = command = None
        if replay_out is not None:
            path = _write(replay_out, _write_record(found.record))
            command = f"forge replay {_shlex.quote(path)}"
        obs = Observation._of(found.observation, trace=found.trace,
                                    choices=[c[2] for c in found.record["choices"]])
        if db is not None:
            db.save(key, _write_record(found.record))
        failures = (Failure(first.seed, tuple(found.problems), tuple(first.choices),
                            tuple(first.shrunk), first.deviations, first.proven, obs,
                            tuple(found.story), tuple(found.divergence),
                            tuple((str(k), str(w)) for k, w in found.fired), path, command,
                            _freeze(dict(first.provider))),)
    reached = _probing.coverage(report.probes, [p.name for p in users])
    return ExploreReport(report.runs, report.distinct_traces, _freeze(dict(report.outcomes)),
                         failures, strategy, report.complete, report.pruned, report.bounded,
                         report.unfinished, _freeze(dict(report.faults_fired)), _freeze(reached),
                         tuple(_probing.unreached(reached, require)))


def _from_database(database: PathLike | None, spec: Any, expect: Any, strategy: str,
                   pct_depth: int, replay_out: PathLike | None
                   ) -> tuple[Any, str | None, ExploreReport | None]:
    """The failure database `database` names (None: none is kept), the
    campaign's key in it, and the report of a kept failure that fails again
    (`forge.failuredb.replay_saved`; None when none does)."""
    if database is None:
        return None, None, None
    db = _failuredb.database(_os.fspath(database))
    if db is None:
        return None, None, None
    key = _failuredb.campaign_key(spec, expect, strategy, pct_depth)
    still = _failuredb.replay_saved(db, key, spec, expect)
    if still is None:
        return db, key, None
    path = _write(replay_out, still.text) if replay_out is not None else str(still.path)
    obs = Observation._of(still.observation, trace=still.trace, choices=list(still.choices))
    failure = Failure(still.seed, still.problems, still.choices, still.choices,
                      sum(1 for c in still.choices if c), False, obs, replay_file=path,
                      replay_command=f"forge replay {_shlex.quote(path)}")
    return db, key, ExploreReport(0, 0, _freeze({}), (failure,), strategy)


# -- replaying -------------------------------------------------------------------------------

@_attrs.frozen
class EngineDifference:
    """One normative difference between the reference's run and an engine
    under test's recorded observation, by the spec's equivalence
    (docs/observation.md, "Equivalence").

    `place` is where: `result`, `outcome`, `error.kind`, `tasks.0.1.state`,
    `store`, `logs` or `events`; for `events`, `index` is the first
    differing normative event's.  `reference` and `engine` are the two
    sides there (frozen JSON data; None where a side has nothing), and
    `clauses` the spec clauses the place touches.
    """

    place: str
    reference: Any
    engine: Any
    index: int | None
    clauses: tuple[str, ...]

    @classmethod
    def _of(cls, found: Any) -> EngineDifference:
        return cls(found.place, _freeze(found.reference), _freeze(found.implementation),
                   found.index, tuple(found.clauses()))

    def to_dict(self) -> dict[str, Any]:
        return {"place": self.place, "reference": _thaw(self.reference),
                "engine": _thaw(self.engine), "index": self.index,
                "clauses": list(self.clauses)}


@_attrs.frozen
class EngineComparison:
    """A replay of a record `forge explore --impl` wrote, compared with the
    engine's observation the record holds, as `forge replay` prints it.

    `differences` are the normative differences (first the one the diff
    names); `other_decisions` says, in one line, where the reference asked
    other decisions than the recorded engine did (None: the same ones; the
    run went on canonically from there, and the comparison still ran);
    `diff` is the readable diff `forge replay` prints (empty: the same
    behaviour).  `same` is True when there is neither.
    """

    differences: tuple[EngineDifference, ...]
    other_decisions: str | None
    diff: tuple[str, ...]

    @property
    def same(self) -> bool:
        """The reference behaves as the recorded engine did, by the equivalence."""
        return not self.differences and self.other_decisions is None

    def to_dict(self) -> dict[str, Any]:
        return {"differences": [d.to_dict() for d in self.differences],
                "other_decisions": self.other_decisions, "diff": list(self.diff),
                "same": self.same}


@_attrs.frozen
class ReplayReport:
    """A replay file's run, made again, and what it says about the recording.

    `observation` is the run's (with `choices`, and `drifted_at` when it
    drifted); `problems` what the file's recorded expectation finds wrong
    with it, `recorded_problems` what it found when the file was written.
    `identical` says the observation (trace included) is the recorded one
    byte for byte (None: nothing to compare, as for a what-if run or a
    legacy file); `drift` names the first choice the run asked for that
    the record does not have (the prompt or the kit changed since), else
    None.  `other_kit` is the kit version that wrote the file when it is
    not this one; `story` tells the run in virtual time.  `engine` is, for
    a record of an engine under test (`forge explore --impl`) that holds
    its observation, how the reference's run compares with it
    (`EngineComparison`); None for any other record.
    """

    observation: Observation = _attrs.field(eq=False, repr=False)
    problems: tuple[str, ...]
    recorded_problems: tuple[str, ...]
    identical: bool | None
    drift: str | None
    other_kit: str | None = None
    story: tuple[str, ...] = ()
    engine: EngineComparison | None = None

    @property
    def ok(self) -> bool:
        """The run passes what the file expects."""
        return not self.problems

    @property
    def reproduced(self) -> bool:
        """The recorded failure happened again: the file records one, the
        run did not drift, and it fails what the file expects."""
        return bool(self.recorded_problems) and self.drift is None and bool(self.problems)

    def to_json(self) -> str:
        """The outcome as one JSON object, the observation's data included."""
        return _dumps({"observation": self.observation.to_dict(), "problems": list(self.problems),
                       "recorded_problems": list(self.recorded_problems),
                       "identical": self.identical, "drift": self.drift,
                       "reproduced": self.reproduced, "other_kit": self.other_kit,
                       "story": list(self.story),
                       "engine": None if self.engine is None else self.engine.to_dict()})


@_checked_overrides
def replay(replay_file: PathLike, *, prompt: PathLike | None = None,
           **options: Unpack[RunOptions]) -> ReplayReport:
    """Run the run a replay file records again and re-check what it expects:
    `forge replay`.

    Args:
        replay_file: a file `forge explore`, `explore()`, `forge run
            --replay-out` or `run_prompt(replay_out=...)` wrote; it holds the
            whole run (prompt text, harness, scripts, faults, seed, choices).
        prompt: use this prompt file instead of the recorded text (its
            sha256 must match the recorded one).
        options: the run options (`RunOptions`), overriding what the file
            records as `forge replay`'s
            flags do (a what-if run: its choices will likely drift, and
            `identical` is None); scripts and the store are paths, `latency`
            and `refuse` as `run_prompt` takes them.

    Returns:
        A `ReplayReport`: `reproduced`, `identical`, `drift`, the observation.

    Raises:
        InputError: the replay file is unusable, the prompt does not match
            it, or an override is of the wrong type or out of range (as the
            flag that sets it refuses it).
    """
    overrides = _overrides(options)
    done = _repro.replay_file(_os.fspath(replay_file),
                     prompt=_os.fspath(prompt) if prompt is not None else None,
                     overrides=overrides or None)
    drifted_at = done.drift.index if done.drift is not None else None
    obs = Observation._of(done.observation, trace=done.trace, choices=done.choices,
                                drifted_at=drifted_at)
    engine = None if done.differences is None else EngineComparison(
        tuple(EngineDifference._of(d) for d in done.compared), done.other_decisions,
        done.differences)
    return ReplayReport(obs, tuple(done.problems), tuple(done.recorded_problems),
                        done.identical, done.drift.describe() if done.drift else None,
                        done.other_kit, tuple(done.story), engine)


# -- conformance -----------------------------------------------------------------------------

@_attrs.frozen
class CaseOutcome:
    """How one conformance case went: `status` is `passed`, `failed`,
    `errored`, `skipped`, `expected-fail` or `unexpected-pass`."""

    case_id: str
    status: str
    clauses: tuple[str, ...]
    problems: tuple[str, ...]
    diff: str = ""
    seed: int | None = None


@_attrs.frozen
class ConformanceReport:
    """A finished suite run: every case's outcome, and the counts.

    `summary` is the runner's last line, `N passed, N failed, N errored,
    N skipped`; `ok` is False when a case failed or errored.
    """

    cases: tuple[CaseOutcome, ...]
    passed: int
    failed: int
    errored: int
    skipped: int
    implementation: Mapping[str, Any] = _attrs.field(eq=False)
    _json: str = _attrs.field(eq=False, repr=False, alias="json_text")

    @property
    def ok(self) -> bool:
        """No case failed or errored."""
        return not (self.failed or self.errored)

    @property
    def summary(self) -> str:
        """`N passed, N failed, N errored, N skipped`."""
        return (f"{self.passed} passed, {self.failed} failed, {self.errored} errored, "
                f"{self.skipped} skipped")

    def to_json(self) -> str:
        """The report as `forge conformance --json` writes it."""
        return self._json


@_checked
def run_conformance(impl: str | Sequence[str] | None = None, *, cases: PathLike | None = None,
                    features: Iterable[str] = (), patterns: Iterable[str] = (),
                    expectations: PathLike | Mapping[str, str] | None = None, workers: int = 1,
                    timeout: float = 10.0) -> ConformanceReport:
    """Run the conformance suite against an implementation.

    Args:
        impl: the implementation's command (a shell-style string or an
            argv), spoken to over the JSON-lines protocol (docs/protocol.md);
            None runs the reference engine in process.
        cases: a case directory or file (default: the installed suite).
        features: only cases citing any of these features (a str is one
            name, or several comma-separated, as `--features` takes them).
        patterns: only cases whose id or clause ids match any of these
            regular expressions (searched, as `-k`; a str is one pattern).
        expectations: an expectations file, or `{case_id: "fail" | "skip"}`.
        workers: cases run at once.
        timeout: seconds an implementation may take per message.

    Raises:
        InputError: a case, the expectations or the selection is refused, or
            an argument is (as `forge conformance`'s flags are checked: an
            `impl` that does not split or whose program is not found,
            `workers` past 256, a `timeout` that is not a positive number
            of seconds, a pattern that is not a regular expression, an
            expectation other than "fail" or "skip").
    """
    catalogue_dir = _catalogue.default_catalogue_dir()
    catalogue = _catalogue.load_catalogue(catalogue_dir) if catalogue_dir is not None else None
    known = {c["id"] for c in catalogue} if catalogue is not None else None
    loaded = _cases.load_cases(_os.fspath(cases) if cases is not None
                               else _cases.DEFAULT_CASES_DIR, known)
    wanted = list(features)
    known_features = sorted({f for case in loaded for f in case.features})
    unknown = [f for f in wanted if f not in known_features]
    if unknown:
        raise InputError(f"features: no case needs {', '.join(unknown)}; the suite's features "
                         f"are {', '.join(known_features)}", file="run_conformance")
    selected = _runner.select(loaded, list(patterns), wanted)
    if not selected:
        raise InputError("no case matches the selection (patterns / features)",
                         file="run_conformance")
    if isinstance(expectations, Mapping):
        expected = dict(expectations)
    else:
        expected = (_runner.load_expectations(_os.fspath(expectations))
                    if expectations is not None else {})
    if impl is None:
        report = _runner.run_suite(selected, _adapters.InProcessAdapter, workers=workers,
                                   processes=True, expectations=expected, catalogue=catalogue)
    else:
        argv = list(impl)       # the checked argv (`_impl`)
        try:
            report = _runner.run_suite(
                selected, lambda: _adapters.SubprocessAdapter(argv, timeout=timeout),
                workers=workers, expectations=expected, catalogue=catalogue)
        except _adapters.HelloError as e:   # a hello that breaks the protocol, as `--impl` says
            raise InputError(e.reason, file="--impl") from None
    counts = report.counts()
    outcomes = tuple(CaseOutcome(r.case_id, r.status, tuple(r.clauses), tuple(r.problems),
                                 r.diff, r.seed) for r in report.results)
    return ConformanceReport(outcomes, counts["passed"], counts["failed"], counts["errored"],
                             counts["skipped"], _freeze(dict(report.implementation)),
                             json_text=_report.dumps(report))
