"""The `forge` command: exit codes that mean something, one-line errors for
bad input (never a traceback), and help that teaches."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from forge.cli import main
from tests.conftest import EXAMPLES


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


def test_ok_run_prints_the_result_and_exits_0():
    result = forge("run", str(EXAMPLES / "two-tasks.md"))
    assert (result.exit_code, result.output) == (0, "alpha text + beta text\n")


def test_failed_run_exits_1_and_says_why():
    result = forge("run", str(EXAMPLES / "leaky-walk.md"))
    assert result.exit_code == 1
    assert "failed: Lua: chain ended with author tasks still live: 0.0" in result.output


def test_json_observation_has_the_contract_fields():
    result = forge("run", str(EXAMPLES / "two-tasks.md"), "--json")
    obs = json.loads(result.output)
    assert {"outcome", "result", "error", "logs", "events", "tasks", "trace_sha256"} <= set(obs)
    assert obs["tasks"]["0.0"]["state"] == "done"


BAD = {
    "missing prompt": (["run", "nope.md"], "nope.md: cannot read prompt file"),
    "zero concurrency": (["run", str(EXAMPLES / "two-tasks.md"), "--concurrency", "0"], "--concurrency"),
    "unknown strategy": (["run", str(EXAMPLES / "two-tasks.md"), "--strategy", "fast"],
                         "unknown strategy 'fast'"),
    "unknown flag": (["run", str(EXAMPLES / "two-tasks.md"), "--frobnicate"], "--frobnicate"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(name):
    args, phrase = BAD[name]
    result = forge(*args)
    assert result.exit_code == 2
    assert phrase in result.output
    assert "Traceback" not in result.output


def test_invalid_prompt_names_file_line_and_rule(tmp_path):
    path = tmp_path / "bad.md"
    path.write_text("---\nname: x\ndescription: y\npromptforge: 0\n---\n\n# T\n\n### Orphan\n")
    result = forge("run", str(path))
    assert result.exit_code == 2
    assert f"{path}:9: Structure: section `Orphan` is an orphan H3 heading with no parent H2" in result.output


def test_malformed_model_script_names_the_entry(tmp_path):
    script = tmp_path / "m.json"
    script.write_text(json.dumps({"rounds": [{"reply": 5}]}))
    result = forge("run", str(EXAMPLES / "two-tasks.md"), "--model-script", str(script))
    assert result.exit_code == 2
    assert str(script) in result.output and "rounds[0].reply" in result.output
    assert "Traceback" not in result.output


def test_help_teaches_with_examples():
    result = forge("--help")
    assert result.exit_code == 0
    for word in ("forge run", "forge explore", "forge conformance"):
        assert word in result.output
    assert "Exit codes" in forge("run", "--help").output


def test_trace_file_is_json_lines(tmp_path):
    trace = tmp_path / "t.jsonl"
    forge("run", str(EXAMPLES / "freeform.md"), "--trace", str(trace), "--seed", "4")
    lines = trace.read_text().splitlines()
    assert lines and all(json.loads(line)["what"] for line in lines)


def test_a_run_without_a_model_script_gets_a_hint():
    result = forge("run", str(EXAMPLES / "delegator.md"))
    assert result.exit_code == 1
    assert "hint: this run has no model; give it one with --model-script FILE" in result.output
