"""Shared fixtures: running a prompt text on the reference engine."""

from __future__ import annotations

import pathlib

import pytest

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import parse_prompt
from forge.sim.chooser import Canonical, Chooser, RandomProvider

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

HEADER = "---\nname: t\ndescription: t\npromptforge: 0\n---\n\n# T\n\n"


def section(name: str, code: str, level: int = 2) -> str:
    return f"{'#' * level} {name}\n\n```lua\n{code.strip()}\n```\n\n"


def prompt_text(*sections: str, h1: str = "") -> str:
    body = f"```lua\n{h1.strip()}\n```\n\n" if h1 else ""
    return HEADER + body + "".join(sections)


def run_text(text: str, seed: int | None = None, args: str = "", harness: Harness | None = None,
             **config) -> dict:
    prompt = parse_prompt(text, "t.md")
    chooser = Chooser(RandomProvider(seed) if seed is not None else Canonical())
    run = run_prompt(prompt, harness or Harness(), chooser, RunConfig(args=args, **config))
    return run.observation()


@pytest.fixture
def run():
    return run_text
