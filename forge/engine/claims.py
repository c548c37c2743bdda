"""Store claims: who touched which path, for the store's sharing rule.

Live chains that share a store path without being joined would make the
result depend on the schedule, so the engine records a claim on every path a
chain reads or writes and ends the run with a `Determinism` failure when a
claim conflicts with another live identity's.  What does not live here: the
store operations themselves (`forge.store`).
"""

from __future__ import annotations

#: Operations that take a write claim; every other operation reads.
WRITES = frozenset({"write", "append", "delete", "str_replace"})


class Claims:
    """Who touched which path, for the store's sharing rule.

    A write claim conflicts with any claim of another live identity; a read
    claim conflicts only with another identity's write claim.  Identities
    release their claims when their chain ends (a finished task before its
    waiter wakes).  Each claim remembers when it was first taken, so a task
    can see the work its owner did before spawning it.
    """

    def __init__(self) -> None:
        self._by_path: dict[str, dict[str, tuple[str, int]]] = {}
        #: The paths each identity holds a claim on, so a release costs what
        #: that identity touched, not the whole table.
        self._by_identity: dict[str, dict[str, None]] = {}
        self._clock = 0

    def now(self) -> int:
        return self._clock

    def conflict(self, identity: str, claim: str, path: str, exempt) -> tuple[str, str] | None:
        """The first other holder this claim conflicts with, or None.

        `exempt(other, since)` says whether another identity's claim, taken
        at `since`, is visible to this one without a conflict.
        """
        for other, (other_claim, since) in sorted(self._by_path.get(path, {}).items()):
            if other == identity or exempt(other, since):
                continue
            if claim == "write" or other_claim == "write":
                return other, other_claim
        return None

    def take(self, identity: str, claim: str, path: str) -> None:
        self._clock += 1
        holders = self._by_path.setdefault(path, {})
        self._by_identity.setdefault(identity, {})[path] = None
        held = holders.get(identity)
        if held is None:
            holders[identity] = (claim, self._clock)
        elif held[0] != "write" and claim == "write":
            holders[identity] = ("write", self._clock)

    def release(self, identity: str) -> None:
        for path in self._by_identity.pop(identity, {}):
            self._by_path[path].pop(identity, None)
