"""The CPU-time backstop: what stops a run that no instruction count can.

What lives here: the per-run CPU deadline a runtime hands its prelude, the
registry of the Lua threads that run a prompt's code (each by its
`lua_State` address), and the watchdog thread that, once a run is past its
deadline, makes every registered thread's count hook fire at each
instruction.  What does not: the hook itself and the error it raises
(prelude.lua), and what a run does with that error (the engine ends it with
kind `Backstop`).

Why a backstop.  The instruction budget counts the virtual machine's
instructions, and one instruction can do work that grows with its data:
`s .. 'y'` copies `s`, `a < b` compares two long strings byte by byte.  A
loop of them on 100 MB strings ran for minutes inside the budget.  Counting
that work would mean charging inside Lua's own operators; instead every run
has a CPU-time limit.

How.  The count hook (every 1000 instructions) reads the process's CPU clock
(`os.clock`) and, past the deadline, ends the run.  That alone can take
1000 long instructions to notice (a minute of `..` on 100 MB), so a
watchdog thread - lupa releases the GIL while Lua runs - waits for the
deadline and then calls `lua_sethook` (the C API lupa's module exports,
through ctypes) with a count of 1 on each registered thread: Lua's manual
makes `lua_sethook` the one call that may come from outside the running
thread, as lua.c's interrupt handler does.  The next instruction fires the
hook, which ends the run.  Measured: a loop of `..` on a 100 MB string
stops within 0.1 s of the deadline.  A thread is registered (and kept alive
by the prelude) while it may run a prompt's code, and unregistered under the
registry's lock before Lua can free it, so the watchdog never touches a
freed `lua_State`.

What is deterministic.  Nothing about where the backstop stops a run: the
CPU clock depends on the machine and its load.  A run that stays under its
deadline is untouched (the hook's clock read decides nothing), so every
other run is as deterministic as before; a run the backstop stops ends with
its own error kind, `Backstop`, whose message says so, and the kit never
records it as a schedule's result or writes it to a replay file.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
import weakref

import lupa.lua55 as lua55

#: The CPU seconds a run may use by default: far past any honest prompt of
#: the kit's catalogue (the slowest takes about 3 s) and inside the
#: guarantee of docs/limits.md (every run ends within 10 s of CPU).
DEFAULT_MAX_CPU_SECONDS = 8.0
#: The run error kind of a run the backstop ended.
BACKSTOP_KIND = "Backstop"
#: How often the watchdog looks at the clock, in seconds.
POLL_SECONDS = 0.02
BACKSTOP_MESSAGE = (
    "CPU time limit reached: the run used more than {s:g} s of CPU time; this ending is not "
    "deterministic (where the limit stops a run depends on the machine and its load, so the "
    "same prompt may end differently elsewhere)"
)

_api = ctypes.CDLL(lua55.__file__)
_api.lua_gethook.restype = ctypes.c_void_p
_api.lua_gethook.argtypes = [ctypes.c_void_p]
_api.lua_gethookmask.restype = ctypes.c_int
_api.lua_gethookmask.argtypes = [ctypes.c_void_p]
_api.lua_sethook.restype = None
_api.lua_sethook.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]


@functools.lru_cache(maxsize=8)
def message(seconds: float) -> bytes:
    # Every run's reset hands it over; kept per limit rather than formatted each time.
    return BACKSTOP_MESSAGE.format(s=seconds).encode()


class Threads:
    """One runtime's registered threads and its current deadline (process
    CPU seconds, `time.process_time`), shared with the watchdog."""

    __slots__ = ("__weakref__", "addresses", "deadline", "lock", "tightened", "watcher")

    def __init__(self) -> None:
        self.addresses: set[int] = set()
        self.deadline = float("inf")
        self.lock = threading.Lock()
        self.tightened = False
        #: The watchdog thread that watches these threads (None: none yet).
        self.watcher: threading.Thread | None = None

    def register(self, shown: bytes, alive: bool) -> None:
        """The prelude's call: `shown` is `tostring(thread)` ("thread: 0x...")."""
        address = int(shown.rsplit(b"0x", 1)[1], 16)
        with self.lock:
            if alive:
                self.addresses.add(address)
            else:
                self.addresses.discard(address)

    def start(self, seconds: float) -> float:
        """A run starts with `seconds` of CPU and no thread registered: its
        deadline, watched from now."""
        with self.lock:
            self.addresses.clear()
            self.deadline = time.process_time() + seconds
            self.tightened = False
        # A runtime reused run after run is watched already: only a new one,
        # or one whose watchdog is gone (in a forked child), is handed over.
        watcher = self.watcher
        if watcher is None or watcher is not _watcher or not watcher.is_alive():
            _watch(self)
        return self.deadline

    def stop(self) -> None:
        """The run has ended: nothing to watch, and no thread to touch."""
        with self.lock:
            self.deadline = float("inf")
            self.addresses.clear()

    def tighten(self) -> None:
        """Past the deadline: every registered thread's hook fires at its next instruction."""
        with self.lock:
            if self.tightened:
                return
            self.tightened = True
            for address in self.addresses:
                mask = _api.lua_gethookmask(address)
                if mask:
                    _api.lua_sethook(address, _api.lua_gethook(address), mask, 1)


_watched: weakref.WeakSet[Threads] = weakref.WeakSet()
_watcher: threading.Thread | None = None
_watcher_lock = threading.Lock()


def _watch(threads: Threads) -> None:
    global _watcher
    with _watcher_lock:
        _watched.add(threads)
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_loop, name="forge-cpu-backstop", daemon=True)
            _watcher.start()
        threads.watcher = _watcher


def _loop() -> None:
    while True:
        time.sleep(POLL_SECONDS)
        now = time.process_time()
        for threads in list(_watched):
            if now > threads.deadline and not threads.tightened:
                threads.tighten()
