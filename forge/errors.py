"""Errors that cross the engine's boundary to a person or a program.

`ForgeError` is the root.  `InputError` is bad input (a prompt, a case file, a
script, a flag): it names the file, the place and the rule, and the CLI turns
it into one line and exit code 2.  `ForgeInternalError` is a bug in the kit.
Errors that a prompt's Lua can catch are not Python exceptions at all; they
are Lua error values built in `forge.lua`.
"""

from __future__ import annotations

from typing import Any


class ForgeError(Exception):
    """Root of the kit's own exceptions."""


class InputError(ForgeError, ValueError):
    """Bad input: names the file, the place and the rule."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 kind: str | None = None, option: Any = None) -> None:
        self.message = message
        #: The run option refused (a `forge.run.options.Option` row, or a
        #: `Named` value), for a refusal of its value: each front end names
        #: it its own way (the API its keyword); as it stands, the error
        #: names its flag.
        self.option = option
        self.file = option.flag if file is None and option is not None else file
        self.line = line
        self.kind = kind
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        kind = f"{self.kind}: " if self.kind else ""
        return f"{where}{kind}{self.message}"


class PromptError(InputError):
    """A prompt refused at parse time; `kind` is the parse error kind
    (`Frontmatter`, `Structure`, `Fence`, `List`, `Lua`)."""


class ForgeInternalError(ForgeError):
    """A bug in the kit itself - please report it with the seed and prompt."""
