"""`forge mutants` without its example prompts (kit: mutants-examples).

A wheel install ships them as data files (`forge.shipped`); one that lost
them would let the mutants only the invariants kill survive if it scored,
so the command refuses with one line instead.
"""

import pytest

from forge.conformance import mutants
from forge.errors import InputError


def test_missing_examples_are_refused_not_scored(tmp_path, monkeypatch):
    """(kit: mutants-examples)"""
    monkeypatch.setattr(mutants, "EXAMPLES", tmp_path / "examples")
    with pytest.raises(InputError, match=r"cannot find .*examples; reinstall the kit \(pip install \.\) or run it "
                                         r"from a clone"):
        mutants.explore_prompts()
    with pytest.raises(InputError):
        mutants.kill_matrix(mutants.CATALOGUE[:1], [], seeds=1, workers=2)


def test_a_source_checkout_has_the_example_prompts():
    """(kit: mutants-examples)"""
    names = [name for name, _ in mutants.explore_prompts()]
    assert "leak-check.md" in names and "two-tasks.md" in names
