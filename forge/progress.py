"""Progress of a long command, readable on a terminal and in a CI log.

On a terminal, a bar redrawn in place (click's progress bar: done/total,
elapsed time, an estimate of the time left, the current item); anywhere
else (a CI log, a file), one plain line every `every` seconds and one at the
end - `mutants: 12/40 (30%), 1m05s elapsed, about 2m32s left` - so a log
shows a job is alive without a line per item.  Neither uses colour or
escape codes beyond the carriage return, so `NO_COLOR` and `TERM=dumb`
hold (with `TERM=dumb` the plain lines are used on a terminal too).

The one-line hook: `show = reporter(total, "label")`, then `show(done)` or
`show(done, item)` after each item.  `plain_counts` renders a count table
in words (`298 ok, 2 failed`) for summaries, instead of a Python repr.

Progress reads the wall clock, which is why it lives with the commands and
never in the engine or the simulator.  What does not live here: counting
the work (each command does).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, TextIO, cast

import click

__all__ = ["Progress", "duration", "plain_counts", "reporter"]

#: Seconds between two plain progress lines in a log.
DEFAULT_EVERY = 10.0


def plain_counts(counts: Mapping[str, int], empty: str = "none") -> str:
    """`{'ok': 298, 'failed': 2}` as `298 ok, 2 failed` (in the mapping's order)."""
    return ", ".join(f"{n} {name}" for name, n in counts.items()) or empty


def duration(seconds: float) -> str:
    """`7s`, `1m05s`, `2h03m`: a wall-clock duration for people."""
    whole = max(0, int(round(seconds)))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _interactive(stream: IO[str]) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class Progress:
    """Progress through `total` items, on `stream` (standard error by default).

    Use it as a context manager, or call `close()`; `update(done, item)`
    after each item.
    """

    def __init__(self, total: int, label: str, *, stream: IO[str] | None = None,
                 every: float = DEFAULT_EVERY, clock: Callable[[], float] = time.monotonic,
                 interactive: bool | None = None) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.closed = False
        self._last_line = self.started
        self.interactive = _interactive(self.stream) if interactive is None else interactive
        self._bar: Any = None
        if self.interactive:
            self._bar = click.progressbar(length=self.total or 1, label=label, file=cast(TextIO, self.stream),
                                          show_eta=True, show_percent=False, show_pos=True,
                                          item_show_func=lambda item: item, width=24)
            self._bar.__enter__()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def line(self) -> str:
        """The plain progress line: done/total, percent, elapsed, estimate."""
        elapsed = self.elapsed()
        text = f"{self.label}: {self.done}/{self.total}"
        if self.total:
            text += f" ({100 * self.done // self.total}%)"
        text += f", {duration(elapsed)} elapsed"
        if 0 < self.done < self.total:
            text += f", about {duration(elapsed / self.done * (self.total - self.done))} left"
        return text

    def update(self, done: int, item: str | None = None) -> None:
        """`done` items of `total` are finished (`item` the last one, if named)."""
        if self.closed:
            return
        step, self.done = max(0, done - self.done), max(self.done, done)
        if self._bar is not None:
            self._bar.label = f"{self.label} ({duration(self.elapsed())} elapsed)"
            self._bar.update(step, item)
        elif self.done >= self.total or self.clock() - self._last_line >= self.every:
            self._last_line = self.clock()
            self._write(self.line())
        if self.done >= self.total:
            self.close()

    def close(self) -> None:
        """End the bar (a terminal gets its line back); idempotent."""
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass        # the log is gone; the work goes on


def interrupted(show: Callable[..., None], found: str) -> None:
    """After Ctrl-C: end `reporter`'s bar `show` and say, on stderr, how far
    the work got and what it found so far (`found`); the command then exits
    130 (`forge.cli`)."""
    import click

    bar = show.__self__  # type: ignore[attr-defined]
    bar.close()
    click.echo(f"interrupted after {bar.done} of {bar.total} {bar.label}; {found}", err=True)


def reporter(total: int, label: str, **options: Any) -> Callable[..., None]:
    """The one-line hook: `show = reporter(n, "schedules")`, then `show(done[, item])`.

    The bar ends by itself when `done` reaches `total`.
    """
    return Progress(total, label, **options).update
