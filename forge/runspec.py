"""Building a run and running it: from flags, files or data to a `RunSpec`, and a `Runner`.

A `RunSpec` (`forge.run.spec`) holds everything but the choice sequence
that decides a run.  `run`, `explore` and `replay` all build their runs
from one (`spec_from_flags`; a replay file's through
`forge.run.record.spec_from_record`; the Python API's prompt text and
script data through `spec_from_values`), so `forge explore` seed N and
`forge run --seed N` are the same run, and a replay file carries the whole
spec and needs nothing else; `forge run --strategy replay:FILE`
(`run_chooser`, `forge.run.record.FileReplay`) refuses to run a spec the
file does not record.  `Runner` hands each plain run option to the engine
where its row of the options table says it goes.  What every schedule must
satisfy is an `Expectation`; user checks hold and fail by one rule
(`UserCheck`), named or handed over as callables.

What does not live here: the options table and the values' rules
(`forge.run.options`, `forge.run.values`), the run's frozen definition
(`forge.run.spec`) and its replay record (`forge.run.record`), the flags
(`forge.commands.params`), exploring and replaying (`forge.repro`).  It is
core, below the command line and the API: it imports neither.
"""

from __future__ import annotations

import hashlib
import importlib
import marshal
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from forge.assembly import make_chooser, read_store_files
from forge import liveness, probes
from forge.conformance import oracles
from forge.conformance.oracles import VIOLATIONS
from forge.engine import run as engine
from forge.engine.host import STORE_OPS
from forge.engine.run import Run, RunConfig
from forge.errors import InputError
from forge.harness import (DEFAULT_LATENCY, FAULT_KINDS, LATENCY_MENU, FaultPlan, Harness,
                           LatencyModel)
from forge.limits import MAX_SECONDS
from forge.probes import UserProbe
from forge.prompt import parse_prompt, read_prompt
from forge.prompt import read_prompt_text as _read_prompt_text
from forge.run.options import (CANCEL_AT, FAULTS, NAMED_CHECKS, NAMED_PROBES, PLAIN, REFUSE, STORE,
                               Named, engine_keywords)
from forge.run.record import FileReplay, read_replay
from forge.run.spec import RunSpec, Script, text_sha256
from forge.scripts import model_script_from_data, operator_script_from_data, read_script_data
from forge.sim.chooser import Canonical, Chooser, ReplayProvider
from forge.sim.explore import PROBES
from forge.sim.strategies import lookup, parse
from forge.sim.trace import canonical_json
from forge.toolscript import tool_script_from_data
from forge.watched import Watched, own_copy
from forge.verdict import Verdict, result_check

#: At most this many steps a cancel fault may land before (the first ones of
#: a longer run: a schedule longer than this is cancelled early or not at all).
MAX_CANCEL_STEPS = 1024



#: What `--refuse OP[:PATH]` and a case's `refuse` may name besides the store
#: operations: `spawn` (a task's setup) and `*` (every operation).
REFUSE_EXTRA = ("spawn", "*")


def refuse_pair(text: str) -> tuple[str, str]:
    """`--refuse OP[:PATH]` as (operation, path): no path is every path (`*`).

    Raises:
        InputError: naming `--refuse`, for no operation or a value past 4096 characters.
    """
    op, _, path = text.partition(":")
    if not op or len(text) > 4096:
        show = repr(text)
        show = show if len(show) <= 60 else show[:57] + "...'"
        raise InputError(f"must be OP or OP:PATH, got {show}", option=REFUSE)
    return op, path or "*"


def parse_refuse(pairs) -> dict:
    """`--refuse OP[:PATH]` values as operation -> paths (`*` when no path).

    Raises:
        InputError: naming `--refuse`, for an operation the store does not have.
    """
    out: dict[str, tuple[str, ...]] = {}
    for op, path in pairs:
        if op not in STORE_OPS + REFUSE_EXTRA:
            raise InputError(f"unknown operation {op[:40]!r}; the operations are "
                             + ", ".join(STORE_OPS + REFUSE_EXTRA), option=REFUSE)
        paths = out.setdefault(op, ())
        if path not in paths:
            out[op] = paths + (path,)
    return out


