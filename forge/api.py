"""The forge kit's public Python API: the one documented place to drive it from code.

Run a prompt on the reference engine (`run_prompt`), explore many schedules
of it and get a report (`explore`), run a recorded schedule again
(`replay`), run the conformance suite against an engine (`run_conformance`),
and drive the task lifecycle manager (`LifecycleManager` and friends, the
entry points of `forge.lifecycle`).  Everything here is re-exported from
`forge` itself; every other module of the kit is internal and may change.

Every value that crosses this boundary is a frozen attrs class
(`Observation`, `ExploreReport`, `Failure`, `ReplayReport`,
`ConformanceReport`, `CaseOutcome`) with a `to_json()`; nested JSON data is frozen too (mappings
are read-only, lists are tuples).  Bad input - an unreadable prompt, a
malformed script, an unknown strategy - raises `InputError` (a
`ValueError`), whose `str()` is the same one line `forge` prints.

What does not live here: a run's definition (`forge.runspec.RunSpec`),
exploring and replaying (`forge.repro`), the engine (`forge.engine`), the
simulator (`sim`), the suite (`conformance`) - these functions wrap them
thinly, the same core the command line (`forge.cli`, `forge.commands`)
prints, and rewrite none of their rules.  See docs/api.md.
"""

from __future__ import annotations

import json as _json
import os as _os
import types as _types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Union

import attrs as _attrs

from forge.errors import InputError
from forge.lifecycle.clock import ThreadClock, VirtualClock
from forge.lifecycle.contract import run_contract as run_store_contract
from forge.lifecycle.errors import TaskError
from forge.lifecycle.manager import Config as LifecycleConfig
from forge.lifecycle.manager import Manager as LifecycleManager
from forge.lifecycle.records import RunOutcome, StopOutcome, TaskStatus
from forge.lifecycle.sessions import MemorySessions
from forge.lifecycle.sqlite_store import SqliteStore as SqliteTaskStore
from forge.lifecycle.store import MemoryStore as MemoryTaskStore

