"""Adapters: the implementation under test, seen from the runner.

An adapter answers one question - "run this case on this schedule and give
me the observation" - and says which features it has.  Two kinds:

- `InProcessAdapter`: the reference engine in this process (and, later, its
  mutants).  `reference_observation` is the one place that turns a case's
  prompt and harness into an engine run; `forge impl-serve` uses it too.
- `SubprocessAdapter`: any program speaking the JSON-lines protocol of
  `docs/protocol.md` on its stdin/stdout.  The program is untrusted: one that
  crashes, hangs past the per-run timeout, or writes something that is not
  the next protocol message makes that case *errored* (with the reason and
  the last lines of its stderr) and is started afresh for the next case.
  Nothing it does can crash the runner.  Its process, pipes and limits are
  `impl_process.ImplProcess`.  Its hello is checked (`hello_problem`:
  protocol.schema.json, feature names from `features.FEATURES`); one that
  breaks the protocol is a `HelloError`, which stops the suite as bad input
  rather than erroring every case.

What does not live here: choosing cases and schedules, comparing
observations (`runner`, `matchers`), and the implementation side of the
protocol (`serve`).
"""

from __future__ import annotations

import importlib
import json
import queue
import shlex
import subprocess
import sys
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Self

from forge.assembly import build_harness, make_chooser
from forge.conformance import schemas
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.catalogue import did_you_mean
from forge.conformance.features import FEATURES
from forge.conformance.impl_process import (
    EXIT_GRACE,
    RUN_DECISIONS,
    RUN_SECONDS,
    ImplProcess,
    Overflow,
    cut,
    exit_code,
    write_to,
)
from forge.conformance.level2 import DECISIONS, LEVEL, Asked, drive, hello_level
from forge.conformance.lifecycle_adapter import lifecycle_observation
from forge.conformance.steps import Recorder, declared
from forge.engine.run import Run, RunConfig, run_prompt
from forge.errors import InputError, PromptError
from forge.harness import DEFAULT_LATENCY, LatencyModel
from forge.limits import data_problem, render_path
from forge.prompt import parse_prompt
from forge.run.options import LATENCY, MODEL_SCRIPT, OPERATOR_SCRIPT, REFUSE, SCRIPTS, STORE, \
    TOOL_SCRIPT, engine_keywords
from forge.schemawording import pointer
from forge.sim.chooser import Chooser
from forge.toolscript import tool_script_from_data
from forge.variation import all_off, reads, switched_on

PROTOCOL_VERSION = 1
#: What the reference engine implements: every feature (`features`);
#: `lifecycle` cases (operations, not prompts) run on the reference lifecycle
#: manager (`lifecycle_adapter`).
REFERENCE_FEATURES = tuple(FEATURES)
LIFECYCLE = "lifecycle"


class AdapterError(Exception):
    """The implementation could not produce an observation: the case errored."""

    def __init__(self, reason: str, stderr_tail: Sequence[str] = ()) -> None:
        self.reason = reason
        self.stderr_tail = tuple(stderr_tail)
        super().__init__(self.render())

    def render(self) -> str:
        if not self.stderr_tail:
            return self.reason
        tail = "\n".join("  " + line for line in self.stderr_tail)
        return f"{self.reason}\nlast lines of its stderr:\n{tail}"


class HelloError(AdapterError, InputError):
    """The implementation's hello breaks the protocol (protocol.schema.json, a
    feature name that is not one of `FEATURES`, a level or protocol the kit
    does not speak): what it declares cannot be tested, so `run_suite` stops
    instead of erroring every case.  It is bad input, an `InputError` too
    (exit 2; `forge conformance` names `--impl`), read as an `AdapterError`."""

    def __init__(self, reason: str, stderr_tail: Sequence[str] = ()) -> None:
        AdapterError.__init__(self, reason, stderr_tail)


