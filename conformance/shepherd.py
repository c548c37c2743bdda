"""The shepherd: a small process between the kit and a foreign engine that
ends every process the engine starts, wherever it goes.

The kit runs this file as a script (`python -I shepherd.py LIFELINE_FD
STATUS_FD CMD...`, standard library only, no project imports) in place of the
implementation's command.  On Linux it makes itself a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`, unprivileged since Linux 3.4), so every
descendant of the engine that is orphaned - a daemon that double-forked, a
grandchild that called `setsid()` and cleared its environment - is
reparented to the shepherd instead of to init, and stays findable as one of
its descendants.  Then it forks the engine, which inherits the kit's pipes
on stdin, stdout and stderr directly (the shepherd reads none of them and
points its own at /dev/null, so an engine closing stdout is seen at once).

The shepherd ends the whole tree below it, and then itself:

- when the engine exits: its exit is mirrored (the same exit code, or the
  same signal), so the kit reports a crash as it would without a shepherd;
- on SIGTERM, which is how the kit stops an implementation;
- when the kit dies, so no engine outlives its judge: the kit holds the
  write end of a pipe (the lifeline) that no other process gets, and a
  thread of the shepherd waits for its end of file.  (`PR_SET_PDEATHSIG`
  would fire when the kit *thread* that started the shepherd ends, which a
  worker thread does while the engine still serves.)

Ending the tree: scan /proc for the processes whose parent chain leads to
the shepherd, SIGKILL each through a pidfd opened while it is still a
descendant (so a pid recycled between the scan and the signal is never
hit), reap, and repeat until the shepherd has no child left - a fork racing
the scan is caught on the next round, since an orphan can only land here.

When prctl is refused (not Linux, a seccomp filter), the shepherd writes
`direct` on the status pipe and execs the command in its own place: the kit
then has only its process group and `FORGE_IMPL_TOKEN` scan, and says so.

The status pipe (fd STATUS_FD, closed on exec) carries one word first -
`subreaper` or `direct` - and then, only if the command could not be
started, `E` and the errno; the kit reads it to the end before it speaks to
the engine.

What does not live here: reading and writing the protocol, the kit's side of
the process (`impl_process.ImplProcess`).
"""

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
#: How long ending the tree may take before the shepherd gives up on a
#: descendant that does not die (one stuck in the kernel): the kit's own
#: group and token kill follow.
END_WITHIN = 3.0


class Stop(Exception):
    """Raised by the signal handler: the kit (or its death) asks for the end."""


def _stop(signum, frame):
    raise Stop


def _prctl(option, value):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents():
    """pid -> parent pid, for every process /proc shows."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            found[int(entry)] = int(fields[1])
    return found


def descendants(root):
    """The pids below `root`, from one scan of /proc."""
    children = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_all(pids, root):
    """SIGKILL each of `pids` that is still below `root`, through pidfds when
    the kernel has them (Linux 5.3): with its pidfd held a pid cannot be
    recycled, so a second scan tells which are still ours."""
    fds = {}
    for pid in pids:
        try:
            fds[pid] = os.pidfd_open(pid)
        except (AttributeError, OSError):
            fds[pid] = None
    still = set(descendants(root)) if any(fd is not None for fd in fds.values()) else set()
    for pid, fd in fds.items():
        try:
            if fd is None:
                os.kill(pid, signal.SIGKILL)
            elif pid in still:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)


def _reap():
    """Reap every exited child; whether any child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_tree():
    """Kill every descendant and reap them all (bounded by `END_WITHIN`)."""
    me = os.getpid()
    deadline = time.monotonic() + END_WITHIN
    while time.monotonic() < deadline:
        below = descendants(me)
        kill_all(below, me)
        if not _reap() and not below:
            return
        time.sleep(0.005)


def _mirror(status):
    """Exit as the engine did: its code, or its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1)               # a signal the process cannot take by default
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _start(argv, status):
    """The engine's side of the fork: exec, or report errno on the status pipe."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(status, f"E{e.errno}".encode())
    os._exit(127)


def _watch(lifeline):
    """Wait for the kit to end (its end of the lifeline closes), then stop."""
    try:
        while os.read(lifeline, 64):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(words):
    lifeline, status, argv = int(words[0]), int(words[1]), words[2:]
    os.set_inheritable(status, False)
    os.set_inheritable(lifeline, False)
    if not _prctl(PR_SET_CHILD_SUBREAPER, 1):
        os.write(status, b"direct ")
        _start(argv, status)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _stop)
    os.write(status, b"subreaper ")
    engine = os.fork()
    if engine == 0:
        os.close(lifeline)
        _start(argv, status)
    os.close(status)
    threading.Thread(target=lambda: _watch(lifeline), daemon=True).start()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    code = None
    try:
        while code is None:
            pid, wait_status = os.wait()
            if pid == engine:
                code = wait_status
    except (Stop, ChildProcessError):
        pass
    # Ignore further stop requests: the tree is ended once, to the end.
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    end_tree()
    if code is None:
        os._exit(0)
    _mirror(code)


if __name__ == "__main__":
    main(sys.argv[1:])
