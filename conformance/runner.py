"""Running the suite: select cases, run each on its schedules, judge, report.

A case runs on the canonical schedule, and a case flagged `any-schedule`
also on `harness.seeds` random ones (seeds 1..N); the first schedule whose
observation breaks an expectation fails the case, and the report names that
schedule.  An implementation that cannot produce an observation, or produces one that
breaks the shipped schema (`schemas`: observation.schema.json, or
lifecycle-observation.schema.json for a case of operations), errors the
case with each violation named by its JSON pointer; a feature it lacks skips
it (the result names the features, for the report's skip line); a hello
that breaks the protocol stops the suite (`HelloError`).  The reference engine in process (and its mutants) is not checked here:
checking costs a third of its suite's time, and the tests check that every
observation it gives the suite validates (in process, and over the pipe,
where the runner checks it like any implementation's).  Each result carries its wall duration and the schedules it ran.

An expectations file (WPT-style) lets an implementation declare what it is
known to get wrong: `{case_id = "fail" | "skip"}`, TOML or JSON, where a
TOML table nests ids (`[examples]` / `two-tasks = "fail"` is
`examples/two-tasks`).  A "skip" case is not run; a "fail" case that fails
or errors is an expected failure, and one that passes is an unexpected pass,
which counts as failed so the file is kept honest.

With several workers, subprocess implementations run on threads (the work
happens in the child processes), each thread borrowing an adapter of its
own; the in-process engine runs on the campaigns' process pool (`forge.pool`).  Results come back in
case order either way.

What does not live here: the case format (`case`), comparing observations
(`matchers`), renderings (`report`), the command line (`cli`).
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime
import difflib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from forge.conformance import schemas
from forge.conformance._toml import check_data, read_toml
from forge.conformance.adapters import Adapter, AdapterError, HelloError, InProcessAdapter
from forge.conformance.case import Case
from forge.conformance.matchers import Comparison, compare, show
from forge.deferred import deferred
from forge.pool import Pool
from forge.conformance.report import (
    ERRORED,
    EXPECTED_FAIL,
    FAILED,
    INTERRUPTED,
    PASSED,
    SKIPPED,
    SKIPPED_BY_EXPECTATIONS,
    UNEXPECTED_PASS,
    CaseResult,
    Report,
    clause_coverage,
)
from forge.errors import InputError
from forge.limits import MAX_CASE_BYTES, compile_pattern
from forge.sim.readlimited import read_text

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import probes as engine_probes
    from forge.lifecycle import probes as lifecycle_probes
else:
    engine_probes = deferred("forge.probes")
    lifecycle_probes = deferred("forge.lifecycle.probes")

EXPECTATIONS = ("fail", "skip")

AdapterFactory = Callable[[], Adapter]
Progress = Callable[[int, int, str], None]


# -- selection -----------------------------------------------------------------------------

def select(cases: Sequence[Case], patterns: Iterable[str | re.Pattern] = (),
           features: Iterable[str] = ()) -> list[Case]:
    """Cases matching any pattern (`matches`: searched in the case id and its
    clause ids) and citing any of `features`.

    Raises:
        InputError: a pattern that is not a regular expression.
    """
    regexes = compile_patterns(patterns)
    wanted = set(features)
    return [case for case in cases
            if matches(regexes, case.id, *case.clauses)
            and (not wanted or wanted & set(case.features))]


def compile_patterns(patterns: Iterable[str | re.Pattern]) -> list[re.Pattern]:
    """`-k` patterns, compiled: a string is held to the rule of the `-k`
    flags (`forge.limits.compile_pattern`: a regular expression of at most
    1000 characters), and one that breaks it is bad input.

    Raises:
        InputError: naming `patterns`, for a string that is not one.
    """
    out = []
    for p in patterns:
        try:
            out.append(p if isinstance(p, re.Pattern) else compile_pattern(p))
        except ValueError as e:
            raise InputError(str(e), file="patterns") from None
    return out


def matches(patterns: Sequence[re.Pattern], *names: str) -> bool:
    """The selection rule of `-k` in `forge conformance`, `forge mutants` and
    `forge spec`: no patterns select everything; else any pattern found
    (`re.search`) in any of `names` (a case's id and clause ids, a mutant's
    id, a clause's id and statement)."""
    return not patterns or any(rx.search(n) for rx in patterns for n in names)


# -- expectations files --------------------------------------------------------------------

def load_expectations(path: str | Path) -> dict[str, str]:
    """`{case_id: "fail" | "skip"}` from a TOML or JSON file.

    Raises:
        InputError: unreadable, not TOML/JSON, or a value other than fail/skip.
    """
    name = str(path)
    if name.endswith(".json"):
        try:
            data = json.loads(read_text(Path(path), MAX_CASE_BYTES))
        except OSError as e:
            raise InputError(f"cannot read file: {e.strerror or e}", file=name) from None
        except RecursionError:
            raise InputError("not JSON: nested too deeply to read", file=name,
                             kind="expectations") from None
        except ValueError as e:  # not UTF-8 or JSON, too large, too many digits
            line = getattr(e, "lineno", None)
            raise InputError(f"not JSON: {getattr(e, 'msg', e)}", file=name, line=line,
                             kind="expectations") from None
        check_data(data, name)
        if not isinstance(data, dict):
            raise InputError("an expectations file is an object {case_id: \"fail\" | \"skip\"}",
                             file=name, kind="expectations")
    else:
        _, data = read_toml(path)
    out: dict[str, str] = {}
    _flatten(data, "", out, name)
    return out


def _flatten(table: dict, prefix: str, out: dict[str, str], name: str) -> None:
    for key, value in table.items():
        case_id = prefix + key
        if isinstance(value, dict):
            _flatten(value, case_id + "/", out, name)
        elif value in EXPECTATIONS:
            out[case_id] = value
        else:
            raise InputError(f"`{case_id}`: expected \"fail\" or \"skip\", got {show(value)}",
                             file=name, kind="expectations")


def stale_expectations(expectations: dict[str, str], cases: Iterable[Case]) -> list[str]:
    """Ids in the expectations file that name no case."""
    known = {c.id for c in cases}
    return sorted(k for k in expectations if k not in known)


# -- one case ------------------------------------------------------------------------------

def run_case(adapter: Adapter, case: Case) -> CaseResult:
    """Run `case` on each of its schedules; never raises for the implementation's faults."""
    started = time.monotonic()
    ran: list[int | None] = []
    reached: set[str] = set()

    def result(status: str, problems: Sequence[str] = (), **more) -> CaseResult:
        return CaseResult(case.id, status, case.clauses, case.features, tuple(problems),
                          duration=time.monotonic() - started, schedules=tuple(ran),
                          probes=tuple(sorted(reached)), **more)

    try:
        reason = adapter.skip_reason(case)
    except AdapterError as e:
        return result(ERRORED, [e.render()])
    if reason is not None:
        try:
            lacks = adapter.lacks(case)
        except AdapterError:
            lacks = ()
        return result(SKIPPED, [reason], lacks=lacks)
    # Most schedules of a case give an observation an earlier one gave; it
    # passed then (a failure ends the case), so it passes again.
    passed: list[object] = []
    for seed in case.seeds:
        ran.append(seed)
        try:
            observation = adapter.run(case, seed)
        except AdapterError as e:
            return result(ERRORED, [e.render()], seed=seed)
        except Exception as e:  # noqa: BLE001 - a broken adapter errors this case only
            return result(ERRORED, [f"the adapter raised {type(e).__name__}: {e}"], seed=seed)
        if any(_alike(observation, seen) for seen in passed):
            continue
        reached.update(engine_probes.observed(observation) if case.operations is None
                       else lifecycle_probes.observed(case.operations, observation))
        trusted = isinstance(adapter, InProcessAdapter)
        broken = [] if trusted else schema_problems(case, observation)
        if broken:
            return result(ERRORED, broken, seed=seed)
        try:
            comparison = compare(case.expect, observation)
        except Exception as e:  # noqa: BLE001 - an observation of odd shape errors this case only
            return result(ERRORED, [f"the observation could not be compared "
                                    f"({type(e).__name__}: {e})"], seed=seed)
        passed.append(observation)
        if not comparison.ok:
            return result(FAILED, comparison.problems, diff=unified_diff(comparison), seed=seed)
    return result(PASSED)


def _alike(observation: object, seen: object) -> bool:
    """Whether two observations are equal; two whose trace hashes differ
    cannot be, and saying so first spares a deep comparison."""
    if observation is seen:
        return True
    if (isinstance(observation, dict) and isinstance(seen, dict)
            and observation.get("trace_sha256") != seen.get("trace_sha256")):
        return False
    return observation == seen


def schema_problems(case: Case, observation: object) -> list[str]:
    """The observation's schema violations, one line each, naming the field."""
    if case.operations is not None:
        lines = schemas.violations(schemas.LIFECYCLE_OBSERVATION, observation)
        where = "lifecycle-observation.schema.json"
    else:
        lines = schemas.observation_violations(observation)
        where = "observation.schema.json"
    return [f"the observation breaks {where} at {line}" if not line.startswith("...") else line
            for line in lines]


def unified_diff(comparison: Comparison) -> str:
    """Expected vs observed, cut to what the case names, so only mismatches differ."""

    def lines(value) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False,
                          default=repr).splitlines()

    return "\n".join(difflib.unified_diff(lines(comparison.expected_view),
                                          lines(comparison.observed_view),
                                          "expected", "observed", lineterm=""))


