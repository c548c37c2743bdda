"""The exhaustive strategy: a walk of the whole choice tree (`forge.sim.exhaustive`).

Not a strategy of one run, and not a search over seeds: it walks the tree
in orders mode (`forge.sim.orders`), bounded by `max_deviations` and
pruned by the reduction (`reduce`).  Its subtrees can be walked by many
workers (`forge.sim.exhaustive.spread`), but it has no seeds to cut into
shards: its budget and its pruning fall in the one order it walks in.
"""

from __future__ import annotations

from forge.sim.strategies.base import Strategy

STRATEGY = Strategy("exhaustive", parameters=("max_deviations", "reduce"), walks=True, orders=True,
                    unshardable="walks one choice tree in one order under one --runs budget",
                    summary="walks the choice tree")
