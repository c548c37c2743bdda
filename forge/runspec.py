"""A run's whole definition (`RunSpec`), the runs it makes, and its replay record.

A `RunSpec` holds everything but the choice sequence that decides a run:
the prompt (path and sha256), arguments, concurrency, cancel instant,
instruction budget, latencies, the store's files, each script's content (the
model, operator and tool scripts) and the fault plan.  `run`, `explore` and `replay` all build their runs from one
(`spec_from_flags`, `spec_from_record`; the Python API's prompt text and
script data through `spec_from_values`), so `forge explore` seed N and
`forge run --seed N` are the same run, and a replay file (`record`) carries
the whole spec and needs nothing else; `forge run --strategy replay:FILE`
(`FileReplay`) refuses to run a spec the file does not record.  User checks
hold and fail by one rule (`UserCheck`), named or handed over as callables.

It also holds the rule of every value the command line and the Python API
both take (`RULES`: a seed, the concurrency, the cancel instant, the
instruction budget, the fault budget, the runs, the PCT depth, the
deviation bound, the workers, a timeout): its Python type and its bounds,
worded once.  `forge.commands.params` wraps a rule in a click type (the
flag's text converted first); `forge.api` and its pytest plugin apply it
to a keyword's value (`check_value`).  A refusal reads the same both ways,
the flag or the keyword naming it (`--seed must be at most ...`, `seed
must be at most ...`).

What does not live here: the flags (`forge.commands.params`), the replay file's
syntax (`forge.sim.replayfile`), exploring and replaying (`forge.repro`).  It is
core, below the command line and the API: it imports neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from forge.assembly import MAX_PCT_DEPTH
from forge.errors import InputError
from forge.harness import DEFAULT_LATENCY, FAULT_KINDS, LATENCY_MENU, FaultPlan
from forge.limits import I64_MAX, I64_MIN, MAX_SECONDS
from forge.sim.chooser import Canonical, Chooser, ReplayProvider

#: At most this many steps a cancel fault may land before (the first ones of
#: a longer run: a schedule longer than this is cancelled early or not at all).
MAX_CANCEL_STEPS = 1024


# -- the values a run, a search and a suite take ---------------------------------------------

#: The most schedules one exploration tries (each is a whole run), and the
#: most runs shrinking a failure may take.
MAX_RUNS = 10_000_000
#: The most worker processes one exploration or one conformance run starts.
MAX_WORKERS = 256
#: The longest wall-clock timeout an implementation gets per answer (one day).
MAX_TIMEOUT = 86400.0
#: The most tasks a harness lets run at once, and the most faults one run draws.
MAX_CONCURRENCY = MAX_FAULT_BUDGET = 1_000_000
#: The smallest instruction budget a run may be given, and the widest bound
#: on an exhaustive walk's deviations.
MIN_INSTRUCTIONS, MAX_DEVIATIONS = 1000, 1_000_000
#: How schedules are drawn in an exploration.
EXPLORE_STRATEGIES = ("random", "pct", "exhaustive")


def shown(value: Any, limit: int = 60) -> str:
    """A refused value as a refusal shows it: its Python type and its repr,
    cut at `limit` characters."""
    if value is None:
        return "None"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's object whose repr breaks is still named
        text = "..."
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(value).__name__} {text}"


def _brief_text(value: Any) -> str:
    text = repr(str(value))
    return text if len(text) <= 60 else text[:57] + "...'"


@attrs.frozen
class Whole:
    """A whole number in [low, high]: a 64-bit integer unless narrower."""

    low: int = I64_MIN
    high: int = I64_MAX
    kind = "a whole number (an int)"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def problem(self, number: int) -> str | None:
        if number < self.low:
            return f"must be at least {self.low}, got {number}"
        if number > self.high:
            return f"must be at most {self.high}, got {number}"
        return None


@attrs.frozen
class Seconds:
    """A finite number of seconds in [0, high] (`positive`: above 0)."""

    high: float = MAX_SECONDS
    positive: bool = False
    kind = "a number of seconds (an int or a float)"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    def problem(self, number: float) -> str | None:
        import math

        if not math.isfinite(number):
            return f"must be a finite number of seconds, got {_brief_text(number)}"
        if self.positive and number <= 0:
            return f"must be a positive number of seconds, got {number:g}"
        if number < 0:
            return f"must be a non-negative number of seconds, got {number:g}"
        if number > self.high:
            return f"must be at most {self.high:g} seconds, got {number:g}"
        return None


@attrs.frozen
class Text:
    """A string that is valid Unicode (no lone surrogates, which a command
    line in another encoding brings, and no run can carry)."""

    kind = "a string"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, text: str) -> str | None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"must be valid UTF-8 text (a stray byte at character {e.start})"
        return None


@attrs.frozen
class Choice:
    """One of a few names."""

    choices: tuple[str, ...]
    kind = "a string"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, name: str) -> str | None:
        if name in self.choices:
            return None
        return f"must be one of {', '.join(self.choices)}, got {_brief_text(name)}"


@attrs.frozen
class Switch:
    """True or False."""

    kind = "True or False"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def problem(self, value: bool) -> str | None:
        return None


@attrs.frozen
class FilePath:
    """A path the OS can look up (a file's or a folder's; whether it is
    there is for its reader to say)."""

    kind = "a path (a str or an os.PathLike)"

    def accepts(self, value: Any) -> bool:
        import os

        return isinstance(value, str | os.PathLike)

    def problem(self, value: Any) -> str | None:
        import os

        path = os.fsdecode(os.fspath(value))
        problem = path_problem(path)
        return None if problem is None else f"cannot read {_brief_text(path)}: {problem}"


def path_problem(path: str) -> str | None:
    """Why the OS cannot look `path` up at all (None if it can)."""
    import os

    if not path or "\0" in path:
        return "not a usable path"
    try:
        if len(os.fsencode(path)) > 4096:
            return "the path is longer than 4096 bytes"
    except UnicodeEncodeError:
        return "not a usable path"
    return None


@attrs.frozen
class Pattern:
    """A `-k` selection pattern: a regular expression within
    `forge.limits.compile_pattern`'s rule."""

    kind = "a regular expression (a str)"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, value: str) -> str | None:
        from forge.limits import compile_pattern

        try:
            compile_pattern(value)
        except ValueError as e:
            return str(e)
        return None


