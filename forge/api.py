"""The forge kit's public Python API: the one documented place to drive it from code.

Run a prompt on the reference engine (`run_prompt`), explore many schedules
of it and get a report (`explore`), run a recorded schedule again
(`replay`), run the conformance suite against an engine (`run_conformance`),
and drive the task lifecycle manager (`LifecycleManager` and friends, the
entry points of `forge.lifecycle`).  Everything here is re-exported from
`forge` itself; every other module of the kit is internal and may change.

Every value that crosses this boundary is a frozen attrs class
(`Observation`, `ExploreReport`, `Failure`, `ConformanceReport`,
`CaseOutcome`) with a `to_json()`; nested JSON data is frozen too (mappings
are read-only, lists are tuples).  Bad input - an unreadable prompt, a
malformed script, an unknown strategy - raises `InputError` (a
`ValueError`), whose `str()` is the same one line `forge` prints.

What does not live here: the engine (`forge.engine`), the simulator (`sim`),
the suite (`conformance`) - these functions wrap them thinly and rewrite
nothing - and the command line (`forge.cli`).  See docs/api.md.
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
#: A user check: gets each schedule's observation and returns its problems
#: (an iterable of strings; empty or None when it holds).  A check may also
#: raise `AssertionError`: its message (or the check's name) is the problem.
Check = Callable[["Observation"], Union[Iterable[str], None]]
Strategy = Literal["random", "pct", "exhaustive"]


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
            choices=tuple(choices), drifted_at=drifted_at)


# -- building runs ---------------------------------------------------------------------------

@_attrs.frozen
class _Setup:
    """A prompt and its harness settings, checked once; builds a fresh harness per run."""

    prompt: Any
    path: str | None
    args: str
    concurrency: int
    model_script: Any
    operator_script: Any
    store: Any
    cancel_at: float | None
    max_instructions: int | None
    #: Each script's JSON data, when it was given as data (not a path): a
    #: replay command needs it written to a file.
    script_data: tuple[Any, Any] = (None, None)

    def harness(self) -> Any:
        from forge import assembly

        build_harness: Any = assembly.build_harness     # untyped: its values are Any here

        store_dir, store_files = ((None, dict(self.store)) if isinstance(self.store, Mapping)
                                  else (self.store, None))
        harness = build_harness(store_dir, self.concurrency, store_files=store_files,
                                cancel_at=self.cancel_at)
        if self.model_script is not None:
            harness.model = self.model_script
        if self.operator_script is not None:
            harness.operator = self.operator_script
        return harness

    def run(self, chooser: Any, seed: int | None) -> Observation:
        from forge.engine.run import RunConfig
        from forge.engine.run import run_prompt as run
        from forge.lua.runtime import DEFAULT_MAX_INSTRUCTIONS

        config = RunConfig(args=self.args, seed=seed or 0,
                           max_instructions=self.max_instructions or DEFAULT_MAX_INSTRUCTIONS)
        done = run(self.prompt, self.harness(), chooser, config)
        return Observation.from_dict(done.observation(), trace=done.trace.lines(),
                                     choices=chooser.values())

    def subject(self, chooser: Any) -> tuple[dict[str, Any], str]:
        """The explorer's subject (`sim.explore.Subject`): the raw observation."""
        from forge.engine.run import RunConfig
        from forge.engine.run import run_prompt as run

        obs: dict[str, Any] = run(self.prompt, self.harness(), chooser,
                                  RunConfig(args=self.args)).observation()
        return obs, str(obs["trace_sha256"])


def _script(value: Any, model: bool) -> Any:
    """A model or operator script from a path, or from its JSON data."""
    from forge import scripts

    if value is None:
        return None
    if isinstance(value, str | _os.PathLike):
        return (scripts.load_model_script if model else scripts.load_operator_script)(
            _os.fspath(value))
    source = "<model script>" if model else "<operator script>"
    return (scripts.model_script_from_data if model else scripts.operator_script_from_data)(
        _thaw(_freeze(value)), source)