def parse_faults(text: str | None, budget: int) -> FaultPlan:
    """`--faults store,model,...` and `--fault-budget K` as a plan (no instants yet).

    Raises:
        InputError: naming `--faults`, for an unknown or repeated kind.
    """
    if not text:
        return FaultPlan((), budget)
    kinds = [k.strip() for k in text.split(",")]
    for kind in kinds:
        if kind not in FAULT_KINDS:
            raise InputError(f"unknown fault kind {kind[:40]!r}; use a comma-separated list of "
                             + ",".join(FAULT_KINDS), option=FAULTS)
    if len(set(kinds)) != len(kinds):
        raise InputError("a fault kind is named twice", option=FAULTS)
    return FaultPlan(tuple(k for k in FAULT_KINDS if k in kinds), budget)


def read_prompt_file(path: str) -> str:
    """The prompt file's text, once it parsed (a bad prompt is refused first);
    read once, so a pipe serves."""
    return read_prompt(path)[1]


def read_prompt_text(path: str) -> str:
    """The prompt file's text, not parsed yet (`check_prompt_text` refuses a
    bad one as `read_prompt_file` would): for a caller that keeps what it
    made of a text it has seen."""
    return _read_prompt_text(path)


def check_prompt_text(path: str, text: str) -> None:
    """Refuse the prompt `text` read from `path` as `read_prompt_file` does."""
    parse_prompt(text, path)


def read_script_file(path: str | None) -> Script | None:
    """The script file at `path` (None: no script), its JSON read within the limits."""
    return Script(path, read_script_data(path)) if path else None


def read_store_folder(path: str | None) -> dict:
    """The files of a store folder (None: an empty store), checked as `--store` checks them.

    Raises:
        InputError: naming `--store`, for a folder that is not there (an
            empty store would hide the mistake); else naming the folder.
    """
    if path is None:
        return {}
    if not os.path.isdir(path):
        what = "is a file" if os.path.exists(path) else "does not exist"
        raise InputError(f"Directory {path!r} {what}.", option=STORE)
    return read_store_files(path)


def spec_from_flags(prompt: str, *, store: str | None = None, model_script: str | None = None,
                    operator_script: str | None = None, tool_script: str | None = None,
                    faults: str | None = None, fault_budget: int = 1, latency=(), refuse=(),
                    **plain: Any) -> RunSpec:
    """The spec the harness flags describe (the options table's names:
    `plain` holds the plain options); files are read (and checked) now.

    Raises:
        InputError, PromptError: an unreadable or invalid prompt, folder or script.
    """
    text = read_prompt_file(prompt)   # refuse a bad prompt before anything else
    return spec_from_values(prompt, text, store_files=read_store_folder(store),
                            model=read_script_file(model_script),
                            operator=read_script_file(operator_script), faults=faults,
                            fault_budget=fault_budget, tool=read_script_file(tool_script),
                            latency_base=dict(latency), refusals=parse_refuse(refuse), **plain)