Rule = Whole | Seconds | Text | Choice | Switch | FilePath | Pattern

#: The rule of each value the flags and the API both take, by the API's name
#: for it (the flag is the name in kebab case: `--max-instructions`).
RULES: dict[str, Rule] = {
    "seed": Whole(), "start_seed": Whole(),
    "concurrency": Whole(1, MAX_CONCURRENCY), "cancel_at": Seconds(),
    "max_instructions": Whole(MIN_INSTRUCTIONS), "fault_budget": Whole(0, MAX_FAULT_BUDGET),
    "runs": Whole(1, MAX_RUNS), "shrink_budget": Whole(0, MAX_RUNS),
    "pct_depth": Whole(1, MAX_PCT_DEPTH), "max_deviations": Whole(0, MAX_DEVIATIONS),
    "workers": Whole(1, MAX_WORKERS), "timeout": Seconds(MAX_TIMEOUT, positive=True),
    "strategy": Choice(EXPLORE_STRATEGIES),
}


def check_value(rule: Rule, value: Any, name: str, where: str | None = None) -> Any:
    """`value`, given to the Python API as `name`, checked by `rule`: its
    Python type first (the API converts no text: `"5"` is not a whole
    number there), then the rule.  Returns `value`.

    Raises:
        InputError: naming `where` (the function) and `name`, worded as the
            command line words the same refusal with `name` for the flag.
    """
    if not rule.accepts(value):
        raise InputError(f"{name} must be {rule.kind}, got {shown(value)}", file=where)
    problem = rule.problem(value)
    if problem is not None:
        raise InputError(f"{name} {problem}", file=where)
    return value


@attrs.frozen
class Script:
    """A script's path (for messages) and its decoded JSON content."""

    path: str
    data: Any = attrs.field(eq=False)