__all__ = [
    "CaseOutcome",
    "Check",
    "ConformanceReport",
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

#: A file path: a `str` or an `os.PathLike` (a `pathlib.Path`).
PathLike = Union[str, "_os.PathLike[str]"]
#: A user check: gets each schedule's observation and returns None, True or
#: an empty list when it holds; False, a string or an iterable of strings
#: (its problems) when it does not.  Raising fails it too: an
#: `AssertionError`'s message is the problem.  Named checks follow the same
#: rule (`forge.runspec.UserCheck`).
Check = Callable[["Observation"], Union[Iterable[str], str, bool, None]]
Strategy = Literal["random", "pct", "exhaustive"]
#: Store refusals: `OP[:PATH]` strings as `--refuse` takes them, or a case's
#: `{operation: [paths]}` (`*` for every operation or path).
_Refusals = Union[str, Iterable[str], Mapping[str, Union[str, Iterable[str]]]]


# -- frozen JSON -----------------------------------------------------------------------------

def _freeze(value: Any) -> Any:
    """JSON data made read-only: mappings become mapping proxies, lists tuples."""
    if isinstance(value, dict):
        return _types.MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    """The plain JSON data back from `_freeze`."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
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
        """An observation from its JSON data (as an engine under test reports it)."""
        return cls(
            outcome=str(obs["outcome"]), result=obs.get("result"),
            error=_freeze(obs.get("error")), logs=tuple(obs.get("logs", ())),
            events=_freeze(list(obs.get("events", ()))), tasks=_freeze(dict(obs.get("tasks", {}))),
            messages=_freeze(dict(obs.get("messages", {}))),
            store=_freeze(dict(obs.get("store", {}))),
            virtual_time=float(obs.get("virtual_time", 0.0)),
            trace_sha256=str(obs.get("trace_sha256", "")), trace=trace,
            choices=tuple(choices), drifted_at=drifted_at,
            rounds=_freeze(list(obs.get("rounds", ()))),
            effects=_freeze(list(obs.get("effects", ()))))


# -- building runs ---------------------------------------------------------------------------

def _script(value: PathLike | Mapping[str, Any] | Sequence[Any] | None, name: str) -> Any:
    """A script (`forge.runspec.Script`) from a file's path or from its JSON data."""
    from forge.runspec import Script, read_script_file

    if value is None:
        return None
    if isinstance(value, str | _os.PathLike):
        return read_script_file(_os.fspath(value))
    return Script(f"<{name} script>", _thaw(_freeze(value)))


def _spec(prompt: PathLike | None, source: str | None, *, args: str, concurrency: int,
          model_script: PathLike | Mapping[str, Any] | None,
          operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None,
          store: PathLike | Mapping[str, str] | None, cancel_at: float | None,
          max_instructions: int | None, faults: str | Iterable[str], fault_budget: int,
          latency: Mapping[str, float] | None, latency_menu: Sequence[float] | None,
          tool_script: PathLike | Mapping[str, Any] | None, refuse: _Refusals | None,
          where: str) -> Any:
    """The `forge.runspec.RunSpec` of the keywords `run_prompt` and `explore` share."""
    from forge.runspec import (parse_refuse, read_prompt_file, read_store_folder,
                               spec_from_values)

    if (prompt is None) == (source is None):
        raise InputError("give exactly one of prompt (a path) and source (the prompt's text)",
                         file=where)
    if prompt is not None:
        path = _os.fspath(prompt)
        text = read_prompt_file(path)
    else:
        path, text = "<source>", str(source)
    store_files = dict(store) if isinstance(store, Mapping) else \
        read_store_folder(_os.fspath(store) if store is not None else None)
    return spec_from_values(
        path, text, args=args, store_files=store_files, concurrency=concurrency,
        model=_script(model_script, "model"), operator=_script(operator_script, "operator"),
        cancel_at=cancel_at, max_instructions=max_instructions,
        faults=faults if isinstance(faults, str) else ",".join(faults),
        fault_budget=fault_budget, latency_base=dict(latency) if latency is not None else None,
        latency_menu=tuple(latency_menu) if latency_menu is not None else None,
        tool=_script(tool_script, "tool"), refuse=parse_refuse(_refuse_pairs(refuse)))


def _refuse_pairs(refuse: _Refusals | None) -> list[tuple[str, str]]:
    """`refuse` as the `(operation, path)` pairs `--refuse OP[:PATH]` gives
    (`forge.runspec.refuse_pair`): from `OP[:PATH]` strings, or from a
    case's `{operation: [paths]}`."""
    from forge.runspec import refuse_pair

    if refuse is None:
        return []
    if isinstance(refuse, str):
        refuse = [refuse]
    if isinstance(refuse, Mapping):
        return [(str(op), str(path)) for op, paths in refuse.items()
                for path in ([paths] if isinstance(paths, str) else paths)]
    return [refuse_pair(str(text)) for text in refuse]


def _write(path: PathLike, text: str) -> str:
    """Write an output file; an OS error is an `InputError` naming it."""
    where = _os.fspath(path)
    try:
        with open(where, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror or e}", file=where) from None
    return where


def run_prompt(prompt: PathLike | None = None, *, source: str | None = None, args: str = "",
               seed: int | None = None, strategy: str | None = None,
               model_script: PathLike | Mapping[str, Any] | None = None,
               operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None = None,
               concurrency: int = 8, store: PathLike | Mapping[str, str] | None = None,
               cancel_at: float | None = None, max_instructions: int | None = None,
               faults: str | Iterable[str] = (), fault_budget: int = 1,
               latency: Mapping[str, float] | None = None,
               latency_menu: Sequence[float] | None = None,
               tool_script: PathLike | Mapping[str, Any] | None = None,
               refuse: _Refusals | None = None,
               replay_out: PathLike | None = None) -> Observation:
    """Run one prompt on the reference engine, on a virtual clock: `forge run`.

    Args:
        prompt: the prompt file's path (or give `source`).
        source: the prompt's text, instead of a path.
        args: the run's argument string (`args` in Lua).
        seed: draw a random schedule from this seed (default: the canonical one).
        strategy: a strategy spelling as `forge run --strategy` takes it:
            `canonical`, `random:SEED`, `pct:SEED[:DEPTH[:HORIZON]]` or `replay:FILE`.
        model_script, operator_script, tool_script: a script file's path, or
            its JSON data (docs/scripts.md).
        concurrency: the harness's ceiling on tasks running at once.
        store: a folder to seed the store from, or `{path: text}`.
        cancel_at: have the host cancel the run at this virtual instant (seconds).
        max_instructions: the Lua instruction budget for the whole run.
        faults: fault kinds the schedule may inject (`store`, `model`,
            `tool`, `operator`, `cancel`; a list or `"store,model"`), as `--faults`.
        fault_budget: at most this many faults a run, as `--fault-budget`.
        latency: base seconds of some operations (`store`, `model`,
            `operator`, `tool`), over the defaults.
        latency_menu: the multipliers a schedule picks durations from (the
            first is the canonical schedule's).
        refuse: store operations the host refuses, as `--refuse`: `OP[:PATH]`
            strings (`"write"`, `"write:notes.md"`), or `{op: [paths]}`.
        replay_out: also write this run's replay file here (`forge replay FILE`).

    Returns:
        The run's `Observation`; the same inputs and seed give the same one.

    Raises:
        InputError: the prompt, a script, the store, a fault, a refusal or the
            strategy is refused (a `replay:FILE` that records another run, too).
    """
    from forge.runspec import Expectation, Runner, record, run_chooser
    from forge.sim.replayfile import write_record

    spec = _spec(prompt, source, args=args, concurrency=concurrency, model_script=model_script,
                 operator_script=operator_script, store=store, cancel_at=cancel_at,
                 max_instructions=max_instructions, faults=faults, fault_budget=fault_budget,
                 latency=latency, latency_menu=latency_menu, tool_script=tool_script,
                 refuse=refuse, where="run_prompt")
    runner = Runner(spec)
    chooser = run_chooser(seed, strategy)
    done = runner.run(chooser)
    obs: dict[str, Any] = done.observation()
    if replay_out is not None:
        _write(replay_out, write_record(record(spec, Expectation(), chooser.seed,
                                               chooser.choices, obs,
                                               strategy=chooser.provider.describe())))
    return Observation.from_dict(obs, trace=done.trace.lines(), choices=chooser.values())


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
    reproduces it in a shell.
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

    def to_json(self) -> dict[str, Any]:
        """The failure as JSON data (the fields `forge explore --json` reports)."""
        return {"seed": self.seed, "problems": list(self.problems), "choices": len(self.choices),
                "shrunk": list(self.shrunk), "deviations": self.deviations,
                "proven_minimal": self.proven, "story": list(self.story),
                "divergence": list(self.divergence),
                "faults_fired": [list(f) for f in self.faults], "replay": self.replay_file,
                "replay_command": self.replay_command}


@_attrs.frozen
class ExploreReport:
    """What an exploration found: counts, outcomes, and the failure.

    `runs` schedules ran, `distinct` of them with different traces;
    `outcomes` counts runs by outcome.  `failures` holds the first failing
    schedule, shrunk (or nothing).  An exhaustive search is `complete` when
    it covered its tree; `pruned` subtrees were skipped as equivalent,
    `bounded` beyond the deviation bound, `unfinished` left at the budget.
    `faults` counts the faults fired over all schedules, by kind (empty
    without `faults=`, or when none fired).
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
    faults: Mapping[str, int] = _attrs.field(factory=lambda: _types.MappingProxyType({}))

    @property
    def ok(self) -> bool:
        """Every schedule passed, and an exhaustive search covered its tree."""
        return not self.failures and self.complete

    def summary(self) -> str:
        """The report in one line of plain words."""
        from forge.progress import plain_counts

        line = (f"{self.runs} schedules ({self.strategy}), {self.distinct} distinct; "
                f"outcomes: {plain_counts(self.outcomes)}")
        if self.faults:
            line += f"; faults fired: {plain_counts(self.faults)}"
        if self.strategy == "exhaustive":
            line += ("; covered the whole tree" if self.complete
                     else f"; stopped at the budget with {self.unfinished} subtrees unfinished")
        if self.failures:
            first = self.failures[0]
            where = "on an exhaustive schedule" if first.seed is None else f"at seed {first.seed}"
            line += f"; FAILED {where}: " + "; ".join(first.problems)
        return line

    def to_json(self) -> str:
        """The report as one JSON object (keys as `forge explore --json` has them)."""
        return _dumps({"runs": self.runs, "distinct_schedules": self.distinct,
                       "outcomes": dict(self.outcomes), "strategy": self.strategy,
                       "failures": [f.to_json() for f in self.failures],
                       "complete": self.complete, "pruned": self.pruned,
                       "bounded": self.bounded, "unfinished": self.unfinished,
                       "faults": dict(self.faults)})


def _user_checks(checks: Sequence[Check], named: Sequence[str]) -> list[Any]:
    """The callable checks as the explorer's checks over raw observations
    (`forge.runspec.UserCheck`, the rule named checks follow too), each
    entry of both lists checked first.

    Raises:
        InputError: naming the argument and the index of an entry that is not
            a callable (`checks`) or a string (`named_checks`).
    """
    from forge.runspec import UserCheck

    for argument, entries, fits, what in (
            ("checks", checks, callable, "a callable taking an Observation (a check named "
                                         "module:function goes in named_checks)"),
            ("named_checks", named, lambda c: isinstance(c, str), "a string module:function")):
        if isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
            raise InputError(f"{argument}: a list of checks, each {what}; got "
                             f"{type(entries).__name__} {str(entries)[:40]!r}", file="explore")
        for i, entry in enumerate(entries):
            if not fits(entry):
                raise InputError(f"{argument}[{i}]: a check is {what}, got "
                                 f"{type(entry).__name__} {str(entry)[:40]!r}", file="explore")
    return [UserCheck(c, getattr(c, "__name__", None) or type(c).__name__,
                      Observation.from_dict) for c in checks]


def explore(prompt: PathLike | None = None, *, source: str | None = None,
            strategy: Strategy = "random", runs: int = 200, start_seed: int = 0,
            pct_depth: int = 3, checks: Sequence[Check] = (), named_checks: Sequence[str] = (),
            expect_result: str | None = None, same_ids: bool = True, invariants: bool = True,
            schedule_independent: bool = False, args: str = "",
            model_script: PathLike | Mapping[str, Any] | None = None,
            operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None = None,
            concurrency: int = 8, store: PathLike | Mapping[str, str] | None = None,
            cancel_at: float | None = None, max_instructions: int | None = None,
            faults: str | Iterable[str] = (), fault_budget: int = 1,
            latency: Mapping[str, float] | None = None,
            latency_menu: Sequence[float] | None = None,
            tool_script: PathLike | Mapping[str, Any] | None = None,
            refuse: _Refusals | None = None, max_deviations: int | None = None,
            reduce: bool = True, shrink_budget: int = 3000,
            progress: Callable[[int], None] | None = None,
            replay_out: PathLike | None = None, workers: int = 1,
            backend: Literal["local", "dask"] = "local",
            address: str | None = None) -> ExploreReport:
    """Run a prompt under many schedules, check each one, shrink the first failure:
    `forge explore`.

    Args:
        prompt, source: the prompt's path, or its text.
        strategy: `random` (one schedule per seed), `pct` (priority-based,
            `pct_depth` change points) or `exhaustive` (the whole choice
            tree, at most `runs` schedules; `max_deviations`, `reduce` as
            `forge explore` has them).
        runs: schedules to try; seeds run from `start_seed` (seed N is
            `run_prompt(seed=N)`).
        checks: your own checks (callables, see `Check`), run on every schedule.
        named_checks: checks named `module:function` (as `--check`), taking
            the observation's JSON data; unlike `checks` they are recorded
            in the replay file, so `forge replay` re-checks them.  Both kinds
            hold and fail by one rule (`forge.runspec.UserCheck`).
        expect_result: also require this exact result.
        same_ids: require the canonical schedule's task ids on every schedule.
        invariants: run the kit's invariants (each task ends once, status
            tables agree with events, abandon reasons are sound).
        schedule_independent: require the canonical observation on every
            schedule (apart from what a schedule may change).
        args, model_script, ..., refuse: the run, as `run_prompt` has them;
            `faults` makes the schedules inject faults too.
        shrink_budget: the most runs shrinking the failure may take.
        progress: called with the number of schedules run so far.
        replay_out: write the shrunk failing run's replay file here (for
            `replay` or `forge replay FILE`).
        workers: run the schedules in this many processes (random and pct;
            the report is the one-process report).  `checks` must then be
            picklable on the dask backend (module-level functions are).
        backend, address: `local` processes, or `dask` (the distributed
            extra): the scheduler at `address`, or a local cluster of
            `workers` processes when it is None.

    Returns:
        An `ExploreReport`; `report.ok` is False when a schedule failed.

    Raises:
        InputError: the prompt, a script, a check or a fault is refused, an
            argument is out of range, or `max_deviations` is given to a
            strategy other than `exhaustive`.
    """
    from forge.campaign import check_spread, explore_campaign
    from forge.pool import backend as _backend
    from forge.repro import check_bound, explore_prompt
    from forge.runspec import Expectation
    from forge.sim.replayfile import write_record

    if strategy not in ("random", "pct", "exhaustive"):
        raise InputError(f"strategy must be random, pct or exhaustive, got {strategy!r}",
                         file="explore")
    if runs < 1:
        raise InputError(f"runs must be at least 1, got {runs}", file="explore")
    spec = _spec(prompt, source, args=args, concurrency=concurrency, model_script=model_script,
                 operator_script=operator_script, store=store, cancel_at=cancel_at,
                 max_instructions=max_instructions, faults=faults, fault_budget=fault_budget,
                 latency=latency, latency_menu=latency_menu, tool_script=tool_script,
                 refuse=refuse, where="explore")
    extra = _user_checks(checks, named_checks)
    expect = Expectation(invariants=invariants, same_ids=same_ids, result=expect_result,
                         schedule_independent=schedule_independent,
                         checks_named=tuple(named_checks))
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be at least 1, got {workers!r}", file="explore")
    where = _backend(backend, address)
    check_spread(strategy, workers, None, where)
    check_bound(strategy, max_deviations)
    if workers > 1 or where.kind != "local":
        outcome = explore_campaign(spec, expect=expect, strategy=strategy,
                                   seeds=range(start_seed, start_seed + runs), workers=workers,
                                   pct_depth=pct_depth, shrink_budget=shrink_budget,
                                   where=where, progress=progress, extra_checks=extra).outcome
    else:
        outcome = explore_prompt(spec, expect=expect, strategy=strategy, runs=runs,
                                 start_seed=start_seed, pct_depth=pct_depth,
                                 max_deviations=max_deviations, reduce=reduce,
                                 shrink_budget=shrink_budget, progress=progress,
                                 extra_checks=extra)
    report, found = outcome.report, outcome.failure
    failures: tuple[Failure, ...] = ()
    if found is not None:
        import shlex

        first = report.findings[0]
        path = command = None
        if replay_out is not None:
            path = _write(replay_out, write_record(found.record))
            command = f"forge replay {shlex.quote(path)}"
        obs = Observation.from_dict(found.observation, trace=found.trace,
                                    choices=[c[2] for c in found.record["choices"]])
        failures = (Failure(first.seed, tuple(found.problems), tuple(first.choices),
                            tuple(first.shrunk), first.deviations, first.proven, obs,
                            tuple(found.story), tuple(found.divergence),
                            tuple((str(k), str(w)) for k, w in found.faults), path, command),)
    return ExploreReport(report.runs, report.distinct_traces, _freeze(dict(report.outcomes)),
                         failures, strategy, report.complete, report.pruned, report.bounded,
                         report.unfinished, _freeze(dict(report.faults)))


# -- replaying -------------------------------------------------------------------------------

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
    not this one; `story` tells the run in virtual time.
    """

    observation: Observation = _attrs.field(eq=False, repr=False)
    problems: tuple[str, ...]
    recorded_problems: tuple[str, ...]
    identical: bool | None
    drift: str | None
    other_kit: str | None = None
    story: tuple[str, ...] = ()

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
                       "story": list(self.story)})