def spec_from_values(prompt_path: str, prompt_text: str, *, store_files: dict | None = None,
                     model: Script | None = None, operator: Script | None = None,
                     faults: str | None = None, fault_budget: int = 1,
                     latency_base: dict | None = None,
                     latency_menu: tuple[float, ...] | None = None,
                     tool: Script | None = None, refusals: dict | None = None,
                     **plain: Any) -> RunSpec:
    """The spec of a prompt's text and scripts and store given as data: the
    Python API's way in, and `spec_from_flags`'s once it read the files.
    `plain` holds the plain run options (`forge.run.options.PLAIN`) given.
    `latency_base` overrides some operations' base seconds; `latency_menu`
    replaces the multipliers a schedule may pick (the first is canonical).

    Raises:
        InputError: an invalid latency or fault list (the prompt and the
            scripts are checked when a `Runner` parses them).
    """
    base = {**DEFAULT_LATENCY, **(latency_base or {})}
    menu = LATENCY_MENU if latency_menu is None else tuple(latency_menu)
    _check_latency(base, menu)
    spec = RunSpec(prompt_path=prompt_path, prompt_sha256=text_sha256(prompt_text),
                   prompt_text=prompt_text, store_files=dict(store_files or {}), model=model,
                   operator=operator, fault_plan=parse_faults(faults, fault_budget),
                   latency_base=base, latency_menu=menu, tool=tool, refusals=dict(refusals or {}),
                   **plain)
    return with_cancel_instants(spec)


def spec_overridden(spec: RunSpec, overrides: dict) -> RunSpec:
    """A recorded spec with the flags given (`overrides`, by the options
    table's names) changed: `forge replay FILE --flag ...`.  The prompt stays
    the recorded text (a prompt given as text has no file to read again)."""
    given = overrides.get
    rebuilt = spec_from_values(
        spec.prompt_path, spec.prompt_text,
        store_files=read_store_folder(overrides["store"]) if "store" in overrides
        else spec.store_files,
        model=read_script_file(overrides["model_script"]) if "model_script" in overrides
        else spec.model,
        operator=read_script_file(overrides["operator_script"])
        if "operator_script" in overrides else spec.operator,
        faults=given("faults", ",".join(spec.fault_plan.kinds)),
        fault_budget=given("fault_budget", spec.fault_plan.budget),
        latency_base={**spec.latency_base, **dict(overrides.get("latency", ()))},
        latency_menu=spec.latency_menu,
        tool=read_script_file(overrides["tool_script"]) if "tool_script" in overrides
        else spec.tool,
        refusals=parse_refuse(overrides["refuse"]) if "refuse" in overrides else spec.refusals,
        **{o.name: given(o.name, getattr(spec, o.name)) for o in PLAIN})
    rebuilt = attrs.evolve(rebuilt, orders=spec.orders, latency_ties=spec.latency_ties)
    if "faults" in overrides or "fault_budget" in overrides:
        return rebuilt
    return attrs.evolve(rebuilt, fault_plan=spec.fault_plan)   # the recorded cancel instants too


def _check_latency(base: dict, menu: tuple[float, ...]) -> None:
    def fine(x: object) -> bool:
        return (isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                and 0 <= x <= MAX_SECONDS)

    for op, seconds in base.items():
        if op not in DEFAULT_LATENCY:
            raise InputError(f"unknown operation {str(op)[:40]!r}; the operations are "
                             + ", ".join(DEFAULT_LATENCY), file="latency")
        if not fine(seconds):
            raise InputError(f"{op}: seconds are a number from 0 to {MAX_SECONDS:g}, got "
                             f"{str(seconds)[:40]!r}", file="latency")
    if not menu or not all(fine(m) for m in menu):
        raise InputError(f"the menu is one or more multipliers from 0 to {MAX_SECONDS:g}",
                         file="latency_menu")


def run_chooser(seed: int | None, strategy: str | None) -> Chooser:
    """The chooser of `forge run --seed/--strategy`, its run seed set: the
    seed given, else the strategy's own (a spelling's seed N is explore's seed N, a
    format-1 replay file's is the seed it records), else 0.  A format-1
    file's chooser (`FileReplay`) makes `Runner.run` refuse a run the file
    does not record.

    Raises:
        InputError: an unknown strategy spelling (`forge.assembly.make_chooser`),
            or an unusable replay file.
    """
    if seed is None and not strategy:
        return Chooser(Canonical())         # `forge run` alone: the canonical schedule, seed 0
    try:
        chosen, path = parse(strategy) if strategy else (None, "")
    except ValueError:
        chosen = None           # `make_chooser` refuses it
    if chosen is not None and chosen.reads_file:
        data = read_replay(path)
        rec = data["record"]        # None: the legacy shape, choice values alone
        chooser = Chooser(FileReplay(path, rec, data["choices"]) if rec is not None
                          else ReplayProvider(data["choices"]))
        chooser.seed = seed if seed is not None else rec["run"]["seed"] if rec is not None \
            else 0
        return chooser
    chooser = make_chooser(seed, strategy)
    drawn = chooser.provider.describe().get("seed")
    chooser.seed = seed if seed is not None else drawn if isinstance(drawn, int) else 0
    return chooser


