"""Flag types with the kit's input limits, and writing output files.

Every numeric flag has a documented range (docs/limits.md): integers fit in
64 bits, seconds are finite and bounded, so no flag value reaches the engine
or the OS as something it cannot represent.  A refusal is click's usage
error, which `forge.cli` prints as one line naming the flag, exit code 2.

Input paths are `InputPath`s, which refuse what the OS cannot look up.
Output paths (`--trace`, `--replay-out`, `--json`, `--junit`, `forge spec
render DIR`) are checked when the flag is read - before any work - and
written with `write_output`, which turns an OS error into an `InputError`
naming the file.

`harness_options` builds the run options' flags from the options table
(`forge.run.options.OPTIONS`: each row's flag, help, default and rule),
shared by `run`, `explore` and `replay`; `harness_kwargs` gives the values
given, by the options' names, as `forge.runspec.spec_from_flags` takes them.

The rules themselves - the bounds and the words of each refusal - are the
core's (`forge.run.values`, by value in `forge.run.options.RULES`), which
the Python API applies to its keywords too: a type here converts the
flag's text and hands the value to its rule (`BoundedInt.of(rule)`), so a
flag and a keyword are refused alike and each bound is written once.

What does not live here: the commands themselves, the error mechanism
(`forge.cli.ForgeGroup`), and the rules (`forge.run`).
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import click

from forge.errors import InputError
from forge.limits import I64_MAX, I64_MIN, MAX_SECONDS, compile_pattern
from forge.harness import DEFAULT_LATENCY
from forge.run.options import OPTIONS, Option
from forge.run.values import FilePath
from forge.run.values import Seconds as _SecondsRule
from forge.run.values import Text as _TextRule
from forge.run.values import Whole, path_problem
from forge.runspec import refuse_pair


class BoundedInt(click.IntRange):
    """An integer in [low, high] (both within 64 bits); help shows the range
    unless it is the whole 64-bit one."""

    def __init__(self, low: int = I64_MIN, high: int = I64_MAX) -> None:
        super().__init__(low, high)
        self.low, self.high = low, high
        if (low, high) == (I64_MIN, I64_MAX):
            self.name = "integer"

    @classmethod
    def of(cls, rule: Whole) -> BoundedInt:
        """The flag type of a core rule (`forge.run.options.RULES`)."""
        return cls(rule.low, rule.high)

    def _describe_range(self) -> str:
        return "" if (self.low, self.high) == (I64_MIN, I64_MAX) else super()._describe_range()

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if len(text) > 30 or not re.fullmatch(r"[-+]?[0-9]+", text, re.ASCII):
                self.fail(f"must be a whole number, got {_show(value)}", param, ctx)
            number = int(text)
        problem = Whole(self.low, self.high).problem(number)
        if problem is not None:
            self.fail(problem, param, ctx)
        return number


class Seconds(click.ParamType):
    """A finite number of seconds in [0, high]; `positive` excludes zero."""

    name = "float"

    def __init__(self, high: float = MAX_SECONDS, positive: bool = False) -> None:
        self.high, self.positive = high, positive

    @classmethod
    def of(cls, rule: _SecondsRule) -> Seconds:
        """The flag type of a core rule (`forge.run.options.RULES`)."""
        return cls(rule.high, rule.positive)

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"must be a number of seconds, got {_show(value)}", param, ctx)
        problem = _SecondsRule(self.high, self.positive).problem(number)
        if problem is not None:
            self.fail(problem, param, ctx)
        return number


class Text(click.ParamType):
    """A string that is valid Unicode: a command line in another encoding (or
    with stray bytes) arrives as lone surrogates, which no run can carry."""

    name = "text"

    def convert(self, value, param, ctx):
        problem = _TextRule().problem(value)
        if problem is not None:
            self.fail(problem, param, ctx)
        return value


TEXT = Text()


class Regex(click.ParamType):
    """A Python regular expression, compiled (`forge.limits.compile_pattern`'s
    rule); its source is kept as `.pattern`."""

    name = "text"

    def convert(self, value, param, ctx):
        if isinstance(value, re.Pattern):
            return value
        try:
            return compile_pattern(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


class InputPath(click.Path):
    """`click.Path` for a file or folder the command reads, refusing first
    what the OS cannot look up at all (a NUL byte, an empty or overlong
    path): click's own check would raise there instead of failing."""

    def convert(self, value, param, ctx):
        if isinstance(value, (str, bytes)):
            problem = FilePath().problem(value)
            if problem:
                self.fail(problem, param, ctx)
        return super().convert(value, param, ctx)


#: The output path that means standard output.
STDOUT = "-"


class OutputPath(click.ParamType):
    """A file (or, with `directory`, a folder) the command can create or
    overwrite; for a file, `-` is standard output."""

    def __init__(self, directory: bool = False) -> None:
        self.directory = directory
        self.name = "directory" if directory else "file"

    def convert(self, value, param, ctx):
        if str(value) == STDOUT and not self.directory:
            return STDOUT
        problem = output_problem(str(value), self.directory)
        if problem:
            self.fail(f"cannot write {_show(value)}: {problem}", param, ctx)
        return str(value)


