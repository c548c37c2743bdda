"""The prompt file: parse it into frozen values and resolve heading references.

`parse_prompt`/`load_prompt`/`read_prompt` turn a prompt file into a `Prompt` (or raise
`forge.errors.PromptError`); `resolve` finds the section a `'## Name'`
reference names (or raises `HeadingError`).  Nothing here runs Lua or renders
prose: that is `forge.lua` and `forge.engine`.

Both entry points refuse a prompt past `forge.limits.MAX_PROMPT_BYTES` before
parsing it (docs/limits.md); `load_prompt` reads no more than that of a file,
so a device or an endless pipe cannot hang it, nor can a pipe nobody writes
to (`forge.sim.readlimited`).
"""

from pathlib import Path

from forge.errors import PromptError
from forge.limits import MAX_PROMPT_BYTES
from forge.sim.readlimited import NotUTF8, TooLarge, read_text
from forge.prompt import parser
from forge.prompt.headings import HeadingError, resolve
from forge.prompt.model import ArgDecl, Capability, FileDecl, LuaBlock, ModelRole, Prompt, Section


def _too_large(path: str) -> PromptError:
    return PromptError(f"the prompt is larger than the limit of {MAX_PROMPT_BYTES} bytes "
                       "(docs/limits.md)", file=path, kind="Limits")


def parse_prompt(text: str, path: str = "<prompt>",
                 compile_check: parser.CompileCheck | None = parser.lua_compile_check) -> Prompt:
    """`forge.prompt.parser.parse_prompt`, after the size limit."""
    # Characters first: a text this short cannot be past the limit in bytes.
    if len(text) * 4 > MAX_PROMPT_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_PROMPT_BYTES:
        raise _too_large(path)
    return parser.parse_prompt(text, path, compile_check)


def load_prompt(path: str | Path,
                compile_check: parser.CompileCheck | None = parser.lua_compile_check) -> Prompt:
    """Read and parse the prompt file at `path` (`read_prompt`, the prompt only)."""
    return read_prompt(path, compile_check)[0]


def read_prompt(path: str | Path,
                compile_check: parser.CompileCheck | None = parser.lua_compile_check
                ) -> tuple[Prompt, str]:
    """The prompt file at `path`, parsed, and its text: read once, at most
    the size limit (`forge.sim.readlimited`), so a pipe gives both.

    Raises:
        PromptError: unreadable, not UTF-8, past the limit, or refused.
    """
    name = str(path)
    text = read_prompt_text(path)
    return parser.parse_prompt(text, name, compile_check), text


def read_prompt_text(path: str | Path) -> str:
    """The prompt file's text, read as `read_prompt` reads it, not parsed (a
    caller that keeps what it made of a text parses only a text it has not
    seen).

    Raises:
        PromptError: unreadable, not UTF-8 or past the limit.
    """
    name = str(path)
    try:
        return read_text(path, MAX_PROMPT_BYTES)
    except OSError as exc:
        raise PromptError(f"cannot read prompt file: {exc.strerror or exc}", file=name) from None
    except TooLarge:
        raise _too_large(name) from None
    except NotUTF8 as exc:
        raise PromptError(f"prompt file is {exc}", file=name, line=exc.line) from None


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
    "read_prompt",
    "read_prompt_text",
    "parse_prompt",
    "resolve",
]
