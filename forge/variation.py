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

import attrs


@attrs.define(eq=False)
class Site:
    """One variation point.  `on` is read on hot paths, so it is a plain field."""

    name: str
    rule: str
    wrong: str
    on: bool = False


_SITES: dict[str, Site] = {}


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


__all__ = ["Site", "declare", "declared", "find", "switched"]
