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
from forge.run.options import BY_NAME
from forge.runspec import parse_faults, parse_refuse, read_store_folder

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
