"""The store: paths, the eight operations and their errors, and the in-memory backend.

What lives here: `MemoryStore` (files and directories in memory, seeded from
a folder), the path and glob validators (and `seed_problem`, the rules a
store's seed `{path: text}` given as data keeps), each operation's semantics and its
exact messages, and the store's quota (`StoreQuota`: at most
`MAX_STORE_BYTES` in `MAX_STORE_FILES` files at any moment, the same limits a
seeding folder is held to, at most `MAX_STORE_OPS` operations in a run, and
at most `MAX_STORE_LINES` lines in a file read by line, and at most
`MAX_STORE_MOVED` bytes copied in and out by its operations; passing it ends
the run as `Budget`).  An append
costs what it appends: appended text is kept as chunks and joined when the
file is next read.  It sits below both the harness (which holds the backend a
run uses) and the engine (which issues the operations).  What does not: when
an operation happens (the engine issues it through the harness, which gives
it a virtual duration), the claims that turn unjoined sharing into a
`Determinism` failure (`forge.engine.claims`), or how a failure reaches Lua
(`StoreFailure` carries the fields and the engine builds the error value).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable

import attrs

from forge.limits import MAX_STORE_BYTES, MAX_STORE_FILES

MAX_PATH_BYTES = 1024
#: Operations one store serves (one run).  Each costs the engine ~100 us of
#: scheduling and tracing whatever it does, so without a count of its own a
#: loop of tiny operations ran 15 s inside every other budget; 50,000 is
#: five per task at the task budget, and about 5 s.
MAX_STORE_OPS = 50_000
#: Lines in a file read by line (numbered, or by range): each line is a
#: Python string while the answer is built.
MAX_STORE_LINES = 1_000_000
#: Bytes of text the operations of one run may copy in or out (each read,
#: write, append or replace copies its text; ~2 GB/s): without it, 50,000
#: reads of a 10 MB file ran for minutes inside the operation count.
MAX_STORE_MOVED = 1 << 30
#: What a glob is counted as moving per file it looks at (its matcher costs
#: a few microseconds a path, whatever the path's length).
GLOB_BYTES_PER_FILE = 4096
_DEVICE = re.compile(r"(con|prn|aux|nul|com[1-9]|lpt[1-9])", re.IGNORECASE)


@attrs.frozen
class StoreFailure(Exception):
    """A store refusal: becomes an error value of kind `store`."""

    message: str
    reason: str
    path: str | None = None
    extra: tuple[tuple[str, str], ...] = ()

    def fields(self) -> dict[str, str]:
        out = {"reason": self.reason}
        if self.path is not None:
            out["path"] = self.path
        out.update(dict(self.extra))
        return out


def _quote(path: str) -> str:
    out = []
    for ch in path:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\u{{{ord(ch):x}}}"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def path_problem(path: str) -> str | None:
    """The first rule a store path breaks, or None."""
    if path == "":
        return "path is empty"
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        return "path is too long"
    if path.startswith("/"):
        return "path is absolute"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "path contains a control character"
    if "\\" in path:
        return "path contains a backslash"
    for segment in path.split("/"):
        if segment == "":
            return "path contains an empty segment"
        if segment in (".", ".."):
            return "path contains a traversal segment"
        if segment.endswith(".") or segment.endswith(" "):
            return "path segment ends in an unsafe character"
        if _DEVICE.fullmatch(segment.split(".", 1)[0]):
            return "path contains a reserved device name"
    return None


def check_path(path: str) -> None:
    problem = path_problem(path)
    if problem:
        raise StoreFailure(f"invalid path {_quote(path)}: {problem}", "invalid_path", path)


def glob_problem(pattern: str) -> str | None:
    if pattern == "":
        return "pattern is empty"
    if len(pattern.encode("utf-8")) > MAX_PATH_BYTES:
        return "pattern exceeds 1024 bytes"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in pattern):
        return "pattern contains a control character"
    if "\\" in pattern:
        return "pattern does not support backslash escapes"
    for segment in pattern.split("/"):
        if "**" in segment and segment != "**":
            return "recursive wildcards must form a single path component"
    return None


def _segment_match(name: str, pat: str) -> bool:
    # fnmatch's [] classes are kept; `*` never crosses a `/` because we match
    # one segment at a time.
    return fnmatch.fnmatchcase(name, pat)


def glob_match(pattern: str, path: str) -> bool:
    return _glob_from(pattern.split("/"), path.split("/"), 0, 0)


def _glob_from(pats: list[str], names: list[str], i: int, j: int) -> bool:
    """Whether `pats[i:]` matches `names[j:]`.  A module function, not a
    closure: a recursive closure is a reference cycle, left to the cyclic
    collector after every `store.glob` of a run."""
    if i == len(pats):
        return j == len(names)
    if pats[i] == "**":
        return any(_glob_from(pats, names, i + 1, k) for k in range(j, len(names) + 1))
    return (j < len(names) and _segment_match(names[j], pats[i])
            and _glob_from(pats, names, i + 1, j + 1))


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def seed_problem(files: object) -> tuple[object, str] | None:
    """The first rule a store's seed `{path: text}` breaks, as (the path, or
    None for the whole, the rule), or None: each path is a store path
    (`path_problem`), each text a string, and the whole within the quota a
    seeding folder is held to (`MAX_STORE_FILES` files, `MAX_STORE_BYTES`
    bytes); no file sits where another's folder is."""
    if not isinstance(files, dict):
        return None, "a store is {path: text}"
    if len(files) > MAX_STORE_FILES:
        return None, f"a store holds at most {MAX_STORE_FILES:,} files, got {len(files):,}"
    total = 0
    for path, text in files.items():
        if not isinstance(path, str):
            return path, "a store path is a string"
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            return path, "the path is not valid Unicode (a lone surrogate)"
        problem = path_problem(path)
        if problem is not None:
            return path, problem
        if not isinstance(text, str):
            return path, f"a file's text is a string, got {type(text).__name__}"
        try:
            total += len(text.encode("utf-8"))
        except UnicodeEncodeError:
            return path, "the text is not valid Unicode (a lone surrogate)"
        if total > MAX_STORE_BYTES:
            return None, f"a store holds at most {MAX_STORE_BYTES:,} bytes"
    for path in files:
        parts = path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in files:
                return path, f"{'/'.join(parts[:i])} is a file, so it cannot hold one"
    return None