def output_problem(path: str, directory: bool = False) -> str | None:
    """Why `path` cannot be written (None if it looks writable).

    A check before the work, so a long run does not end in an unwritable
    file; `write_output` still reports what the OS says at write time.
    """
    problem = path_problem(path)
    if problem:
        return problem
    try:
        return _output_problem(Path(path), directory)
    except OSError as e:
        # Asking about the path itself failed: a name longer than the file
        # system allows (ENAMETOOLONG), a loop of links, ...
        return e.strerror or str(e)


def _output_problem(target: Path, directory: bool) -> str | None:
    path = str(target)
    if target.exists():
        if directory:
            if not target.is_dir():
                return "it exists and is not a directory"
            return None if os.access(target, os.W_OK | os.X_OK) else "the directory is not writable"
        if target.is_dir():
            return "it is a directory"
        if not os.access(target, os.W_OK):
            return "the file is not writable"
        return _open_problem(path)
    parent = target.parent
    while not parent.exists() and directory and parent != parent.parent:
        parent = parent.parent  # `mkdir -p` creates the missing levels
    if not parent.is_dir():
        return f"its folder {str(target.parent)!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"its folder {str(parent)!r} is not writable"
    return None


def _open_problem(path: str) -> str | None:
    """Why the existing file at `path` cannot be opened for writing (None if
    it can).  `os.access` says yes to root for files no one can write, such
    as those under /proc, where the open succeeds and the first write fails;
    opening to append and writing nothing asks the OS itself, and changes
    nothing (not even the file's time).  A pipe with no reader yet is writable."""
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
        try:
            os.write(fd, b"")
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return None
        return e.strerror or str(e)
    return None


def write_output(path: str, text: str) -> None:
    """Write `text` to the file at `path` (`-`: standard output).

    Raises:
        InputError: naming the file, when the OS refuses.
    """
    if path == STDOUT:
        click.echo(text, nl=not text.endswith("\n"))
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except (OSError, ValueError) as e:
        raise InputError(f"cannot write this file: {getattr(e, 'strerror', None) or e}",
                         file=path) from None


class LatencyPair(click.ParamType):
    """`OP=SECONDS`: one operation kind's canonical virtual duration."""

    name = "OP=SECONDS"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        op, sep, seconds = str(value).partition("=")
        if not sep or op not in DEFAULT_LATENCY:
            self.fail(f"must be OP=SECONDS with OP one of {', '.join(DEFAULT_LATENCY)}, got "
                      f"{_show(value)}", param, ctx)
        return op, Seconds().convert(seconds, param, ctx)


class RefusePair(click.ParamType):
    """`OP[:PATH]`: a store operation the host refuses, on one path or (no
    path) on every path."""

    name = "OP[:PATH]"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return refuse_pair(str(value))
        except InputError as e:
            self.fail(e.message, param, ctx)


def _flag_type(option: Option) -> click.ParamType:
    """The click type of a run option's flag: its shape's, else its rule's."""
    shapes = {"folder": lambda: InputPath(file_okay=False, exists=True),
              "script": lambda: InputPath(dir_okay=False), "op_seconds": LatencyPair,
              "op_paths": RefusePair, "kinds": lambda: TEXT}
    if option.shape in shapes:
        return shapes[option.shape]()
    rule = option.rule
    if isinstance(rule, Whole):
        return BoundedInt.of(rule)
    if isinstance(rule, _SecondsRule):
        return Seconds.of(rule)
    return TEXT


def harness_options(recorded: bool = False):
    """Decorate a command with the run options' flags (`forge.run.options.
    OPTIONS`, in its order), each flag's value under its option's name.

    With `recorded` (for `forge replay`) no flag has a default: a flag given
    overrides what the replay file records, one left out keeps it.
    """
    def flag(option: Option):
        repeatable = option.shape in ("op_seconds", "op_paths")
        default = None if recorded or repeatable else option.default
        counted = isinstance(option.rule, Whole) and default is not None
        return click.option(option.flag, option.name, type=_flag_type(option), default=default,
                            multiple=repeatable, metavar=option.metavar, show_default=counted,
                            help=option.help)

    def decorate(f):
        for option in reversed(OPTIONS):
            f = flag(option)(f)
        return f

    return decorate


def harness_kwargs(values: dict) -> dict:
    """The run options given among a command's values (None left out), as
    `forge.runspec.spec_from_flags` keywords (the options' names)."""
    # A repeatable flag given no value is `()`: left out, like a None.
    return {o.name: values[o.name] for o in OPTIONS
            if values.get(o.name) is not None and values[o.name] != ()}


def _show(value) -> str:
    text = repr(str(value))
    return text if len(text) <= 60 else text[:57] + "...'"


def flags_given(ctx: click.Context) -> list[str]:
    """The options of ``ctx``'s command given a value (on the command line, or
    by the environment or a default map), named as ``--help`` names them."""
    from click.core import ParameterSource

    return ["/".join(p.opts + p.secondary_opts) for p in ctx.command.params
            if isinstance(p, click.Option) and p.name is not None
            and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT)]
