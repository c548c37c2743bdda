"""The replay strategy: the choices a replay file recorded, in order.

Spelled `replay:FILE`.  Here the file is read by the simulator's generic
reader (`forge.sim.replayfile`: its choices); a front end that knows what
the file's record says was run checks that first (`reads_file`).
"""

from __future__ import annotations

from forge.sim.chooser import ReplayProvider, load_replay
from forge.sim.strategies.base import Strategy


def _provider(arguments: str) -> ReplayProvider:
    return ReplayProvider(load_replay(arguments))


STRATEGY = Strategy("replay", spelling="replay:FILE", arguments=r".+", provider=_provider,
                    reads_file=True)
