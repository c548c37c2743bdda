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
    assert printed[2].startswith("2 schedules (random), 2 distinct; outcomes: 2 ok; FAILED at seed 1")
    assert printed[3] == "(0, 1) forge replay race.replay.json"
    assert "True True" in printed
    assert "0.5" in printed
    assert (tmp_path / "race.replay.json").is_file() and (tmp_path / "faults.replay.json").is_file()
