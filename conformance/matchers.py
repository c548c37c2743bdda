"""Expectations against observations: the matcher language of a case's `[expect]`.

An expectation is compared with an observation by these rules:

- a plain scalar matches an equal scalar (numbers by value, so `1` matches
  `1.0`; a boolean matches only a boolean);
- a plain table matches as a subset: every key it names must match, keys it
  does not name are ignored;
- a plain list matches element-wise and must have the same length;
- an empty table matches an empty table, `[]` or `{}` alike (the spec's
  equivalence, `empty_table`: an empty Lua table has no shape);
- a *matcher table* is a table whose keys are all matcher names, and all of
  them must hold:
  `{exact = v}` (deep equality, no subset rule), `{contains = "s"}` (a string
  holding `s`), `{regex = "r"}` (a string where `re.search` finds `r`),
  `{absent = true}` (the key is missing or null; `false`: it is there),
  `{any_of = [e, ...]}` (one of the expectations matches),
  `{all_of = [e, ...]}` (every one of them matches),
  `{subsequence = [e, ...]}` (a list holding matches for the `e`s in this
  order, gaps allowed), `{none = [e, ...]}` (a list where no element
  matches any of the `e`s), `{once = [e, ...]}` (a list where each `e`
  matches exactly one element), `{length = n}` (a list, string or table of
  size n).  Keys of one matcher table combine, so
  `{subsequence = [a, b], none = [c]}` asks for both.
  To match a table that really has only such keys, write `{exact = {...}}`.
  A table whose one key is a near miss of a matcher name (`{regx = "h"}`)
  is a plain table - a store path or task id may be any word - but when it
  does not match, its mismatch says which matcher it may have meant.

`compare` also returns two *views* - the expectation and the observation cut
down to what the expectation mentions, with every part that matched shown as
observed - so a unified diff of the two shows exactly the mismatches.

What does not live here: loading cases (`case`) and deciding which schedules
to observe (`runner`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from forge import schemawording
from forge.conformance.catalogue import did_you_mean
from forge.conformance.empty_table import empty_table

MATCHER_KEYS = frozenset({"exact", "contains", "regex", "absent", "any_of", "all_of", "subsequence", "none",
                          "once", "length"})

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class _Missing:
    """The value at a key the observation does not have."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@attrs.frozen
class Comparison:
    """The outcome of comparing one expectation with one observation."""

    problems: tuple[str, ...]
    #: The expectation where it failed, the observed value where it held.
    expected_view: Any
    #: The observation cut down to the keys the expectation names.
    observed_view: Any

    @property
    def ok(self) -> bool:
        return not self.problems


