"""The prompt file: parse it into frozen values and resolve heading references.

`parse_prompt`/`load_prompt` turn a prompt file into a `Prompt` (or raise
`forge.errors.PromptError`); `resolve` finds the section a `'## Name'`
reference names (or raises `HeadingError`).  Nothing here runs Lua or renders
prose: that is `forge.lua` and `forge.engine`.
"""

from forge.prompt.headings import HeadingError, resolve
from forge.prompt.model import ArgDecl, Capability, FileDecl, LuaBlock, ModelRole, Prompt, Section
from forge.prompt.parser import load_prompt, parse_prompt

__all__ = [
    "ArgDecl",
    "Capability",
    "FileDecl",
    "HeadingError",
    "LuaBlock",
    "ModelRole",
    "Prompt",
    "Section",
    "load_prompt",
    "parse_prompt",
    "resolve",
]
