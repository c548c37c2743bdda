"""The structured difference between an expected and an actual value, as
pytest shows a failed `==`: the path to the first differing field, both
values there, and the context around it.

`first_difference(expected, actual)` walks two JSON-like values (dicts,
lists and tuples, strings, numbers, None) in a fixed order (dict keys
sorted) and answers a `Difference`, or None when they are equal.  A
`Difference` prints as a few lines (`lines()`) and as JSON (`to_json()`).
Long values are cut in the middle, never at the point where they differ:
two long strings show the window around their first differing character.

A check that finds a difference returns `problem(summary, difference)`: a
plain `str` (the problem everyone already prints and records) that also
carries the `Difference`, which `--json` reports read with `differences_of`.

What does not live here: which values are compared (the checks:
`forge.runspec.Expectation`, `forge.conformance.oracles`), how a failure is
printed around it (`forge.commands`, the pytest plugin).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

#: The most characters a value is shown with (cut in the middle beyond it).
WIDTH = 100
#: Characters kept on each side of the first differing character of two strings.
AROUND = 30


@attrs.frozen
class Difference:
    """Where two values first differ, and what is there on each side."""

    #: JSONPath-like: `$`, `$.tasks["0.1"].state`, `$.messages.Lead[0]`.
    path: str
    expected: Any
    actual: Any
    #: What differs at `path`: `value`, `type`, `missing` (the actual has
    #: no such field), `extra` (only the actual has it), `length`.
    kind: str = "value"
    #: For two strings: the index of their first differing character.
    offset: int | None = None

    def lines(self, expected_name: str = "expected", actual_name: str = "actual") -> list[str]:
        """The difference in words, pytest-style: where, then both sides."""
        width = max(len(expected_name), len(actual_name))
        head = {"value": "differs", "type": "differs in type", "missing": "is missing",
                "extra": "is not expected", "length": "differs in length"}[self.kind]
        out = [f"at {self.path}: {head}"
               + (f" (first at character {self.offset})" if self.offset is not None else "")]
        if self.kind != "extra":
            out.append(f"  {expected_name:<{width}}: {show(self.expected, self.offset)}")
        if self.kind != "missing":
            out.append(f"  {actual_name:<{width}}: {show(self.actual, self.offset)}")
        return out

    def to_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "offset": self.offset,
                "expected": _jsonable(self.expected), "actual": _jsonable(self.actual),
                "expected_shown": show(self.expected, self.offset),
                "actual_shown": show(self.actual, self.offset)}


_MISSING = object()


def first_difference(expected: Any, actual: Any, path: str = "$") -> Difference | None:
    """The first place `actual` differs from `expected`, or None (equal)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for key in sorted(set(expected) | set(actual), key=str):
            here = _key_path(path, key)
            if key not in actual:
                return Difference(here, expected[key], None, "missing")
            if key not in expected:
                return Difference(here, None, actual[key], "extra")
            found = first_difference(expected[key], actual[key], here)
            if found is not None:
                return found
        return None
    if _is_list(expected) and _is_list(actual):
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            i = min(len(expected), len(actual))
            if len(expected) > i:
                return Difference(f"{path}[{i}]", expected[i], None, "missing")
            return Difference(f"{path}[{i}]", None, actual[i], "extra")
        return None
    if isinstance(expected, str) and isinstance(actual, str):
        if expected == actual:
            return None
        return Difference(path, expected, actual, "value", _first_char(expected, actual))
    if expected == actual and type(expected) is type(actual):
        return None
    if expected == actual:      # 1 and 1.0, True and 1: equal to Python, not to JSON
        return Difference(path, expected, actual, "type")
    kind = "type" if _kind(expected) != _kind(actual) else "value"
    return Difference(path, expected, actual, kind)


def show(value: Any, offset: int | None = None, width: int = WIDTH) -> str:
    """`value` as JSON in at most about `width` characters.  A string with
    `offset` shows the window around that character (`...` where cut); any
    other long value is cut in the middle."""
    if isinstance(value, str) and offset is not None and len(value) + 2 > width:
        start = max(0, offset - AROUND)
        end = min(len(value), offset + AROUND)
        text = json.dumps(value[start:end], ensure_ascii=False)[1:-1]
        return (('"...' if start else '"') + text + ('..."' if end < len(value) else '"'))
    text = json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=True)
    if len(text) <= width:
        return text
    keep = (width - 5) // 2
    return f"{text[:keep]} ... {text[-keep:]}"


def problem(summary: str, difference: Difference | None,
            expected_name: str = "expected", actual_name: str = "actual") -> str:
    """A problem: `summary`, then the difference's lines; a `str` that
    carries the `Difference` for `differences_of`."""
    if difference is None:
        return summary
    text = "\n".join([summary, *("  " + line for line in
                                 difference.lines(expected_name, actual_name))])
    return Problem(text, difference)


class Problem(str):
    """A problem's text that also carries its `Difference`."""

    difference: Difference

    def __new__(cls, text: str, difference: Difference) -> Problem:
        made = super().__new__(cls, text)
        made.difference = difference
        return made

    def __reduce__(self):           # pickles (a worker's problems) with its difference
        return (Problem, (str(self), self.difference))


def differences_of(problems: Iterable[str]) -> list[dict | None]:
    """Each problem's difference as JSON (None: a problem without one)."""
    return [p.difference.to_json() if isinstance(p, Problem) else None for p in problems]


def _first_char(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _key_path(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key) if isinstance(key, str) else key}]"


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if _is_list(value):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _jsonable(value: Any) -> Any:
    """`value` as JSON data (anything JSON cannot hold as its repr)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if _is_list(value):
        return [_jsonable(v) for v in value]
    return repr(value)