def is_matcher(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(k in MATCHER_KEYS for k in value)


def match(expected: Any, observed: Any) -> list[str]:
    """Readable mismatches such as `tasks."0.0".state: expected "done", got "running"`."""
    return list(compare(expected, observed).problems)


def compare(expected: Any, observed: Any) -> Comparison:
    problems: list[str] = []
    exp_view, obs_view = _walk(expected, observed, (), problems)
    return Comparison(tuple(problems), exp_view, obs_view)


def render_path(parts: tuple[str | int, ...]) -> str:
    """`("tasks", "0.0", "state")` -> `tasks."0.0".state`; `("logs", 2)` -> `logs[2]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            key = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            out += ("." if out else "") + key
    return out or "<root>"


def show(value: Any) -> str:
    if value is MISSING:
        return "nothing (no such key)"
    # Long values are cut in mismatch messages; the diff shows them whole.
    return schemawording.show(value)


def check(expected: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """Malformed matcher tables in an expectation, as (path, message) pairs.

    The path ends at the matcher key at fault, e.g. `("error", "message", "regex")`.
    """
    out: list[tuple[tuple[str | int, ...], str]] = []
    if is_matcher(expected):
        for key, arg in expected.items():
            here = path + (key,)
            if key == "contains" and not isinstance(arg, str):
                out.append((here, f"expected a string, got {show(arg)}"))
            elif key == "regex":
                if not isinstance(arg, str):
                    out.append((here, f"expected a string, got {show(arg)}"))
                else:
                    try:
                        re.compile(arg)
                    except re.error as e:
                        out.append((here, f"invalid regular expression: {e}"))
            elif key == "absent" and not isinstance(arg, bool):
                out.append((here, f"expected true or false, got {show(arg)}"))
            elif key == "length" and (isinstance(arg, bool) or not isinstance(arg, int) or arg < 0):
                out.append((here, f"expected a non-negative integer, got {show(arg)}"))
            elif key in ("any_of", "all_of", "subsequence", "none", "once"):
                if not isinstance(arg, list) or (key in ("any_of", "all_of") and not arg):
                    size = "non-empty " if key in ("any_of", "all_of") else ""
                    out.append((here, f"expected a {size}list, got {show(arg)}"))
                else:
                    for i, item in enumerate(arg):
                        out.extend(check(item, here + (i,)))
    elif isinstance(expected, dict):
        for key, value in expected.items():
            out.extend(check(value, path + (key,)))
    elif isinstance(expected, list):
        for i, value in enumerate(expected):
            out.extend(check(value, path + (i,)))
    return out


# -- the walk ------------------------------------------------------------------------------

def _walk(exp: Any, obs: Any, path: tuple, problems: list[str]) -> tuple[Any, Any]:
    """Compare, appending mismatches; returns the (expected, observed) views."""
    if is_matcher(exp):
        return _walk_matcher(exp, obs, path, problems)
    if isinstance(exp, dict) and len(exp) == 1:
        # `{regx = "h"}` is a plain table with one key; if it does not match,
        # the first mismatch it caused says which matcher it may have meant.
        before = len(problems)
        views = _walk_value(exp, obs, path, problems)
        if len(problems) > before:
            problems[before] += _misspelt_matcher(next(iter(exp)))
        return views
    return _walk_value(exp, obs, path, problems)


def _misspelt_matcher(key: str) -> str:
    """A hint when `key` is a near miss of a matcher name, or ""."""
    if key in MATCHER_KEYS:
        return ""
    hint = did_you_mean([key], sorted(MATCHER_KEYS))
    return f"; `{key}` is not a matcher name{hint}" if hint else ""


def _walk_value(exp: Any, obs: Any, path: tuple, problems: list[str]) -> tuple[Any, Any]:
    """`_walk` for an expectation that is not a matcher table."""
    # The path is rendered only for a mismatch: most nodes match.
    if obs is MISSING:
        problems.append(f"{render_path(path)}: expected {show(exp)}, got {show(obs)}")
        return exp, MISSING
    if empty_table(exp) and empty_table(obs):
        return obs, obs     # `[]` and `{}` are one empty Lua table (the equivalence)
    if isinstance(exp, dict):
        if not isinstance(obs, dict):
            problems.append(f"{render_path(path)}: expected a table, got {show(obs)}")
            return exp, obs
        exp_view, obs_view = {}, {}
        for key, sub in exp.items():
            e, o = _walk(sub, obs.get(key, MISSING), path + (key,), problems)
            if e is not MISSING:
                exp_view[key] = e
            if o is not MISSING:
                obs_view[key] = o
        return exp_view, obs_view
    if isinstance(exp, list):
        if not isinstance(obs, list):
            problems.append(f"{render_path(path)}: expected a list, got {show(obs)}")
            return exp, obs
        if len(exp) != len(obs):
            problems.append(f"{render_path(path)}: expected {len(exp)} items, got {len(obs)}")
        exp_view, obs_view = [], []
        for i in range(max(len(exp), len(obs))):
            if i < len(exp) and i < len(obs):
                e, o = _walk(exp[i], obs[i], path + (i,), problems)
                exp_view.append(e)
                obs_view.append(o)
            elif i < len(exp):
                exp_view.append(exp[i])
            else:
                obs_view.append(obs[i])
        return exp_view, obs_view
    if _same(exp, obs):
        return obs, obs
    problems.append(f"{render_path(path)}: expected {show(exp)}, got {show(obs)}")
    return exp, obs


def _walk_matcher(m: dict, obs: Any, path: tuple, problems: list[str]) -> tuple[Any, Any]:
    before = len(problems)
    for key, arg in m.items():
        problem = _MATCHERS[key](arg, obs, path)
        if problem is not None:
            problems.append(f"{render_path(path)}: {problem}")
    if len(problems) == before:
        return obs, obs
    return m, obs


def _problems(exp: Any, obs: Any, path: tuple) -> list[str]:
    found: list[str] = []
    _walk(exp, obs, path, found)
    return found


def _m_exact(arg: Any, obs: Any, path: tuple) -> str | None:
    if obs is not MISSING and _deep_equal(arg, obs):
        return None
    return f"expected exactly {show(arg)}, got {show(obs)}"


def _m_contains(arg: str, obs: Any, path: tuple) -> str | None:
    if isinstance(obs, str) and arg in obs:
        return None
    return f"expected a string containing {show(arg)}, got {show(obs)}"


def _m_regex(arg: str, obs: Any, path: tuple) -> str | None:
    if isinstance(obs, str) and re.search(arg, obs):
        return None
    return f"expected a string matching /{arg}/, got {show(obs)}"


def _m_absent(arg: bool, obs: Any, path: tuple) -> str | None:
    present = obs is not MISSING and obs is not None
    if present != arg:
        return None
    return f"expected no value, got {show(obs)}" if arg else f"expected a value, got {show(obs)}"


def _m_any_of(arg: list, obs: Any, path: tuple) -> str | None:
    if any(not _problems(alt, obs, path) for alt in arg):
        return None
    return f"expected any of {show(arg)}, got {show(obs)}"


def _m_all_of(arg: list, obs: Any, path: tuple) -> str | None:
    for i, alt in enumerate(arg):
        problems = _problems(alt, obs, path)
        if problems:
            return f"all_of item {i}: {problems[0]}"
    return None


def _m_subsequence(arg: list, obs: Any, path: tuple) -> str | None:
    if not isinstance(obs, list):
        return f"expected a list holding the subsequence {show(arg)}, got {show(obs)}"
    pos, last = 0, None
    for i, item in enumerate(arg):
        # Taking the earliest element that matches leaves the most room for
        # the rest, so a greedy scan finds a subsequence whenever one exists.
        while pos < len(obs) and _problems(item, obs[pos], path + (pos,)):
            pos += 1
        if pos == len(obs):
            after = "" if last is None else f" after {render_path(path + (last,))}"
            return f"subsequence item {i} {show(item)} not found{after}"
        last = pos
        pos += 1
    return None


def _m_none(arg: list, obs: Any, path: tuple) -> str | None:
    if not isinstance(obs, list):
        return f"expected a list holding none of {show(arg)}, got {show(obs)}"
    for i, item in enumerate(arg):
        for pos, element in enumerate(obs):
            if not _problems(item, element, path + (pos,)):
                return (f"none item {i} {show(item)} matches "
                        f"{render_path(path + (pos,))}: {show(element)}")
    return None


def _m_once(arg: list, obs: Any, path: tuple) -> str | None:
    if not isinstance(obs, list):
        return f"expected a list holding each of {show(arg)} once, got {show(obs)}"
    for i, item in enumerate(arg):
        hits = [pos for pos, element in enumerate(obs)
                if not _problems(item, element, path + (pos,))]
        if len(hits) != 1:
            where = ", ".join(render_path(path + (pos,)) for pos in hits[:5])
            return (f"once item {i} {show(item)} matches {len(hits)} elements"
                    + (f" ({where})" if hits else ""))
    return None


def _m_length(arg: int, obs: Any, path: tuple) -> str | None:
    if isinstance(obs, (list, str, dict)) and len(obs) == arg:
        return None
    if isinstance(obs, (list, str, dict)):
        return f"expected length {arg}, got length {len(obs)}: {show(obs)}"
    return f"expected something of length {arg}, got {show(obs)}"


_MATCHERS = {
    "exact": _m_exact,
    "contains": _m_contains,
    "regex": _m_regex,
    "absent": _m_absent,
    "any_of": _m_any_of,
    "all_of": _m_all_of,
    "subsequence": _m_subsequence,
    "none": _m_none,
    "once": _m_once,
    "length": _m_length,
}


def _same(a: Any, b: Any) -> bool:
    """Scalar equality as JSON sees it: 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _deep_equal(a: Any, b: Any) -> bool:
    if empty_table(a) and empty_table(b):
        return True
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(
            _deep_equal(x, y) for x, y in zip(a, b))
    return _same(a, b)