def in_mode(spec: RunSpec, strategy: str | None) -> RunSpec:
    """`spec` in the mode its strategy's runs take: orders mode
    (`forge.sim.orders`) for a strategy that declares it, else as it is.
    `strategy` is a name or a one-run spelling; an unknown one is left to
    its own refusal."""
    if not strategy:
        return spec
    try:
        chosen = lookup(strategy.partition(":")[0])
    except KeyError:
        return spec
    return attrs.evolve(spec, orders=True) if chosen.orders else spec


def _ties(spec: RunSpec, chooser: Chooser) -> bool:
    """Whether durations offer tie options: as the replayed file's run did
    (no flag sets them; a file from before them says nothing), else as the
    spec says."""
    if _replays_file(chooser):
        return bool(chooser.provider.record["run"]["latency"].get("ties", False))
    return spec.latency_ties


def _replays_file(chooser: Chooser) -> bool:
    """`chooser` replays a format-1 file (`FileReplay`).  Its class's MRO is
    read, not `isinstance`: a provider's metaclass is `ABCMeta`, whose check
    is a Python call, and every run asks twice."""
    return FileReplay in type(chooser.provider).__mro__


class Runner:
    """One spec, parsed once (prompt and scripts), run under many choosers."""

    def __init__(self, spec: RunSpec, probes: Sequence[Any] = ()) -> None:
        self.spec = spec
        #: Users' probes (`forge.probes.UserProbe`) each schedule is tried on.
        self.probes = tuple(probes)
        self.prompt = parse_prompt(spec.prompt_text, spec.prompt_path)
        self.model = model_script_from_data(spec.model.data, spec.model.path) \
            if spec.model else None
        self.operator = operator_script_from_data(spec.operator.data, spec.operator.path) \
            if spec.operator else None
        self.tool = tool_script_from_data(spec.tool.data, spec.tool.path) if spec.tool else None
        #: The observation and identity `subject` gave last (`identity_of`).
        self._last: tuple[dict, str] | None = None
        #: The runs `subject` watched, by their choices (`forge.watched`).
        self._watched = Watched()
        #: The built-in probes reached, by (schedule identity, faults fired) (`probed`).
        self._reached: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
        # What every run's harness and config take from the spec, read once.
        self._refusals = {op: tuple(paths) for op, paths in spec.refusals.items()}
        self._harness_keywords = engine_keywords(spec, "harness")
        self._config_keywords = engine_keywords(spec, "config")
        #: The latency models runs take, by (orders mode, ties): frozen, and
        #: the engine only reads them, so one serves every run of its kind.
        self._latency: dict[tuple[bool, bool], LatencyModel] = {}
        #: The last run's config: the next run of the same seed takes it (frozen).
        self._config: RunConfig | None = None
        #: The faults runs draw, or None when they draw none (most runs).
        self._fault_plan = spec.fault_plan if spec.fault_plan else None

    def _harness(self, chooser: Chooser):
        """A new harness for one run (its store and faults are the run's own)
        and the run's config."""
        spec = self.spec
        kind = (spec.orders or chooser.orders, _ties(spec, chooser))
        latency = self._latency.get(kind)
        if latency is None:
            latency = self._latency[kind] = LatencyModel(dict(spec.latency_base),
                                                         spec.latency_menu, *kind)
        harness = Harness.seeded(spec.store_files, latency_model=latency,
                                 model=self.model, operator=self.operator, tool=self.tool,
                                 refusals=dict(self._refusals), **self._harness_keywords)
        if self._fault_plan is not None:
            harness.attach_faults(self._fault_plan, chooser)
        config = self._config
        if config is None or config.seed != chooser.seed:
            config = self._config = RunConfig(seed=chooser.seed, **self._config_keywords)
        return harness, config

    def run(self, chooser: Chooser):
        """The finished `forge.engine.run.Run` (its seed is `chooser.seed`).

        Raises:
            InputError: `chooser` replays a file that records another run
                (`FileReplay.check`).
        """
        if _replays_file(chooser):
            chooser.provider.check(self.spec, chooser.seed)
        return engine.run_prompt(self.prompt, *self._with(chooser))

    def _with(self, chooser: Chooser):
        harness, config = self._harness(chooser)
        return harness, chooser, config

    def attempt(self, chooser: Chooser, watch: bool = True):
        """`(run, None)`, or `(run, exception)` when the engine itself broke:
        exploring keeps such a schedule, since a kit bug deserves a repro too.
        The watchers and the liveness monitors watch it unless `watch` is False."""
        run = Run(self.prompt, *self._with(chooser))
        # The invariants that hold at every step are checked as the run goes,
        # so a violation names the step that broke it (`no_violations`).
        if watch:
            run.trace.observe((*oracles.watchers(run), *liveness.monitors(run)))
        if run.harness.injector is not None:
            run.harness.injector.trace = run.trace     # where each fault fell, for the story
        try:
            run.execute()
        except Exception as e:  # noqa: BLE001 - an engine bug, reported as the run's outcome
            return run, e
        finally:
            run.trace.unobserve()
        return run, None

    def subject(self, chooser: Chooser) -> tuple[dict, str]:
        """`forge.sim.explore`'s subject: the observation and the schedule's
        identity (`schedule_identity`).  A run the engine broke on is the
        outcome `crashed` (see `crashed`).

        A schedule that will make the choices of one watched before
        (`forge.watched`) is that run: the chooser is asked that run's
        decisions (`Chooser.retrace`) and, answering each as that run did,
        the schedule takes its observation, violations, identity and probes
        without running.  Where the run's observation or probes were not
        kept, the schedule runs unwatched and takes the rest once its choices
        are confirmed to be that run's.  A prediction the chooser or the run
        does not bear out is run again, watched."""
        prediction = self._watched.predict(chooser)
        if prediction is not None:
            seen = prediction.seen
            found = self._reached.get((seen.identity, seen.fired))
            if seen.observation is not None and found is not None:
                if chooser.retrace(prediction.decisions, seen.values, seen.fired):
                    obs = self._probed(_violated(seen.observation, seen.violations), found)
                    self._last = (obs, seen.identity)
                    return self._last
            else:
                run, crash = self.attempt(chooser, watch=False)
                if crash is None and seen.confirms(run):
                    run.trace.violations = list(seen.violations)
                    return self._seen(seen.observed(run), run, seen.identity)
                chooser = Chooser(ReplayProvider(chooser.values()), seed=chooser.seed,
                                  orders=chooser.orders)
        run, crash = self.attempt(chooser)
        obs = crashed(run, crash) if crash is not None else run.observation()
        identity = schedule_identity(obs, run)
        if crash is None:
            self._watched.keep(run, obs, identity)
        return self._seen(obs, run, identity)

    def _seen(self, obs: dict, run, identity: str) -> tuple[dict, str]:
        seen = self.probed(with_violations(obs, run), run, identity), identity
        self._last = seen
        return seen

    def identity_of(self, obs: dict) -> str | None:
        """The identity of `obs` if it is the observation `subject` gave last
        (the one a search checks next), else None."""
        last = self._last
        return last[1] if last is not None and last[0] is obs else None

    def probed(self, obs: dict, run, identity: str | None = None) -> dict:
        """`obs` with the probes its run reached (`forge.probes`), under the
        key the searches count (outside the observation's sha256).

        The built-in probes read the run's trace records, its events and
        the faults that fired: a schedule whose `identity` (which covers
        the trace's digest and the events) and faults were probed before
        reaches what it reached then, so that is kept, as `KitChecks` keeps
        problems.  Users' probes, which may keep state, try every schedule."""
        fired = [kind for kind, _ in run.harness.injector.fired] if run.harness.injector else ()
        key = None if identity is None else (identity, tuple(fired))
        found = self._reached.get(key) if key is not None else None
        if found is None:
            found = tuple(sorted(set(probes.hits(run.trace.records, obs, fired))))
            if key is not None:
                if len(self._reached) >= KitChecks.KEPT:
                    del self._reached[next(iter(self._reached))]
                self._reached[key] = found
        return self._probed(obs, found)

    def _probed(self, obs: dict, found: tuple[str, ...]) -> dict:
        """`obs` with the built-in probes `found` and the users' probes it reaches."""
        if not self.probes:
            return {**obs, PROBES: list(found)}     # kept sorted: a list of its own per schedule
        return {**obs, PROBES: sorted({*found, *(p.name for p in self.probes if p(obs))})}