def judge(result: CaseResult, expectation: str | None) -> CaseResult:
    """Apply an expectations-file entry to a raw result."""
    if expectation != "fail":
        return result
    if result.status in (FAILED, ERRORED):
        return attrs.evolve(result, status=EXPECTED_FAIL)
    if result.status == PASSED:
        why = "the expectations file says this case fails, but it passed; remove its entry"
        return attrs.evolve(result, status=UNEXPECTED_PASS, problems=(why,))
    return result


# -- the suite -----------------------------------------------------------------------------

def run_suite(cases: Sequence[Case], factory: AdapterFactory, *, workers: int = 1,
              processes: bool = False, expectations: dict[str, str] | None = None,
              catalogue: Sequence[dict] | None = None,
              progress: Progress | None = None, maxfail: int | None = None) -> Report:
    """Run every case and build the report.

    Args:
        factory: makes an adapter; called once per worker (a subprocess
            adapter is one implementation process).
        workers: cases run at once.
        processes: run workers in a process pool (`factory` must pickle);
            for the in-process engine, where threads would share one
            interpreter lock.
        expectations: `{case_id: "fail" | "skip"}`.
        catalogue: clauses for the coverage section of the report.
        progress: called as `(done, total, case_id)` after each case.
        maxfail: stop once this many cases failed or errored (`-x` is 1);
            the cases not run are left out of the report, which says so.
            Ctrl-C stops the same way: the report of what ran, marked
            interrupted (`Report.stopped`).

    Raises:
        HelloError: the implementation's first hello breaks the protocol
            (an unknown feature name, a level it cannot have): nothing it
            declares can be tested.  Any other fault of the first handshake
            errors every case with its reason instead.
    """
    expectations = expectations or {}
    started = time.monotonic()
    timestamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    results: list[CaseResult | None] = [None] * len(cases)
    todo = []
    for i, case in enumerate(cases):
        if expectations.get(case.id) == "skip":
            results[i] = CaseResult(case.id, SKIPPED, case.clauses, case.features,
                                    (SKIPPED_BY_EXPECTATIONS,))
        else:
            todo.append(i)
    done = len(cases) - len(todo)

    failures = 0

    def finish(i: int, raw: CaseResult) -> bool:
        """Record case i; whether the run goes on (False: --maxfail reached)."""
        nonlocal done, failures
        results[i] = judge(raw, expectations.get(cases[i].id))
        done += 1
        if progress is not None:
            progress(done, len(cases), cases[i].id)
        failures += results[i].status in (FAILED, ERRORED, UNEXPECTED_PASS)
        return maxfail is None or failures < maxfail

    def drain(futures: dict) -> None:
        for future in cf.as_completed(futures):
            if not finish(futures[future], _outcome(future, cases[futures[future]])):
                break
        for future in futures:      # once stopped, what has not started never will
            future.cancel()

    stopped = None
    pool = _AdapterPool(factory)
    try:
        implementation = pool.describe()
        try:
            if workers <= 1 or len(todo) <= 1:
                for i in todo:
                    if not finish(i, pool.run(cases[i])):
                        break
            elif processes:
                with Pool(workers, _init_process, (factory,)) as executor:
                    drain({executor.submit(_run_in_process, cases[i]): i for i in todo})
            else:
                with cf.ThreadPoolExecutor(workers) as executor:
                    drain({executor.submit(pool.run, cases[i]): i for i in todo})
        except KeyboardInterrupt:
            stopped = INTERRUPTED
    finally:
        pool.close()
    not_run = sum(1 for r in results if r is None)
    if stopped is None and not_run:
        stopped = f"stopped after {failures} failing case{'s' if failures != 1 else ''} " \
                  f"(--maxfail {maxfail})"
    if stopped is not None:
        stopped += f": {not_run} of {len(cases)} cases not run"
    final = tuple(r for r in results if r is not None)
    coverage = clause_coverage(final, catalogue) if catalogue is not None else None
    features = {c["id"]: c["feature"] for c in catalogue} if catalogue is not None else {}
    return Report(final, implementation, coverage, timestamp=timestamp,
                  hostname=socket.gethostname() or "localhost",
                  duration=time.monotonic() - started, clause_features=features,
                  stopped=stopped)