def hello_problem(hello: dict) -> str | None:
    """Why an implementation's answer to hello (a message whose `type` is
    "hello") cannot be used, or None: a protocol other than this kit's, a
    feature name that is not one of `FEATURES` (with the nearest names), or
    else the first violation of the protocol schema's `implementation_hello`."""
    if "protocol" in hello and hello["protocol"] != PROTOCOL_VERSION:
        return (f"speaks protocol {_brief(hello['protocol'])}; this kit speaks "
                f"{PROTOCOL_VERSION}")
    # The schema's enum of feature names is `FEATURES` (a test holds them
    # equal); an unknown name is worded here, with the nearest known ones.
    features = hello.get("features")
    for i, name in enumerate(features if isinstance(features, list) else ()):
        if isinstance(name, str) and name not in FEATURES:
            return (f"sent a hello naming an unknown feature at /features/{i}: "
                    f"{_brief(name)}{did_you_mean([name], FEATURES)}; the features are "
                    f"{', '.join(FEATURES)} (docs/cases.md, \"Features\")")
    found = schemas.errors(schemas.PROTOCOL, hello, definition="implementation_hello")
    if found:
        path, message, _ = schemas.describe(found[0], schemas.schema(schemas.PROTOCOL))
        return f"sent a hello that breaks protocol.schema.json at {pointer(path)}: {message}"
    return None


class Adapter(ABC):
    """An implementation under test."""

    @abstractmethod
    def describe(self) -> dict:
        """`{"name": ..., "features": [...]}` for reports."""

    @abstractmethod
    def features(self) -> frozenset[str]: ...

    @abstractmethod
    def run(self, case: Case, seed: int | None) -> dict:
        """The observation of `case` on schedule `seed` (None: canonical).

        Raises:
            AdapterError: no observation could be had.
        """

    def close(self) -> None:
        """Release the implementation (stop its process)."""

    def lacks(self, case: Case) -> tuple[str, ...]:
        """The features `case` needs that this implementation does not have,
        in the case's order (the report counts skips by them)."""
        have = self.features()
        return tuple(f for f in case.features if f not in have)

    def asks_decisions(self) -> bool:
        """Whether the kit sees the decisions this implementation's runs ask
        (a level-2 engine's), so a case's `decisions` can be checked."""
        return False

    def skip_reason(self, case: Case) -> str | None:
        """Why this implementation cannot run `case`, or None."""
        if case.operations is not None and LIFECYCLE not in self.features():
            return "lifecycle adapter not available"
        if DECISIONS in case.expect and not self.asks_decisions():
            return ("the case checks the decisions a level-2 engine asks, and this "
                    "implementation speaks level 1")
        missing = self.lacks(case)
        if missing:
            names = ", ".join(f"`{f}`" for f in missing)
            return f"implementation lacks feature{'s' if len(missing) > 1 else ''} {names}"
        return None


# -- the reference engine ------------------------------------------------------------------

def reference_observation(prompt_text: str, spec: HarnessSpec, seed: int | None,
                          source: str = "<case>", chooser: Any = None,
                          steps: bool = False) -> dict:
    """Run a prompt on the reference engine; the observation as plain JSON data.

    A prompt the parser refuses is an observation too (outcome `failed`,
    error kind `Parse`): refusing bad prompts is behaviour a case can pin.
    `source` names the case in messages (its file, or its id).  `chooser`
    answers the run's open decisions (default: the schedule `seed` names);
    `forge impl-serve --level 2` passes one that asks the kit.  With
    `steps`, the observation holds the run's `steps` too (`steps.Recorder`,
    docs/protocol.md "Steps").

    Raises:
        AdapterError: a harness script is unusable, or the engine broke.
    """
    return _reference_run(prompt_text, spec, seed, source, chooser, steps)[0]


def _reference_run(prompt_text: str, spec: HarnessSpec, seed: int | None,
                   source: str, chooser: Any = None, steps: bool = False) -> tuple[dict, Any]:
    """`reference_observation`, with the run (None for a prompt the parser
    refused).

    The observation is plain JSON data as the engine builds it (lists,
    string keys, no tuples), so it is exactly what a subprocess would send
    without a JSON round trip; a test holds every example and case to that
    (tests/conformance/test_inprocess_adapter.py).
    """
    try:
        prompt = parse_prompt(prompt_text, f"{source} [prompt]")
    except PromptError as e:
        return parse_failure(e, spec), None
    try:
        harness = _build_harness(spec, source)
        config = RunConfig(seed=seed or 0, **engine_keywords(spec, "config"))
        if not steps:
            run = run_prompt(prompt, harness, chooser or make_chooser(seed, None), config)
            return run.observation(), run

        run = Run(prompt, harness, chooser or make_chooser(seed, None), config)
        recorder = Recorder(run)
        run.trace.observe((recorder,))
        run.execute()
        return {**run.observation(), "steps": recorder.steps}, run
    except AdapterError:
        raise
    except InputError as e:
        raise AdapterError(f"the case's harness is unusable: {e.render()}") from None
    except Exception as e:  # noqa: BLE001 - an engine bug errors this case, not the suite
        tail = traceback.format_exc().strip().splitlines()[-6:]
        raise AdapterError(f"the reference engine raised {type(e).__name__}: {e}", tail) from None