class KitChecks:
    """The kit's checks of a search (`Expectation.kit_checks`) as one check
    whose problems are kept by the schedule's identity: each of them reads
    the observation alone, so a schedule whose observation (the watchers'
    violations included) was checked before gets the same problems without
    running them again.  A search draws the same few observations again and
    again (200 random schedules of a two-task prompt show two).  An
    observation `runner.subject` did not give last (a failure's re-run, a
    shrink's) is checked afresh; the user's checks, which may keep state,
    are never kept."""

    #: Identities whose problems are kept, at most (the oldest goes first).
    KEPT = 4096

    def __init__(self, runner: Runner, checks: list) -> None:
        self.runner = runner
        self.checks = checks
        self.kept: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}

    def __call__(self, obs: dict) -> list[str]:
        identity = self.runner.identity_of(obs)
        if identity is None:
            return self._problems(obs)
        key = (identity, tuple(obs.get(VIOLATIONS) or ()))
        problems = self.kept.get(key)
        if problems is None:
            if len(self.kept) >= self.KEPT:
                del self.kept[next(iter(self.kept))]
            problems = self.kept[key] = tuple(self._problems(obs))
        return list(problems)

    def _problems(self, obs: dict) -> list[str]:
        return [p for check in self.checks for p in check(obs)]