def _outcome(future: cf.Future, case: Case) -> CaseResult:
    """A worker's result; a worker that died (a crash inside the engine's C
    code kills a pool process) errors its case instead of the suite."""
    try:
        return future.result()
    except Exception as e:  # noqa: BLE001 - see the docstring
        return CaseResult(case.id, ERRORED, case.clauses, case.features,
                          (f"the worker running this case died: {type(e).__name__}: {e}",))


class _AdapterPool:
    """Adapters lent to worker threads, one at a time each, made on demand."""

    def __init__(self, factory: AdapterFactory) -> None:
        self.factory = factory
        self.idle: list[Adapter] = []
        self.made: list[Adapter] = []
        self.lock = threading.Lock()
        #: Why the implementation failed its first handshake, if it did.
        self.refused: str | None = None

    def _borrow(self) -> Adapter:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        adapter = self.factory()
        with self.lock:
            self.made.append(adapter)
        return adapter

    def _give_back(self, adapter: Adapter) -> None:
        with self.lock:
            self.idle.append(adapter)

    def describe(self) -> dict:
        adapter = self._borrow()
        try:
            return adapter.describe()
        except HelloError:
            raise
        except AdapterError as e:
            self.refused = e.render()
            return {"name": "(unavailable)", "features": [], "error": self.refused}
        finally:
            self._give_back(adapter)

    def run(self, case: Case) -> CaseResult:
        if self.refused is not None:
            # Each case would start it again and wait out the same fault
            # (a timeout each, for one that never answers): say it at once.
            return CaseResult(case.id, ERRORED, case.clauses, case.features, (self.refused,))
        adapter = self._borrow()
        try:
            return run_case(adapter, case)
        finally:
            self._give_back(adapter)

    def close(self) -> None:
        for adapter in self.made:
            adapter.close()


#: The adapter of a pool worker process.  The in-process engine holds no
#: resources, so it is simply dropped with the process.
_process_adapter: Adapter | None = None


def _init_process(factory: AdapterFactory) -> None:
    global _process_adapter
    _process_adapter = factory()


def _run_in_process(case: Case) -> CaseResult:
    return run_case(_process_adapter, case)

