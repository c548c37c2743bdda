"""Models, conversations, tools, operator input, and model-started tasks.

(Being written: see the hooks `install`, `enter_section`, `messages_json`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forge.engine.chain import Chain
    from forge.engine.run import Run


class ModelsAPI:
    def __init__(self, run: Run) -> None:
        self.run = run

    def install(self, lib: Any, suspending: dict) -> None:
        """Add `models`, `messages`, `tools`, `input` to the host library."""

    def enter_section(self, chain: Chain) -> None:
        """A section entry starts: reset per-section model and tool state."""

    def messages_json(self) -> dict:
        return {}