def schedule_identity(obs: dict, run) -> str:
    """What tells the explorer's schedules apart (its count of distinct ones):
    a digest equal for two runs of one spec exactly when their observations
    (`obs`, without what the watchers found) are.

    It is not `forge.run.record.observation_sha256`, the digest of the
    observation's JSON a replay file records: that sorts and writes every
    event's dict, most of a run's observation, where this reads each
    event's few parts off the run (`Observer.raw`: kind, section, task, seq
    and its own fields, from which the event's dict is built) and writes the
    rest of the observation, the trace's digest included, as JSON.  The
    events' heads (strings, integers) are written by `marshal` at version 2,
    which writes values alone (no sharing of equal objects, no interning
    flag), so equal heads give equal bytes; the fields of the few events
    that have any are written as canonical JSON, numbered by their event."""
    rest = canonical_json({k: v for k, v in obs.items() if k != "events"})
    heads: list[tuple] = []
    fields: list[str] = []
    for kind, section, task, seq, more in run.observer.raw:
        if more:
            fields.append(f"{len(heads)}:{canonical_json(more)}")
        heads.append((kind, section, task, seq))
    digest = hashlib.sha256(f"{rest}\n".encode("utf-8"))
    digest.update(marshal.dumps(heads, 2))
    digest.update("\n".join(fields).encode("utf-8"))
    return digest.hexdigest()