def parse_failure(error: Any, spec: HarnessSpec) -> dict:
    """The observation of a prompt the parser refused (`error` is a PromptError)."""
    detail = {"kind": "Parse", "message": error.message}
    if error.kind:
        detail["parse_kind"] = error.kind
    if error.line:
        detail["line"] = error.line
    return {
        "outcome": "failed",
        "result": None,
        "error": detail,
        "logs": [],
        "events": [],
        "tasks": {},
        "messages": {},
        "store": dict(STORE.of(spec)),
        "virtual_time": 0.0,
        "trace_sha256": None,
    }


def _build_harness(spec: HarnessSpec, source: str):
    harness = build_harness(store_files=dict(STORE.of(spec)), **engine_keywords(spec, "harness"))
    harness.latency_model = LatencyModel(base={**DEFAULT_LATENCY, **LATENCY.of(spec)})
    harness.refusals = {op: tuple(paths) for op, paths in REFUSE.of(spec).items()}
    harness.model, harness.operator, harness.tool = _scripts(spec, source)
    return harness


#: Scripts read, by harness: (the harness spec, the script reader module,
#: source) -> the scripts.  Keyed by the spec's identity, which the value
#: holds on to (so the identity cannot pass to another spec): every schedule
#: of a case runs with the same spec and the same frozen script values.
_SCRIPTS: dict[int, tuple] = {}


def _scripts(spec: HarnessSpec, source: str) -> tuple:
    """The case's model, operator and tool scripts, read once per case (a
    script that fails to read raises each time: failures are not kept)."""
    data = {row: row.of(spec) for row in SCRIPTS}
    if all(value is None for value in data.values()):
        return None, None, None
    reader = sys.modules.get("forge.scripts")
    kept = _SCRIPTS.get(id(spec))
    if kept is not None and kept[0] is spec and kept[1] is reader and kept[2] == source:
        return kept[3]
    model = operator = tool = None
    where = {row: f"{source} [harness.{row.name}]" for row in SCRIPTS}
    if data[MODEL_SCRIPT] is not None:
        build = _script_builder("model_script_from_data", "a model script")
        model = build(data[MODEL_SCRIPT], where[MODEL_SCRIPT])
    if data[OPERATOR_SCRIPT] is not None:
        build = _script_builder("operator_script_from_data", "an operator script")
        operator = build(data[OPERATOR_SCRIPT], where[OPERATOR_SCRIPT])
    if data[TOOL_SCRIPT] is not None:
        tool = tool_script_from_data(data[TOOL_SCRIPT], where[TOOL_SCRIPT])
    if len(_SCRIPTS) >= 256:
        _SCRIPTS.clear()
    _SCRIPTS[id(spec)] = (spec, reader, source, (model, operator, tool))
    return model, operator, tool


def _script_builder(name: str, what: str):
    try:
        module = importlib.import_module("forge.scripts")
    except ModuleNotFoundError as e:
        if e.name != "forge.scripts":
            raise
        module = None
    builder = getattr(module, name, None)
    if builder is None:
        raise AdapterError(f"this case needs {what}, and this engine build has no "
                           f"forge.scripts.{name} to read one")
    return builder


def reference_lifecycle_observation(operations: Any, harness: Any = None,
                                    source: str = "<case>") -> dict:
    """`lifecycle_observation` as the adapters need it: every failure is an AdapterError.

    Raises:
        AdapterError: the operations are malformed, or the manager could not be run.
    """
    try:
        # A JSON round trip makes the in-process observation what a subprocess sends.
        return json.loads(json.dumps(lifecycle_observation(operations, harness)))
    except InputError as e:
        raise AdapterError(f"{source}: the case's operations are unusable: {e.render()}") from None
    except Exception as e:  # noqa: BLE001 - a kit bug errors this case, not the suite
        tail = traceback.format_exc().strip().splitlines()[-6:]
        raise AdapterError(f"the lifecycle adapter raised {type(e).__name__}: {e}", tail) from None


