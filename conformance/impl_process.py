"""One running implementation process, as the subprocess adapter sees it:
its pipes, the threads that drain them, the limits on what it may write, and
how it is ended with every process it started.

Containment: on Linux the implementation runs under the shepherd
(`shepherd.py`, a child subreaper), which ends every descendant whatever it
did to its session or environment; elsewhere, or where prctl is refused,
the kit kills the process group and every process still marked with
`TOKEN_VAR` (`containment` says which one a process got).

What does not live here: the protocol (`adapters.SubprocessAdapter`), and
choosing or judging cases (`runner`).
"""

from __future__ import annotations

import collections
import itertools
import os
import pathlib
import queue
import select
import signal
import subprocess
import sys
import threading
import time

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
#: The wall time one run (one case on one schedule) may take in all, in
#: seconds: far past any honest run of a case, which takes milliseconds even
#: with a round trip per decision, yet it stops an engine that keeps
#: answering just within the per-message timeout (`--max-run-seconds`).
RUN_SECONDS = 120.0
#: The decisions one level-2 run may ask for: a case asks tens, a long
#: exploration prompt thousands (`--max-decisions`).
RUN_DECISIONS = 100_000
#: The environment variable that marks every process an implementation starts.
TOKEN_VAR = "FORGE_IMPL_TOKEN"

#: The shepherd script: run by path, with the standard library only.
SHEPHERD = pathlib.Path(__file__).with_name("shepherd.py")
#: How long the shepherd gets to end the tree and exit when the kit stops it
#: (its own bound, `shepherd.END_WITHIN`, and a margin).
SHEPHERD_GRACE = 4.0
#: `ImplProcess.containment`: the shepherd (a child subreaper) holds every
#: descendant, or only the process group and the token scan do.
SUBREAPER, GROUP = "subreaper", "group"

_tokens = itertools.count(1)
#: The lifeline: a pipe whose write end only this process holds, so every
#: shepherd sees end of file when the kit dies, however it dies.
_lifeline: tuple[int, int] | None = None
_lifeline_lock = threading.Lock()


def lifeline() -> int:
    """The read end of the kit's lifeline (made on first use, kept for good)."""
    global _lifeline
    with _lifeline_lock:
        if _lifeline is None:
            _lifeline = os.pipe()
        return _lifeline[0]


def shepherded() -> bool:
    """Whether implementations run under the shepherd: Linux, with /proc."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


class Overflow:
    """Put on the line queue instead of a line: the implementation wrote too much."""

    def __init__(self, what: str) -> None:
        self.what = what


class ImplProcess:
    """One running implementation: its pipes and the threads draining them.

    Both pipes are read in chunks of `CHUNK` bytes by threads of their own.
    stdout is cut into lines that go to a queue, so a read can time out (a
    pipe read cannot) whatever the implementation writes: a line longer than
    `MAX_MESSAGE_BYTES`, or more than `MAX_PENDING_BYTES` unread, puts an
    `Overflow` on the queue and reading stops.  stderr is drained all the
    time, so a chatty implementation never blocks on a full pipe; only the
    last `STDERR_TAIL` lines of the current case are kept, each cut to
    `STDERR_LINE` characters, so an endless line costs no memory.

    The process leads a session of its own, and its environment carries a
    token (`TOKEN_VAR`) every descendant inherits.  On Linux it runs under
    the shepherd (`popen` is then the shepherd, whose exit mirrors the
    implementation's): `stop` asks it to end the whole tree, which catches
    a descendant that left the session and cleared its environment.  Then,
    everywhere, `stop` kills the process group and every process whose
    environment still holds the token.
    """

    def __init__(self, argv: list[str]) -> None:
        self.token = f"{os.getpid()}-{next(_tokens)}"
        env = {**os.environ, TOKEN_VAR: self.token}
        self.containment = GROUP
        if shepherded():
            self.popen = self._shepherd(argv, env)
        else:
            self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, bufsize=0,
                                          start_new_session=True, env=env)
        self.lines: queue.Queue[bytes | Overflow | None] = queue.Queue()
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._tail_lock = threading.Lock()
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._err_partial = ""
        self._out = threading.Thread(target=self._drain_stdout, daemon=True)
        self._err = threading.Thread(target=self._drain_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def _shepherd(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        """Start `argv` under the shepherd; raises OSError as Popen would when
        the command cannot be started."""
        life = lifeline()
        status_r, status_w = os.pipe()
        try:
            popen = subprocess.Popen(
                [sys.executable, "-I", "-S", str(SHEPHERD), str(life), str(status_w), *argv],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0, start_new_session=True, env=env, pass_fds=(life, status_w))
        finally:
            os.close(status_w)
        try:
            words = _read_status(status_r).split()
        finally:
            os.close(status_r)
        if words[:1] == [SUBREAPER]:
            self.containment = SUBREAPER
        failed = [w for w in words if w.startswith("E") and w[1:].isdigit()]
        if failed:
            popen.wait()
            for pipe in (popen.stdin, popen.stdout, popen.stderr):
                pipe.close()
            code = int(failed[0][1:])
            raise OSError(code, os.strerror(code), argv[0])
        return popen

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
                    self.lines.put(Overflow(f"a line longer than {MAX_MESSAGE_BYTES} bytes"))
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
                self.lines.put(Overflow(f"more than {MAX_PENDING_BYTES} bytes nobody asked for"))
                return False
        self.lines.put(line)
        return True

    def take(self, timeout: float) -> bytes | Overflow | None:
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
                self.stderr.append(cut(line.rstrip("\r"), STDERR_LINE))
            # An endless line keeps only its start (and a mark that it went on).
            self._err_partial = rest if len(rest) <= STDERR_LINE else cut(rest, STDERR_LINE)

    def new_case(self) -> None:
        """Forget the stderr of earlier cases: a report shows this case's own."""
        with self._tail_lock:
            self.stderr.clear()

    # -- the end
    def stop(self) -> list[str]:
        """Kill the process, its group and every marked descendant, reap it;
        the last lines of its stderr."""
        if self.popen.returncode is None:
            # Not reaped yet, so neither its pid nor its group id can have
            # been reused.  The shepherd ends the tree and exits; then the
            # group and the token scan, which are all there is without it.
            if self.containment == SUBREAPER:
                try:
                    self.popen.send_signal(signal.SIGTERM)
                    exit_code(self.popen, SHEPHERD_GRACE)
                except OSError:
                    pass
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


def _read_status(fd: int, timeout: float = 30.0) -> str:
    """The shepherd's status words, read to end of file (its copies close at
    the engine's exec, or when it fails)."""
    data = b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace")


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


def write_to(proc: ImplProcess, data: bytes, timeout: float) -> bool | None:
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


def exit_code(popen: subprocess.Popen, timeout: float) -> int | None:
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


def cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
