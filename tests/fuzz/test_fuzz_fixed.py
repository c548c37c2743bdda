"""Fixed inputs that once ended in exit 70 (a kit bug) or in a wrong answer, run through the
CLI on every CI run whatever the fuzz budget: each must be refused as bad input (exit 2) in
one line naming the file, flag or field, or run as documented.

Found by a reliability campaign (issue 31): a replay file whose `run.args` holds a lone
surrogate (a `UnicodeEncodeError`), an output file name longer than the file system allows
("File name too long"), a replay file's `run.latency.base` naming an operation `--latency`
refuses, a link to a folder inside a `--store` folder (skipped without a word where a link
to a file was refused), and a `string.rep` Lua refuses at once charged millions of
instructions.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import EXAMPLES, prompt_text, run_text, section
from tests.fuzz.cli import check

TWO_TASKS = str(EXAMPLES / "two-tasks.md")


@pytest.fixture
def recorded(tmp_path) -> dict:
    path = tmp_path / "r.json"
    check("fixed input", ["run", TWO_TASKS, "--replay-out", str(path)])
    return json.loads(path.read_text())


def _write(tmp_path, data: dict) -> str:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))       # `\udcff` is written as the escape
    return str(path)


def test_a_lone_surrogate_in_a_replay_file_is_refused_naming_the_field(recorded, tmp_path):
    """A replay file's strings are valid Unicode, like every other input's
    (kit: limits.inputs)."""
    recorded["run"]["args"] = "\udcff"
    path = _write(tmp_path, recorded)
    for argv in (["replay", path], ["run", TWO_TASKS, "--strategy", f"replay:{path}"]):
        result = check("fixed input", argv, names=path)
        assert result.exit_code == 2
        assert "$.run.args: a string that is not valid Unicode (a lone surrogate)" in result.stderr


def test_a_surrogate_pair_in_a_replay_file_is_text(recorded, tmp_path):
    """A pair of surrogate escapes is one character, not a refusal (kit: limits.inputs)."""
    recorded["store"] = {"smile.txt": "\U0001f600"}
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(recorded, ensure_ascii=True))
    assert "\\ud83d\\ude00" in path.read_text()
    assert "lone surrogate" not in check("fixed input", ["replay", str(path)]).stderr


def test_an_unknown_latency_operation_in_a_replay_file_is_refused(recorded, tmp_path):
    """`run.latency.base` keeps the rule `--latency` keeps (kit: limits.inputs)."""
    recorded["run"]["latency"]["base"]["bogus"] = 1.0
    path = _write(tmp_path, recorded)
    result = check("fixed input", ["replay", path], names=path)
    assert result.exit_code == 2
    assert "$.run.latency.base: unknown operation 'bogus'" in result.stderr


@pytest.mark.parametrize("flag", ["--trace", "--replay-out"])
def test_an_output_name_longer_than_the_file_system_allows_is_refused(flag, tmp_path):
    """A 300-byte file name is refused up front naming the flag (kit: limits.inputs)."""
    path = str(tmp_path / ("a" * 300))
    result = check("fixed input", ["run", TWO_TASKS, flag, path], names=flag)
    assert result.exit_code == 2
    assert "File name too long" in result.stderr


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_link_in_a_store_folder_is_refused_whatever_it_points_at(kind, tmp_path):
    """A link to a folder is refused as a link to a file is, naming it (kit: limits.inputs)."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "a.txt").write_text("a")
    link = store / "link"
    os.symlink(tmp_path if kind == "folder" else store / "a.txt", link)
    result = check("fixed input", ["run", TWO_TASKS, "--store", str(store)], names=str(link))
    assert result.exit_code == 2
    assert "a store folder holds regular files only" in result.stderr


def test_a_rep_lua_refuses_at_once_is_not_charged():
    """`string.rep` past Lua's largest string fails before any work, so it costs nothing:
    ten caught refusals fit a budget of 100,000 instructions (kit: budget.bulk-calls)."""
    code = ("local n, e = 0 for i = 1, 10 do local ok ok, e = pcall(string.rep, 'xx', 1 << 62) "
            "if not ok then n = n + 1 end end return n .. ' ' .. tostring(e)")
    obs = run_text(prompt_text(section("Main", code)), max_instructions=100_000)
    assert obs["result"] == "10 resulting string too large"