class StoreQuota(Exception):
    """An operation would take the store past its quota; the message says which."""


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class MemoryStore:
    """Files (path -> text) and explicit directories, in memory.

    Invariants: every parent directory of a file is in `dirs`; a file's text
    is `files[path]` followed by its pending appended chunks `_tails[path]`;
    `sizes[path]` is that text's UTF-8 length and `total` their sum.
    """

    def __init__(self, files: dict[str, str] | None = None, *,
                 max_bytes: int = MAX_STORE_BYTES, max_files: int = MAX_STORE_FILES,
                 max_ops: int = MAX_STORE_OPS) -> None:
        self.files: dict[str, str] = {}
        self.ops, self.max_ops = 0, max_ops
        self.dirs: set[str] = set()
        self.sizes: dict[str, int] = {}
        self.total = 0
        #: The most bytes and files the store has held: what the partial-order
        #: reduction reads of the quota (`forge.engine.footprint`), since a
        #: step may pass half of it and come back under before its end.
        self.peak_bytes = self.peak_files = 0
        self.max_bytes, self.max_files = max_bytes, max_files
        self._tails: dict[str, list[str]] = {}
        for path, text in sorted((files or {}).items()):
            self._put(path, text)
        self.moved = 0          # seeding is not the run's work

    @classmethod
    def from_folder(cls, root: str) -> MemoryStore:
        files: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8") as f:
                    files[rel] = f.read()
        return cls(files)

    def snapshot(self) -> dict[str, str]:
        for path in list(self._tails):
            self._join(path)
        return dict(sorted(self.files.items()))

    # -- helpers --------------------------------------------------------------
    def _parents(self, path: str) -> Iterable[str]:
        parts = path.split("/")
        for i in range(1, len(parts)):
            yield "/".join(parts[:i])

    def _count(self) -> None:
        """One more operation, within the run's count."""
        self.ops += 1
        if self.ops > self.max_ops:
            raise StoreQuota(f"store budget exhausted: the run made more than "
                             f"{self.max_ops:,} store operations")

    def _move(self, nbytes: int) -> None:
        """`nbytes` more copied in or out, within the run's amount."""
        self.moved += nbytes
        if self.moved > MAX_STORE_MOVED:
            raise StoreQuota(f"store budget exhausted: the run's store operations copied more "
                             f"than {MAX_STORE_MOVED:,} bytes (text read, written or searched)")

    def _charge(self, path: str, size: int) -> None:
        """Check that `path` holding `size` bytes keeps the store in its quota."""
        if path not in self.files and len(self.files) >= self.max_files:
            raise StoreQuota(f"store budget exhausted: the store would hold more than "
                             f"{self.max_files:,} files")
        if self.total - self.sizes.get(path, 0) + size > self.max_bytes:
            raise StoreQuota(f"store budget exhausted: the store would hold more than "
                             f"{self.max_bytes:,} bytes (writing {path})")

    def _put(self, path: str, text: str) -> None:
        for parent in self._parents(path):
            if parent in self.files:
                raise StoreFailure("store backend failure", "backend", path)
        if path in self.dirs:
            raise StoreFailure("store backend failure", "backend", path)
        size = _nbytes(text)
        self._charge(path, size)
        for parent in self._parents(path):
            self.dirs.add(parent)
        self._tails.pop(path, None)
        self.files[path] = text
        self.total += size - self.sizes.get(path, 0)
        self.sizes[path] = size
        self.peak_bytes = max(self.peak_bytes, self.total)
        self.peak_files = max(self.peak_files, len(self.files))

    def _join(self, path: str) -> None:
        tail = self._tails.pop(path, None)
        if tail:
            self.files[path] = "".join([self.files[path], *tail])

    def _text(self, path: str) -> str:
        if path in self.dirs:
            raise StoreFailure("store backend failure", "backend", path)
        if path not in self.files:
            raise StoreFailure(f"file not found in store: {path}", "not_found", path)
        self._move(self.sizes[path])
        self._join(path)
        return self.files[path]

    # -- the operations ---------------------------------------------------------
    def write(self, path: str, contents: str) -> None:
        self._count()
        check_path(path)
        self._move(len(contents))
        self._put(path, contents)

    def append(self, path: str, contents: str) -> None:
        self._count()
        check_path(path)
        self._move(len(contents))
        if path in self.dirs:
            raise StoreFailure("store backend failure", "backend", path)
        if path not in self.files:
            self._put(path, contents)
            return
        size = self.sizes[path] + _nbytes(contents)
        self._charge(path, size)
        self._tails.setdefault(path, []).append(contents)
        self.total += size - self.sizes[path]
        self.sizes[path] = size
        self.peak_bytes = max(self.peak_bytes, self.total)

    def exists(self, path: str) -> bool:
        self._count()
        check_path(path)
        return path in self.files or path in self.dirs

    def delete(self, path: str) -> None:
        self._count()
        check_path(path)
        if path in self.files:
            del self.files[path]
            self._tails.pop(path, None)
            self.total -= self.sizes.pop(path)
        elif path in self.dirs:
            prefix = path + "/"
            if any(p.startswith(prefix) for p in self.files) or any(
                d.startswith(prefix) for d in self.dirs
            ):
                raise StoreFailure("store backend failure", "backend", path)
            self.dirs.discard(path)

    def glob(self, pattern: str) -> list[str]:
        self._count()
        problem = glob_problem(pattern)
        if problem:
            raise StoreFailure(
                f"invalid glob pattern {_quote(pattern)}: {problem}", "invalid_pattern", pattern
            )
        self._move(GLOB_BYTES_PER_FILE * len(self.files))
        return sorted(p for p in self.files if glob_match(pattern, p))

    def _range(self, path: str, start: int | None, end: int | None) -> tuple[list[str], int]:
        if start is None and end is not None:
            raise StoreFailure(
                f"invalid line range for {path}: start is required when end is given", "range", path
            )
        text = self._text(path)
        # Counted before splitting: a list of tens of millions of one-byte
        # lines took gigabytes and most of a minute to build.
        if text.count("\n") > MAX_STORE_LINES:
            raise StoreQuota(f"store budget exhausted: {path} has more than {MAX_STORE_LINES:,} "
                             "lines to number or read by range")
        lines = split_lines(text)
        if start is None:
            return lines, 1
        if start < 1:
            raise StoreFailure(f"invalid line range for {path}: start must be at least 1", "range", path)
        if start > len(lines):
            return [], start
        last = len(lines) if end is None else min(end, len(lines))
        if end is not None and end < start:
            raise StoreFailure(
                f"invalid line range for {path}: end must not be before start", "range", path
            )
        return lines[start - 1 : last], start

    def read(self, path: str, start: int | None = None, end: int | None = None) -> str:
        self._count()
        check_path(path)
        if start is None and end is None:
            return self._text(path)
        lines, _ = self._range(path, start, end)
        return "\n".join(lines)

    def read_numbered(self, path: str, start: int | None = None, end: int | None = None) -> str:
        self._count()
        check_path(path)
        lines, first = self._range(path, start, end)
        if not lines:
            return ""
        width = len(str(first + len(lines) - 1))
        return "\n".join(f"{n:>{width}}| {line}" for n, line in enumerate(lines, first))

    def str_replace(self, path: str, old: str, new: str) -> None:
        self._count()
        check_path(path)
        if old == "":
            raise StoreFailure(
                f"invalid anchor for {path}: anchor must not be empty", "anchor", path
            )
        text = self._text(path)
        count = text.count(old)
        if count == 0:
            raise StoreFailure(f"anchor not found in {path}", "anchor", path)
        if count > 1:
            raise StoreFailure(
                f"anchor occurs {count} times in {path}, expected exactly one",
                "anchor",
                path,
                (("count", str(count)),),
            )
        self._put(path, text.replace(old, new, 1))
