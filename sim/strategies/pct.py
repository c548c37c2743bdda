"""The PCT strategy: priority-based schedules with a few change points (`forge.sim.pct`).

Spelled `pct:SEED[:DEPTH[:HORIZON]]` for one run.  A lone PCT run has no
earlier runs to learn a horizon from, so without HORIZON it places no
change points; a run found by a search names its learned horizon, so the
full spelling reproduces it.  A search's runs share one campaign
(`forge.sim.pct.PCTCampaign`), which learns the horizon from every earlier
seed: its seeds may be spread over processes (a campaign checks the
horizon each chunk started from) but not cut into shards.

Its runs are in orders mode (`forge.sim.orders`; its provider asks for it,
so a portfolio's PCT member's are too), where which completion
fires next is a scheduling decision: there its bound holds
(`forge.sim.pct`), and on `examples/explore/slowest-first.md`, a bug of
depth 2, it finds the bug in 18 of 20 campaigns of 100 runs, where under
the duration menu it found it in 7, no better than random.
"""

from __future__ import annotations

from forge.sim.pct import PCTCampaign, PCTProvider
from forge.sim.strategies.base import Strategy, seed_of

#: The deepest PCT a spelling or a search may ask for.
MAX_DEPTH = 1000
#: The depth when a spelling names none.
DEFAULT_DEPTH = 3


def _provider(arguments: str) -> PCTProvider:
    parts = arguments.split(":")
    seed = seed_of(parts[0])
    if len(parts) == 2 and not 1 <= int(parts[1]) <= MAX_DEPTH:
        raise ValueError(f"the PCT depth is from 1 to {MAX_DEPTH}")
    depth = int(parts[1]) if len(parts) >= 2 else DEFAULT_DEPTH
    horizon = int(parts[2]) if len(parts) == 3 else None
    return PCTProvider(seed, depth, horizon)


STRATEGY = Strategy("pct", spelling="pct:SEED[:DEPTH[:HORIZON]]",
                    arguments=r"[0-9]{1,20}(?::[0-9]{1,20}){0,2}", provider=_provider,
                    parameters=("pct_depth",), campaign=PCTCampaign, orders=PCTProvider.orders,
                    unshardable="learns its horizon from every earlier seed",
                    summary="ranks chains by priority with --pct-depth minus one change "
                            "points")