class InProcessAdapter(Adapter):
    """The reference engine, in this process.

    Most schedules of a case make the very choices an earlier schedule made
    (two thirds of the suite's runs: a case with one ready chain at a time
    has nothing to choose).  A run is a function of its prompt, harness,
    seed and choices, and the seed reaches only `math.random` and the nonce;
    so when an earlier run of the same case read neither
    (`Run.seed_independent`) and the new schedule's provider, asked what
    that run asked, answers every choice as it was answered, the new run
    would be that run, and its observation is given again instead (the same
    object: callers read observations and never change them).  Only
    the current case's runs are kept, apart for each set of variation sites
    switched on.

    A mutant is a site switched on, and code that never reads a site runs
    alike either way; so with a site on, the reference engine's run of the
    same case and schedule is made once per process (sites off, noting the
    sites it reads), and a mutant that none of those sites belongs to gets
    the reference observation without a run of its own.
    """

    def __init__(self) -> None:
        self._memo_case: tuple | None = None
        #: Sites on -> [(the run's choices as (kind, options, value), the
        #: sites it read, its observation)], for the current case.
        self._memo: dict[tuple[str, ...], list[tuple[tuple, frozenset[str], dict]]] = {}

    def describe(self) -> dict:
        return {"name": "forge reference engine (in-process)", "features": list(REFERENCE_FEATURES)}

    def features(self) -> frozenset[str]:
        return frozenset(REFERENCE_FEATURES)

    def asks_decisions(self) -> bool:
        return True

    def run(self, case: Case, seed: int | None) -> dict:
        if case.operations is not None:
            return reference_lifecycle_observation(case.operations, case.harness, case.path)
        if case.prompt is None:
            raise AdapterError("the reference engine runs prompts, and this case has none")
        if DECISIONS in case.expect:
            # A decision case runs on the canonical schedule only (`case`
            # refuses it any other): every answer 0, each decision kept.

            provider = Asked()
            obs = reference_observation(case.prompt, case.harness, None, case.path,
                                        Chooser(provider))
            return {**obs, DECISIONS: provider.seen}

        on = switched_on()
        if on:
            reference = self._reference(case, seed)
            if reference is not None and reference[0].isdisjoint(on):
                return reference[1]
        return self._observe(case, seed, on)[1]

    def _reference(self, case: Case, seed: int | None) -> tuple[frozenset[str], dict] | None:
        """The reference engine's (sites read, observation) for `case` on `seed`."""
        key = (case.path, case.prompt, repr(case.harness), seed)
        if key not in _REFERENCE:
            try:
                with all_off():
                    _REFERENCE[key] = self._observe(case, seed, ())
            except AdapterError:
                _REFERENCE[key] = None
        return _REFERENCE[key]

    def _observe(self, case: Case, seed: int | None, on: tuple[str, ...]) -> tuple[frozenset[str], dict]:
        key = (case.prompt, case.harness, case.path)
        if key != self._memo_case:
            self._memo_case, self._memo = key, {}
        memo = self._memo.setdefault(on, [])
        for record, read, observation in memo:
            if _answers_alike(seed, record):
                return read, observation
        with reads() as names:
            observation, run = _reference_run(case.prompt, case.harness, seed, case.path)
        read = frozenset(names)
        if run is None:
            memo.append(((), read, observation))   # a refused prompt has no run, nor a seed
        elif run.seed_independent():
            choices = run.chooser
            record = tuple((c.kind, options, c.value)
                           for c, options in zip(choices.choices, choices.options))
            memo.append((record, read, observation))
        return read, observation


#: The reference engine's runs as mutants meet them: (case path, prompt,
#: harness, seed) -> (the sites the run read, its observation), or
#: None when the reference engine could not run it.  Filled only while a
#: site is on, so only in a mutants run, and bounded by the suite.
_REFERENCE: dict[tuple, tuple[frozenset[str], dict] | None] = {}


def _answers_alike(seed: int | None, record: tuple) -> bool:
    """Whether schedule `seed`'s provider, asked what a run asked, answers as it was answered."""
    provider = make_chooser(seed, None).provider
    return all(provider.draw(kind, options) == value for kind, options, value in record)


# -- any implementation, over a pipe -------------------------------------------------------

#: How often a wait for an answer checks that the implementation still runs, in seconds.
POLL = 0.1


