"""Filling `{{ path }}` placeholders in prose: the `prose` read's renderer.

What lives here: `render(text, resolver)`, which turns one block's raw
pending prose into the string its `prose` global holds, and
`SubstitutionError`, the failure it raises, with the exact messages, kinds
and byte offsets the language fixes.  The pass covers the escapes `\\{{`,
`\\}}` and `\\\\`, placeholder scanning and path checks, root dispatch
(`args`, `argv`, `item`, `var`, `sys`, then a set global), key-by-key lookup
and rendering of the value found.

What does not: deciding when prose is rendered or caching the result (the
first `prose` read renders once; that is the host's job), finding and
trimming the pending prose (the prompt parser hands us the trimmed text after
any thematic break, so offsets here count from its start), turning Lua
values into JSON data and reading globals (the resolver does that), and
wrapping a failure as a Lua error value with `kind` `lua` (the host).

The resolver is duck-typed; see `Resolver` for what it must provide.
"""

from __future__ import annotations

import json
import math
import re
import sys as _sys
from typing import Any, Protocol

__all__ = ["SubstitutionError", "Resolver", "render"]

#: Longest path (in characters) an error message quotes before cutting it.
PATH_PREVIEW_CHARS = 80

# The next thing the scanner must look at: a backslash (a possible escape)
# or an opening `{{`.  Everything between two matches is copied verbatim.
_SPECIAL = re.compile(r"\\|\{\{")

# Unicode White_Space, which is what the language's reference implementation
# trims and what "no spaces in a segment" means.  Python's `str.isspace` is
# not used because it also counts U+001C..U+001F, which are controls here
# (they would be escaped as `\u{001c}` in a message, not trimmed away).
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_STR = "".join(sorted(_WHITESPACE))


class Resolver(Protocol):
    """What `render` asks of the engine; values are plain JSON data.

    `args()` is the chain's input string verbatim; `argv()` its frozen parse
    (None when nil); `var()` and `sys()` the current tables as JSON data;
    `item()` and `global_(name)` return `(present, value)`.  `global_` may
    raise an exception carrying a `typename` (the host's `NotData`) when the
    global holds something that is not JSON data.
    """

    def args(self) -> str: ...
    def argv(self) -> Any: ...
    def var(self) -> Any: ...
    def sys(self) -> Any: ...
    def item(self) -> tuple[bool, Any]: ...
    def global_(self, name: str) -> tuple[bool, Any]: ...


class SubstitutionError(Exception):
    """A placeholder that could not be filled.

    `kind` is the substitution kind (`MissingKey`, `Unclosed`, ...), which
    appears only in the rendered text; `offset` is the byte offset (UTF-8) of
    the offending `{{` in the prose handed to `render`.
    """

    def __init__(self, kind: str, message: str, offset: int) -> None:
        self.kind = kind
        self.message = message
        self.offset = offset
        super().__init__(self.render())

    def render(self) -> str:
        return f"{self.message} [{self.kind} at byte {self.offset}]"

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"SubstitutionError({self.kind!r}, {self.message!r}, {self.offset!r})"


# ---------------------------------------------------------------- rendering

def render(text: str, resolver: Any) -> str:
    """Fill every placeholder in `text` in one left-to-right pass.

    Inserted values are appended to the output and never scanned again, so a
    value that itself contains `{{ ... }}` comes out literally.  The first
    failing placeholder (in text order) raises `SubstitutionError`; later
    text, even an unclosed `{{`, is not looked at.
    """
    out: list[str] = []
    lookup = _Lookup(resolver)
    pos = 0
    end = len(text)
    while pos < end:
        m = _SPECIAL.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        start = m.start()
        out.append(text[pos:start])
        if text[start] == "\\":
            nxt = text[start + 1:start + 3]
            if nxt in ("{{", "}}"):
                out.append(nxt)
                pos = start + 3
            elif nxt[:1] == "\\":
                out.append("\\")
                pos = start + 2
            else:
                # Any other backslash (including a trailing one) is literal,
                # so Windows paths and regex text need no doubling.
                out.append("\\")
                pos = start + 1
            continue
        # An opening `{{`: the placeholder ends at the first `}}` after it,
        # so a path can never contain `}}`.
        close = text.find("}}", start + 2)
        if close < 0:
            raise SubstitutionError("Unclosed", "unclosed '{{' in prose", _byte_offset(text, start))
        path = _trim(text[start + 2:close])
        try:
            out.append(lookup.fill(path))
        except _Failure as f:
            raise SubstitutionError(f.kind, f.message, _byte_offset(text, start)) from None
        pos = close + 2
    return "".join(out)


