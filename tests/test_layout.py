"""The design card's top level: `sim/`, `spec/` and `conformance/` sit at the
repository root and are imported as `forge.sim`, `forge.spec` and
`forge.conformance` (forge/_roots.py in a checkout, setup.py in a wheel; the
wheel's side is exercised by tests/test_docs_examples.py, which installs one).
Cites kit:layout (no clause states where the kit's files are)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import forge
from forge import _roots

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_root_folders_are_the_checkouts_own():
    """kit:layout - each root folder is imported from the checkout `forge` came from."""
    import forge.conformance
    import forge.sim
    import forge.spec

    assert pathlib.Path(forge.__file__).resolve().parent == ROOT / "forge"
    for module, folder in ((forge.sim, "sim"), (forge.spec, "spec"), (forge.conformance, "conformance")):
        assert pathlib.Path(module.__file__).resolve() == ROOT / folder / "__init__.py"
        assert not (ROOT / "forge" / folder).exists(), f"forge/{folder} would shadow the root folder"


def test_submodules_load_from_the_root_folder():
    """kit:layout - submodules are found on the mounted package's path."""
    from forge.sim.strategies import base  # noqa: F401 - a module of a nested package

    assert pathlib.Path(sys.modules["forge.sim.strategies"].__file__).resolve().parent == ROOT / "sim" / "strategies"


def test_another_checkout_first_on_the_path_mounts_its_own_folders(tmp_path):
    """kit:layout - with a copy of the kit first on PYTHONPATH, its `forge.sim` is the
    copy's, never the installed checkout's (an editable install's finder would say otherwise)."""
    copy = tmp_path / "copy"
    (copy / "forge").mkdir(parents=True)
    # forge/__init__.py and the modules it imports
    for name in ("__init__.py", "_roots.py", "deferred.py", "version.py"):
        (copy / "forge" / name).write_text((ROOT / "forge" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (copy / "sim").mkdir()
    (copy / "sim" / "__init__.py").write_text("WHERE = 'the copy'\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "import forge.sim; print(forge.sim.WHERE)"],
                          env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip() == "the copy", done.stderr
