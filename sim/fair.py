"""The fair scheduler: any provider's schedule, unfair for a prefix, then fair.

A liveness property about ready chains ("a ready chain runs within a
bound") holds only under a fair scheduler: a random or PCT schedule may
pass a ready chain over for as long as other chains stay ready, and that
starves nobody the spec protects.  `FairProvider` wraps another provider:
its first `prefix` chain picks are the inner provider's (the unfair
prefix, where the bugs of an unlucky interleaving are set up), and every
chain pick after them takes the ready chain that has waited longest
(oldest-ready-first), as a FIFO run queue would.  Every other decision
(latencies, completion picks, faults) stays the inner provider's.

The wait is measured by the scheduler itself, from the labels it is
offered: a label counts as ready from the first pick that offered it until
a pick takes it or a pick no longer offers it.  So fairness does not rest
on the engine's ready list being in arrival order - a foreign engine's
order, or a wrong engine's, gets the same treatment.  Under it, a chain
offered at a pick is taken within as many picks as chains were offered
there; the ready-chain liveness monitor (`forge.liveness.ReadyChainNotRun`)
holds the engine to that bound, which a chain hidden from the picks breaks.

What does not live here: the inner strategies (`forge.sim.chooser`,
`forge.sim.strategies`), the monitor (`forge.liveness`).
"""

from __future__ import annotations

from collections.abc import Sequence

from forge.sim.chooser import CHAIN_KIND, Provider

#: The unfair prefix's length when none is given: enough chain picks for a
#: random prefix to set up a race among a handful of tasks.
PREFIX = 16


class FairProvider(Provider):
    """The inner provider's answers, except chain picks after the first
    `prefix`: those take the longest-waiting ready chain."""

    def __init__(self, inner: Provider, prefix: int = PREFIX) -> None:
        if prefix < 0:
            raise ValueError(f"a fair scheduler's unfair prefix is a count of chain picks, "
                             f"not {prefix}")
        self.inner = inner
        self.prefix = prefix
        self.orders = inner.orders
        self.name = f"fair({inner.name})"
        #: Chain picks so far.
        self.picks = 0
        #: Each label offered since it was last taken: the order it was first
        #: offered in (a running count), so the smallest waited longest.
        self._since: dict[str, int] = {}
        self._arrivals = 0

    @property
    def fair_from(self) -> int:
        """The first chain pick (counted from 1) made fairly."""
        return self.prefix + 1

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if kind != CHAIN_KIND:
            return self.inner.draw(kind, options)
        self.picks += 1
        labels = [options[i] for i in range(len(options))]
        since = self._since
        for label in labels:
            if label not in since:
                since[label] = self._arrivals
                self._arrivals += 1
        if len(since) > len(labels):        # a label no longer offered waits no more
            offered = set(labels)
            for label in [k for k in since if k not in offered]:
                del since[label]
        if self.picks <= self.prefix:
            value = self.inner.draw(kind, options)
        else:
            value = min(range(len(labels)), key=lambda i: since[labels[i]])
        del since[labels[value]]
        return value

    def describe(self) -> dict:
        return {**self.inner.describe(), "fair_from": self.fair_from}
