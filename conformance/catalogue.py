"""The clause catalogue as the suite sees it: every `[[clause]]` of `spec/*.toml`.

Each clause is a table with at least `id` and `feature` (and, in the spec
files, `section`, `lines`, `statement`, `strings`).  Cases cite clause ids;
the runner reports which clauses the suite covers, feature by feature.

What lives here: finding and loading the catalogue, refusing one whose
clauses lack an id or a feature or repeat an id, and the "did you mean"
hint for a mistyped clause or feature name.  What does not: the
catalogue's contents and its own tooling (`spec/`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from forge.conformance._toml import read_toml
from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import spec
else:
    spec = deferred("forge.spec")


def default_catalogue_dir() -> Path | None:
    """The clause catalogue shipped as package data of `forge.spec`, if it is there."""
    here = Path(spec.__file__).resolve().parent
    return here if any(here.glob("*.toml")) else None


def load_catalogue(directory: str | Path) -> list[dict]:
    """Every clause of every `*.toml` in `directory`, in file then file order.

    Raises:
        InputError: no catalogue files, a TOML error, or a clause without a
            string `id` and `feature`, or an id given twice.
    """
    files = sorted(Path(directory).glob("*.toml"))
    if not files:
        raise InputError("no clause catalogue here (expected spec/*.toml files)",
                         file=str(directory))
    clauses: list[dict] = []
    seen: dict[str, str] = {}
    for path in files:
        _, data = read_toml(path)
        entries = data.get("clause", [])
        if not isinstance(entries, list):
            raise InputError("`clause` must be an array of tables ([[clause]])", file=str(path))
        for n, clause in enumerate(entries, 1):
            for key in ("id", "feature"):
                if not isinstance(clause.get(key), str) or not clause[key]:
                    raise InputError(f"clause #{n} has no string `{key}`", file=str(path),
                                     kind="catalogue")
            cid = clause["id"]
            if cid in seen:
                raise InputError(f"clause id `{cid}` is given twice (first in {seen[cid]})",
                                 file=str(path), kind="catalogue")
            seen[cid] = path.name
            clauses.append(dict(clause))
    return clauses


def did_you_mean(unknown: Iterable[str], known: Iterable[str]) -> str:
    """` (did you mean `x`?)` for the closest known names, or ""."""
    known = list(known)
    hints = []
    for name in unknown:
        # 0.8: a typo or two in a dotted clause id; lower cutoffs suggest
        # unrelated ids that merely share the `tasks.` prefix.
        hints += [m for m in difflib.get_close_matches(name, known, n=2, cutoff=0.8)
                  if m not in hints]
    if not hints:
        return ""
    return f" (did you mean {' or '.join(f'`{h}`' for h in hints)}?)"
