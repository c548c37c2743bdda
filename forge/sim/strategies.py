"""Strategies by name: a provider built from its command-line spelling.

What lives here: `make_provider` (`canonical`, `random:SEED`,
`pct:SEED[:DEPTH[:HORIZON]]`, `replay:FILE`).  What does not: the providers
themselves (`forge.sim.chooser`, `forge.sim.pct`).  It sits above both, so neither
imports the other to offer it.
"""

from __future__ import annotations

from forge.sim.chooser import Canonical, Provider, RandomProvider, ReplayProvider, load_replay
from forge.sim.pct import PCTProvider


def make_provider(spec: str) -> Provider:
    """Build a provider from a CLI spelling.

    `canonical`, `random:SEED`, `pct:SEED[:DEPTH[:HORIZON]]`, `replay:FILE`.
    A lone PCT run has no earlier runs to learn a horizon from, so without
    HORIZON it places no change points; a PCT run found by `forge explore`
    names its learned horizon (`Finding.provider`), so the full spelling
    reproduces it exactly.
    """
    name, _, rest = spec.partition(":")
    if name == "canonical" and not rest:
        return Canonical()
    if name == "random" and rest.lstrip("-").isdigit():
        return RandomProvider(int(rest))
    if name == "pct" and rest:
        parts = rest.split(":")
        if all(p.isdigit() for p in parts) and len(parts) <= 3:
            depth = int(parts[1]) if len(parts) >= 2 else 3
            horizon = int(parts[2]) if len(parts) == 3 else None
            return PCTProvider(int(parts[0]), depth, horizon)
    if name == "replay" and rest:
        return ReplayProvider(load_replay(rest))
    raise ValueError(
        f"unknown strategy {spec!r}: use canonical, random:SEED, pct:SEED[:DEPTH[:HORIZON]] "
        "or replay:FILE"
    )
