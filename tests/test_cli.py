"""The `forge` command: exit codes that mean something, one-line errors for
bad input (never a traceback), and help that teaches."""

from __future__ import annotations

import json
import os

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


def test_explore_with_faults_says_how_many_fired_even_none():
    """A passing campaign with --faults counts the faults it fired, so a fault
    kind the prompt never gives a chance to (no store call here) shows as none."""
    two = str(EXAMPLES / "two-tasks.md")
    result = forge("explore", two, "--runs", "20", "--faults", "store")
    assert result.exit_code == 0, result.output
    assert "faults fired: none\n" in result.output
    result = forge("explore", two, "--runs", "20")
    assert "faults fired" not in result.output
    result = forge("explore", str(EXAMPLES / "checked-join.md"), "--runs", "20", "--faults",
                   "cancel", "--json")
    report = json.loads(result.output.splitlines()[-1])
    assert report["faults"]["cancel"] == report["outcomes"]["cancelled"] > 0
    # the exhaustive walk counts them too: every schedule whose cancel fired ended cancelled
    result = forge("explore", str(EXAMPLES / "checked-join.md"), "--strategy", "exhaustive",
                   "--faults", "cancel")
    assert result.exit_code == 0, result.output
    assert "outcomes: 6 cancelled, 2 ok\nfaults fired: 6 cancel\n" in result.output


BAD = {
    "missing prompt": (["run", "nope.md"], "nope.md: cannot read prompt file"),
    "zero concurrency": (["run", str(EXAMPLES / "two-tasks.md"), "--concurrency", "0"], "--concurrency"),
    "unknown strategy": (["run", str(EXAMPLES / "two-tasks.md"), "--strategy", "fast"],
                         "unknown strategy 'fast'"),
    "unknown flag": (["run", str(EXAMPLES / "two-tasks.md"), "--frobnicate"], "--frobnicate"),
    "seed past 64 bits": (["run", str(EXAMPLES / "two-tasks.md"), "--seed", str(2**64)],
                          f"forge: --seed must be at most {2**63 - 1}, got {2**64}"),
    "budget past 64 bits": (["run", str(EXAMPLES / "two-tasks.md"), "--max-instructions",
                             str(2**70)], f"forge: --max-instructions must be at most {2**63 - 1}"),
    "cancel at inf": (["run", str(EXAMPLES / "two-tasks.md"), "--cancel-at", "inf"],
                      "forge: --cancel-at must be a finite number of seconds, got 'inf'"),
    "cancel past the limit": (["run", str(EXAMPLES / "two-tasks.md"), "--cancel-at", "1e300"],
                              "forge: --cancel-at must be at most 1e+09 seconds, got 1e+300"),
    "pct depth": (["run", str(EXAMPLES / "two-tasks.md"), "--strategy", "pct:1:99999999"],
                  "forge: --strategy: the PCT depth is from 1 to 1000"),
    "huge timeout": (["conformance", "--timeout", "1e300"],
                     "forge: --timeout must be at most 86400 seconds, got 1e+300"),
    "invalid regex": (["spec", "-k", "("], "forge: -k must be a regular expression"),
    "unwritable trace": (["run", str(EXAMPLES / "two-tasks.md"), "--trace", "/nonexistent/t"],
                         "forge: --trace cannot write '/nonexistent/t': its folder "
                         "'/nonexistent' does not exist"),
    "trace is a directory": (["run", str(EXAMPLES / "two-tasks.md"), "--replay-out", "/"],
                             "forge: --replay-out cannot write '/': it is a directory"),
    "unwritable report": (["conformance", "--junit", "/nonexistent/r.xml"], "forge: --junit"),
    "args with a stray byte": (["run", str(EXAMPLES / "two-tasks.md"), "--args", "a\udcff"],
                               "forge: --args must be valid UTF-8 text (a stray byte at "
                               "character 1)"),
    "render over a file": (["spec", "render", str(EXAMPLES / "two-tasks.md")],
                           "it exists and is not a directory"),
    # Paths the OS cannot look up at all: click's own check raised on them.
    "store folder with a NUL": (["run", str(EXAMPLES / "two-tasks.md"), "--store", "a\x00b"],
                                "forge: --store cannot read 'a\\x00b': not a usable path"),
    "prompt with a NUL": (["explore", "p\x00.md"], "forge: PROMPT cannot read"),
    "script with a NUL": (["run", str(EXAMPLES / "two-tasks.md"), "--model-script", "m\x00"],
                          "forge: --model-script cannot read"),
    "cases with a NUL": (["mutants", "--cases", "\x00"], "forge: --cases cannot read"),
    "expectations with a NUL": (["conformance", "--expectations", "e\x00"],
                                "forge: --expectations cannot read 'e\\x00': not a usable path"),
    "overlong prompt path": (["run", "p" * 5000], "the path is longer than 4096 bytes"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(name):
    args, phrase = BAD[name]
    result = forge(*args)
    assert result.exit_code == 2
    assert phrase in result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


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
    assert str(script) in result.output and "/rounds/0/reply" in result.output
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


def test_a_kit_bug_is_one_line_and_exit_3(monkeypatch):
    """An exception the kit did not expect is a bug: one line asking for a
    report, exit code 70; FORGE_DEBUG=1 shows the traceback instead."""
    from forge.engine import run as engine_run

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(engine_run, "run_prompt", broken)
    result = forge("run", str(EXAMPLES / "two-tasks.md"))
    assert result.exit_code == 70
    assert result.stderr.startswith("forge: a bug in the kit (KeyError: 'boom'); please report it")
    assert len(result.stderr.splitlines()) == 1
    monkeypatch.setenv("FORGE_DEBUG", "1")
    assert isinstance(forge("run", str(EXAMPLES / "two-tasks.md")).exception, KeyError)


def test_a_stray_value_error_in_the_kit_is_a_bug_not_bad_input(monkeypatch):
    """A ValueError raised inside the kit (the chooser offered no options, the kernel got a
    negative delay) is a broken invariant: exit 70 asking for a report, not exit 2 as if the
    user's input were at fault (kit: errors.internal)."""
    from forge.sim import chooser

    def broken(self, kind, options):
        raise ValueError(f"choice {kind!r} offered no options")

    monkeypatch.setattr(chooser.Chooser, "choose", broken)
    result = forge("run", str(EXAMPLES / "two-tasks.md"))
    assert result.exit_code == 70
    assert result.stderr.startswith("forge: a bug in the kit (ValueError: choice ")
    assert "please report it" in result.stderr


def test_replay_file_faults_name_the_file_and_the_place(tmp_path):
    """A replay file whose args is not a string, or nested past the limit."""
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"choices": [], "args": 5}))
    result = forge("replay", str(EXAMPLES / "two-tasks.md"), str(bad))
    assert (result.exit_code, result.stderr) == (
        2, f"forge: {bad}: replay: $.args: the run's arguments are a string\n")
    bad.write_text('{"choices": ' + "[" * 100000 + "]" * 100000 + "}")
    result = forge("replay", str(EXAMPLES / "two-tasks.md"), str(bad))
    assert (result.exit_code, result.stderr) == (
        2, f"forge: {bad}: replay: the JSON is nested too deeply\n")