def _setup(prompt: PathLike | None, source: str | None, args: str, concurrency: int,
           model_script: Any, operator_script: Any, store: PathLike | Mapping[str, str] | None,
           cancel_at: float | None, max_instructions: int | None) -> _Setup:
    from forge.prompt import load_prompt, parse_prompt

    if (prompt is None) == (source is None):
        raise InputError("give exactly one of prompt (a path) and source (the prompt's text)",
                         file="run_prompt")
    parsed = parse_prompt(source) if source is not None else load_prompt(_os.fspath(prompt))  # type: ignore[arg-type]
    if isinstance(store, Mapping):
        store_arg: Any = dict(store)
    else:
        store_arg = _os.fspath(store) if store is not None else None
    data = tuple(None if s is None or isinstance(s, str | _os.PathLike) else _thaw(_freeze(s))
                 for s in (model_script, operator_script))
    setup = _Setup(parsed, _os.fspath(prompt) if prompt is not None else None, args, concurrency,
                   _script(model_script, True), _script(operator_script, False), store_arg,
                   cancel_at, max_instructions, (data[0], data[1]))
    setup.harness()        # a bad store folder is refused before any run
    return setup


def _chooser(seed: int | None, strategy: str | None) -> Any:
    from forge.assembly import make_chooser

    return make_chooser(seed, strategy)


def run_prompt(prompt: PathLike | None = None, *, source: str | None = None, args: str = "",
               seed: int | None = None, strategy: str | None = None,
               model_script: PathLike | Mapping[str, Any] | None = None,
               operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None = None,
               concurrency: int = 8, store: PathLike | Mapping[str, str] | None = None,
               cancel_at: float | None = None,
               max_instructions: int | None = None) -> Observation:
    """Run one prompt on the reference engine, on a virtual clock.

    Args:
        prompt: the prompt file's path (or give `source`).
        source: the prompt's text, instead of a path.
        args: the run's argument string (`args` in Lua).
        seed: draw a random schedule from this seed (default: the canonical one).
        strategy: a strategy spelling as `forge run --strategy` takes it:
            `canonical`, `random:SEED`, `pct:SEED[:DEPTH]` or `replay:FILE`.
        model_script, operator_script: a script file's path, or its JSON data.
        concurrency: the harness's ceiling on tasks running at once.
        store: a folder to seed the store from, or `{path: text}`.
        cancel_at: have the host cancel the run at this virtual instant (seconds).
        max_instructions: the Lua instruction budget for the whole run.

    Returns:
        The run's `Observation`; the same inputs and seed give the same one.

    Raises:
        InputError: the prompt, a script, the store or the strategy is refused.
    """
    setup = _setup(prompt, source, args, concurrency, model_script, operator_script, store,
                   cancel_at, max_instructions)
    return setup.run(_chooser(seed, strategy), seed)


def replay(replay_file: PathLike, *, prompt: PathLike | None = None, source: str | None = None,
           args: str | None = None, model_script: PathLike | Mapping[str, Any] | None = None,
           operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None = None,
           concurrency: int = 8) -> Observation:
    """Run a prompt again under the schedule recorded in a replay file.

    Args:
        replay_file: a file `forge explore`, `explore()` or `forge run
            --replay-out` wrote.
        prompt, source: the prompt; default: the path the file records.
        args: override the arguments the file records.

    Returns:
        The `Observation`; its `drifted_at` names the first recorded choice
        that no longer fitted (the prompt changed since), else None.

    Raises:
        InputError: the replay file or the prompt is refused.
    """
    from forge.assembly import read_replay
    from sim.chooser import Chooser, ReplayProvider

    recorded = read_replay(_os.fspath(replay_file))
    if prompt is None and source is None:
        prompt = recorded.get("prompt")
        if prompt is None:
            raise InputError("the replay file names no prompt: pass prompt= or source=",
                             file=_os.fspath(replay_file))
    setup = _setup(prompt, source, recorded["args"] if args is None else args, concurrency,
                   model_script, operator_script, None, None, None)
    provider = ReplayProvider(recorded["choices"])
    obs = setup.run(Chooser(provider), None)   # as `forge replay` runs it
    return _attrs.evolve(obs, drifted_at=provider.misaligned_at)


# -- exploring -------------------------------------------------------------------------------