class SubprocessAdapter(Adapter):
    """An implementation behind the JSON-lines protocol (docs/protocol.md).

    Args:
        cmd: the command, as a shell-style string or an argv list.
        timeout: seconds of wall time the implementation gets to answer the
            handshake and each message of a run.
        run_seconds: seconds of wall time one run may take in all, however
            quickly each message comes (`--max-run-seconds`).
        max_decisions: the `choose` messages one level-2 run may send
            (`--max-decisions`).
    Hitting either bound fails the run with a message naming its flag, and
    the implementation's process tree is ended (`ImplProcess.stop`).
    """

    def __init__(self, cmd: str | Sequence[str], timeout: float = 10.0,
                 run_seconds: float = RUN_SECONDS, max_decisions: int = RUN_DECISIONS) -> None:
        self.argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        if not self.argv:
            raise ValueError("the implementation command is empty")
        self.timeout = timeout
        self.run_seconds = run_seconds
        self.max_decisions = max_decisions
        #: When the current run must end (time.monotonic), or None between runs.
        self._run_deadline: float | None = None
        self._proc: ImplProcess | None = None
        self._hello: dict | None = None

    # -- lifecycle
    def start(self) -> dict:
        """Start the implementation and shake hands; returns its hello.

        Raises:
            AdapterError: it cannot be started or answers the handshake wrongly.
        """
        self.close()
        try:
            self._proc = ImplProcess(self.argv)
        except OSError as e:
            raise AdapterError(f"cannot start implementation `{shlex.join(self.argv)}`: "
                               f"{e.strerror or e}") from None
        self._send({"type": "hello", "protocol": PROTOCOL_VERSION, "levels": [1, LEVEL]})
        hello = self._receive("the handshake")
        if hello.get("type") != "hello":
            self._fail(f"answered the handshake with {_brief(hello)}; expected "
                       '{"type": "hello", "name": ..., "features": [...]}')
        problem = hello_problem(hello)
        if problem is not None:
            self._fail(problem, HelloError)
        self._hello = hello
        return hello

    def close(self) -> None:
        proc, self._proc, self._hello = self._proc, None, None
        if proc is None:
            return
        if proc.popen.poll() is None and write_to(proc, _line({"type": "bye"}), EXIT_GRACE):
            try:
                proc.popen.stdin.close()
                proc.popen.wait(timeout=EXIT_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
        proc.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- Adapter
    def describe(self) -> dict:
        hello = self._ensure()
        return {"name": str(hello.get("name", self.argv[0])), "features": hello["features"],
                "command": shlex.join(self.argv)}

    def features(self) -> frozenset[str]:
        return frozenset(self._ensure()["features"])

    def step_kinds(self) -> frozenset[str]:
        """The optional step kinds the implementation's hello declares it
        reports (`steps.declared`; docs/protocol.md "Steps")."""
        return declared(self._ensure())

    @property
    def level(self) -> int:
        """The protocol level the implementation's hello announced (1 or 2)."""
        return hello_level(self._ensure())

    def asks_decisions(self) -> bool:
        return self.level == LEVEL

    def run(self, case: Case, seed: int | None) -> dict:
        # At level 2 the kit draws the schedule `seed` names itself (docs/protocol.md).

        chooser = make_chooser(seed, None) if self.level == LEVEL else None
        if DECISIONS not in case.expect or chooser is None:
            return self.run_with(case, seed, chooser)
        seen: list[str] = []
        observation = self.run_with(case, seed, chooser, seen=seen)
        return {**observation, DECISIONS: seen}

    def run_with(self, case: Case, seed: int | None, chooser: Any = None,
                 steps: bool = False, seen: list[str] | None = None) -> dict:
        """`run`, with the decisions of a level-2 implementation answered by
        `chooser` (None: the implementation decides, as at level 1); with
        `steps`, the run message asks for the run's steps (docs/protocol.md,
        "Steps"), which an implementation may ignore; each decision asked is
        appended to `seen`, when given (`level2.decision`)."""
        self._ensure()
        self._proc.new_case()
        message: dict[str, Any] = {"type": "run", "id": case.id, "seed": seed,
                                   "harness": case.harness.to_json()}
        if steps:
            message["steps"] = True
        if case.prompt is not None:
            message["prompt"] = case.prompt
        else:
            message["operations"] = case.operations
        self._run_deadline = time.monotonic() + self.run_seconds
        try:
            self._send(message)
            if chooser is not None and self.level == LEVEL:
                reply = drive(lambda: self._receive(f"case {case.id}"), self._send, case.id,
                              chooser, self._fail, self.max_decisions, seen)
            else:
                reply = self._receive(f"case {case.id}")
        finally:
            self._run_deadline = None
        if reply.get("type") == "error" and reply.get("id") == case.id:
            # The implementation declined this run cleanly; it stays up.
            message = reply.get("message")
            if "message" not in reply:
                raise AdapterError("the implementation reported an error without its "
                                   "`message` field")
            if not isinstance(message, str):
                raise AdapterError("the implementation reported an error whose `message` is "
                                   f"not a string: {_brief(message)}")
            raise AdapterError(f"the implementation reported an error: {message}")
        if reply.get("type") != "observation" or reply.get("id") != case.id:
            self._fail(f"sent {_brief(reply)} where the observation of case {case.id} "
                       "was expected")
        if "observation" not in reply:
            self._fail(f"sent an observation message for case {case.id} without its "
                       "`observation` field")
        observation = reply.get("observation")
        if not isinstance(observation, dict):
            self._fail(f"sent an observation for case {case.id} that is not a JSON object: "
                       f"{_brief(observation)}")
        problem = data_problem(observation)
        if problem is not None:
            path, rule = problem
            self._fail(f"sent an observation for case {case.id} past the kit's limits: "
                       f"{render_path(path) or 'observation'}: {rule}")
        return observation

    # -- the pipe
    def _ensure(self) -> dict:
        if self._proc is None or self._hello is None or self._proc.popen.poll() is not None:
            return self.start()
        return self._hello

    def _wait(self) -> tuple[float, bool]:
        """How long the next read or write may take, and whether that is the
        run's limit rather than the per-message timeout."""
        if self._run_deadline is not None:
            left = self._run_deadline - time.monotonic()
            if left < self.timeout:
                return max(left, 0.0), True
        return self.timeout, False

    def _over_run(self) -> None:
        self._fail(f"ran past the limit of {self.run_seconds:g} s for one run "
                   "(--max-run-seconds)")

    def _send(self, message: dict) -> None:
        # A write blocks when the implementation does not read its stdin and
        # the pipe is full, so it gets the same timeout as an answer.
        wait, run_limit = self._wait()
        written = write_to(self._proc, _line(message), wait)
        if written is None and run_limit:
            self._over_run()
        if written is None:
            self._fail(f"timed out after {self.timeout:g} s reading its input "
                       f"(a {message.get('type')} message)")
        if not written:
            self._fail(self._exit_text("before reading its input"))

    def _receive(self, what: str) -> dict:
        # The deadline is checked on every line, so no stream of lines - blank,
        # or arriving faster than they are read - can hold the timeout off.
        wait, run_limit = self._wait()
        deadline = time.monotonic() + wait
        exit_seen = False
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                raw = self._proc.take(timeout=min(left, POLL))
            except queue.Empty:
                if left <= 0 and run_limit:
                    self._over_run()
                if left <= 0:
                    self._fail(f"timed out after {self.timeout:g} s waiting for the answer "
                               f"to {what}")
                # A descendant holding stdout open hides the implementation's
                # death from the reader; the exit itself does not hide.  Lines
                # written just before it get one more poll to arrive.
                if exit_code(self._proc.popen, 0) is None:
                    continue
                if not exit_seen:
                    exit_seen = True
                    continue
                raw = None
            if raw is None:
                self._fail(self._exit_text(f"while answering {what}"))
            if isinstance(raw, Overflow):
                self._fail(f"wrote {raw.what} on stdout while answering {what}")
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                self._fail(f"sent a line that is not JSON while answering {what}: "
                           f"{cut(text)!r}")
            except (RecursionError, ValueError) as e:  # nesting, a 5000-digit number
                self._fail(f"sent a line the kit will not read while answering {what}: "
                           f"{cut(str(e) or type(e).__name__)}")
            if not isinstance(message, dict):
                self._fail(f"sent {_brief(message)} while answering {what}; every protocol "
                           "message is a JSON object")
            return message

    def _exit_text(self, when: str) -> str:
        # Wait for the exit without reaping it, so `stop` can still kill the
        # process group safely (a reaped leader's group id may be reused).
        code = exit_code(self._proc.popen, 1.0)
        if code is None:
            return f"closed its stdout {when}"
        return f"crashed {when} (exit code {code})"

    def _fail(self, reason: str, error: type[AdapterError] = AdapterError) -> None:
        """Kill the process (the next case starts a fresh one) and error the case."""
        proc, self._proc, self._hello = self._proc, None, None
        tail = proc.stop()
        raise error(f"implementation `{shlex.join(self.argv)}` {reason}", tail)


def _line(message: dict) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _brief(value: Any) -> str:
    return cut(json.dumps(value, ensure_ascii=False))