@attrs.frozen
class RunSpec:
    prompt_path: str
    prompt_sha256: str
    #: The prompt's text (what the sha256 is of), so a run needs no file.
    prompt_text: str = attrs.field(eq=False, repr=False)
    args: str = ""
    concurrency: int = 8
    cancel_at: float | None = None
    max_instructions: int | None = None
    store_files: dict = attrs.field(factory=dict)
    model: Script | None = None
    operator: Script | None = None
    faults: FaultPlan = FaultPlan()
    latency_base: dict = attrs.field(factory=lambda: dict(DEFAULT_LATENCY))
    latency_menu: tuple[float, ...] = LATENCY_MENU
    #: The tool script (`forge.toolscript`): the run's tool catalogue.
    tool: Script | None = None
    #: Store operations the host refuses: operation (or `*`) -> paths (or `*`).
    refuse: dict = attrs.field(factory=dict)
    #: Orders mode (`forge.sim.orders`): durations stay canonical and the
    #: chooser picks which completion fires next (exhaustive search's mode).
    orders: bool = False
    #: Tie-seeking durations (`forge.harness.LatencyModel.ties`); off for a
    #: replay file written before them, which does not say `ties`.
    latency_ties: bool = True


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
        raise InputError(f"must be OP or OP:PATH, got {show}", file="--refuse")
    return op, path or "*"


def parse_refuse(pairs) -> dict:
    """`--refuse OP[:PATH]` values as operation -> paths (`*` when no path).

    Raises:
        InputError: naming `--refuse`, for an operation the store does not have.
    """
    from forge.engine.host import STORE_OPS

    out: dict[str, tuple[str, ...]] = {}
    for op, path in pairs:
        if op not in STORE_OPS + REFUSE_EXTRA:
            raise InputError(f"unknown operation {op[:40]!r}; the operations are "
                             + ", ".join(STORE_OPS + REFUSE_EXTRA), file="--refuse")
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
                             + ",".join(FAULT_KINDS), file="--faults")
    if len(set(kinds)) != len(kinds):
        raise InputError("a fault kind is named twice", file="--faults")
    return FaultPlan(tuple(k for k in FAULT_KINDS if k in kinds), budget)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_prompt_file(path: str) -> str:
    """The prompt file's text, once it parsed (a bad prompt is refused first);
    read once, so a pipe serves."""
    from forge.assembly import read_prompt

    return read_prompt(path)[1]


def read_script_file(path: str | None) -> Script | None:
    """The script file at `path` (None: no script), its JSON read within the limits."""
    from forge.scripts import read_script_data

    return Script(path, read_script_data(path)) if path else None


def read_store_folder(path: str | None) -> dict:
    """The files of a store folder (None: an empty store), checked as `--store` checks them.

    Raises:
        InputError: naming `--store`, for a folder that is not there (an
            empty store would hide the mistake); else naming the folder.
    """
    import os

    from forge.assembly import build_harness

    if path is None:
        return {}
    if not os.path.isdir(path):
        what = "is a file" if os.path.exists(path) else "does not exist"
        raise InputError(f"Directory {path!r} {what}.", file="--store")
    return build_harness(path).store.snapshot()


def spec_from_flags(prompt: str, *, args: str = "", store_dir: str | None = None,
                    concurrency: int = 8, model_script: str | None = None,
                    operator_script: str | None = None, cancel_at: float | None = None,
                    max_instructions: int | None = None, faults: str | None = None,
                    fault_budget: int = 1, tool_script: str | None = None,
                    latency=(), refuse=()) -> RunSpec:
    """The spec the harness flags describe; files are read (and checked) now.

    Raises:
        InputError, PromptError: an unreadable or invalid prompt, folder or script.
    """
    text = read_prompt_file(prompt)   # refuse a bad prompt before anything else
    return spec_from_values(prompt, text, args=args, store_files=read_store_folder(store_dir),
                            concurrency=concurrency, model=read_script_file(model_script),
                            operator=read_script_file(operator_script), cancel_at=cancel_at,
                            max_instructions=max_instructions, faults=faults,
                            fault_budget=fault_budget, tool=read_script_file(tool_script),
                            latency_base=dict(latency), refuse=parse_refuse(refuse))


