"""A run's whole definition (`RunSpec`), the runs it makes, and its replay record.

A `RunSpec` holds everything but the choice sequence that decides a run:
the prompt (path and sha256), arguments, concurrency, cancel instant,
instruction budget, latencies, the store's files, each script's content (the
model, operator and tool scripts) and the fault plan.  `run`, `explore` and `replay` all build their runs from one
(`spec_from_flags`, `spec_from_record`; the Python API's prompt text and
script data through `spec_from_values`), so `forge explore` seed N and
`forge run --seed N` are the same run, and a replay file (`record`) carries
the whole spec and needs nothing else.

What does not live here: the flags (`forge.commands.params`), the replay file's
syntax (`forge.sim.replayfile`), exploring and replaying (`forge.repro`).  It is
core, below the command line and the API: it imports neither.
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from forge.errors import InputError
from forge.harness import DEFAULT_LATENCY, FAULT_KINDS, LATENCY_MENU, FaultPlan
from forge.sim.chooser import Canonical, Chooser

#: At most this many steps a cancel fault may land before (the first ones of
#: a longer run: a schedule longer than this is cancelled early or not at all).
MAX_CANCEL_STEPS = 1024


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


#: What `--refuse OP[:PATH]` and a case's `refuse` may name besides the store
#: operations: `spawn` (a task's setup) and `*` (every operation).
REFUSE_EXTRA = ("spawn", "*")


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


def read_prompt_text(path: str) -> str:
    """The prompt file's text, read once it parsed (so it is UTF-8 and within the limit)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read prompt file: {getattr(e, 'strerror', None) or e}",
                         file=path) from None


def read_prompt_file(path: str) -> str:
    """The prompt file's text, once it parsed (a bad prompt is refused first)."""
    from forge.assembly import load_prompt

    load_prompt(path)
    return read_prompt_text(path)


def read_script_file(path: str | None) -> Script | None:
    """The script file at `path` (None: no script), its JSON read within the limits."""
    from forge.scripts import read_script_data

    return Script(path, read_script_data(path)) if path else None


def read_store_folder(path: str | None) -> dict:
    """The files of a store folder (None: an empty store), checked as `--store` checks them."""
    from forge.assembly import build_harness

    return build_harness(path).store.snapshot() if path is not None else {}


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
    seed given, else the strategy's own (`pct:N:...` is explore's seed N),
    else 0.

    Raises:
        InputError: an unknown strategy spelling (`forge.assembly.make_chooser`).
    """
    from forge.assembly import make_chooser

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
                                               spec.orders),
                          ceiling=spec.concurrency, cancel_at=spec.cancel_at,
                          model=self.model, operator=self.operator, tool=self.tool,
                          refuse={op: tuple(paths) for op, paths in spec.refuse.items()})
        harness.attach_faults(spec.faults, chooser)
        config = RunConfig(args=spec.args, seed=chooser.seed,
                           max_instructions=spec.max_instructions or DEFAULT_MAX_INSTRUCTIONS)
        return harness, config

    def run(self, chooser: Chooser):
        """The finished `forge.engine.run.Run` (its seed is `chooser.seed`)."""
        from forge.engine import run as engine

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


def load_check(name: str, where: str = "--check"):
    """The user check `module:function` as a check: the function takes an
    observation and returns its problems - None, True or an empty list when
    it holds; a string, a list of strings or False when it does not.  A
    check that raises reports that as its problem.

    Raises:
        InputError: naming `where`, for a name that is not `module:function`,
            a module that does not import, or a name that is not callable.
    """
    import importlib
    import re
    import sys

    if not re.fullmatch(_CHECK_NAME, name, re.ASCII):
        raise InputError(f"a check is named module:function, got {name[:80]!r}", file=where)
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

    def check(obs: dict) -> list[str]:
        try:
            verdict = fn(obs)
        except Exception as e:  # noqa: BLE001 - a failing oracle is a failed check
            return [f"check {name} raised {type(e).__name__}: {e}"]
        if verdict is None or verdict is True:
            return []
        if verdict is False:
            return [f"check {name} failed"]
        if isinstance(verdict, str):
            return [f"check {name}: {verdict}"]
        return [f"check {name}: {p}" for p in verdict]

    return check


def kit_version() -> str:
    from forge.version import __version__

    return f"forge-kit {__version__}"


def record(spec: RunSpec, expect: Expectation, seed: int, choices, obs: dict, *,
           failure: dict | None = None, strategy: dict | None = None) -> dict:
    """The format-1 replay record (`forge.sim.replayfile`) of one run of `spec`,
    whose observation was `obs`."""
    out = {
        "kit": kit_version(),
        "prompt": {"path": spec.prompt_path, "sha256": spec.prompt_sha256,
                   "text": spec.prompt_text},
        "run": {"args": spec.args, "seed": seed, "concurrency": spec.concurrency,
                "cancel_at": spec.cancel_at, "max_instructions": spec.max_instructions,
                "latency": {"base": dict(sorted(spec.latency_base.items())),
                            "menu": list(spec.latency_menu),
                            **({"orders": True} if spec.orders else {})},
                "refuse": {op: list(paths) for op, paths in sorted(spec.refuse.items())}},
        "store": dict(sorted(spec.store_files.items())),
        "scripts": {name: None if s is None else {"path": s.path, "data": s.data}
                    for name, s in (("model", spec.model), ("operator", spec.operator),
                                    ("tool", spec.tool))},
        "faults": {"kinds": list(spec.faults.kinds), "budget": spec.faults.budget,
                   "cancel_instants_ns": list(spec.faults.cancel_instants_ns),
                   **({"cancel_steps": spec.faults.cancel_steps}
                      if spec.faults.cancel_steps else {})},
        "expect": expect.to_json(),
        "trace_sha256": obs["trace_sha256"],
        "observation_sha256": observation_sha256(obs),
        "choices": [[c.kind, c.n, c.value] for c in choices],
    }
    if failure is not None:
        out["failure"] = failure
    if strategy is not None:
        out["strategy"] = strategy
    return out


def spec_from_record(data: dict, source: str, prompt: str | None = None) -> RunSpec:
    """The spec a format-1 record holds.  The prompt is the recorded text, or
    the file `prompt` when given; either must hash to the recorded sha256.

    Raises:
        InputError: naming the replay file, for a prompt that does not match.
    """
    from forge.assembly import load_prompt

    recorded = data["prompt"]
    if prompt is not None:
        load_prompt(prompt)
        path, text = prompt, read_prompt_text(prompt)
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
                   bool(run["latency"].get("orders", False)))