@_attrs.frozen
class Failure:
    """A failing schedule, shrunk: what broke and how to get it again.

    `choices` is the schedule as drawn, `shrunk` its shrunk form (fewer
    `deviations` from the canonical schedule; `proven` when every one-step
    neighbour was run and passes); `observation` is the shrunk run's.
    `replay_file` is where the shrunk schedule was written (None when
    `explore` was given no `replay_out`); `replay_command` reproduces it.
    """

    seed: int | None
    problems: tuple[str, ...]
    choices: tuple[int, ...]
    shrunk: tuple[int, ...]
    deviations: int
    proven: bool
    observation: Observation = _attrs.field(eq=False, repr=False)
    replay_file: str | None = None
    replay_command: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The failure as `forge explore --json` reports one."""
        return {"seed": self.seed, "problems": list(self.problems), "choices": len(self.choices),
                "shrunk": list(self.shrunk), "deviations": self.deviations,
                "proven_minimal": self.proven, "replay": self.replay_file}


@_attrs.frozen
class ExploreReport:
    """What an exploration found: counts, outcomes, and the failures.

    `runs` schedules ran, `distinct` of them with different traces;
    `outcomes` counts runs by outcome.  An exhaustive search is `complete`
    when it covered its tree; `pruned` subtrees were skipped as equivalent,
    `bounded` beyond the deviation bound, `unfinished` left at the budget.
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

    @property
    def ok(self) -> bool:
        """Every schedule passed, and an exhaustive search covered its tree."""
        return not self.failures and self.complete

    def summary(self) -> str:
        """The report in one line of plain words."""
        outcomes = ", ".join(f"{n} {name}" for name, n in self.outcomes.items()) or "none"
        line = (f"{self.runs} schedules ({self.strategy}), {self.distinct} distinct; "
                f"outcomes: {outcomes}")
        if self.strategy == "exhaustive":
            line += ("; covered the whole tree" if self.complete
                     else f"; stopped at the budget with {self.unfinished} subtrees unfinished")
        if self.failures:
            first = self.failures[0]
            line += f"; FAILED at seed {first.seed}: " + "; ".join(first.problems)
        return line

    def to_json(self) -> str:
        """The report as one JSON object (the keys of `forge explore --json`)."""
        return _dumps({"runs": self.runs, "distinct_schedules": self.distinct,
                       "outcomes": dict(self.outcomes), "strategy": self.strategy,
                       "failures": [f.to_json() for f in self.failures],
                       "complete": self.complete, "pruned": self.pruned,
                       "bounded": self.bounded, "unfinished": self.unfinished})


def _user_check(check: Check) -> Callable[[dict[str, Any]], list[str]]:
    """A user check over `Observation`s as the explorer's check over raw observations."""
    name = getattr(check, "__name__", "check")

    def raw(obs: dict[str, Any]) -> list[str]:
        try:
            problems = check(Observation.from_dict(obs))
        except AssertionError as e:
            return [f"{name}: {e}" if str(e) else f"{name} failed"]
        return [str(p) for p in problems] if problems is not None else []

    return raw


def _shell_quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def explore(prompt: PathLike | None = None, *, source: str | None = None,
            strategy: Strategy = "random", runs: int = 200, start_seed: int = 0,
            pct_depth: int = 3, checks: Sequence[Check] = (), expect_result: str | None = None,
            same_ids: bool = True, invariants: bool = True, args: str = "",
            model_script: PathLike | Mapping[str, Any] | None = None,
            operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None = None,
            concurrency: int = 8, max_deviations: int | None = None, reduce: bool = True,
            replay_out: PathLike | None = None) -> ExploreReport:
    """Run a prompt under many schedules, check each one, shrink the first failure.

    Args:
        prompt, source: the prompt's path, or its text.
        strategy: `random` (one schedule per seed), `pct` (priority-based,
            `pct_depth` change points) or `exhaustive` (the whole choice
            tree, at most `runs` schedules; `max_deviations`, `reduce` as
            `forge explore` has them).
        runs: schedules to try; seeds run from `start_seed`.
        checks: your own checks (see `Check`), run on every schedule.
        expect_result: also require this exact result.
        same_ids: require the canonical schedule's task ids on every schedule.
        invariants: run the kit's invariants (each task ends once, status
            tables agree with events, abandon reasons are sound).
        replay_out: write the shrunk failing schedule here (for `replay`,
            `forge replay` or `forge run --strategy replay:FILE`).

    Returns:
        An `ExploreReport`; `report.ok` is False when a schedule failed.

    Raises:
        InputError: the prompt or a script is refused, or an argument is out of range.
    """
    from conformance import oracles
    from sim.chooser import Canonical, Chooser

    if strategy not in ("random", "pct", "exhaustive"):
        raise InputError(f"strategy must be random, pct or exhaustive, got {strategy!r}",
                         file="explore")
    if runs < 1:
        raise InputError(f"runs must be at least 1, got {runs}", file="explore")
    setup = _setup(prompt, source, args, concurrency, model_script, operator_script, None, None,
                   None)
    raw_checks: list[Callable[[dict[str, Any]], list[str]]] = []
    if invariants:
        raw_checks.extend(oracles.DEFAULT_CHECKS)
    if same_ids:
        canonical, _ = setup.subject(Chooser(Canonical()))
        raw_checks.append(oracles.same_ids(canonical))
    if expect_result is not None:
        wanted = expect_result
        raw_checks.append(lambda obs: [] if obs.get("result") == wanted else
                          [f"result {obs.get('result')!r} != {wanted!r}"])
    raw_checks.extend(_user_check(c) for c in checks)
    report = _search(setup, strategy, runs, start_seed, pct_depth, raw_checks, max_deviations,
                     reduce)
    failures = tuple(_failure(setup, f, replay_out) for f in report.findings)
    return ExploreReport(report.runs, report.distinct_traces, _freeze(dict(report.outcomes)),
                         failures, strategy, report.complete, report.pruned, report.bounded,
                         report.unfinished)


