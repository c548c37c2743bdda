"""How one import name, `forge`, spans the design card's root folders.

The repository keeps the simulator, the clause catalogue and the conformance
suite at its top level (`sim/`, `spec/`, `conformance/`), beside `forge/`, as
the design card lays the kit out; they are imported as `forge.sim`,
`forge.spec` and `forge.conformance`. A built wheel puts them inside the
`forge` package (setup.py's `package_dir`), so an installed kit needs nothing
from here. In a source checkout - an editable install, or the checkout first
on `sys.path` - this module's finder maps the three names to the root folders
of the checkout this very `forge/` belongs to, never to another copy of the
kit that is also installed; submodules (`forge.sim.kernel`) are then found on
the mounted package's `__path__` the ordinary way.

What does not live here: the package list for building (setup.py), the
layering rules between the folders (tests/test_dependencies.py).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

#: The root folders that are subpackages of `forge`, by the name they are imported as.
ROOT_FOLDERS = ("sim", "spec", "conformance")


class _RootFolders(importlib.abc.MetaPathFinder):
    """Finds `forge.<folder>` at `<checkout>/<folder>/`."""

    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        package, _, folder = fullname.rpartition(".")
        if package != "forge" or folder not in ROOT_FOLDERS:
            return None
        where = self.checkout / folder
        return importlib.util.spec_from_file_location(
            fullname, where / "__init__.py", submodule_search_locations=[str(where)])


def mount(package_dir: Path) -> None:
    """Make the root folders beside `package_dir` (this checkout's `forge/`)
    importable as its subpackages, unless they are inside it (a wheel)."""
    checkout = package_dir.parent
    if (package_dir / ROOT_FOLDERS[0]).is_dir() or not (checkout / ROOT_FOLDERS[0] / "__init__.py").is_file():
        return
    # First on the meta path: an editable install's own finder would map the
    # names to the installed checkout even when another checkout is imported.
    if not any(isinstance(f, _RootFolders) and f.checkout == checkout for f in sys.meta_path):
        sys.meta_path.insert(0, _RootFolders(checkout))
