"""The rule of a value a front end takes: its Python type, its bounds, the words of a refusal.

A rule (`Whole`, `Seconds`, `Text`, `Choice`, `Switch`, `FilePath`,
`Pattern`) says what it accepts (`accepts`, the Python type the API takes)
and what is wrong with a value of that type (`problem`, worded without the
value's name).  A front end names the value its own way: the command line's
click types (`forge.commands.params`) convert the flag's text and hand it to
the rule, so the refusal reads `--seed must be at most ...`; the Python API
applies `check_value`, so it reads `seed must be at most ...`.

What does not live here: which value follows which rule (the options table,
`forge.run.options`), the flags themselves (`forge.commands.params`).
"""

from __future__ import annotations

import math
import os
from typing import Any

import attrs

from forge.errors import InputError
from forge.limits import I64_MAX, I64_MIN, MAX_SECONDS, compile_pattern


def shown(value: Any, limit: int = 60) -> str:
    """A refused value as a refusal shows it: its Python type and its repr,
    cut at `limit` characters."""
    if value is None:
        return "None"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user's object whose repr breaks is still named
        text = "..."
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(value).__name__} {text}"


def _brief_text(value: Any) -> str:
    text = repr(str(value))
    return text if len(text) <= 60 else text[:57] + "...'"


@attrs.frozen
class Whole:
    """A whole number in [low, high]: a 64-bit integer unless narrower."""

    low: int = I64_MIN
    high: int = I64_MAX
    kind = "a whole number (an int)"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        high = "2^63-1" if self.high == I64_MAX else str(self.high)
        return f"a whole number from {self.low} to {high}"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def problem(self, number: int) -> str | None:
        if number < self.low:
            return f"must be at least {self.low}, got {number}"
        if number > self.high:
            return f"must be at most {self.high}, got {number}"
        return None


@attrs.frozen
class Seconds:
    """A finite number of seconds in [0, high] (`positive`: above 0)."""

    high: float = MAX_SECONDS
    positive: bool = False
    kind = "a number of seconds (an int or a float)"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        low = "above 0" if self.positive else "from 0"
        return f"a number of seconds {low} to {self.high:g}"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    def problem(self, number: float) -> str | None:
        if not math.isfinite(number):
            return f"must be a finite number of seconds, got {_brief_text(number)}"
        if self.positive and number <= 0:
            return f"must be a positive number of seconds, got {number:g}"
        if number < 0:
            return f"must be a non-negative number of seconds, got {number:g}"
        if number > self.high:
            return f"must be at most {self.high:g} seconds, got {number:g}"
        return None


@attrs.frozen
class Text:
    """A string that is valid Unicode (no lone surrogates, which a command
    line in another encoding brings, and no run can carry)."""

    kind = "a string"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        return "a string"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, text: str) -> str | None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"must be valid UTF-8 text (a stray byte at character {e.start})"
        return None


@attrs.frozen
class Choice:
    """One of a few names."""

    choices: tuple[str, ...]
    kind = "a string"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        return "one of " + ", ".join(self.choices)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, name: str) -> str | None:
        if name in self.choices:
            return None
        return f"must be one of {', '.join(self.choices)}, got {_brief_text(name)}"


@attrs.frozen
class Switch:
    """True or False."""

    kind = "True or False"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        return "true or false"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def problem(self, value: bool) -> str | None:
        return None


@attrs.frozen
class FilePath:
    """A path the OS can look up (a file's or a folder's; whether it is
    there is for its reader to say)."""

    kind = "a path (a str or an os.PathLike)"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        return "a path"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str | os.PathLike)

    def problem(self, value: Any) -> str | None:
        path = os.fsdecode(os.fspath(value))
        problem = path_problem(path)
        return None if problem is None else f"cannot read {_brief_text(path)}: {problem}"


def path_problem(path: str) -> str | None:
    """Why the OS cannot look `path` up at all (None if it can)."""
    if not path or "\0" in path:
        return "not a usable path"
    try:
        if len(os.fsencode(path)) > 4096:
            return "the path is longer than 4096 bytes"
    except UnicodeEncodeError:
        return "not a usable path"
    return None


@attrs.frozen
class Pattern:
    """A `-k` selection pattern: a regular expression within
    `forge.limits.compile_pattern`'s rule."""

    kind = "a regular expression (a str)"

    def describe(self) -> str:
        """The rule in a few words, as a record's checks word it."""
        return "a regular expression"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def problem(self, value: str) -> str | None:
        try:
            compile_pattern(value)
        except ValueError as e:
            return str(e)
        return None


Rule = Whole | Seconds | Text | Choice | Switch | FilePath | Pattern


def check_value(rule: Rule, value: Any, name: str, where: str | None = None) -> Any:
    """`value`, given to the Python API as `name`, checked by `rule`: its
    Python type first (the API converts no text: `"5"` is not a whole
    number there), then the rule.  Returns `value`.

    Raises:
        InputError: naming `where` (the function) and `name`, worded as the
            command line words the same refusal with `name` for the flag.
    """
    if not rule.accepts(value):
        raise InputError(f"{name} must be {rule.kind}, got {shown(value)}", file=where)
    problem = rule.problem(value)
    if problem is not None:
        raise InputError(f"{name} {problem}", file=where)
    return value
