"""The exhaustive strategy: a walk of the whole choice tree (`forge.sim.exhaustive`).

Not a strategy of one run, and not a search over seeds: it walks the tree
in orders mode (`forge.sim.orders`), bounded by `max_deviations` and
pruned by the reduction (`reduce`).  It runs in one process: its budget
and its pruning depend on the one order it walks in.
"""

from __future__ import annotations

from forge.sim.strategies.base import Strategy

STRATEGY = Strategy("exhaustive", parameters=("max_deviations", "reduce"), walks=True,
                    one_process="walks one choice tree in one order under one --runs budget")
