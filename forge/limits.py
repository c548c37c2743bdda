"""The kit's input limits, in one place (documented in docs/limits.md).

Every input - a prompt, a script, a case, a replay or expectations file, a
flag - is checked against these before it is parsed or used, so no input can
cost unbounded time or memory in a parser, overflow a 64-bit integer, or
reach the engine as a number it cannot represent.  Each limit is far above
any real input; passing one is bad input (exit code 2), named in one line.

What does not live here: the checks themselves (beside each reader), the
one size-limited file read every reader uses (`forge.sim.readlimited`, in
the simulator so that its replay reader uses it too), and the run-time
budgets of a prompt's Lua (`forge.lua`, `forge.engine`).
"""

from __future__ import annotations

import math
import re
from typing import Any

#: Bytes of a prompt file (or a case's prompt text).  Real prompts are a few
#: KiB; the Markdown parser's worst case (nested `![`) costs about 30 us a
#: byte, so this keeps any prompt's parse within a few seconds.
MAX_PROMPT_BYTES = 128 * 1024
#: Bytes of the frontmatter block (a real one is a few hundred).
MAX_FRONTMATTER_BYTES = 64 * 1024
#: Bytes of a model or operator script file.
MAX_SCRIPT_BYTES = 16 * 1024 * 1024
#: Bytes of a case file, an expectations file.
MAX_CASE_BYTES = 16 * 1024 * 1024
#: (A replay file's, `MAX_REPLAY_BYTES`, is the simulator's: `forge.sim.replayfile`.)
#: Files, and bytes in all, of a folder seeding the store (`forge run --store`).
MAX_STORE_FILES = 10_000
MAX_STORE_BYTES = 64 * 1024 * 1024
#: Nesting of arrays/objects (tables) in any JSON or TOML input.
MAX_DEPTH = 64
#: Integers anywhere in a script or case: signed 64-bit, as Lua's.
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
#: The longest virtual span a script delay, case latency or cancel instant may
#: name, in seconds (about 31.7 years): far past any real run, and small
#: enough that nanosecond arithmetic stays exact.
MAX_SECONDS = 1e9
#: Characters of a `-k` selection pattern (a regular expression).
MAX_PATTERN = 1000


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def data_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[tuple, str] | None:
    """The first place where decoded JSON/TOML data breaks the limits, as
    (path, rule), or None.  Iterative, so depth itself cannot overflow the stack.

    Rules: nesting at most `max_depth`; integers within 64 bits; numbers
    finite; strings valid Unicode (no lone surrogates); only JSON types
    (a TOML date or time is refused).
    """
    stack: list[tuple[Any, tuple, int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= max_depth:
                return path, f"nested deeper than {max_depth} levels"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in reversed(list(pairs)):
                if isinstance(key, str) and not _valid_text(key):
                    return path + (key,), "the key is not valid Unicode (a lone surrogate)"
                stack.append((child, path + (key,), depth + 1))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not I64_MIN <= item <= I64_MAX:
                return path, "an integer past 64 bits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return path, "a number that is not finite"
        elif isinstance(item, str):
            if not _valid_text(item):
                return path, "a string that is not valid Unicode (a lone surrogate)"
        else:
            return path, f"a value JSON cannot hold ({type(item).__name__})"
    return None


def render_path(path: tuple) -> str:
    """`("rounds", 2, "reply")` -> `rounds[2].reply`."""
    out = ""
    for part in path:
        out += f"[{part}]" if is_int(part) else (f".{part}" if out else str(part))
    return out


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def compile_pattern(value: str) -> re.Pattern:
    """A `-k` selection pattern, compiled: a regular expression of at most
    `MAX_PATTERN` characters (`forge conformance`, `mutants`, `spec`, and the
    API's `patterns`).

    Raises:
        ValueError: the rule it breaks, worded to follow "must"/"patterns: ".
    """
    if len(value) > MAX_PATTERN:
        raise ValueError(f"must be at most {MAX_PATTERN} characters, got {len(value)}")
    try:
        return re.compile(value)
    except (re.error, RecursionError, OverflowError) as e:
        raise ValueError(f"must be a regular expression ({e}), got {value[:60]!r}") from None
