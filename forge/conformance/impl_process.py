"""One running implementation process, as the subprocess adapter sees it:
its pipes, the threads that drain them, the limits on what it may write, and
how it is ended (its process group and every marked descendant).

What does not live here: the protocol (`adapters.SubprocessAdapter`), and
choosing or judging cases (`runner`).
"""

from __future__ import annotations

import collections
import itertools
import os
import queue
import signal
import subprocess
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
#: The environment variable that marks every process an implementation starts.
TOKEN_VAR = "FORGE_IMPL_TOKEN"

_tokens = itertools.count(1)


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