def spec_from_values(prompt_path: str, prompt_text: str, *, args: str = "",
                     store_files: dict | None = None, concurrency: int = 8,
                     model: Script | None = None, operator: Script | None = None,
                     cancel_at: float | None = None, max_instructions: int | None = None,
                     faults: str | None = None, fault_budget: int = 1,
                     latency_base: dict | None = None,
                     latency_menu: tuple[float, ...] | None = None,
                     tool: Script | None = None, refuse: dict | None = None) -> RunSpec:
    """The spec of a prompt's text and scripts and store given as data: the
    Python API's way in, and `spec_from_flags`'s once it read the files.
    `latency_base` overrides some operations' base seconds; `latency_menu`
    replaces the multipliers a schedule may pick (the first is canonical).

    Raises:
        InputError: an invalid latency or fault list (the prompt and the
            scripts are checked when a `Runner` parses them).
    """
    base = {**DEFAULT_LATENCY, **(latency_base or {})}
    menu = LATENCY_MENU if latency_menu is None else tuple(latency_menu)
    _check_latency(base, menu)
    spec = RunSpec(prompt_path, text_sha256(prompt_text), prompt_text, args, concurrency,
                   cancel_at, max_instructions, dict(store_files or {}), model, operator,
                   parse_faults(faults, fault_budget), base, menu, tool, dict(refuse or {}))
    return with_cancel_instants(spec)


