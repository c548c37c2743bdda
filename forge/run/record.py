"""A prompt run's replay record: what a format-1 replay file says was run, written and read.

The simulator's replay format (`forge.sim.replayfile`) holds the format
number, the kit's version and the choices; the sections beside them are
the run domain's, and live here: the prompt (path, sha256, text), the run
(each plain run option of the options table a row's `recorded` rule lets
in, the seed, the latencies, the refusals), the store's files, the
scripts, the fault plan, the expectation, the recorded trace's and
observation's sha256, and the failure and strategy when there are any; a
record of an engine under test also holds that engine's observation, the
part the spec's equivalence compares (`observation`).

What lives here: the record of a run (`record`), its checks when a file
is read (`RUN_RECORD`, `read_replay`), the run a record holds
(`spec_from_record`), and the provider that replays a record only on the
run it records (`FileReplay`).  What does not: the generic format
(`forge.sim.replayfile`), the run's definition (`forge.run.spec`),
building and running one (`forge.runspec`), replaying and re-checking a
file (`forge.repro`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.errors import InputError
from forge.harness import DEFAULT_LATENCY, FAULT_KINDS, FaultPlan
from forge.limits import MAX_SECONDS
from forge.lua.backstop import BACKSTOP_KIND
from forge.prompt import read_prompt
from forge.run.options import ARGS, FAULT_BUDGET, FAULTS, LATENCY, PLAIN, REFUSE, STORE, Option
from forge.run.spec import RunSpec, Script, text_sha256
from forge.sim.chooser import ReplayProvider
from forge.sim.replayfile import (RecordShape, Reader, ReplayFileError, is_int, is_number,
                                  is_sha256)
from forge.sim.replayfile import read_replay as read_checked
from forge.version import __version__

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.engine import run as engine_run
else:
    engine_run = deferred("forge.engine.run")

#: The largest latency multiplier a record may hold, and the most multipliers.
MAX_MULTIPLIER = 1000.0
MAX_MENU = 64
_I64 = range(-(2**63), 2**63)
#: The run section's keys: every plain option recorded always, the seed and
#: the latencies; and those it may hold.  The latencies and the refusals (and
#: the store's files, a section of their own) are recorded under their rows'
#: names, as the plain options are.
_RUN = (*(o.name for o in PLAIN if o.recorded == "always"), "seed", LATENCY.name)
_RUN_WHEN_SET = tuple(o.name for o in PLAIN if o.recorded == "when_set")
#: The fields of a recorded engine's observation: those the spec's
#: equivalence compares (`forge.conformance.equivalence.FIELDS`).
_OBSERVED = ("outcome", "result", "error", "events", "tasks", "logs", "store", "messages")


def observation_sha256(obs: dict) -> str:
    """The sha256 of the whole observation (`forge run --json`'s bytes): what a
    replay must reproduce.  The trace alone is not enough: it records when
    each store operation completes, not what it answered, so a refused write
    and a written one can leave the same trace."""
    return hashlib.sha256(engine_run.observation_json(obs).encode("utf-8")).hexdigest()


def kit_version() -> str:
    """The kit's name and version, as a record names the kit that wrote it."""
    return f"forge-kit {__version__}"


def failure_section(problems: Iterable[str], outcome: Any, deviations: int,
                    proven_minimal: bool = False, fired: Iterable[Sequence[str]] = ()) -> dict:
    """A record's `failure` section: the problems a run showed, its outcome,
    how many choices left the canonical, whether shrinking proved it
    minimal, and the faults that fired in it (`[kind, where]`)."""
    return {"problems": list(problems), "outcome": outcome, "deviations": deviations,
            "proven_minimal": proven_minimal, "faults": [list(f) for f in fired]}


def record(spec: RunSpec, expect: Any, seed: int, choices, obs: dict, *,
           failure: dict | None = None, strategy: dict | None = None) -> dict:
    """The format-1 replay record (`forge.sim.replayfile`) of one run of `spec`,
    whose observation was `obs`; `expect` is what every schedule must
    satisfy (a `forge.runspec.Expectation`, recorded by its `to_json`).

    Raises:
        InputError: the run ended at the CPU-time backstop (`forge.lua.backstop`):
            where that stops a run depends on the machine, so no replay file
            may claim to reproduce it.
    """
    if (obs.get("error") or {}).get("kind") == BACKSTOP_KIND:
        raise InputError("no replay file written: the run ended at the CPU-time backstop, whose "
                         "ending is not deterministic, so no replay can reproduce it",
                         file="--replay-out")
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


def recorded_options(spec: RunSpec) -> dict:
    """The plain run options a record's `run` section holds: every `always`
    row, and a `when_set` row when it is not its default."""
    return {o.name: getattr(spec, o.name) for o in PLAIN
            if o.recorded == "always" or getattr(spec, o.name) != o.default}


def _run_sections(spec: RunSpec, seed: int) -> dict:
    """The record's sections that define the run of `spec` at `seed`."""
    return {
        "prompt": {"path": spec.prompt_path, "sha256": spec.prompt_sha256,
                   "text": spec.prompt_text},
        "run": {**recorded_options(spec), "seed": seed,
                LATENCY.name: {"base": dict(sorted(spec.latency_base.items())),
                            "menu": list(spec.latency_menu),
                            **({"orders": True} if spec.orders else {}),
                            **({"ties": True} if spec.latency_ties and not spec.orders
                               else {})},
                REFUSE.name: {op: list(paths) for op, paths in sorted(spec.refusals.items())}},
        STORE.name: dict(sorted(spec.store_files.items())),
        "scripts": {name: None if s is None else {"path": s.path, "data": s.data}
                    for name, s in (("model", spec.model), ("operator", spec.operator),
                                    ("tool", spec.tool))},
        FAULTS.name: {"kinds": list(spec.fault_plan.kinds), "budget": spec.fault_plan.budget,
                      "cancel_instants_ns": list(spec.fault_plan.cancel_instants_ns),
                      **({"cancel_steps": spec.fault_plan.cancel_steps}
                         if spec.fault_plan.cancel_steps else {})},
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
            raise InputError("$.run.latency.orders: the file records a run in orders mode, "
                             "whose choices pick completions, not durations: "
                             f"{how}", file=path, kind="replay")
        # No flag sets the tie options: the run takes the file's
        # (`forge.runspec.Runner` reads them from the file).
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
        path, text = prompt, read_prompt(prompt)[1]
        whose = f"the prompt {prompt}"
    else:
        path, text = recorded["path"], recorded["text"]
        whose = "the prompt text in the file"
    sha = text_sha256(text)
    if sha != recorded["sha256"]:
        raise InputError(f"$.prompt.sha256: {whose} has sha256 {sha[:12]}..., the replay was "
                         f"recorded on {recorded['sha256'][:12]}... (the prompt changed since?)",
                         file=source, kind="replay")
    run, faults, scripts = data["run"], data[FAULTS.name], data["scripts"]
    kinds = tuple(faults["kinds"])
    for kind in kinds:
        if kind not in FAULT_KINDS:
            raise InputError(f"$.faults.kinds: unknown fault kind {kind[:40]!r}", file=source,
                             kind="replay")

    def script(name: str) -> Script | None:
        s = scripts.get(name)    # `tool` is absent from files written before tool scripts
        return None if s is None else Script(s["path"], s["data"])

    return RunSpec(prompt_path=path, prompt_sha256=sha, prompt_text=text,
                   store_files=dict(data[STORE.name]), model=script("model"),
                   operator=script("operator"),
                   fault_plan=FaultPlan(kinds, faults["budget"],
                                        tuple(faults["cancel_instants_ns"]),
                                        faults.get("cancel_steps", 0)),
                   latency_base=dict(run[LATENCY.name]["base"]),
                   latency_menu=tuple(run[LATENCY.name]["menu"]), tool=script("tool"),
                   refusals={op: tuple(paths) for op, paths in run.get(REFUSE.name, {}).items()},
                   orders=bool(run[LATENCY.name].get("orders", False)),
                   latency_ties=bool(run[LATENCY.name].get("ties", False)),
                   **{o.name: run.get(o.name, o.default) for o in PLAIN})


def _check_option(r: Reader, option: Option, value: Any, where: str | None = None) -> None:
    """A recorded run option's value, by its row's rule (null where its default is)."""
    rule = option.rule
    fits = (value is None and option.default is None) or (
        rule.accepts(value) and rule.problem(value) is None)
    r.check(fits, where or f"$.run.{option.name}",
            ("null or " if option.default is None else "") + rule.describe())


def _check_sections(r: Reader, data: dict) -> None:
    """The run domain's sections of a format-1 record, refused through `r`."""
    prompt = r.object(data["prompt"], "$.prompt", ("path", "sha256", "text"))
    r.check(isinstance(prompt["path"], str), "$.prompt.path", "the prompt path is a string")
    r.check(isinstance(prompt["text"], str), "$.prompt.text", "the prompt's text is a string")
    r.check(is_sha256(prompt["sha256"]), "$.prompt.sha256", "64 lowercase hex digits")
    run = r.object(data["run"], "$.run", _RUN, optional=(REFUSE.name, *_RUN_WHEN_SET))
    r.check(isinstance(run.get(REFUSE.name, {}), dict)
            and all(isinstance(v, list) and all(isinstance(p, str) for p in v)
                    for v in run.get(REFUSE.name, {}).values()),
            "$.run.refuse", "an object of operation: list of paths")
    for option in PLAIN:
        if option.name in run:
            _check_option(r, option, run[option.name])
    r.check(is_int(run["seed"]) and run["seed"] in _I64, "$.run.seed",
            "the seed is a whole number within 64 bits")
    latency = r.object(run[LATENCY.name], "$.run.latency", ("base", "menu"),
                       optional=("orders", "ties"))
    for flag in ("orders", "ties"):
        r.check(isinstance(latency.get(flag, False), bool), f"$.run.latency.{flag}",
                "true or false")
    base = latency["base"]
    r.check(isinstance(base, dict) and all(isinstance(k, str) and is_number(v)
                                           and 0 <= v <= MAX_SECONDS for k, v in base.items()),
            "$.run.latency.base", f"an object of operation: seconds from 0 to {MAX_SECONDS:g}")
    for op in base:
        # The operations `--latency` takes (`forge.runspec`'s check of the flag).
        r.check(op in DEFAULT_LATENCY, "$.run.latency.base",
                f"unknown operation {op[:40]!r}; the operations are " + ", ".join(DEFAULT_LATENCY))
    r.each(latency["menu"], "$.run.latency.menu",
           f"each multiplier a number from 0 to {MAX_MULTIPLIER:g}",
           lambda m: is_number(m) and 0 <= m <= MAX_MULTIPLIER)
    r.check(1 <= len(latency["menu"]) <= MAX_MENU, "$.run.latency.menu",
            f"from 1 (the canonical multiplier) to {MAX_MENU} multipliers")
    store = data[STORE.name]
    r.check(isinstance(store, dict) and all(isinstance(v, str) for v in store.values()),
            "$.store", "an object of path: file text")
    scripts = r.object(data["scripts"], "$.scripts", ("model", "operator"), optional=("tool",))
    for name in ("model", "operator", "tool"):
        if scripts.get(name) is not None:
            entry = r.object(scripts[name], f"$.scripts.{name}", ("path", "data"))
            r.check(isinstance(entry["path"], str), f"$.scripts.{name}.path", "a string")
    faults = r.object(data[FAULTS.name], "$.faults", ("kinds", "budget", "cancel_instants_ns"),
                      optional=("cancel_steps",))
    r.check(is_int(faults.get("cancel_steps", 0)) and 0 <= faults.get("cancel_steps", 0)
            <= 1_000_000, "$.faults.cancel_steps", "a whole number from 0 to 1000000")
    r.each(faults["kinds"], "$.faults.kinds", "each a fault kind (a string)",
           lambda k: isinstance(k, str))
    _check_option(r, FAULT_BUDGET, faults["budget"], "$.faults.budget")
    r.each(faults["cancel_instants_ns"], "$.faults.cancel_instants_ns",
           "each a whole number of nanoseconds, at most 1e18",
           lambda t: is_int(t) and 0 <= t <= int(MAX_SECONDS) * 1_000_000_000)
    expect = r.object(data["expect"], "$.expect", ("invariants", "same_ids", "result"),
                      optional=("schedule_independent", "checks", "ending"))
    # `$.expect.ending`, how a run may end (`forge.verdict` checks its
    # values); a file from before that rule has none.
    if expect.get("ending") is not None:
        ending = r.object(expect["ending"], "$.expect.ending", ("outcome", "error", "allow_failed"))
        r.check(isinstance(ending["allow_failed"], bool), "$.expect.ending.allow_failed",
                "true or false")
    r.check(isinstance(expect.get("schedule_independent", False), bool),
            "$.expect.schedule_independent", "true or false")
    r.each(expect.get("checks", []), "$.expect.checks", "each a check named module:function",
           lambda c: isinstance(c, str))
    r.check(isinstance(expect["invariants"], bool), "$.expect.invariants", "true or false")
    r.check(isinstance(expect["same_ids"], bool), "$.expect.same_ids", "true or false")
    r.check(expect["result"] is None or isinstance(expect["result"], str), "$.expect.result",
            "null or the expected result string")
    r.check(is_sha256(data["observation_sha256"]), "$.observation_sha256",
            "the recorded run's sha256, 64 lowercase hex digits")
    # An engine under test (`forge explore --impl`) need not report a trace.
    r.check(data["trace_sha256"] is None or is_sha256(data["trace_sha256"]), "$.trace_sha256",
            "null (the engine reported no trace) or the recorded trace's sha256, 64 lowercase "
            "hex digits")
    # An engine under test's observation, its normative part (`forge explore
    # --impl`): what `forge replay` compares the reference's run with.
    observed = data.get("observation")
    if observed is not None:
        r.object(observed, "$.observation", _OBSERVED)
        r.check(data["trace_sha256"] is None, "$.observation",
                "only a record of an engine under test (null trace_sha256) holds one")
    failure = data.get("failure")
    if failure is not None:
        r.object(failure, "$.failure", ("problems",),
                 optional=("outcome", "deviations", "proven_minimal", "faults"))
        r.each(failure["problems"], "$.failure.problems", "each a string",
               lambda p: isinstance(p, str))


def _read_legacy(r: Reader, data: dict) -> dict:
    """The run a legacy replay file (no format number) names beside its
    choices, each key optional: the arguments, the prompt's path, the seed."""
    args = data.get(ARGS.name, "")
    r.check(isinstance(args, str), f"$.{ARGS.name}", "the run's arguments are a string")
    prompt = data.get("prompt")
    r.check(prompt is None or isinstance(prompt, str), "$.prompt", "the prompt path is a string")
    seed = data.get("seed")
    r.check(seed is None or (is_int(seed) and seed in _I64), "$.seed",
            "the seed is a whole number within 64 bits")
    return {ARGS.name: args, "prompt": prompt, "seed": seed}


#: The run domain's sections of a format-1 record, and the run's keys of a
#: legacy file (`forge.sim.replayfile.RecordShape`).
RUN_RECORD = RecordShape(
    keys=("prompt", "run", STORE.name, "scripts", FAULTS.name, "expect", "trace_sha256",
          "observation_sha256"),
    optional=("failure", "strategy", "observation"), check=_check_sections,
    legacy=(ARGS.name, "prompt", "seed"), read_legacy=_read_legacy)


def read_replay(path: str) -> dict:
    """A checked replay file (`forge.sim.replayfile.read_replay`, a format-1
    record's run sections checked by `RUN_RECORD`), refused as an `InputError`."""
    try:
        return read_checked(path, RUN_RECORD)
    except ReplayFileError as e:
        raise InputError(e.detail, file=e.path, line=e.line, kind="replay") from None