@pytest.mark.parametrize("script, message", [
    ('{"rounds": ' + "[" * 100000 + "]" * 100000 + "}", "script: nested too deeply to read"),
    (json.dumps({"rounds": [{"reply": {"text": "x"}, "delay": 1e300}]}),
     "/rounds/0/delay: must be a number of seconds from 0 to 1e9"),
    (json.dumps({"default": {"tool_calls": [{"name": "task", "arguments": {"n": 2**64}}]}}),
     "/default/tool_calls/0/arguments/n: an integer past 64 bits"),
])
def test_hostile_model_scripts_are_refused(tmp_path, script, message):
    path = tmp_path / "m.json"
    path.write_text(script)
    result = forge("run", str(EXAMPLES / "delegator.md"), "--model-script", str(path))
    assert (result.exit_code, result.stderr) == (2, f"forge: {path}: {message}\n")


def test_a_huge_frontmatter_line_is_refused_before_parsing(tmp_path):
    """A 16 MB frontmatter line costs the YAML parser seconds; it is refused by size.
    (CPU time, not wall time: a busy machine does not make the refusal slower.)"""
    import time

    path = tmp_path / "big.md"
    path.write_text("---\nname: x\ndescription: " + "a" * 16_000_000 + "\n---\n# T\n")
    started = time.process_time()
    result = forge("run", str(path))
    assert time.process_time() - started < 2.0
    assert result.exit_code == 2
    assert "is larger than the limit of 131072 bytes" in result.stderr
    path.write_text("---\nname: x\ndescription: " + "a" * 100_000 + "\n---\n# T\n")
    result = forge("run", str(path))
    assert "the frontmatter is larger than the limit of 65536 bytes" in result.stderr


