"""A core refusal of a run option's value carries the option's row, and each
front end names it its own way: the command line its flag, the API its
keyword (kit: options.table; issue 27, "errors carry the option")."""

from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

import forge
from forge.cli import main
from forge.errors import InputError
from forge.run.options import BY_NAME, NAMED_CHECKS, NAMED_PROBES
from forge.runspec import load_check, load_probe, parse_faults, parse_refuse, read_store_folder

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROMPT = str(ROOT / "examples" / "two-tasks.md")

#: (the option, its CLI flags, its API keyword's value, the message both give)
SAMPLES = [
    ("faults", ["--faults", "disk"], "disk", "unknown fault kind 'disk'"),
    ("refuse", ["--refuse", "burn:x"], ["burn:x"], "unknown operation 'burn'"),
    ("store", ["--store", "/no/such/folder"], "/no/such/folder",
     "Directory '/no/such/folder' does not exist."),
]


@pytest.mark.parametrize("name,flags,value,message", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_the_command_line_names_the_flag_and_the_api_the_keyword(name, flags, value, message):
    option = BY_NAME[name]
    result = CliRunner().invoke(main, ["run", PROMPT, *flags])
    assert result.exit_code == 2, result.output
    assert option.flag in result.output and message in result.output
    with pytest.raises(InputError) as raised:
        forge.run_prompt(PROMPT, **{name: value})
    assert str(raised.value).startswith(f"run_prompt: {option.name}: {message}")
    assert option.flag not in str(raised.value)


def test_a_core_refusal_carries_the_row():
    with pytest.raises(InputError) as faults:
        parse_faults("disk", 1)
    with pytest.raises(InputError) as refuse:
        parse_refuse([("burn", "*")])
    with pytest.raises(InputError) as store:
        read_store_folder("/no/such/folder")
    assert (faults.value.option, refuse.value.option, store.value.option) == (
        BY_NAME["faults"], BY_NAME["refuse"], BY_NAME["store"])
    assert faults.value.file == "--faults"    # as it stands, it names the flag


def test_a_named_check_or_probe_is_refused_by_each_front_end_in_its_words():
    """The core loads `module:function` checks and probes (`forge.runspec`)
    and names neither `--check` nor `--probe`: its refusal carries the value
    (`NAMED_CHECKS`, `NAMED_PROBES`), the command line names the flag and
    the API the keyword; a name read from a replay file names the file."""
    message = "cannot import no_such_module_27: ModuleNotFoundError"
    for flag in ("--check", "--probe"):
        result = CliRunner().invoke(main, ["explore", PROMPT, "--runs", "1",
                                           flag, "no_such_module_27:f"])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"forge: {flag}: {message}"), result.output
    with pytest.raises(InputError) as raised:
        forge.explore(PROMPT, runs=1, named_checks=["no_such_module_27:f"])
    assert str(raised.value).startswith(f"explore: {NAMED_CHECKS.name}: {message}")
    assert "--check" not in str(raised.value)
    with pytest.raises(InputError) as probe:
        load_probe("no_such_module_27:f")
    with pytest.raises(InputError) as from_file:
        load_check("no_such_module_27:f", "run.replay.json")
    assert (probe.value.option, probe.value.file) == (NAMED_PROBES, "--probe")
    assert (from_file.value.option, from_file.value.file) == (None, "run.replay.json")
