"""The parsed prompt: frozen values the engine reads and never changes.

Sections live in one flat tuple in file order; `parent` and `children` are
indexes into it, which keeps every value frozen and hashable while still
letting heading resolution walk up and down the tree.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class LuaBlock:
    """One `lua` fence.

    `first_line` is the 1-based file line of the block's first Lua line (the
    line after the opening fence); the engine pads the source so Lua's own
    line numbers are file lines.  `prose` is the raw, unrendered pending prose
    that this block reads as its `prose` global.
    """

    source: str
    first_line: int
    location: str
    prose: str = ""
    #: What the engine loads (derived once): the source padded so Lua's line
    #: numbers are file lines, and the chunk name, both as UTF-8 bytes.
    chunk: bytes = attrs.field(init=False, eq=False, repr=False)
    chunkname: bytes = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "chunk",
                           ("\n" * (self.first_line - 1) + self.source).encode("utf-8"))
        object.__setattr__(self, "chunkname", self.location.encode("utf-8"))


@attrs.frozen
class ArgDecl:
    """One entry under `args:`; advertised to callers, never enforced."""

    name: str
    type: str
    optional: bool = False
    #: A scalar matching `type`, or None (`default: null` counts as none).
    default: Any = None
    description: str | None = None


@attrs.frozen
class ModelRole:
    """One entry under `models:`; prepare binds a model to it."""

    label: str
    #: Words from the closed vocabulary of seven, in the order written.
    keywords: tuple[str, ...] = ()
    min_context: int | None = None
    description: str | None = None


@attrs.frozen
class Capability:
    """One entry under `capabilities:`.  Its `config:` is dropped: no
    capability reads it."""

    ref: str
    optional: bool = False


@attrs.frozen
class FileDecl:
    """An `input:` or `output:` store file; host-only, the run ignores it."""

    path: str
    description: str


@attrs.frozen
class Section:
    index: int
    name: str
    level: int
    line: int
    parent: int | None
    children: tuple[int, ...]
    blocks: tuple[LuaBlock, ...]
    #: Items of a list section (a section made only of list items), else None.
    items: tuple[str, ...] | None = None

    @property
    def is_list(self) -> bool:
        return self.items is not None

    @property
    def ref(self) -> str:
        return "#" * self.level + " " + self.name


@attrs.frozen
class Prompt:
    path: str
    name: str
    description: str
    promptforge: int | None
    title: str
    h1_blocks: tuple[LuaBlock, ...]
    #: Whether the H1 body holds prose or Lua (an H1 pass runs only then).
    h1_has_pass: bool
    shared: LuaBlock | None
    sections: tuple[Section, ...]
    #: Model role labels declared in the frontmatter, in file order.
    models: tuple[str, ...] = ()
    #: The frontmatter `args:` declaration, or None when absent (`args: {}`
    #: is the explicit empty tuple, which turns on JSON parsing of `argv`).
    args_decl: tuple[ArgDecl, ...] | None = None
    max_tool_iterations: int | None = None
    #: The `models:` roles in file order; `models` holds their labels.
    roles: tuple[ModelRole, ...] = ()
    #: `tools:` slots as (alias, tool path) pairs in file order.
    tools: tuple[tuple[str, str], ...] = ()
    capabilities: tuple[Capability, ...] = ()
    input: FileDecl | None = None
    output: FileDecl | None = None
    #: The indexes of the H2-level sections, in file order (derived once:
    #: the engine reads it at every section entry).
    top_level: tuple[int, ...] = attrs.field(init=False, eq=False, repr=False)
    #: Every identifier-like word in the prompt's Lua and block prose (derived
    #: once): what the engine reads to leave out host library parts no code
    #: can name.
    words: frozenset[str] = attrs.field(init=False, eq=False, repr=False)
    #: Heading references already resolved, by (from_index, ref): the
    #: index or the HeadingError message (`headings.resolve` fills it).
    resolved: dict = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "top_level",
                           tuple(s.index for s in self.sections if s.parent is None))
        blocks = list(self.h1_blocks) + [b for s in self.sections for b in s.blocks]
        if self.shared is not None:
            blocks.append(self.shared)
        words: set[str] = set()
        for block in blocks:
            words.update(_WORD.findall(block.source))
            words.update(_WORD.findall(block.prose))
        object.__setattr__(self, "words", frozenset(words))
        object.__setattr__(self, "resolved", {})

    def siblings(self, index: int) -> tuple[int, ...]:
        parent = self.sections[index].parent
        if parent is None:
            return self.top_level
        return self.sections[parent].children
