"""Exit codes are documented in one table (docs/limits.md, "Exit codes") and
mean the same on every command (issue 29, item 4): each command's `--help`
names only codes of that table, each as the table says; the kit's constants
are the table's codes; bad input is 2 and Ctrl-C is 130 on every command, the
long ones after a partial summary."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from forge import cli
from forge.cli import main
from tests.conftest import EXAMPLES, ROOT as REPO

#: What each code's words in a command's help must say, as the table says it.
MEANING = {
    0: r"success|succeeded|passed|printed|pass|every|when every",
    1: r"fail|reproduces|survives|one is not|drift",
    2: r"bad input|unusable|unknown|select no|for an unknown",
    3: r"exhaustive|stopped",
    4: r"fixed",
}


def table() -> dict[int, str]:
    text = (REPO / "docs" / "limits.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m.group(1)): m.group(2).strip()
            for m in re.finditer(r"^\| (\d+) \| (.+) \|$", section, re.M)}


def commands():
    from forge.commands.explore import merge

    def walk(group, path):
        for name, command in sorted(group.commands.items()):
            yield path + [name], command
            if isinstance(command, click.Group):
                yield from walk(command, path + [name])

    yield from walk(main, [])
    yield ["explore", "merge"], merge


def documented(help_text: str) -> dict[int, str]:
    """The codes a help names after "Exit code(s)", with the words after each."""
    found = {}
    for block in re.findall(r"[Ee]xit codes?(?: \([^)]*\))?:?\s+(.*?)(?:\n\s*\n|\Z)", help_text, re.S):
        block = " ".join(block.split())
        for m in re.finditer(r"(?:^|[\s,(;])(\d{1,3}) ((?:\([^)]*\) )?[a-z][^,;]*)", block):
            found[int(m.group(1))] = m.group(2)
    return found


def test_the_table_is_the_kits_codes():
    from forge.conformance.cli import REPLAY_EXIT

    constants = {cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_BAD_INPUT, cli.EXIT_INCOMPLETE,
                 cli.EXIT_KIT_BUG, cli.EXIT_INTERRUPTED, *REPLAY_EXIT.values()}
    assert set(table()) == constants == {0, 1, 2, 3, 4, 70, 130}


@pytest.mark.parametrize("path,command", list(commands()), ids=lambda v: " ".join(v)
                         if isinstance(v, list) else "")
def test_each_commands_documented_codes_are_the_tables(path, command):
    help_text = CliRunner().invoke(main, [*path, "--help"]).output
    codes = documented(help_text)
    known = table()
    for code, words in codes.items():
        assert code in known, f"forge {' '.join(path)} documents exit code {code}: {words}"
        if code in MEANING:
            assert re.search(MEANING[code], words), (path, code, words)


def test_the_documented_codes_are_found():
    """The parser above reads what the helps say (so the check is not empty)."""
    run = documented(CliRunner().invoke(main, ["run", "--help"]).output)
    assert sorted(run) == [0, 1, 2]
    explore = documented(CliRunner().invoke(main, ["explore", "--help"]).output)
    assert sorted(explore) == [0, 1, 2, 3, 4]
    top = documented(CliRunner().invoke(main, ["--help"]).output)
    assert sorted(top) == [0, 1, 2, 3, 70, 130]


@pytest.mark.parametrize("path,command", [(p, c) for p, c in commands()
                                          if not isinstance(c, click.Group)],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_an_unknown_flag_is_bad_input_everywhere(path, command):
    result = CliRunner().invoke(main, [*path, "--no-such-flag"])
    assert result.exit_code == 2
    assert result.output.startswith("forge: ") and len(result.output.splitlines()) == 1


def _interrupt(*_a, **_k):
    raise KeyboardInterrupt


@pytest.mark.parametrize("args,patch,summary", [
    (["run", str(EXAMPLES / "two-tasks.md")], "forge.runspec.Runner.run", None),
    (["explore", str(EXAMPLES / "two-tasks.md"), "--runs", "5"], "forge.repro.explore_prompt",
     "interrupted after 0 of 5 schedules (from start seed 0); no failure among those checked"),
    (["mutants", "-k", "timeout"], "forge.conformance.mutants.kill_matrix",
     "interrupted after 0 of "),
    (["lifecycle", "contract", "forge.lifecycle.store:MemoryStore"],
     "forge.lifecycle.contract.run_contract", "interrupted after 0 of "),
])
def test_ctrl_c_exits_130_after_a_partial_summary(monkeypatch, args, patch, summary):
    module, _, name = patch.rpartition(".")
    try:
        target = __import__(module, fromlist=["x"])
    except ModuleNotFoundError:
        module, _, cls = module.rpartition(".")
        target = getattr(__import__(module, fromlist=["x"]), cls)
    monkeypatch.setattr(target, name, _interrupt)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130, result.output
    assert result.output.rstrip().endswith("forge: interrupted")
    if summary is not None:
        assert summary in result.output
