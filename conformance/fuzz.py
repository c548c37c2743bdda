"""Differential fuzzing: random task programs on the reference and on an
implementation, under one schedule, until their observations differ.

`fuzz` draws programs (`programs.programs`) and schedules (a list of answers to
the run's real decisions, `forge.sim.hypothesis.ListProvider`) with
Hypothesis, seeded, so `--fuzz N --seed S` is the same N programs on every
machine.  Each program runs on the reference in this process and on the
implementation through level 2 of the protocol with the same answers; the
first pair of observations that differ by the spec's equivalence
(`equivalence`: what is implementation-defined is never compared, and a
known-differences file mutes what a porter accepts) is shrunk by Hypothesis - program and schedule together,
towards fewer tasks and the canonical schedule - and written as a case
file (`case_text`).  The features the implementation's hello declares
are honoured: an engine without `models` gets no model programs.

Hypothesis is a test extra: it is imported when a fuzz run starts, and
without it the command says so (`programs`).  What does not live here: the
programs (`programs`), the pipe (`adapters`, `level2`), the flags (`cli`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from forge.conformance.adapters import AdapterError, SubprocessAdapter, reference_observation
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.equivalence import KnownDifferences
from forge.conformance.equivalence import differences as equivalence_differences
from forge.conformance.features import needs
from forge.deferred import deferred
from forge.run.options import MODEL_SCRIPT
from forge.sim.chooser import Chooser

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import programs
    from forge.sim import hypothesis as sim_hypothesis
else:
    programs = deferred("forge.conformance.programs")
    sim_hypothesis = deferred("forge.sim.hypothesis")

#: The longest answer list a schedule draws (decisions past it are canonical).
MAX_ANSWERS = 64
#: How the fuzzed runs are named over the pipe.
CASE_ID = "fuzz/program"


@attrs.frozen
class Difference:
    program: str
    #: The answers to the run's real decisions (every later one is canonical).
    answers: tuple[int, ...]
    reference: dict = attrs.field(eq=False)
    implementation: dict | None = attrs.field(eq=False)
    #: What differs, one line a field.
    fields: tuple[str, ...] = ()
    #: The model script's data the program ran with, if it has model rounds.
    model: dict | None = None
    #: The reference's observation on the canonical schedule, when the
    #: difference shows only on another one (a case file cannot pin a schedule).
    canonical: dict | None = attrs.field(default=None, eq=False)


@attrs.frozen
class FuzzReport:
    #: Programs run on both engines (the shrinker's runs counted apart).
    programs: int
    #: Runs made while shrinking the first difference.
    shrink_runs: int
    seconds: float
    difference: Difference | None = None

    @property
    def seconds_per_program(self) -> float:
        runs = self.programs + self.shrink_runs
        return self.seconds / runs if runs else 0.0


def differences(reference: dict, implementation: dict,
                known: KnownDifferences = KnownDifferences()) -> list[str]:
    """`where: reference ... != implementation ...` for each normative
    difference (`equivalence.compare`) that `known` does not mute."""
    return [d.line() for d in equivalence_differences(reference, implementation, known)]


def fuzz(adapter: SubprocessAdapter, count: int, seed: int,
         progress: Callable[[int], None] | None = None, shrink: bool = True,
         known: KnownDifferences = KnownDifferences()) -> FuzzReport:
    """Run `count` random programs on both engines; the first difference,
    shrunk unless `shrink` is false (then as found)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    state = {"programs": 0, "shrinking": False, "shrink_runs": 0, "last": None}
    models = "models" in adapter.features()

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, derandomize=False,
              phases=(Phase.generate, Phase.shrink) if shrink else (Phase.generate,),
              suppress_health_check=list(HealthCheck),
              report_multiple_bugs=False, print_blob=False)
    @given(programs.fuzz_inputs(models), st.lists(st.integers(0, 4), max_size=MAX_ANSWERS))
    def one(drawn: tuple[str, dict | None], answers: list[int]) -> None:
        program, model = drawn
        if state["shrinking"]:
            state["shrink_runs"] += 1
        else:
            state["programs"] += 1
            if progress:
                progress(state["programs"])
        case = Case(id=CASE_ID, path=CASE_ID, clauses=(),
                    harness=_harness(model), expect={}, prompt=program)
        ours = reference_observation(program, case.harness, 0, CASE_ID,
                                     Chooser(sim_hypothesis.ListProvider(answers)))
        try:
            theirs = adapter.run_with(case, 0, Chooser(sim_hypothesis.ListProvider(answers)))
        except AdapterError as e:
            fields = (f"the implementation gave no observation: {e.render()}",)
            theirs = None
        else:
            fields = tuple(differences(ours, theirs, known))
        if fields:
            state["shrinking"] = True
            state["last"] = Difference(program, tuple(answers), ours, theirs, fields, model)
            raise AssertionError(fields[0])

    started = time.perf_counter()
    try:
        one()
    except Exception:  # noqa: BLE001 - Hypothesis re-raises the minimal failure; `last` holds it
        if state["last"] is None:
            raise
    found = state["last"]
    if found is not None and any(found.answers):
        # Hypothesis shrinks towards the canonical schedule but may stop short
        # of it; one more pair of runs says whether it differs there too.
        state["shrink_runs"] += 1
        found = _on_canonical(adapter, found, known)
    seconds = time.perf_counter() - started
    return FuzzReport(state["programs"], state["shrink_runs"], seconds, found)


