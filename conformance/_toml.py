"""Reading the suite's TOML files (cases, catalogue, expectation files) with
errors that name the file and the line.

`tomllib` reports a syntax error as text ending in `(at line L, column C)`;
this module turns that into an `InputError` with `line=L`, so every TOML
refusal in the kit reads `FILE:LINE: TOML: what is wrong (column C)`.

Limits (docs/limits.md): a file past `forge.limits.MAX_CASE_BYTES` is refused
before it is parsed; nesting past `MAX_DEPTH`, integers past 64 bits,
`inf`/`nan` and TOML dates or times anywhere are refused after parsing
(`check_data`), before any schema sees the data, naming the line as schema
errors do (`line_of`, the one line finder for the suite's TOML files).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from forge.errors import InputError
from forge.limits import MAX_CASE_BYTES, data_problem, render_path
from forge.sim.readlimited import NotUTF8, TooLarge, read_text

_AT = re.compile(r"\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_AT_END = re.compile(r"\s*\(at end of document\)$")


def read_toml(path: str | Path) -> tuple[str, dict]:
    """The file's text and its parsed TOML.

    Raises:
        InputError: the file is unreadable, not UTF-8, or not valid TOML.
    """
    name = str(path)
    try:
        text = read_text(Path(path), MAX_CASE_BYTES)
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", file=name) from None
    except TooLarge as e:
        raise InputError(f"file {e}", file=name) from None
    except NotUTF8 as e:
        raise InputError(str(e), file=name, line=e.line) from None
    return text, parse_toml(text, name)


def parse_toml(text: str, name: str) -> dict:
    """Parsed TOML within the limits (see `check_data`).

    Raises:
        InputError: not valid TOML, or past a limit.
    """
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise InputError("nested too deeply to read", file=name, kind="TOML") from None
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        m = _AT.search(message)
        if m:
            raise InputError(f"{message[: m.start()]} (column {m.group('col')})", file=name,
                             line=int(m.group("line")), kind="TOML") from None
        m = _AT_END.search(message)
        if m:
            message = f"{message[: m.start()]} (at the end of the file)"
        raise InputError(message, file=name, kind="TOML") from None
    except ValueError as e:  # the int-digits limit
        raise InputError(f"an integer past 64 bits ({e})", file=name, kind="TOML") from None
    check_data(data, name, text)
    return data


def check_data(data, name: str, text: str | None = None) -> None:
    """Refuse decoded data past the limits of `forge.limits.data_problem`.

    `text`, the TOML the data was read from, lets the refusal name the line
    (`line_of`); JSON data comes without it.

    Raises:
        InputError: naming the key path, such as `$.harness.latency.model`.
    """
    problem = data_problem(data)
    if problem is not None:
        path, rule = problem
        where = "$" + ("" if not path or isinstance(path[0], int) else ".") + render_path(path)
        line = line_of(text, path) if text is not None else None
        raise InputError(f"{where}: {rule}", file=name, line=line, kind="limits")


def line_of(text: str, parts: tuple) -> int | None:
    """The line where the deepest key of `parts` is written, as far as a scan can tell.

    tomllib keeps no positions, so this follows the key names down the file:
    each key is looked for (as `key =`, `[key]`, `key.` or `"key"`) from the
    line where its parent was found.  It returns the last line it found, or
    None; a wrong guess only costs a less helpful line number.
    """
    lines = text.split("\n")
    found, start = None, 0
    for part in parts:
        if not isinstance(part, str):
            continue
        quoted = '"' + re.escape(part) + '"'
        key = f"(?:{quoted}|{re.escape(part)})" if re.fullmatch(r"[A-Za-z0-9_-]+", part) else quoted
        pattern = re.compile(r"(?:^|[\s{,.\[])" + key + r"\s*(?:=|\]|\.)")
        for i in range(start, len(lines)):
            if pattern.search(lines[i]):
                found, start = i + 1, i
                break
        else:
            break
    return found