def _search(setup: _Setup, strategy: str, runs: int, start_seed: int, pct_depth: int,
            checks: Sequence[Callable[[dict[str, Any]], list[str]]], max_deviations: int | None,
            reduce: bool) -> Any:
    """The one call into the explorers (`sim.explore`, `sim.exhaustive`)."""
    if strategy == "exhaustive":
        from sim.exhaustive import exhaustive

        return exhaustive(setup.subject, checks, limit=runs, reduce=reduce,
                          max_deviations=max_deviations, stop_at_first=True)
    from sim.explore import explore as run_explore

    return run_explore(setup.subject, range(start_seed, start_seed + runs), checks,
                       strategy=strategy, pct_depth=pct_depth)


def _failure(setup: _Setup, finding: Any, replay_out: PathLike | None) -> Failure:
    """A finding as a `Failure`, its shrunk schedule run again (and written, if asked)."""
    from sim.chooser import Chooser, ReplayProvider, dump_replay

    chooser = Chooser(ReplayProvider(finding.shrunk))
    # Run seed 0, as the explorer's runs and `forge replay` have it (the
    # schedule's seed only drew the choices).
    shrunk = setup.run(chooser, None)
    path = command = None
    if replay_out is not None:
        path = _os.fspath(replay_out)
        text = dump_replay(chooser, prompt=setup.path, args=setup.args, seed=finding.seed)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        if setup.path is not None:
            command = _replay_command(setup, path)
    return Failure(finding.seed, tuple(finding.problems), tuple(finding.choices),
                   tuple(finding.shrunk), finding.deviations, finding.proven, shrunk, path,
                   command)


def _replay_command(setup: _Setup, path: str) -> str:
    """The shell command that runs the shrunk schedule again.

    `forge replay` when the run needs nothing but the prompt; with scripts
    or a concurrency ceiling, `forge run --strategy replay:FILE` with the
    same flags (`forge replay` takes neither).
    """
    assert setup.path is not None
    q = _shell_quote
    if setup.model_script is None and setup.operator_script is None and setup.concurrency == 8:
        return f"forge replay {q(setup.path)} {q(path)}"
    words = ["forge", "run", q(setup.path), "--strategy", q(f"replay:{path}")]
    if setup.args:
        words += ["--args", q(setup.args)]
    if setup.concurrency != 8:
        words += ["--concurrency", str(setup.concurrency)]
    scripts = (("--model-script", "model", setup.model_script, setup.script_data[0]),
               ("--operator-script", "operator", setup.operator_script, setup.script_data[1]))
    for flag, name, script, data in scripts:
        if script is None:
            continue
        where = str(script.source)
        if data is not None:
            # A script given as data gets a file beside the replay file.
            where = f"{_os.path.splitext(path)[0]}.{name}.json"
            with open(where, "w", encoding="utf-8") as f:
                f.write(_json.dumps(data, indent=1, sort_keys=True) + "\n")
        words += [flag, q(where)]
    return " ".join(words)


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

    from conformance.adapters import InProcessAdapter, SubprocessAdapter
    from conformance.case import DEFAULT_CASES_DIR, load_cases
    from conformance.catalogue import default_catalogue_dir, load_catalogue
    from conformance.report import dumps
    from conformance.runner import load_expectations, run_suite, select

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
