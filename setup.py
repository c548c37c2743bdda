"""The package list for building the kit: pyproject.toml holds everything else.

The design card's root folders `sim/`, `spec/` and `conformance/` are
installed inside the one import package, as `forge.sim`, `forge.spec` and
`forge.conformance` (forge/_roots.py says how a source checkout does the same).
setuptools' `packages.find` cannot rename what it finds, so the list is made here.
"""

import runpy

from setuptools import find_namespace_packages, setup

# The one list of root folders, read without importing the kit (its dependencies
# need not be installed while it is being built).
ROOT_FOLDERS = runpy.run_path("forge/_roots.py")["ROOT_FOLDERS"]

# Namespace-aware, as pyproject's `packages.find` is: `forge/lua` and the data
# folders have no `__init__.py` and must still be shipped.
packages = find_namespace_packages(include=["forge", "forge.*"], exclude=["*.__pycache__"])
package_dir = {}
for folder in ROOT_FOLDERS:
    package_dir[f"forge.{folder}"] = folder
    inside = find_namespace_packages(where=folder, exclude=["__pycache__", "*.__pycache__"])
    packages += [f"forge.{folder}", *(f"forge.{folder}.{sub}" for sub in inside)]

setup(packages=packages, package_dir=package_dir)
