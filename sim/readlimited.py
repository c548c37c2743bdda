"""The kit's one size-limited file read: a file's bytes (`read_limited`) or its UTF-8 text (`read_text`).

Every input file the kit reads - a prompt, a script, a case, a trace, a
scenario, a replay file - is read here, held to its size limit without
reading past it, so no file can cost unbounded memory before it is parsed.
A named pipe (a FIFO, `<(...)`) is opened without waiting for a writer - a
plain `open` would wait forever for one - and read as its writer writes;
one that stays silent for `PIPE_SILENCE_S` is refused, and one that keeps
writing stops at the limit.

It lives in the simulator, the kit's bottom layer, because the replay
file's reader (`forge.sim.replayfile`) needs it and `forge.sim` imports
nothing else of the project; `forge.limits` offers it to the rest of the
kit beside the limits themselves.  What does not live here: the limits
(`forge.limits`), and the words of a refusal, which each reader gives in its
own terms (the file's kind, its error type).
"""

from __future__ import annotations

import errno
import os
import select
import stat

#: Seconds a named pipe may stay silent (no writer yet, or a writer that
#: writes nothing more and does not close) before it is refused.
PIPE_SILENCE_S = 10.0


class TooLarge(ValueError):
    """A file past its size limit."""


class NotUTF8(ValueError):
    """A file whose bytes are not UTF-8: the first bad byte (`start`, from 0) and its line."""

    def __init__(self, start: int, line: int) -> None:
        super().__init__(f"not valid UTF-8 (byte {start})")
        self.start, self.line = start, line


def read_limited(path, limit: int) -> bytes:
    """The file's bytes, refusing one past `limit` without reading it all.

    Raises:
        OSError: the file cannot be read, or is a pipe that stayed silent.
        TooLarge: it is larger than `limit` bytes.
    """
    # The descriptor alone, no file object over it: a file object's own
    # checks cost a small prompt's read two more system calls (a read that
    # follows a run, its caches cold, costs 3x one made alone).
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        status = os.fstat(fd)
        if stat.S_ISFIFO(status.st_mode):
            data = _read_pipe(fd, limit + 1)
        else:
            if not stat.S_ISREG(status.st_mode):
                # A device or /proc: read as it blocks (a regular file's
                # reads never wait, whatever the flag says).
                os.set_blocking(fd, True)
            # A buffer of the size the file says it has (one byte more, to
            # see it grew), not of the limit: a read of `limit + 1` bytes
            # allocates them all, which cost a small prompt's read 5x.
            want = min(status.st_size, limit) + 1
            data = os.read(fd, want)
            if len(data) == want and want <= limit:     # it grew, or says 0 (/proc, a device)
                data += os.read(fd, limit + 1 - want)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"larger than the limit of {limit} bytes (docs/limits.md)")
    return data


def read_text(path, limit: int) -> str:
    """The file's UTF-8 text, read as `read_limited` reads it.

    Raises:
        OSError: as `read_limited`.
        TooLarge: as `read_limited`.
        NotUTF8: bytes that are not UTF-8.
    """
    data = read_limited(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotUTF8(e.start, data[:e.start].count(b"\n") + 1) from None


def _read_pipe(fd: int, most: int) -> bytes:
    """Up to `most` bytes of a non-blocking pipe, until its writer closes it."""
    chunks, got = [], 0
    while got < most:
        ready, _, _ = select.select([fd], [], [], PIPE_SILENCE_S)
        if not ready:
            raise OSError(errno.ETIMEDOUT, f"a named pipe that stayed silent for "
                                           f"{PIPE_SILENCE_S:g} s (no writer, or one "
                                           "that neither writes nor closes it)")
        try:
            chunk = os.read(fd, min(1 << 20, most - got))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
