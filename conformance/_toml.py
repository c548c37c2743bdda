"""Reading the suite's TOML files (cases, catalogue, expectation files) with
errors that name the file and the line.

`tomllib` reports a syntax error as text ending in `(at line L, column C)`;
this module turns that into an `InputError` with `line=L`, so every TOML
refusal in the kit reads `FILE:LINE: TOML: what is wrong (column C)`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from forge.errors import InputError

_AT = re.compile(r"\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_AT_END = re.compile(r"\s*\(at end of document\)$")


def read_toml(path: str | Path) -> tuple[str, dict]:
    """The file's text and its parsed TOML.

    Raises:
        InputError: the file is unreadable, not UTF-8, or not valid TOML.
    """
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", file=name) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte {e.start})", file=name,
                         line=data[: e.start].count(b"\n") + 1) from None
    return text, parse_toml(text, name)


def parse_toml(text: str, name: str) -> dict:
    try:
        return tomllib.loads(text)
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
