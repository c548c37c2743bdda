"""`forge mutants` outside a source checkout (kit: mutants-examples).

A wheel install has no `examples/`; scoring mutants without the example
prompts would let the mutants only the invariants kill survive, so the
command refuses with one line instead.
"""

import pytest

from forge.conformance import mutants
from forge.errors import InputError


def test_missing_examples_are_refused_not_scored(tmp_path, monkeypatch):
    """(kit: mutants-examples)"""
    monkeypatch.setattr(mutants, "EXAMPLES", tmp_path / "examples")
    with pytest.raises(InputError, match=r"cannot find .*examples; run it from a clone of the kit"):
        mutants.explore_prompts()
    with pytest.raises(InputError):
        mutants.kill_matrix(mutants.CATALOGUE[:1], [], seeds=1, workers=2)


def test_a_source_checkout_has_the_example_prompts():
    """(kit: mutants-examples)"""
    names = [name for name, _ in mutants.explore_prompts()]
    assert "leak-check.md" in names and "two-tasks.md" in names
