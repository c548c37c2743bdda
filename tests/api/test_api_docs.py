"""docs/api.md's examples run: every ```python block, in order, in one namespace,
from a folder where `examples/` is the kit's (so the files they write stay there)."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_examples_of_docs_api_md_run(tmp_path, monkeypatch):
    """Each block runs without error, and the first prints what its comments say."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "docs/api.md", "exec"), namespace)  # noqa: S102 - the docs' own code
    printed = out.getvalue().splitlines()
    assert printed[0] == "ok alpha text + beta text"
    assert printed[2].startswith("2 schedules (portfolio), 2 distinct; outcomes: 2 ok; FAILED at seed 1")
    assert printed[3] == "(0, 1) forge replay race.replay.json"
    assert "True True" in printed
    assert "0.5" in printed
    assert (tmp_path / "race.replay.json").is_file() and (tmp_path / "faults.replay.json").is_file()
    assert printed[-1] == ("run_prompt: seed must be at most 9223372036854775807, got "
                           "9223372036854775808")       # the Errors section's example


def test_docs_api_md_names_every_observation_field():
    """The `Observation` paragraph of docs/api.md names each of its fields
    (`rounds` and `effects` were missing) (kit: api.docs)."""
    import attrs

    import forge

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    paragraph = text[text.index("`Observation` is a frozen attrs value"):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    for field in attrs.fields(forge.Observation):
        assert f"`{field.name}`" in paragraph, field.name


def test_docs_pytest_md_sample_counts_the_default_profiles_runs():
    """The sample failure of docs/pytest.md counts the default profile's schedules
    (kit: api.docs)."""
    from forge.pytest_plugin import get_profile

    text = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")
    counted = re.search(r"failed \(after \d+ of (\d+) portfolio schedules, first seed 0, "
                        r"profile default\)", text)
    assert counted and int(counted.group(1)) == get_profile("default").runs


def test_the_from_python_examples_of_docs_exploring_md_run(tmp_path, monkeypatch):
    """docs/exploring.md's From Python blocks run, and the Hypothesis example saves
    a replay file that reproduces its failure (`run` returns a Run, whose
    `observation()` `replay_text` takes) (kit: api.docs)."""
    import forge

    text = (ROOT / "docs" / "exploring.md").read_text(encoding="utf-8")
    section = text[text.index("## From Python"):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for block in blocks:
            exec(compile(block, "docs/exploring.md", "exec"), namespace)  # noqa: S102
    again = forge.replay(tmp_path / "hypothesis.replay.json")
    assert again.reproduced and again.identical


def test_the_example_of_forge_sim_hypothesis_runs(monkeypatch):
    """The docstring's example of `forge.sim.hypothesis` defines everything it
    calls, and its property holds (kit: api.docs)."""
    import textwrap

    import forge.sim.hypothesis as module

    doc = module.__doc__ or ""
    example = textwrap.dedent(doc[doc.index("    from hypothesis"):doc.index("\nHypothesis is")])
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(example, "sim/hypothesis.py", "exec"), namespace)  # noqa: S102
    namespace["test_the_result_is_schedule_independent"]()
