"""`--json [FILE]` means the same on every command (issue 29, item 4): alone
or `-`, the JSON report on standard output; with FILE (`--json FILE` or
`--json=FILE`), written there while the words stay on standard output.  The
old switch spelling before an argument (`forge run --json P.md`) still
prints JSON and runs P.md, and a bare `--json` never writes over a file the
command reads (`forge.commands.jsonflag.spell_json`)."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from forge.cli import main
from tests.conftest import EXAMPLES

TWO = str(EXAMPLES / "two-tasks.md")
LEAKY = str(EXAMPLES / "leaky-walk.md")


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


def _commands(group: click.Group, path=()):
    for name, command in sorted(group.commands.items()):
        yield path + (name,), command
        if isinstance(command, click.Group):
            yield from _commands(command, path + (name,))


def test_every_json_flag_is_the_shared_one():
    """No command keeps a `--json` switch or a FILE-only `--json` of its own."""
    from forge.commands.explore import merge

    commands = list(_commands(main)) + [(("explore", "merge"), merge)]
    with_json = []
    for path, command in commands:
        for param in command.params:
            if "--json" in getattr(param, "opts", ()):
                with_json.append(path)
                assert param.name == "json_out" and not param.is_flag, path
                assert param.flag_value == "-" and param.default is None, path
    assert {("run",), ("explore",), ("replay",), ("conformance",), ("mutants",), ("spec",),
            ("spec", "coverage"), ("lifecycle", "check"), ("explore", "merge")} <= set(with_json)


@pytest.mark.parametrize("spelling", [["--json"], ["--json", "-"], ["--json=-"]])
def test_alone_or_dash_prints_json_on_stdout(spelling):
    result = forge("run", TWO, *spelling)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["result"] == "alpha text + beta text"


@pytest.mark.parametrize("attached", [False, True])
def test_with_file_writes_there_and_keeps_the_words(tmp_path, attached):
    out = str(tmp_path / "obs.json")
    result = forge("run", TWO, *([f"--json={out}"] if attached else ["--json", out]))
    assert (result.exit_code, result.output) == (0, "alpha text + beta text\n")
    assert json.loads((tmp_path / "obs.json").read_text())["outcome"] == "ok"


def test_old_switch_before_the_prompt_still_runs_it():
    result = forge("run", "--json", TWO)
    assert result.exit_code == 0
    assert json.loads(result.output)["outcome"] == "ok"


def test_explore_json_alone_dash_and_file(tmp_path):
    for spelling in (["--json"], ["--json", "-"]):
        result = forge("explore", TWO, "--runs", "3", "--database", "none", *spelling)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["runs"] == 3
    out = tmp_path / "report.json"
    result = forge("explore", TWO, "--runs", "3", "--database", "none", "--json", str(out))
    assert result.exit_code == 0
    assert result.stdout.startswith("3 schedules, ")
    assert json.loads(out.read_text())["runs"] == 3


def test_replay_never_writes_json_over_its_own_files(tmp_path):
    """`forge replay --json P.md R.json` (the old switch) replays R.json on P.md,
    where taking P.md as the FILE would have overwritten the prompt."""
    prompt = tmp_path / "leaky-walk.md"
    prompt.write_text((EXAMPLES / "leaky-walk.md").read_text())
    replay = tmp_path / "f.replay.json"
    assert forge("explore", str(prompt), "--runs", "2", "--database", "none",
                 "--replay-out", str(replay)).exit_code == 1
    text = prompt.read_text()
    result = forge("replay", "--json", str(prompt), str(replay))
    assert result.exit_code == 1
    assert prompt.read_text() == text
    assert json.loads(result.stdout.splitlines()[0])["outcome"] == "failed"
    result = forge("replay", "--json", str(replay))
    assert result.exit_code == 1 and json.loads(result.stdout.splitlines()[0])


def test_conformance_json_alone_is_stdout():
    """`forge conformance --json` alone was refused; now it prints the report."""
    result = forge("conformance", "-k", "^examples/two-tasks$", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["passed"] >= 1


def test_spec_json_does_not_take_a_subcommand_name():
    result = forge("spec", "--json", "coverage")
    assert result.exit_code == 2
    assert "--json: a flag of the `forge spec` listing" in result.output


def test_json_file_the_system_refuses_names_the_flag(tmp_path):
    result = forge("run", TWO, "--json", str(tmp_path / "missing" / "x.json"))
    assert result.exit_code == 2
    assert "--json" in result.output and "does not exist" in result.output
