"""forge/deferred.py: a deferred module is the module itself, loaded on first use.

Cites (kit: deferred-imports): no clause states how the kit loads its own
modules; CONTRIBUTING.md "Where imports go" does.  Each case runs in a fresh
interpreter, so that "not loaded yet" means what it says.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(code: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return done


def test_a_deferred_module_is_the_same_object_as_the_normal_import():
    """(kit: deferred-imports) no second module object: before its first use
    the module is not loaded at all (nor in `sys.modules`); the first
    attribute read imports it the ordinary way and puts the module itself in
    the declaring module's globals; `import` then gives that same object."""
    _run("""
        import sys
        from forge.deferred import deferred

        matrix = deferred("forge.conformance.matrix")
        assert "forge.conformance.matrix" not in sys.modules
        stand_in = matrix
        render = matrix.render
        assert "forge.conformance.matrix" in sys.modules
        import forge.conformance.matrix as imported
        from forge.conformance import matrix as from_imported
        assert matrix is imported is from_imported is sys.modules["forge.conformance.matrix"]
        import forge
        assert forge.conformance.matrix is imported   # the parent package's attribute
        assert type(matrix) is type(sys) and render is imported.render
        assert stand_in.render is imported.render     # a kept stand-in forwards to it
    """)


def test_a_kit_module_s_deferred_names_become_the_modules_on_first_use():
    """(kit: deferred-imports) a real declaring module: `forge.timeline`
    defers `forge.limits`; after one call that reads it, the global is the
    module, so later reads cost a plain lookup."""
    _run("""
        import sys
        import forge.timeline as timeline
        assert "forge.limits" not in sys.modules
        assert type(timeline.limits).__name__ == "_Deferred"
        timeline.limits.MAX_SCRIPT_BYTES
        import forge.limits
        assert timeline.limits is forge.limits is sys.modules["forge.limits"]
    """)


def test_an_already_imported_module_is_returned_as_it_is():
    """(kit: deferred-imports) deferring a module that is loaded already
    gives that module on first use, not a reload."""
    _run("""
        import forge.verdict
        from forge.deferred import deferred, loaded
        verdict = deferred("forge.verdict")
        assert loaded(verdict) is forge.verdict
        assert verdict is forge.verdict
        assert loaded(forge.verdict) is forge.verdict
    """)


def test_a_missing_module_fails_at_first_use_and_again_after():
    """(kit: deferred-imports) an import that fails (an optional dependency
    missing) raises at the first use, as the import in a function did, and
    leaves the stand-in in place to fail the same way next time."""
    _run("""
        from forge.deferred import deferred, loaded
        gone = deferred("forge.no_such_module")
        for _ in range(2):
            try:
                loaded(gone)
            except ModuleNotFoundError as e:
                assert e.name == "forge.no_such_module"
            else:
                raise AssertionError("loaded a module that does not exist")
        assert type(gone).__name__ == "_Deferred"
    """)
