"""Variation sites: the named places where a mutant may make a rule wrong.

A rule module declares each place its rule could plausibly be got wrong as a
`Site` (in the spirit of FoundationDB's BUGGIFY points): a name, the rule it
belongs to, and what the wrong variant does.  The reference code reads the
site where the rule is decided, `if SITE.on: <wrong variant>`, so a mutant is
nothing but a site switched on: it cannot miss a copy of its rule, because a
rule has one copy, and it cannot patch a private method that the engine no
longer calls, because it patches nothing.

Switching is process-wide (one mutant per process at a time); the mutants
runner switches a site by name, in this process or in a worker process.

What lives here: declaring, finding and switching sites.  What does not: the
catalogue of mutants (`forge.conformance.mutants`), which names one site each.
This module imports nothing of the engine, so every layer may declare sites.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs


#: While `reads()` collects, the names of the sites read so far.
_READ: set[str] | None = None


class _Switch:
    """`Site.on` as the hot path reads it: a descriptor with a setter and no
    getter, so a read finds the site's own value in its `__dict__` as any
    plain attribute is found, and a write keeps `_ON` (what `switched_on`
    answers) in step.  While `reads()` collects, `_Tracked` stands in."""

    def __set__(self, site: Site, value: bool) -> None:
        site.__dict__["on"] = value
        if value:
            _ON.add(site.name)
        else:
            _ON.discard(site.name)


class _Tracked(_Switch):
    """`Site.on` while `reads()` collects: a read also notes the site's name."""

    def __get__(self, site: Site | None, owner: type | None = None) -> bool:
        if site is None:
            return self        # type: ignore[return-value]
        if _READ is not None:
            _READ.add(site.name)
        return bool(site.__dict__["on"])


_PLAIN, _TRACKING = _Switch(), _Tracked()


@attrs.define(eq=False, slots=False)
class Site:
    """One variation point.  `on` is read on hot paths, as a plain attribute
    is (`_Switch`); only while `reads()` collects does a read cost more."""

    name: str
    rule: str
    wrong: str

    #: Whether the wrong variant is in force (set by `switched`, `all_off`).
    if TYPE_CHECKING:
        on: bool = False
    else:
        on = _PLAIN

    def __attrs_post_init__(self) -> None:
        self.on = False


_SITES: dict[str, Site] = {}
#: The names of the sites switched on (asked once per run by the adapters).
_ON: set[str] = set()


def declare(name: str, rule: str, wrong: str) -> Site:
    """Declare a site once, at import time of the rule module that owns it."""
    if name in _SITES:
        raise ValueError(f"variation site {name!r} is declared twice")
    site = Site(name, rule, wrong)
    _SITES[name] = site
    return site


def declared() -> list[Site]:
    """Every declared site, by name (importing the engine declares them all)."""
    return [_SITES[name] for name in sorted(_SITES)]


def find(name: str) -> Site:
    try:
        return _SITES[name]
    except KeyError:
        raise KeyError(f"no variation site is declared as {name!r}") from None


@contextlib.contextmanager
def switched(name: str) -> Iterator[Site]:
    """Switch one site on for the duration of the block."""
    site = find(name)
    if any(s.on for s in _SITES.values()):
        raise RuntimeError("another variation site is already switched on")
    site.on = True
    try:
        yield site
    finally:
        site.on = False


def switched_on() -> tuple[str, ...]:
    """The names of the sites switched on (reading them records nothing)."""
    return tuple(sorted(_ON))


@contextlib.contextmanager
def reads() -> Iterator[set[str]]:
    """Collect the names of the sites read in the block.  Code that never
    reads a site runs alike whether it is on or off - what lets the mutants
    runner reuse a reference run that read none of a mutant's sites."""
    global _READ
    outer, _READ = _READ, set()
    Site.on = _TRACKING         # type: ignore[assignment]
    try:
        yield _READ
    finally:
        inner, _READ = _READ, outer
        if outer is not None:
            outer |= inner
        else:
            Site.on = _PLAIN    # type: ignore[assignment]


@contextlib.contextmanager
def all_off() -> Iterator[None]:
    """Every site off for the block (the reference engine), as they were after it."""
    on = [site for site in _SITES.values() if site.__dict__["on"]]
    for site in on:
        site.on = False
    try:
        yield
    finally:
        for site in on:
            site.on = True


__all__ = ["Site", "all_off", "declare", "declared", "find", "reads", "switched", "switched_on"]