class _Failure(Exception):
    """A placeholder failure before its offset is known."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)
        self.kind, self.message = kind, message


_MISSING = object()


class _Lookup:
    """Resolves paths for one render.

    Each root is fetched from the resolver at most once per render: the whole
    prose is rendered at one moment, and `var()`/`argv()` convert the whole
    Lua table each time they are called.
    """

    def __init__(self, resolver: Any) -> None:
        self.resolver = resolver
        self.cache: dict[str, Any] = {}

    def _root(self, key: str, fetch) -> Any:
        if key not in self.cache:
            self.cache[key] = fetch()  # lua: the resolver's own method
        return self.cache[key]

    def fill(self, path: str) -> str:
        segments = path.split(".")
        # The shape check comes before any lookup, so `{{ var. x }}` fails
        # here even when `var.x` exists.
        if any(not s or any(c in _WHITESPACE for c in s) for s in segments):
            raise _Failure("EmptySegment", f"empty or padded path segment in {_quote(path)}")
        root, keys = segments[0], segments[1:]
        r = self.resolver

        if root in ("args", "item"):
            # Used whole only; the message says "string" whatever the real
            # type, and whether or not an item is seeded.
            if keys:
                raise _Failure("NotATable", f"{root} is a string, not a table")
            if root == "args":
                return self._root("args", r.args)
            present, value = self._root("item", r.item)
            if not present:
                raise _Failure("NilItem", "{{ item }} is nil (not inside a fanout arm)")
            # A JSON null member renders as `null` here, unlike every other
            # root, where null is a failure.
            return _render_value(value)

        if root == "argv":
            value = self._root("argv", r.argv)
            if value is None:
                raise _Failure("NilArgv", f"{_quote(path)} is nil (the args string is not JSON)")
            return self._walk(value, keys, path)

        if root in ("var", "sys"):
            if not keys:
                raise _Failure("BadPath", f"bad path: {{{{ {root} }}}}")
            return self._walk(self._root(root, getattr(r, root)), keys, path)

        # `prose` is the text being rendered, not data; the language makes it
        # a Serialize failure.  Checking it here also keeps us from asking the
        # host for the `prose` global, whose read would re-enter this render.
        if root == "prose":
            raise _serialize(root, path)
        try:
            present, value = self._root("global:" + root, lambda: r.global_(root))
        except Exception as exc:
            if _is_not_data(exc):
                raise _serialize(root, path) from None
            raise
        if not present:
            raise _Failure(
                "UnknownNamespace",
                f"unknown namespace or global '{_display(root)}' in {_quote(path)}",
            )
        return self._walk(value, keys, path)

    def _walk(self, value: Any, keys: list[str], path: str) -> str:
        # Keys address table fields only: a list, a scalar or a null on the
        # way down all read as "missing", never as an index or empty string.
        for key in keys:
            if not isinstance(value, dict):
                raise _Failure("MissingKey", f"missing {_quote(path)}")
            value = value.get(key, _MISSING)
            if value is _MISSING:
                raise _Failure("MissingKey", f"missing {_quote(path)}")
        if value is None:
            # Same text as a missing key; only the kind tells them apart.
            raise _Failure("NullValue", f"missing {_quote(path)}")
        return _render_value(value)


def _serialize(name: str, path: str) -> _Failure:
    return _Failure("Serialize", f"global '{_display(name)}' in {_quote(path)} is not JSON data")


def _is_not_data(exc: BaseException) -> bool:
    """Whether `exc` is the resolver saying a global is not JSON data.

    Any exception carrying a `typename` counts.  The host's own `NotData`
    keeps the type name in its args instead, so it is also recognised by
    class; we look it up in `sys.modules` rather than importing it, because
    the host imports this module and is always loaded when it is the caller.
    """
    if getattr(exc, "typename", None) is not None:
        return True
    host = _sys.modules.get("forge.engine.host")
    not_data = getattr(host, "NotData", None)
    return isinstance(not_data, type) and isinstance(exc, not_data)


# ---------------------------------------------------------------- values

def _render_value(value: Any) -> str:
    """A value as prose: strings raw, everything else its compact JSON."""
    if isinstance(value, str):
        return value
    return _json(value)


def _json(value: Any) -> str:
    """Compact JSON with sorted keys and natural numbers.

    Written out by hand rather than with `json.dumps` so that numbers nested
    in tables follow the same rule as a bare number (`3.0` renders `3`).
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(v) for v in value) + "]"
    if isinstance(value, dict):
        # Code-point order of `str` keys equals the UTF-8 byte order the
        # reference sorts by.
        items = sorted(value.items(), key=lambda kv: kv[0])
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _json(v) for k, v in items) + "}"
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _number(x: float) -> str:
    """A float in its natural form: whole values without `.0`, others in the
    shortest text that reads back to the same float."""
    if math.isnan(x):
        return "nan"        # never JSON data; the resolver rejects it first
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x.is_integer() and abs(x) < 2**63:
        return str(int(x))
    text = repr(x)
    mantissa, e, exponent = text.partition("e")
    # Python writes `1e+20` and `1e-07`; JSON serialisers write `1e20`, `1e-7`.
    return f"{mantissa}e{int(exponent)}" if e else text


# ---------------------------------------------------------------- text helpers

def _trim(text: str) -> str:
    return text.strip(_WHITESPACE_STR)


def _byte_offset(text: str, index: int) -> int:
    # `surrogatepass` so a lone surrogate (never valid UTF-8 prose anyway)
    # cannot turn an error report into a crash.
    return len(text[:index].encode("utf-8", "surrogatepass"))


def _quote(path: str) -> str:
    """A path as messages show it: `{{ path }}`, safely displayed."""
    return f"{{{{ {_display(path)} }}}}"


def _display(text: str) -> str:
    """Make `text` safe to show in one line of an error message.

    The cut to 80 characters comes first, so an escaped preview may run a
    little longer than 80 characters.
    """
    cut = len(text) > PATH_PREVIEW_CHARS
    if cut:
        text = text[:PATH_PREVIEW_CHARS]
    out = []
    for c in text:
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F:
            # Unicode general category Cc: C0, DEL and C1 controls.
            out.append(f"\\u{{{ord(c):04x}}}")
        else:
            out.append(c)
    return "".join(out) + ("..." if cut else "")
