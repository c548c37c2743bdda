"""Case and expectations files past the limits of docs/limits.md: refused in
one line naming the file, the key path and the rule (exit code 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from forge.cli import main

HEAD = 'clauses = ["tasks.glance.example-two-tasks"]\nprompt = "x"\n'


@pytest.mark.parametrize("body, message", [
    ("[harness]\nlatency = {model = 1e308}\n",
     ":4: limits: $.harness.latency.model: must be at most 1e+09 seconds, got 1e+308"),
    ("[harness]\ncancel_at = inf\n", ":4: limits: $.harness.cancel_at: a number that is not finite"),
    ("[harness]\nconcurrency = 99999999999999999999\n",
     ":4: limits: $.harness.concurrency: an integer past 64 bits"),
    ("[harness]\nmodel_script = {default = {text = 1979-05-27}}\n",
     ":4: limits: $.harness.model_script.default.text: a value JSON cannot hold (date)"),
    ("[expect]\nresult = " + "[" * 5000 + "]" * 5000 + "\n", ": TOML: nested too deeply to read"),
    ("[expect]\nresult = " + "[" * 80 + "]" * 80 + "\n",
     ":4: limits: $.expect.result[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"),
])
def test_a_case_past_a_limit_is_one_line(tmp_path, body, message):
    """Every refusal after parsing names the line of its key, as a schema
    error does: the limits check finds it with the same scan (kit: cases.limits-line)."""
    case = tmp_path / "g" / "c.toml"
    case.parent.mkdir()
    case.write_text(HEAD + body)
    result = CliRunner().invoke(main, ["conformance", "--cases", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"forge: {case}{message}")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("name, text, message", [
    ("e.json", '{"a":' * 5000 + "1" + "}" * 5000, "expectations: not JSON: nested too deeply"),
    ("e.json", '{"a": ' + "9" * 5000 + "}", "expectations: not JSON: Exceeds the limit"),
    ("e.toml", "a = " + "{b=" * 5000 + "1" + "}" * 5000, "TOML: nested too deeply to read"),
])
def test_an_expectations_file_past_a_limit_is_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(main, ["conformance", "--expectations", str(path),
                                       "-k", "^examples/two-tasks$"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"forge: {path}: {message}")


def test_an_operation_name_that_is_not_a_string_is_refused(tmp_path):
    """Found by the fuzz suite: `op = {}` reached the lifecycle adapter's table lookup."""
    case = tmp_path / "g" / "c.toml"
    case.parent.mkdir()
    case.write_text('features = ["lifecycle"]\noperations = [{"op" = {}}]\n'
                    'clauses = ["tasks.glance.example-two-tasks"]\n')
    result = CliRunner().invoke(main, ["conformance", "--cases", str(tmp_path)])
    assert (result.exit_code, result.stderr) == (2, f"forge: {case}:2: case: $.operations[0].op: "
                                                    "an operation's name is a string, got {}\n")
