"""The decisions a level-2 engine asks, as docs/protocol.md ("Decision
points") shows them: every worked exchange there is what the reference asks
for its prompt, decision for decision, so the page cannot drift from the
engine (kit: protocol.decision-points).

A worked exchange is a `text` block whose first line names its prompt and
flags - `# tests/conformance/decisions/NAME.md` and, optionally,
`--concurrency N` - followed by one line a decision, `KIND [LABEL, ...] ->
PICK`, on the canonical schedule.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from forge.conformance.adapters import reference_observation
from forge.conformance.case import HarnessSpec
from forge.conformance.level2 import Asked
from forge.sim.chooser import Chooser

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "protocol.md"
BLOCK = re.compile(r"```text\n(# tests/conformance/decisions/[^\n]*)\n(.*?)```", re.S)


def exchanges() -> list[tuple[str, list[str]]]:
    return [(head, body.strip().splitlines()) for head, body in BLOCK.findall(DOC.read_text())]


def asked(head: str) -> list[str]:
    """The decisions the reference asks for the block's prompt, as the doc writes them."""
    words = head[2:].split()
    path, flags = ROOT / words[0], dict(zip(words[1::2], words[2::2]))
    harness = HarnessSpec(concurrency=int(flags.get("--concurrency", 8)))
    provider = Asked()
    reference_observation(path.read_text(), harness, None, path.name, Chooser(provider))
    return [f"{line} -> 0" for line in provider.seen]


def test_the_page_has_a_worked_exchange_for_each_decision_prompt():
    shown = {head.split()[1] for head, _ in exchanges()}
    prompts = {f"tests/conformance/decisions/{p.name}"
               for p in (ROOT / "tests" / "conformance" / "decisions").glob("*.md")}
    assert shown == prompts


@pytest.mark.parametrize("head,lines", exchanges(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_worked_exchange_is_what_the_reference_asks(head, lines):
    assert asked(head) == lines
