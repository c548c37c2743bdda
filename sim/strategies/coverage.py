"""The coverage-guided strategy: runs that extend a corpus of schedules that reached something new.

Each seed's schedule replays a prefix of a corpus entry - a run that
reached a probe, an outcome or an abstract state (event and decision
bigrams) no run before it had - with one or more decisions changed, then
draws the rest from the seed (`forge.sim.coverage`, AFL's and Antithesis's
idea on the kit's choice records).  On the mutant catalogue it needs about
half the runs random needs to first failure (`benchmarks/strategies.py`).

Spelled `coverage:SEED[:V.V...]` for one run: the prefix of choice values
the campaign replayed, then uniform draws from the seed, which is how a
finding's description draws it again alone.  A search's corpus grows over
lanes of `forge.sim.coverage.LANE` seeds, each a function of its own seeds,
so its seeds may be spread over processes (a worker runs whole lanes) and
cut into shards (each shard runs its own lanes; shards share no seed).
"""

from __future__ import annotations

from forge.sim.coverage import LANE, CoverageCampaign, CoverageProvider
from forge.sim.strategies.base import Strategy, seed_of

#: The most choice values a one-run spelling's prefix may carry.
MAX_PREFIX = 100_000


def _provider(arguments: str) -> CoverageProvider:
    seed, _, prefix = arguments.partition(":")
    values = [int(v) for v in prefix.split(".")] if prefix else []
    if len(values) > MAX_PREFIX:
        raise ValueError(f"a coverage prefix holds at most {MAX_PREFIX} choices")
    return CoverageProvider(seed_of(seed), values)


STRATEGY = Strategy("coverage", spelling="coverage:SEED[:V.V...]",
                    arguments=r"-?[0-9]{1,20}(?::[0-9]{1,9}(?:\.[0-9]{1,9})*)?",
                    provider=_provider, campaign=CoverageCampaign, chunk=LANE,
                    summary="extends a corpus of schedules that reached new probes or "
                            "states")
