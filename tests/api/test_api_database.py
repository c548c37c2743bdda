"""`forge.explore(..., database=DIR)`: the failure database from Python, as
`forge explore --database DIR` keeps it (issue 29, item 3; kit:
failure-database): a failure found is kept, the next exploration of the
same prompt and settings runs it first and reports it before any new
schedule, and it is dropped once it passes."""

from __future__ import annotations

import shutil

import pytest

import forge
from forge.errors import InputError
from tests.conftest import EXAMPLES

BROKEN = EXAMPLES / "first" / "headline.md"
FIXED = EXAMPLES / "first" / "headline-fixed.md"


def test_kept_replayed_first_and_dropped_once_fixed(tmp_path):
    prompt, db = tmp_path / "headline.md", tmp_path / "db"
    shutil.copy(BROKEN, prompt)
    first = forge.explore(prompt, runs=50, database=db)
    assert not first.ok and first.runs > 0
    kept = list((db / "failures").rglob("*.replay.json"))
    assert len(kept) == 1
    again = forge.explore(prompt, runs=50, start_seed=999, database=db,
                          replay_out=tmp_path / "again.replay.json")
    assert again.runs == 0
    failure = again.failures[0]
    assert failure.problems == first.failures[0].problems
    assert failure.observation.outcome == "failed"
    assert failure.replay_file == str(tmp_path / "again.replay.json")
    assert forge.replay(failure.replay_file).problems == failure.problems
    shutil.copy(FIXED, prompt)
    fixed = forge.explore(prompt, runs=50, database=db)
    assert fixed.ok and fixed.runs == 50
    assert not list((db / "failures").rglob("*.replay.json"))


def test_without_a_database_nothing_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORGE_DATABASE", raising=False)
    assert not forge.explore(BROKEN, runs=50).ok
    assert not (tmp_path / ".forge").exists()


def test_none_keeps_none_and_a_bad_folder_is_refused(tmp_path):
    assert not forge.explore(BROKEN, runs=20, database="none").ok
    with pytest.raises(InputError, match="database"):
        forge.explore(BROKEN, runs=20, database=123)