def replay(replay_file: PathLike, *, prompt: PathLike | None = None, args: str | None = None,
           concurrency: int | None = None, store: PathLike | None = None,
           model_script: PathLike | None = None, operator_script: PathLike | None = None,
           cancel_at: float | None = None, max_instructions: int | None = None,
           faults: str | Iterable[str] | None = None,
           fault_budget: int | None = None, tool_script: PathLike | None = None,
           latency: Mapping[str, float] | None = None,
           refuse: _Refusals | None = None) -> ReplayReport:
    """Run the run a replay file records again and re-check what it expects:
    `forge replay`.

    Args:
        replay_file: a file `forge explore`, `explore()`, `forge run
            --replay-out` or `run_prompt(replay_out=...)` wrote; it holds the
            whole run (prompt text, harness, scripts, faults, seed, choices).
        prompt: use this prompt file instead of the recorded text (its
            sha256 must match the recorded one).
        args, ..., refuse: override what the file records, as `forge replay`'s
            flags do (a what-if run: its choices will likely drift, and
            `identical` is None); scripts and the store are paths, `latency`
            and `refuse` as `run_prompt` takes them.

    Returns:
        A `ReplayReport`: `reproduced`, `identical`, `drift`, the observation.

    Raises:
        InputError: the replay file is unusable, or the prompt does not match it.
    """
    from forge.repro import replay_file as run_again

    given = {"args": args, "concurrency": concurrency, "cancel_at": cancel_at,
             "max_instructions": max_instructions, "fault_budget": fault_budget,
             "store_dir": _os.fspath(store) if store is not None else None,
             "model_script": _os.fspath(model_script) if model_script is not None else None,
             "operator_script": _os.fspath(operator_script) if operator_script is not None
             else None,
             "tool_script": _os.fspath(tool_script) if tool_script is not None else None,
             "latency": tuple(latency.items()) if latency is not None else None,
             "refuse": _refuse_pairs(refuse) if refuse is not None else None,
             "faults": faults if faults is None or isinstance(faults, str) else ",".join(faults)}
    overrides = {k: v for k, v in given.items() if v is not None}
    done = run_again(_os.fspath(replay_file),
                     prompt=_os.fspath(prompt) if prompt is not None else None,
                     overrides=overrides or None)
    drifted_at = done.drift.index if done.drift is not None else None
    obs = Observation.from_dict(done.observation, trace=done.trace, choices=done.choices,
                                drifted_at=drifted_at)
    return ReplayReport(obs, tuple(done.problems), tuple(done.recorded_problems),
                        done.identical, done.drift.describe() if done.drift else None,
                        done.other_kit, tuple(done.story))


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
        features: only cases citing any of these features.
        patterns: only cases whose id or clause ids match any of these.
        expectations: an expectations file, or `{case_id: "fail" | "skip"}`.
        workers: cases run at once.
        timeout: seconds an implementation may take per message.

    Raises:
        InputError: a case, the expectations or the selection is refused.
    """
    import shlex

    from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter
    from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
    from forge.conformance.catalogue import default_catalogue_dir, load_catalogue
    from forge.conformance.report import dumps
    from forge.conformance.runner import load_expectations, run_suite, select

    catalogue_dir = default_catalogue_dir()
    catalogue = load_catalogue(catalogue_dir) if catalogue_dir is not None else None
    known = {c["id"] for c in catalogue} if catalogue is not None else None
    loaded = load_cases(_os.fspath(cases) if cases is not None else DEFAULT_CASES_DIR, known)
    wanted = list(features)
    known_features = sorted({f for case in loaded for f in case.features})
    unknown = [f for f in wanted if f not in known_features]
    if unknown:
        raise InputError(f"features: no case needs {', '.join(unknown)}; the suite's features "
                         f"are {', '.join(known_features)}", file="run_conformance")
    selected = select(loaded, list(patterns), wanted)
    if not selected:
        raise InputError("no case matches the selection (patterns / features)",
                         file="run_conformance")
    if isinstance(expectations, Mapping):
        expected = dict(expectations)
    else:
        expected = load_expectations(_os.fspath(expectations)) if expectations is not None else {}
    if impl is None:
        report = run_suite(selected, InProcessAdapter, workers=workers, processes=True,
                           expectations=expected, catalogue=catalogue)
    else:
        argv = shlex.split(impl) if isinstance(impl, str) else list(impl)
        report = run_suite(selected, lambda: SubprocessAdapter(argv, timeout=timeout),
                           workers=workers, expectations=expected, catalogue=catalogue)
    counts = report.counts()
    outcomes = tuple(CaseOutcome(r.case_id, r.status, tuple(r.clauses), tuple(r.problems),
                                 r.diff, r.seed) for r in report.results)
    return ConformanceReport(outcomes, counts["passed"], counts["failed"], counts["errored"],
                             counts["skipped"], _freeze(dict(report.implementation)),
                             json_text=dumps(report))