def _check_latency(base: dict, menu: tuple[float, ...]) -> None:
    import math

    from forge.limits import MAX_SECONDS

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
    seed given, else the strategy's own (`pct:N:...` is explore's seed N, a
    format-1 replay file's is the seed it records), else 0.  A format-1
    file's chooser (`FileReplay`) makes `Runner.run` refuse a run the file
    does not record.

    Raises:
        InputError: an unknown strategy spelling (`forge.assembly.make_chooser`),
            or an unusable replay file.
    """
    from forge.assembly import make_chooser, read_replay

    name, _, path = (strategy or "").partition(":")
    if name == "replay" and path:
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


class Runner:
    """One spec, parsed once (prompt and scripts), run under many choosers."""

    def __init__(self, spec: RunSpec) -> None:
        from forge.prompt import parse_prompt
        from forge.scripts import model_script_from_data, operator_script_from_data
        from forge.toolscript import tool_script_from_data

        self.spec = spec
        self.prompt = parse_prompt(spec.prompt_text, spec.prompt_path)
        self.model = model_script_from_data(spec.model.data, spec.model.path) \
            if spec.model else None
        self.operator = operator_script_from_data(spec.operator.data, spec.operator.path) \
            if spec.operator else None
        self.tool = tool_script_from_data(spec.tool.data, spec.tool.path) if spec.tool else None

    def _harness(self, chooser: Chooser):
        from forge.engine.run import RunConfig
        from forge.harness import Harness, LatencyModel
        from forge.lua.runtime import DEFAULT_MAX_INSTRUCTIONS
        from forge.store import MemoryStore

        spec = self.spec
        harness = Harness(store=MemoryStore(spec.store_files),
                          latency=LatencyModel(dict(spec.latency_base), spec.latency_menu,
                                               spec.orders, _ties(spec, chooser)),
                          ceiling=spec.concurrency, cancel_at=spec.cancel_at,
                          model=self.model, operator=self.operator, tool=self.tool,
                          refuse={op: tuple(paths) for op, paths in spec.refuse.items()})
        harness.attach_faults(spec.faults, chooser)
        config = RunConfig(args=spec.args, seed=chooser.seed,
                           max_instructions=spec.max_instructions or DEFAULT_MAX_INSTRUCTIONS)
        return harness, config

    def run(self, chooser: Chooser):
        """The finished `forge.engine.run.Run` (its seed is `chooser.seed`).

        Raises:
            InputError: `chooser` replays a file that records another run
                (`FileReplay.check`).
        """
        from forge.engine import run as engine

        if isinstance(chooser.provider, FileReplay):
            chooser.provider.check(self.spec, chooser.seed)
        return engine.run_prompt(self.prompt, *self._with(chooser))

    def _with(self, chooser: Chooser):
        harness, config = self._harness(chooser)
        return harness, chooser, config

    def attempt(self, chooser: Chooser):
        """`(run, None)`, or `(run, exception)` when the engine itself broke:
        exploring keeps such a schedule, since a kit bug deserves a repro too."""
        from forge.engine.run import Run

        from forge.conformance import oracles

        run = Run(self.prompt, *self._with(chooser))
        # The invariants that hold at every step are checked as the run goes,
        # so a violation names the step that broke it (`no_violations`).
        run.trace.observe(oracles.watchers(run))
        if run.harness.faults is not None:
            run.harness.faults.trace = run.trace     # where each fault fell, for the story
        try:
            run.execute()
        except Exception as e:  # noqa: BLE001 - an engine bug, reported as the run's outcome
            return run, e
        return run, None

    def subject(self, chooser: Chooser) -> tuple[dict, str]:
        """`forge.sim.explore`'s subject: the observation and the trace's sha256.  A
        run the engine broke on is the outcome `crashed` (see `crashed`)."""
        run, crash = self.attempt(chooser)
        obs = crashed(run, crash) if crash is not None else run.observation()
        return with_violations(obs, run), observation_sha256(obs)


def with_violations(obs: dict, run) -> dict:
    """`obs` with what the watchers found during the run, if they found anything
    (a clean run's observation is the engine's, key for key)."""
    from forge.conformance.oracles import VIOLATIONS

    if not run.trace.violations:
        return obs
    return {**obs, VIOLATIONS: [v.text() for v in run.trace.violations[:MAX_VIOLATIONS]]}


#: Violations reported per run: the first shows the step; the rest are echoes.
MAX_VIOLATIONS = 10


def observation_sha256(obs: dict) -> str:
    """The sha256 of the whole observation (`forge run --json`'s bytes): what a
    replay must reproduce.  The trace alone is not enough: it records when
    each store operation completes, not what it answered, so a refused write
    and a written one can leave the same trace."""
    from forge.engine.run import observation_json

    return hashlib.sha256(observation_json(obs).encode("utf-8")).hexdigest()


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
    plan = spec.faults
    if ("cancel" not in plan.kinds or plan.cancel_instants_ns or plan.cancel_steps
            or spec.cancel_at is not None):
        return spec
    quiet = attrs.evolve(spec, faults=FaultPlan())
    steps = Runner(quiet).run(Chooser(Canonical())).scheduler.steps
    return attrs.evolve(spec, faults=attrs.evolve(
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

    def to_json(self) -> dict:
        return {"invariants": self.invariants, "same_ids": self.same_ids, "result": self.result,
                "schedule_independent": self.schedule_independent,
                "checks": list(self.checks_named)}

    @classmethod
    def from_json(cls, data: dict) -> Expectation:
        return cls(data["invariants"], data["same_ids"], data["result"],
                   data.get("schedule_independent", False), tuple(data.get("checks", ())))

    def checks(self, canonical: dict, faulty: bool = False, where: str = "--check") -> list:
        """The checks, given the canonical run's observation.  Under faults the
        ids are held only to agree where both runs have them: a fault may end
        the run before a task starts."""
        from forge.conformance import oracles

        checks = [no_crash] + ([*oracles.DEFAULT_CHECKS, oracles.no_violations]
                               if self.invariants else [])
        if self.same_ids:
            checks.append((oracles.consistent_ids if faulty else oracles.same_ids)(canonical))
        if self.result is not None:
            expected = self.result
            checks.append(lambda obs: [] if obs.get("result") == expected else
                          [f"result {obs.get('result')!r} != {expected!r}"])
        if self.schedule_independent:
            checks.append(oracles.schedule_independent(canonical))
        checks.extend(load_check(name, where) for name in self.checks_named)
        return checks


#: How a user check is named: `module:function`, as Python spells them.
_CHECK_NAME = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"


def load_check(name: str, where: str = "--check") -> UserCheck:
    """The user check `module:function` as a check (`UserCheck`: the function
    takes the observation's JSON data).

    Raises:
        InputError: naming `where`, for a name that is not `module:function`,
            a module that does not import, or a name that is not callable.
    """
    import importlib
    import re
    import sys

    if not isinstance(name, str) or not re.fullmatch(_CHECK_NAME, name, re.ASCII):
        raise InputError(f"a check is named module:function, got {str(name)[:80]!r}", file=where)
    module_name, _, function = name.partition(":")
    if "" not in sys.path:
        sys.path.insert(0, "")      # a check module beside the prompt, as python -m finds it
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - the user's module: any failure is bad input
        raise InputError(f"cannot import {module_name}: {type(e).__name__}: {e}",
                         file=where) from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise InputError(f"{module_name} has no function {function}", file=where)
    return UserCheck(fn, name)


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
    NAME`.  Being a plain value, it pickles when `fn` and `adapt` do.
    """

    fn: Any
    name: str
    adapt: Any = None

    def __call__(self, obs: dict) -> list[str]:
        name = self.name
        try:
            return self._problems(self.fn(obs if self.adapt is None else self.adapt(obs)))
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


def kit_version() -> str:
    from forge.version import __version__

    return f"forge-kit {__version__}"


def record(spec: RunSpec, expect: Expectation, seed: int, choices, obs: dict, *,
           failure: dict | None = None, strategy: dict | None = None) -> dict:
    """The format-1 replay record (`forge.sim.replayfile`) of one run of `spec`,
    whose observation was `obs`."""
    out = {
        "kit": kit_version(),
        **_run_sections(spec, seed),
        "expect": expect.to_json(),
        # None (null) when the engine reported no trace (an engine under test).
        "trace_sha256": obs.get("trace_sha256") or None,
        "observation_sha256": observation_sha256(obs),
        "choices": [[c.kind, c.n, c.value] for c in choices],
    }
    if failure is not None:
        out["failure"] = failure
    if strategy is not None:
        out["strategy"] = strategy
    return out


def _ties(spec: RunSpec, chooser: Chooser) -> bool:
    """Whether durations offer tie options: as the replayed file's run did
    (no flag sets them; a file from before them says nothing), else as the
    spec says."""
    if isinstance(chooser.provider, FileReplay):
        return bool(chooser.provider.record["run"]["latency"].get("ties", False))
    return spec.latency_ties


def _run_sections(spec: RunSpec, seed: int) -> dict:
    """The record's sections that define the run of `spec` at `seed`."""
    return {
        "prompt": {"path": spec.prompt_path, "sha256": spec.prompt_sha256,
                   "text": spec.prompt_text},
        "run": {"args": spec.args, "seed": seed, "concurrency": spec.concurrency,
                "cancel_at": spec.cancel_at, "max_instructions": spec.max_instructions,
                "latency": {"base": dict(sorted(spec.latency_base.items())),
                            "menu": list(spec.latency_menu),
                            **({"orders": True} if spec.orders else {}),
                            **({"ties": True} if spec.latency_ties and not spec.orders
                               else {})},
                "refuse": {op: list(paths) for op, paths in sorted(spec.refuse.items())}},
        "store": dict(sorted(spec.store_files.items())),
        "scripts": {name: None if s is None else {"path": s.path, "data": s.data}
                    for name, s in (("model", spec.model), ("operator", spec.operator),
                                    ("tool", spec.tool))},
        "faults": {"kinds": list(spec.faults.kinds), "budget": spec.faults.budget,
                   "cancel_instants_ns": list(spec.faults.cancel_instants_ns),
                   **({"cancel_steps": spec.faults.cancel_steps}
                      if spec.faults.cancel_steps else {})},
    }


class FileReplay(ReplayProvider):
    """`forge run --strategy replay:FILE` of a format-1 file: the file's choice
    values as a prefix (`ReplayProvider`), and the run the file records,
    which a run under them must be (`Runner.run` calls `check`)."""

    def __init__(self, path: str, rec: dict, choices: list[int]) -> None:
        super().__init__(choices)
        self.path, self.record = path, rec

    def check(self, spec: RunSpec, seed: int) -> None:
        """Refuse to run `spec` at `seed` under these choices unless the file
        records that very run: the choices of another prompt, other flags
        or another mode would silently make another run.

        Raises:
            InputError: naming the file and the first field that differs.
        """
        path, rec = self.path, self.record
        how = f"replay the run it records with `forge replay {path}`"
        if rec["prompt"]["sha256"] != spec.prompt_sha256:
            raise InputError(f"$.prompt.sha256: the file records a run of another prompt "
                             f"(sha256 {rec['prompt']['sha256'][:12]}...) than "
                             f"{spec.prompt_path} (sha256 {spec.prompt_sha256[:12]}...)",
                             file=path, kind="replay")
        recorded = spec_from_record(rec, path)
        if recorded.orders != spec.orders:
            raise InputError("$.run.latency.orders: the file records a run in orders mode "
                             "(exhaustive search), whose choices pick completions, not "
                             f"durations: {how}", file=path, kind="replay")
        # No flag sets the tie options: the run takes the file's (`_ties`).
        spec = attrs.evolve(spec, latency_ties=recorded.latency_ties)
        differs = _first_difference(_comparable(recorded, rec["run"]["seed"]),
                                    _comparable(spec, seed))
        if differs is not None:
            where, theirs, ours = differs
            raise InputError(f"{where}: the file records {_brief(theirs)}, this run has "
                             f"{_brief(ours)}; give the recorded flags (and seed), or {how}",
                             file=path, kind="replay")


def _comparable(spec: RunSpec, seed: int) -> dict:
    """What two runs must share for one's choices to replay the other: the
    run's sections but the prompt (compared by hash) and where scripts were
    read from."""
    sections = _run_sections(spec, seed)
    del sections["prompt"]
    sections["scripts"] = {name: None if s is None else s["data"]
                           for name, s in sections["scripts"].items()}
    return sections


def _first_difference(a: Any, b: Any, where: str = "$") -> tuple[str, Any, Any] | None:
    """The first place (a JSON path, keys in sorted order) where `a` and `b` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key}", a.get(key), b.get(key)
            found = _first_difference(a[key], b[key], f"{where}.{key}")
            if found is not None:
                return found
        return None
    return None if a == b else (where, a, b)


def _brief(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def spec_from_record(data: dict, source: str, prompt: str | None = None) -> RunSpec:
    """The spec a format-1 record holds.  The prompt is the recorded text, or
    the file `prompt` when given; either must hash to the recorded sha256.

    Raises:
        InputError: naming the replay file, for a prompt that does not match.
    """
    recorded = data["prompt"]
    if prompt is not None:
        path, text = prompt, read_prompt_file(prompt)
        whose = f"the prompt {prompt}"
    else:
        path, text = recorded["path"], recorded["text"]
        whose = "the prompt text in the file"
    sha = text_sha256(text)
    if sha != recorded["sha256"]:
        raise InputError(f"$.prompt.sha256: {whose} has sha256 {sha[:12]}..., the replay was "
                         f"recorded on {recorded['sha256'][:12]}... (the prompt changed since?)",
                         file=source, kind="replay")
    run, faults, scripts = data["run"], data["faults"], data["scripts"]
    kinds = tuple(faults["kinds"])
    for kind in kinds:
        if kind not in FAULT_KINDS:
            raise InputError(f"$.faults.kinds: unknown fault kind {kind[:40]!r}", file=source,
                             kind="replay")

    def script(name: str) -> Script | None:
        s = scripts.get(name)    # `tool` is absent from files written before tool scripts
        return None if s is None else Script(s["path"], s["data"])

    return RunSpec(path, sha, text, run["args"], run["concurrency"], run["cancel_at"],
                   run["max_instructions"], dict(data["store"]), script("model"),
                   script("operator"),
                   FaultPlan(kinds, faults["budget"], tuple(faults["cancel_instants_ns"]),
                             faults.get("cancel_steps", 0)),
                   dict(run["latency"]["base"]), tuple(run["latency"]["menu"]), script("tool"),
                   {op: tuple(paths) for op, paths in run.get("refuse", {}).items()},
                   bool(run["latency"].get("orders", False)),
                   bool(run["latency"].get("ties", False)))
