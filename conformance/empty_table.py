"""One rule of the spec's equivalence, shared by everything that compares
observations: an empty Lua table reported as `[]` equals one reported as
`{}` (docs/observation.md, "Equivalence") - an engine cannot tell an empty
array from an empty map.

The equivalence (`equivalence`) and the cases' matchers (`matchers`) both
read it from here, so the two never disagree; this module imports nothing
of the kit, so either may use it.  What does not live here: the rest of
the equivalence.
"""

from __future__ import annotations

from typing import Any


def empty_table(value: Any) -> bool:
    """Whether `value` is an empty Lua table as JSON carries it, `[]` or `{}`."""
    return isinstance(value, (list, dict)) and not value
