"""Inputs that are named pipes: read as their writer writes, never waited on
forever (kit: input-limits; docs/limits.md).

A plain `open` of a FIFO waits for a writer with no end, so a prompt or
script path naming a pipe nobody writes to used to hang `forge run`."""

from __future__ import annotations

import os
import threading
import time

import pytest

from forge.sim import readlimited
from forge.errors import PromptError
from forge.prompt import load_prompt

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")

PROMPT = b"---\nname: p\ndescription: d\npromptforge: 0\n---\n# P\n\n## Main\n\n```lua\nreturn 'hi'\n```\n"


@pytest.fixture
def fifo(tmp_path, monkeypatch):
    monkeypatch.setattr(readlimited, "PIPE_SILENCE_S", 0.3)
    path = tmp_path / "p.md"
    os.mkfifo(path)
    return path


def _write_later(path, data: bytes, delay: float) -> threading.Thread:
    def write():
        time.sleep(delay)
        with open(path, "wb") as f:
            f.write(data)
    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_pipe_nobody_writes_to_is_refused_in_one_line(fifo):
    start = time.monotonic()
    with pytest.raises(PromptError) as e:
        load_prompt(fifo)
    assert time.monotonic() - start < 5
    assert str(e.value) == (f"{fifo}: cannot read prompt file: a named pipe that stayed silent "
                            "for 0.3 s (no writer, or one that neither writes nor closes it)")


def test_a_pipe_whose_writer_comes_late_is_read_whole(fifo):
    writer = _write_later(fifo, PROMPT, 0.1)
    prompt = load_prompt(fifo)
    writer.join()
    assert [s.name for s in prompt.sections] == ["Main"]


def test_a_pipe_that_writes_past_the_limit_is_cut_at_it(fifo):
    def flood():
        try:
            with open(fifo, "wb") as f:
                while True:
                    f.write(b"x" * 65536)
        except BrokenPipeError:
            pass         # the reader stopped at the limit and closed its end
    thread = threading.Thread(target=flood)
    thread.start()
    with pytest.raises(ValueError, match="larger than the limit of 100000 bytes"):
        readlimited.read_limited(fifo, 100_000)
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_a_run_reads_its_prompt_from_a_pipe_once(fifo):
    """`forge run <(...)`: the prompt is parsed and kept from one read; a
    second read of the pipe would find it empty."""
    from forge.runspec import read_prompt_file

    writer = _write_later(fifo, PROMPT, 0.05)
    assert read_prompt_file(str(fifo)) == PROMPT.decode()
    writer.join()