def with_violations(obs: dict, run) -> dict:
    """`obs` with what the watchers found during the run, if they found anything
    (a clean run's observation is the engine's, key for key)."""
    return _violated(obs, run.trace.violations)


def _violated(obs: dict, violations: Sequence[Any]) -> dict:
    """`obs` with `violations` (`forge.sim.trace.Violation`s), if there are any."""
    if not violations:
        return obs
    return {**obs, VIOLATIONS: [v.text() for v in violations[:MAX_VIOLATIONS]]}


#: Violations reported per run: the first shows the step; the rest are echoes.
MAX_VIOLATIONS = 10


#: The outcome of a run on which the engine raised: a kit bug.
CRASHED = "crashed"


def crashed(run, crash: BaseException) -> dict:
    """The observation of a run the engine broke on: the trace so far, the exception."""
    return {"outcome": CRASHED, "result": None,
            "error": {"kind": "KitBug", "message": f"{type(crash).__name__}: {crash}"},
            "logs": list(run.logs), "events": list(run.events), "tasks": {}, "messages": [], "rounds": [], "effects": [],
            "store": {}, "virtual_time": run.clock.now / 1e9,
            "trace_sha256": run.trace.sha256()}


def no_crash(obs: dict) -> list[str]:
    if obs.get("outcome") == CRASHED:
        return [f"the engine crashed (a kit bug): {obs['error']['message']}"]
    return []


def with_cancel_instants(spec: RunSpec) -> RunSpec:
    """The spec with the steps a cancel fault may land before: every step of
    the canonical run (at most `MAX_CANCEL_STEPS`), so a host cancel is a
    decision that can fall between any two steps of a schedule.  A plan that
    already names its instants (a replay file from before) keeps them."""
    plan = spec.fault_plan
    if ("cancel" not in plan.kinds or plan.cancel_instants_ns or plan.cancel_steps
            or CANCEL_AT.of(spec) is not None):
        return spec
    quiet = attrs.evolve(spec, fault_plan=FaultPlan())
    steps = Runner(quiet).run(Chooser(Canonical())).scheduler.steps
    return attrs.evolve(spec, fault_plan=attrs.evolve(
        plan, cancel_steps=max(1, min(steps, MAX_CANCEL_STEPS))))


