"""Letting go: what a part of a finished run drops so that nothing it holds reaches the run.

When a run ends (`forge.engine.run.Run._let_go`), its context and its parts
drop their references to one another, so that reference counting frees the
run at once.  Each such reference is typed as always there, which it is
while the run lives, so no part checks it for None; `let_go` sets it to
None without saying otherwise to a type checker.

What does not live here: which references each part drops (its own
`let_go`), and why a run lets go (`forge.engine.run`).
"""

from __future__ import annotations


def let_go(holder: object, *names: str) -> None:
    """The run has ended: `holder` drops what it holds as `names` (each set to None)."""
    for name in names:
        setattr(holder, name, None)


__all__ = ["let_go"]
