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
  Nothing it does can crash the runner.

What does not live here: choosing cases and schedules, comparing
observations (`runner`, `matchers`), and the implementation side of the
protocol (`serve`).
"""

from __future__ import annotations

import collections
import importlib
import itertools
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Self

from conformance.case import Case, HarnessSpec
from forge.limits import data_problem, render_path

PROTOCOL_VERSION = 1
#: What the reference engine implements; `lifecycle` cases (operations, not
#: prompts) run on the reference lifecycle manager (`lifecycle_adapter`).
REFERENCE_FEATURES = ("fanout", "lifecycle", "tasks", "tasks-model")
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

    def skip_reason(self, case: Case) -> str | None:
        """Why this implementation cannot run `case`, or None."""
        have = self.features()
        if case.operations is not None and LIFECYCLE not in have:
            return "lifecycle adapter not available"
        missing = [f for f in case.features if f not in have]
        if missing:
            names = ", ".join(f"`{f}`" for f in missing)
            return f"implementation lacks feature{'s' if len(missing) > 1 else ''} {names}"
        return None


# -- the reference engine ------------------------------------------------------------------

def reference_observation(prompt_text: str, spec: HarnessSpec, seed: int | None,
                          source: str = "<case>") -> dict:
    """Run a prompt on the reference engine; the observation as plain JSON data.

    A prompt the parser refuses is an observation too (outcome `failed`,
    error kind `Parse`): refusing bad prompts is behaviour a case can pin.
    `source` names the case in messages (its file, or its id).

    Raises:
        AdapterError: a harness script is unusable, or the engine broke.
    """
    from forge.errors import InputError, PromptError
    from forge.prompt import parse_prompt

    try:
        prompt = parse_prompt(prompt_text, f"{source} [prompt]")
    except PromptError as e:
        return parse_failure(e, spec)
    try:
        from forge.assembly import make_chooser
        from forge.engine.run import RunConfig, observation_json, run_prompt

        harness = _build_harness(spec, source)
        config = RunConfig(args=spec.args, seed=seed or 0)
        run = run_prompt(prompt, harness, make_chooser(seed, None), config)
        # A JSON round trip makes the in-process observation exactly what a
        # subprocess would send (tuples become lists, keys become strings).
        return json.loads(observation_json(run.observation()))
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
        "store": dict(spec.store),
        "virtual_time": 0.0,
        "trace_sha256": None,
    }


def _build_harness(spec: HarnessSpec, source: str):
    from forge.assembly import build_harness
    from forge.harness import DEFAULT_LATENCY, LatencyModel

    harness = build_harness(concurrency=spec.concurrency, store_files=dict(spec.store),
                            cancel_at=spec.cancel_at)
    harness.latency = LatencyModel(base={**DEFAULT_LATENCY, **spec.latency})
    harness.refuse = {op: tuple(paths) for op, paths in spec.refuse.items()}
    if spec.model_script is not None:
        build = _script_builder("model_script_from_data", "a model script")
        harness.model = build(spec.model_script, f"{source} [harness.model_script]")
    if spec.operator_script is not None:
        build = _script_builder("operator_script_from_data", "an operator script")
        harness.operator = build(spec.operator_script, f"{source} [harness.operator_script]")
    return harness


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


class InProcessAdapter(Adapter):
    """The reference engine, in this process."""

    def describe(self) -> dict:
        return {"name": "forge reference engine (in-process)", "features": list(REFERENCE_FEATURES)}

    def features(self) -> frozenset[str]:
        return frozenset(REFERENCE_FEATURES)

    def run(self, case: Case, seed: int | None) -> dict:
        if case.operations is not None:
            from conformance.lifecycle_adapter import reference_lifecycle_observation

            return reference_lifecycle_observation(case.operations, case.harness, case.path)
        if case.prompt is None:
            raise AdapterError("the reference engine runs prompts, and this case has none")
        return reference_observation(case.prompt, case.harness, seed, case.path)


# -- any implementation, over a pipe -------------------------------------------------------

#: stderr lines kept per case for error reports, and the characters kept of each.
STDERR_TAIL = 12
STDERR_LINE = 500
#: How long a process gets to exit after `bye` before it is killed.
EXIT_GRACE = 2.0
#: The longest protocol line (one message) read from an implementation.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Bytes of stdout read ahead of the runner (lines nobody asked for yet).
MAX_PENDING_BYTES = 64 * 1024 * 1024
#: One pipe read; the pipes are read in chunks, never a byte at a time.
CHUNK = 64 * 1024
#: How often a wait for an answer checks that the implementation still runs, in seconds.
POLL = 0.1
#: The environment variable that marks every process an implementation starts.
TOKEN_VAR = "FORGE_IMPL_TOKEN"

_tokens = itertools.count(1)


class _Overflow:
    """Put on the line queue instead of a line: the implementation wrote too much."""

    def __init__(self, what: str) -> None:
        self.what = what


class _Process:
    """One running implementation: its pipes and the threads draining them.

    Both pipes are read in chunks of `CHUNK` bytes by threads of their own.
    stdout is cut into lines that go to a queue, so a read can time out (a
    pipe read cannot) whatever the implementation writes: a line longer than
    `MAX_MESSAGE_BYTES`, or more than `MAX_PENDING_BYTES` unread, puts an
    `_Overflow` on the queue and reading stops.  stderr is drained all the
    time, so a chatty implementation never blocks on a full pipe; only the
    last `STDERR_TAIL` lines of the current case are kept, each cut to
    `STDERR_LINE` characters, so an endless line costs no memory.

    The process leads a session of its own, and its environment carries a
    token (`TOKEN_VAR`) every descendant inherits.  `stop` kills the process
    group, then every process whose environment holds the token - which
    catches a grandchild that called setsid() (on Linux, through /proc).  A
    descendant that clears its environment and leaves the group escapes; that
    limit is documented in docs/protocol.md.
    """

    def __init__(self, argv: list[str]) -> None:
        self.token = f"{os.getpid()}-{next(_tokens)}"
        env = {**os.environ, TOKEN_VAR: self.token}
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, bufsize=0, start_new_session=True,
                                      env=env)
        self.lines: queue.Queue[bytes | _Overflow | None] = queue.Queue()
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._tail_lock = threading.Lock()
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._err_partial = ""
        self._out = threading.Thread(target=self._drain_stdout, daemon=True)
        self._err = threading.Thread(target=self._drain_stderr, daemon=True)
        self._out.start()
        self._err.start()

    # -- stdout
    def _drain_stdout(self) -> None:
        fd = self.popen.stdout.fileno()
        partial = bytearray()
        try:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                partial += chunk
                *complete, rest = partial.split(b"\n")
                for line in complete:
                    if not self._put(bytes(line)):
                        return
                partial = bytearray(rest)
                if len(partial) > MAX_MESSAGE_BYTES:
                    self.lines.put(_Overflow(f"a line longer than {MAX_MESSAGE_BYTES} bytes"))
                    return
        except (OSError, ValueError):  # the pipe was closed under us by `stop`
            pass
        if partial.strip():
            self._put(bytes(partial))
        self.lines.put(None)

    def _put(self, line: bytes) -> bool:
        with self._pending_lock:
            self._pending += len(line)
            if self._pending > MAX_PENDING_BYTES:
                self.lines.put(_Overflow(f"more than {MAX_PENDING_BYTES} bytes nobody asked for"))
                return False
        self.lines.put(line)
        return True

    def take(self, timeout: float) -> bytes | _Overflow | None:
        """The next stdout line (None at EOF).  Raises queue.Empty on timeout."""
        item = self.lines.get(timeout=timeout)
        if isinstance(item, bytes):
            with self._pending_lock:
                self._pending -= len(item)
        return item

    # -- stderr
    def _drain_stderr(self) -> None:
        fd = self.popen.stderr.fileno()
        try:
            while True:
                chunk = os.read(fd, CHUNK)
                if not chunk:
                    break
                self._keep(chunk.decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        with self._tail_lock:
            if self._err_partial:
                self.stderr.append(self._err_partial)
                self._err_partial = ""

    def _keep(self, text: str) -> None:
        with self._tail_lock:
            *complete, rest = (self._err_partial + text).split("\n")
            for line in complete[-STDERR_TAIL:]:
                self.stderr.append(_cut(line.rstrip("\r"), STDERR_LINE))
            # An endless line keeps only its start (and a mark that it went on).
            self._err_partial = rest if len(rest) <= STDERR_LINE else _cut(rest, STDERR_LINE)

    def new_case(self) -> None:
        """Forget the stderr of earlier cases: a report shows this case's own."""
        with self._tail_lock:
            self.stderr.clear()

    # -- the end
    def stop(self) -> list[str]:
        """Kill the process, its group and every marked descendant, reap it;
        the last lines of its stderr."""
        if self.popen.returncode is None:
            # Not reaped yet, so the group id cannot have been reused.
            _kill_group(self.popen.pid)
        kill_marked(self.token)
        try:
            self.popen.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:  # unkillable (a stopped tracee?): leave it
            pass
        # With the writers gone the drain reaches EOF; what it caught last is
        # often the most useful line (a traceback's final one).
        self._err.join(timeout=1.0)
        with self._tail_lock:
            tail = list(self.stderr) + ([self._err_partial] if self._err_partial else [])
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        return tail[-STDERR_TAIL:]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def marked_processes(token: str) -> list[int]:
    """Pids whose environment holds `TOKEN_VAR=token` (Linux /proc; [] elsewhere)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry))
    return found


def kill_marked(token: str, rounds: int = 5) -> None:
    """SIGKILL every process marked with `token`, again while a fork races the scan."""
    for _ in range(rounds):
        pids = marked_processes(token)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)  # let the kernel turn them into zombies before the next scan


class SubprocessAdapter(Adapter):
    """An implementation behind the JSON-lines protocol (docs/protocol.md).

    Args:
        cmd: the command, as a shell-style string or an argv list.
        timeout: seconds of wall time the implementation gets to answer the
            handshake and each run.
    """

    def __init__(self, cmd: str | Sequence[str], timeout: float = 10.0) -> None:
        self.argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        if not self.argv:
            raise ValueError("the implementation command is empty")
        self.timeout = timeout
        self._proc: _Process | None = None
        self._hello: dict | None = None

    # -- lifecycle
    def start(self) -> dict:
        """Start the implementation and shake hands; returns its hello.

        Raises:
            AdapterError: it cannot be started or answers the handshake wrongly.
        """
        self.close()
        try:
            self._proc = _Process(self.argv)
        except OSError as e:
            raise AdapterError(f"cannot start implementation `{shlex.join(self.argv)}`: "
                               f"{e.strerror or e}") from None
        self._send({"type": "hello", "protocol": PROTOCOL_VERSION})
        hello = self._receive("the handshake")
        features = hello.get("features")
        if (hello.get("type") != "hello" or not isinstance(features, list)
                or not all(isinstance(f, str) for f in features)):
            self._fail(f"answered the handshake with {_brief(hello)}; expected "
                       '{"type": "hello", "name": ..., "features": [...]}')
        if hello.get("protocol", PROTOCOL_VERSION) != PROTOCOL_VERSION:
            self._fail(f"speaks protocol {hello.get('protocol')!r}; this kit speaks "
                       f"{PROTOCOL_VERSION}")
        self._hello = hello
        return hello

    def close(self) -> None:
        proc, self._proc, self._hello = self._proc, None, None
        if proc is None:
            return
        if proc.popen.poll() is None and _write(proc, _line({"type": "bye"}), EXIT_GRACE):
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

    def run(self, case: Case, seed: int | None) -> dict:
        self._ensure()
        self._proc.new_case()
        message: dict[str, Any] = {"type": "run", "id": case.id, "seed": seed,
                                   "harness": case.harness.to_json()}
        if case.prompt is not None:
            message["prompt"] = case.prompt
        else:
            message["operations"] = case.operations
        self._send(message)
        reply = self._receive(f"case {case.id}")
        if reply.get("type") == "error" and reply.get("id") == case.id:
            # The implementation declined this run cleanly; it stays up.
            raise AdapterError(f"the implementation reported an error: {reply.get('message')}")
        if reply.get("type") != "observation" or reply.get("id") != case.id:
            self._fail(f"sent {_brief(reply)} where the observation of case {case.id} "
                       "was expected")
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

    def _send(self, message: dict) -> None:
        # A write blocks when the implementation does not read its stdin and
        # the pipe is full, so it gets the same timeout as an answer.
        written = _write(self._proc, _line(message), self.timeout)
        if written is None:
            self._fail(f"timed out after {self.timeout:g} s reading its input "
                       f"(a {message.get('type')} message)")
        if not written:
            self._fail(self._exit_text("before reading its input"))

    def _receive(self, what: str) -> dict:
        # The deadline is checked on every line, so no stream of lines - blank,
        # or arriving faster than they are read - can hold the timeout off.
        deadline = time.monotonic() + self.timeout
        exit_seen = False
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                raw = self._proc.take(timeout=min(left, POLL))
            except queue.Empty:
                if left <= 0:
                    self._fail(f"timed out after {self.timeout:g} s waiting for the answer "
                               f"to {what}")
                # A descendant holding stdout open hides the implementation's
                # death from the reader; the exit itself does not hide.  Lines
                # written just before it get one more poll to arrive.
                if _exit_code(self._proc.popen, 0) is None:
                    continue
                if not exit_seen:
                    exit_seen = True
                    continue
                raw = None
            if raw is None:
                self._fail(self._exit_text(f"while answering {what}"))
            if isinstance(raw, _Overflow):
                self._fail(f"wrote {raw.what} on stdout while answering {what}")
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                self._fail(f"sent a line that is not JSON while answering {what}: "
                           f"{_cut(text)!r}")
            except (RecursionError, ValueError) as e:  # nesting, a 5000-digit number
                self._fail(f"sent a line the kit will not read while answering {what}: "
                           f"{_cut(str(e) or type(e).__name__)}")
            if not isinstance(message, dict):
                self._fail(f"sent {_brief(message)} while answering {what}; every protocol "
                           "message is a JSON object")
            return message

    def _exit_text(self, when: str) -> str:
        # Wait for the exit without reaping it, so `stop` can still kill the
        # process group safely (a reaped leader's group id may be reused).
        code = _exit_code(self._proc.popen, 1.0)
        if code is None:
            return f"closed its stdout {when}"
        return f"crashed {when} (exit code {code})"

    def _fail(self, reason: str) -> None:
        """Kill the process (the next case starts a fresh one) and error the case."""
        proc, self._proc, self._hello = self._proc, None, None
        tail = proc.stop()
        raise AdapterError(f"implementation `{shlex.join(self.argv)}` {reason}", tail)


def _write(proc: _Process, data: bytes, timeout: float) -> bool | None:
    """Write to the implementation's stdin: True, False if the pipe is broken,
    None if it did not take the bytes within `timeout` seconds."""
    done: list[bool] = []

    def write() -> None:
        try:
            proc.popen.stdin.write(data)
            proc.popen.stdin.flush()
            done.append(True)
        except (OSError, ValueError):
            done.append(False)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(timeout)
    # A writer still blocked ends when `stop` kills the reader and the pipe breaks.
    return done[0] if done else None


def _exit_code(popen: subprocess.Popen, timeout: float) -> int | None:
    """The exit code once the process has exited (within `timeout`), not reaped; None if it runs."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = os.waitid(os.P_PID, popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped
            return popen.returncode
        if info is not None:
            return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _line(message: dict) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _brief(value: Any) -> str:
    return _cut(json.dumps(value, ensure_ascii=False))