def _on_canonical(adapter: SubprocessAdapter, found: Difference,
                  known: KnownDifferences) -> Difference:
    """The difference on the canonical schedule if the program shows one there,
    else `found` with the reference's canonical observation beside it."""
    case = Case(id=CASE_ID, path=CASE_ID, clauses=(),
                harness=_harness(found.model), expect={},
                prompt=found.program)
    ours = reference_observation(found.program, case.harness, 0, CASE_ID,
                                 Chooser(sim_hypothesis.ListProvider([])))
    try:
        theirs = adapter.run_with(case, 0, Chooser(sim_hypothesis.ListProvider([])))
    except AdapterError as e:
        return attrs.evolve(found, answers=(), reference=ours, implementation=None,
                            fields=(f"the implementation gave no observation: {e.render()}",))
    fields = tuple(differences(ours, theirs, known))
    if fields:
        return attrs.evolve(found, answers=(), reference=ours, implementation=theirs,
                            fields=fields)
    return attrs.evolve(found, canonical=ours)


def case_text(found: Difference, seed: int) -> str:
    """A case file pinning the reference's observation of the shrunk program:
    outcome, result, error kind, logs, store, the order of event kinds and
    each task's state.

    On the canonical schedule (every answer 0) it is a plain case that the
    implementation fails.  A difference that shows only on another schedule
    cannot be pinned by a case (a case names no schedule): the case then
    holds the reference's canonical observation, so it passes on the
    reference and keeps the program, and the description names the schedule
    and what differed there.
    """
    canonical = not any(found.answers)
    ref = found.reference if canonical or found.canonical is None else found.canonical
    schedule = ("on the canonical schedule" if canonical else
                f"only on the schedule whose real decisions answer {list(found.answers)} "
                "(then canonically); this case pins the reference's canonical observation, "
                "which the implementation may match")
    lines = [
        'description = """',
        f"Found by `forge conformance --fuzz` (seed {seed}) {schedule}:",
        *found.fields,
        '"""',
        'clauses = ["tasks.spawn.returns-handle-at-once", "tasks.wait.join-entries"]',
        f"features = {json.dumps(_features(found.program))}",
        "prompt = '''",
        found.program.rstrip("\n"),
        "'''",
        "",
        *([f"[harness]\n{MODEL_SCRIPT.name} = {_toml(found.model)}", ""]
          if found.model is not None else []),
        "[expect]",
        f"outcome = {json.dumps(ref['outcome'])}",
        f"result = {json.dumps(ref['result'])}" if ref["result"] is not None
        else "result = { absent = true }",
    ]
    error = ref.get("error")
    lines.append("error = { absent = true }" if error is None else
                 f"error = {{ kind = {json.dumps(error['kind'])} }}")
    lines.append(f"logs = {json.dumps(ref.get('logs', []), ensure_ascii=False)}")
    store = ", ".join(f"{json.dumps(k, ensure_ascii=False)} = {json.dumps(v, ensure_ascii=False)}"
                      for k, v in sorted(ref.get("store", {}).items()))
    lines.append(f"store = {{ {store} }}")
    kinds = ", ".join(f"{{ kind = {json.dumps(e['kind'])} }}" for e in ref.get("events", []))
    lines += ["", "[expect.events]", f"subsequence = [ {kinds} ]"]
    for task_id, status in sorted(ref.get("tasks", {}).items()):
        lines += ["", f'[expect.tasks."{task_id}"]', f"state = {json.dumps(status['state'])}"]
        if "ok" in status:
            lines.append(f"ok = {json.dumps(status['ok'])}")
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    """`value` (JSON data) as a TOML inline value."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _harness(model: dict | None) -> HarnessSpec:
    """A generated program's harness: its model script's data, if any."""
    return HarnessSpec(**{MODEL_SCRIPT.name: model})


def _features(program: str) -> list[str]:
    """What the case needs, read from the program by the honest-features
    reader (`forge.conformance.features`)."""
    return sorted(needs(program, {}))
