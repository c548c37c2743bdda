"""Assembling a run from files and flags: the harness and the chooser.

`read_store_files` reads a store folder within the limits, and
`build_harness` turns a store folder (or files) and the harness's plain
run options (its ceiling, a host cancel instant) into a `forge.harness.Harness`;
`make_chooser` turns a seed or a strategy spelling into a `forge.sim.chooser.Chooser`,
the strategy looked up by its spelling in the registry (`forge.sim.strategies`).
The command line (`forge.cli`, `forge.commands`) and the conformance
adapters both build runs this way, so neither needs the other.

What does not live here: parsing flags (the CLI), what a harness answers at
run time (`forge.harness`, `forge.scripts`), or running the prompt
(`forge.engine.run`).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import os
import stat

from forge.errors import InputError
from forge.harness import Harness
from forge.limits import MAX_STORE_BYTES, MAX_STORE_FILES
from forge.run.record import read_replay
from forge.sim.chooser import Canonical, Chooser, RandomProvider, ReplayProvider
from forge.sim.strategies import parse, usage
from forge.store import MemoryStore


def build_harness(store_dir=None, store_files=None, **keywords):
    """A harness of a store folder (or `store_files`, without a folder) and
    the `Harness`'s own `keywords` (its ceiling, a cancel instant: the
    options table's `engine_keywords`).

    Raises:
        InputError: the folder is unreadable or past the limits.
    """
    files = read_store_files(store_dir) if store_dir is not None else store_files
    return Harness.seeded(files or {}, **keywords)


def read_store_files(store_dir: str) -> dict[str, str]:
    """The files (path -> text, by path) of the store folder `store_dir`,
    seeded into a store as a run's are, so a file a store refuses is
    refused here.

    Raises:
        InputError: the folder is unreadable or past the limits.
    """
    _check_store_folder(store_dir)
    try:
        return MemoryStore.from_folder(store_dir).snapshot()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot seed the store from this folder: {e}",
                         file=store_dir) from None


def _check_store_folder(root: str) -> None:
    """Refuse a store folder past the limits before reading a byte of it: only
    regular files (a link to /dev/zero would never end), at most
    `MAX_STORE_FILES` of them and `MAX_STORE_BYTES` in all."""
    count = total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        # A link to a folder is in `dirnames` (the walk does not follow it):
        # refused as a link to a file is, never skipped without a word.
        for name in dirnames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                raise InputError("a store folder holds regular files only (not links, devices "
                                 "or pipes)", file=full)
        for name in filenames:
            full = os.path.join(dirpath, name)
            try:
                info = os.lstat(full)
            except OSError as e:
                raise InputError(f"cannot read this store file: {e.strerror}", file=full) from None
            if not stat.S_ISREG(info.st_mode):
                raise InputError("a store folder holds regular files only (not links, devices "
                                 "or pipes)", file=full)
            count, total = count + 1, total + info.st_size
            if count > MAX_STORE_FILES:
                raise InputError(f"a store folder holds at most {MAX_STORE_FILES} files",
                                 file=root)
            if total > MAX_STORE_BYTES:
                raise InputError(f"a store folder holds at most {MAX_STORE_BYTES} bytes",
                                 file=root)


def make_chooser(seed: int | None, strategy: str | None):
    """The chooser for a strategy spelling, else a seed's random schedule, else canonical.

    Raises:
        InputError: an unknown strategy spelling, a seed past 64 bits, a PCT
            depth past its bound (`forge.sim.strategies.pct`), or an unusable replay file.
    """
    if strategy:
        try:
            chosen, arguments = parse(strategy)
        except ValueError:
            raise InputError(usage(strategy[:80]), file="--strategy") from None
        if chosen.reads_file:       # the file's record is checked first (`forge.run.record`)
            return Chooser(ReplayProvider(read_replay(arguments)["choices"]))
        assert chosen.provider is not None      # a spelling has a provider
        try:
            return Chooser(chosen.provider(arguments))
        except ValueError as e:
            raise InputError(str(e), file="--strategy") from None
    if seed is not None:
        return Chooser(RandomProvider(seed))
    return Chooser(Canonical())