def test_a_store_folder_with_a_device_link_is_refused_before_reading(tmp_path):
    """A link to /dev/zero in --store would be read forever; it is refused by kind."""
    (tmp_path / "z").symlink_to("/dev/zero")
    result = forge("run", str(EXAMPLES / "two-tasks.md"), "--store", str(tmp_path))
    assert (result.exit_code, result.stderr) == (
        2, f"forge: {tmp_path / 'z'}: a store folder holds regular files only "
           "(not links, devices or pipes)\n")


def test_an_exhaustive_search_cut_short_says_so_and_exits_3(tmp_path):
    """An exhaustive exploration that stops at --runs before covering the tree
    exits 3 and says so, with its pruned and unfinished counts; one that covers
    the tree exits 0 (kit: explore.exhaustive-incomplete)."""
    out = str(tmp_path / "r.json")
    short = forge("explore", str(EXAMPLES / "freeform.md"), "--strategy", "exhaustive",
                  "--runs", "2", "--replay-out", out, "--json")
    assert short.exit_code == 3, short.output
    report = json.loads(short.output)
    assert report["complete"] is False and report["unfinished"] > 0 and report["runs"] == 2
    whole = forge("explore", str(EXAMPLES / "checked-join.md"), "--strategy", "exhaustive",
                  "--replay-out", out)
    assert whole.exit_code == 0 and "covered the whole tree" in whole.output


def test_exhaustive_flags_reach_the_search(tmp_path):
    """--no-reduce runs equivalent interleavings too, and --max-deviations 0
    keeps to canonical completion orders, so each changes how many schedules
    run (kit: explore.exhaustive-flags)."""
    out = str(tmp_path / "r.json")

    def runs(*flags):
        result = forge("explore", str(EXAMPLES / "explore" / "store-race.md"), "--args", "2",
                       "--strategy", "exhaustive", "--runs", "100000", "--replay-out", out,
                       "--json", *flags)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["runs"]

    reduced = runs()
    assert runs("--no-reduce") > reduced > runs("--max-deviations", "0")


def test_an_unknown_feature_is_bad_input_that_lists_the_known_ones():
    """`--features tasksx` and `forge spec --feature nope` are refused in one
    line naming the features that exist, exit 2 (kit: cli.features)."""
    run = forge("conformance", "--features", "tasksx")
    assert run.exit_code == 2 and "no case needs `tasksx`" in run.output
    assert "tasks-model" in run.output
    listing = forge("spec", "--feature", "nope")
    assert listing.exit_code == 2 and "no clause has feature `nope`" in listing.output
    covered = forge("spec", "coverage", "--feature", "fanout")
    assert covered.exit_code == 0 and covered.output.startswith("fanout") and "lifecycle" not in covered.output


def test_a_report_written_to_dash_goes_to_standard_output(tmp_path):
    """`--json -` prints the JSON report on standard output (and the summary on
    stderr) instead of creating a file named `-` (kit: cli.stdout-report)."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "forge", "conformance", "-k", "two-tasks",
                          "--json", "-"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["summary"]["passed"] >= 1
    assert "passed" in run.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_a_deviation_bound_is_refused_where_it_would_be_ignored(strategy):
    """--max-deviations bounds the exhaustive walk only: with random or pct it
    would be ignored, so it is refused in one line naming the flag and the
    strategy it applies to, exit 2 (kit: explore.exhaustive-flags)."""
    result = forge("explore", str(EXAMPLES / "two-tasks.md"), "--strategy", strategy,
                   "--max-deviations", "1")
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith("forge: --max-deviations: bounds only the exhaustive ")
    assert f"; {strategy} draws each schedule whole" in result.output


@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="needs a file no one can write")
def test_an_output_file_the_os_refuses_is_refused_before_the_run():
    """`os.access` tells root that /proc/version is writable; the first write
    says otherwise.  The up-front check asks the OS itself (an empty append),
    so the refusal comes before the run, naming the flag (kit: input.unavailable)."""
    result = forge("run", str(EXAMPLES / "two-tasks.md"), "--trace", "/proc/version")
    assert result.exit_code == 2
    assert "alpha text" not in result.output
    assert "--trace cannot write '/proc/version'" in result.output


def test_the_up_front_write_check_changes_nothing(tmp_path):
    """Checking that an existing output file can be written leaves its bytes
    and its time alone (kit: input.unavailable)."""
    from forge.commands.params import output_problem

    target = tmp_path / "t.jsonl"
    target.write_text("kept\n")
    os.utime(target, (1_000_000, 1_000_000))
    assert output_problem(str(target)) is None
    assert target.read_text() == "kept\n" and target.stat().st_mtime == 1_000_000
