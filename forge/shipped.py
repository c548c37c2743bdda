"""Where the kit's example prompts are: the checkout's `examples/`, or the
copy a plain `pip install .` puts beside the environment (the wheel's data
files, `share/forge-kit/examples`), so `forge mutants` and the shipped
lifecycle races work from any folder after an install.

What does not live here: what is done with the examples (`forge.conformance.mutants`,
`forge.lifecycle.scenario`), the package data inside `forge/` (found by
`importlib.resources`).
"""

from __future__ import annotations

import pathlib

#: The distribution's name, as pyproject.toml spells it.
DISTRIBUTION = "forge-kit"
#: Where the data files put the examples, relative to the environment.
DATA_DIR = ("share", "forge-kit", "examples")


def examples_dir() -> pathlib.Path | None:
    """The examples folder: the checkout's when the kit runs from one, else
    the installed copy (None: neither is there)."""
    checkout = pathlib.Path(__file__).resolve().parents[1] / "examples"
    if checkout.is_dir():
        return checkout
    return _installed()


def _installed() -> pathlib.Path | None:
    from importlib import metadata

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or ():
        parts = pathlib.PurePath(file).parts
        for i in range(len(parts) - len(DATA_DIR)):
            if parts[i:i + len(DATA_DIR)] == DATA_DIR:
                found = pathlib.Path(dist.locate_file(pathlib.PurePath(*parts[:i + 3])))
                return found.resolve() if found.is_dir() else None
    return None