@attrs.frozen
class Expectation:
    """What every schedule must satisfy: the invariants, the canonical ids, a
    result, the canonical observation (`schedule_independent`), and user
    checks named `module:function` (`load_check`)."""

    invariants: bool = True
    same_ids: bool = True
    result: str | None = None
    schedule_independent: bool = False
    checks_named: tuple[str, ...] = ()
    #: How a run may end (`forge.verdict`: by default, ok).
    ending: Verdict = Verdict()

    def to_json(self) -> dict:
        return {"invariants": self.invariants, "same_ids": self.same_ids, "result": self.result,
                "schedule_independent": self.schedule_independent,
                "checks": list(self.checks_named), "ending": self.ending.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> Expectation:
        return cls(data["invariants"], data["same_ids"], data["result"],
                   data.get("schedule_independent", False), tuple(data.get("checks", ())),
                   Verdict.from_json(data.get("ending")))

    def checks(self, canonical: dict, faulty: bool = False, where: str | None = None) -> list:
        """The checks, given the canonical run's observation: the kit's
        (`kit_checks`), then the user's named ones (`where`: as `load_check`)."""
        return self.kit_checks(canonical, faulty) + self.named_checks(where)

    def named_checks(self, where: str | None = None) -> list:
        """The user's checks named `module:function` (`load_check`)."""
        return [load_check(name, where) for name in self.checks_named]

    def kit_checks(self, canonical: dict, faulty: bool = False) -> list:
        """The kit's checks, given the canonical run's observation: each
        reads the observation alone, so equal observations pass or fail
        them alike (`KitChecks`).  Under faults the ids are held only to
        agree where both runs have them: a fault may end the run before a
        task starts."""
        checks = [no_crash, self.ending.check(faulty)] + (
            [*oracles.DEFAULT_CHECKS, oracles.no_violations] if self.invariants else [])
        if self.same_ids:
            checks.append((oracles.consistent_ids if faulty else oracles.same_ids)(canonical))
        if self.result is not None:
            checks.append(result_check(self.result))
        if self.schedule_independent:
            checks.append(oracles.schedule_independent(canonical))
        return checks


#: How a user check is named: `module:function`, as Python spells them.
_CHECK_NAME = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"


def load_check(name: str, where: str | None = None,
               named: Named = NAMED_CHECKS) -> UserCheck:
    """The user check `module:function` as a check (`UserCheck`: the function
    takes the observation's JSON data).

    Raises:
        InputError: naming `where` (a file that holds the name), or else
            carrying `named` (each front end names it: `--check` on the
            command line, `named_checks` in the API), for a name that is
            not `module:function`, a module that does not import, or a
            name that is not callable.
    """
    place = {"file": where} if where is not None else {"option": named}
    if not isinstance(name, str) or not re.fullmatch(_CHECK_NAME, name, re.ASCII):
        raise InputError(f"a check is named module:function, got {str(name)[:80]!r}", **place)
    module_name, _, function = name.partition(":")
    if "" not in sys.path:
        sys.path.insert(0, "")      # a check module beside the prompt, as python -m finds it
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - the user's module: any failure is bad input
        raise InputError(f"cannot import {module_name}: {type(e).__name__}: {e}",
                         **place) from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise InputError(f"{module_name} has no function {function}", **place)
    return UserCheck(fn, name)


def load_probe(name: str, where: str | None = None):
    """The user probe `module:function` (`forge.probes.UserProbe`), loaded
    as `load_check` loads a check.

    Raises:
        InputError: as `load_check`, carrying `NAMED_PROBES` (`--probe`).
    """
    return UserProbe(load_check(name, where, NAMED_PROBES).fn, name)


@attrs.frozen
class UserCheck:
    """A user's oracle as a check over raw observations: the one rule for
    what a check's verdict means, whether it was named `module:function`
    (`load_check`) or handed over as a Python callable (the API's `checks`,
    which `adapt` the observation's data to an `Observation` first).

    The check holds when the function returns None, True or an empty list.
    It fails when it returns False, a string, or a list (any iterable) of
    strings, each a problem; when it raises (an `AssertionError`'s message
    is the problem, any other exception is reported as raised); and when it
    returns anything else, which is named.  Each problem starts `check
    NAME`.  The function gets a copy of the observation's data, its own
    (`forge.watched.own_copy`: schedules share the kit's), or what `adapt`
    makes of it.  Being a plain value, it pickles when `fn` and `adapt` do.
    """

    fn: Any
    name: str
    adapt: Any = None

    def __call__(self, obs: dict) -> list[str]:
        name = self.name
        try:
            return self._problems(self.fn(own_copy(obs) if self.adapt is None
                                          else self.adapt(obs)))
        except AssertionError as e:
            return [f"check {name}: {e}" if str(e) else f"check {name} failed"]
        except Exception as e:  # noqa: BLE001 - a failing oracle is a failed check
            return [f"check {name} raised {type(e).__name__}: {e}"]

    def _problems(self, verdict: Any) -> list[str]:
        name = self.name
        if verdict is None or verdict is True:
            return []
        if verdict is False:
            return [f"check {name} failed"]
        if isinstance(verdict, str):
            return [f"check {name}: {verdict}"]
        if isinstance(verdict, Iterable) and not isinstance(verdict, bytes | Mapping):
            return [f"check {name}: {p}" for p in verdict]
        return [f"check {name} returned {type(verdict).__name__} {str(verdict)[:40]!r}: a "
                "check returns None, True or [] when it holds, and False, a string or a list "
                "of strings when it does not"]
