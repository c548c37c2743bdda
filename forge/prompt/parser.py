"""Read a prompt file into a frozen `Prompt`.

What lives here: the entry point `parse_prompt` (reading a file, with its
size limit, is `forge.prompt.load_prompt`), and the
Markdown body - the H1 title, the section tree, `lua` and `lua shared`
fences, each block's pending prose, list sections, and the optional compile
check of every block.  Every refusal is a `PromptError` naming the file, the
1-based file line where one applies, and the parse error kind.

What does not: the frontmatter contract (`forge.prompt.frontmatter`), heading
references (`forge.prompt.headings`), rendering `{{ }}` placeholders, and
running anything.

How the body is read.  CommonMark (markdown-it) decides what is a heading, a
thematic break, or a fenced code block - so `#` inside any fence is code, and
a prose line directly above `---` is a setext H2.  Lua fences are stricter
than CommonMark: they open only on an exact top-level `` ```lua `` (or
`` ```lua shared ``) line and close only on the first exact `` ``` `` line,
so a ```` ```` ```` line inside one is Lua, not a closer.  Rather than fix
up CommonMark's answer afterwards, our markdown-it instance carries one extra
block rule, tried before CommonMark's fence rule, that reads Lua fences by
these rules; one parse then gives the right structure.  The tokens become one
flat stream of events - text lines, headings, breaks, fences - in file order,
which the rest of this module folds into the H1 body and sections.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import attrs
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

from forge.deferred import deferred
from forge.errors import PromptError
from forge.prompt import frontmatter
from forge.prompt.model import LuaBlock, Prompt, Section

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.lua import runtime as lua_runtime
else:
    lua_runtime = deferred("forge.lua.runtime")

#: `(source, chunkname) -> compiler message or None`.
CompileCheck = Callable[[str, str], str | None]

_LUA_OPEN = "```lua"
_SHARED_OPEN = "```lua shared"
_CLOSE = "```"
#: The markdown-it token type our Lua fence rule emits.
_LUA_FENCE = "lua_fence"
#: A list item line, already trimmed: its marker, then optionally a space and text.
_ITEM = re.compile(r"(?:[-*]|[0-9]+[.)])(?: (.*))?")
#: Where a Lua block sits among its section's blocks.
_PROLOGUE, _EPILOG, _PLAIN = "prologue", "epilog", "lua"


class _Refusal(Exception):
    """A body refusal; `parse_prompt` adds the file and makes it a `PromptError`."""

    def __init__(self, kind: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.line = line


# -- entry points ----------------------------------------------------------------------------

def lua_compile_check(source: str, chunkname: str) -> str | None:
    """The Lua 5.5 compiler's diagnostic for a block, or None when it compiles."""
    return lua_runtime.compile_check(source, chunkname)


#: Parsed prompts by (text, path, compile check).  A `Prompt` is frozen, so
#: the explorer, the conformance runner and the mutants, which run one prompt
#: under many schedules, share one parse.  Bounded, oldest first out.
_PARSED: dict[tuple[str, str, object], Prompt] = {}
_PARSED_MAX = 512


def parse_prompt(text: str, path: str = "<prompt>",
                 compile_check: CompileCheck | None = lua_compile_check) -> Prompt:
    """Parse prompt text (once: a repeat returns the same frozen value);
    `path` only labels errors and the result.

    `compile_check` (by default the Lua 5.5 compiler; None skips it) is
    called once per Lua block in file order
    with the block's source and its location label as chunkname; a message
    back refuses the prompt with kind `Lua`.  The source is not padded: the
    compiler's diagnostic passes through word for word, with lines counted in
    the block, and the refusal names the block's first file line beside it.

    Raises:
        PromptError: the prompt is refused; `kind` is the parse error kind.
    """
    key = (text, path, compile_check)
    cached = _PARSED.get(key)
    if cached is not None:
        return cached
    prompt = _parse(text, path, compile_check)
    if len(_PARSED) >= _PARSED_MAX:
        del _PARSED[next(iter(_PARSED))]
    _PARSED[key] = prompt
    return prompt


def _parse(text: str, path: str, compile_check: CompileCheck | None) -> Prompt:
    # A BOM is dropped and CRLF read as LF before anything else looks at the text.
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    try:
        header, body_start = frontmatter.split(lines)
        head = frontmatter.read(header)
    except frontmatter.FrontmatterError as exc:
        raise PromptError(exc.message, file=path, line=exc.line, kind="Frontmatter") from None
    try:
        body = _read_body(lines[body_start:], body_start)
        if compile_check is not None:
            _compile_all(body, compile_check)
    except _Refusal as exc:
        raise PromptError(exc.message, file=path, line=exc.line, kind=exc.kind) from None
    return Prompt(path=path, name=head.name, description=head.description,
                  promptforge=head.promptforge, title=body.title, h1_blocks=body.h1_blocks,
                  h1_has_pass=body.h1_has_pass, shared=body.shared, sections=body.sections,
                  models=tuple(role.label for role in head.roles), args_decl=head.args_decl,
                  max_tool_iterations=head.max_tool_iterations, roles=head.roles,
                  tools=head.tools, capabilities=head.capabilities, input=head.input,
                  output=head.output)


def _compile_all(body: _Body, compile_check: CompileCheck) -> None:
    blocks = [*body.h1_blocks, *(block for s in body.sections for block in s.blocks)]
    if body.shared is not None:
        blocks.append(body.shared)
    for block in sorted(blocks, key=lambda b: b.first_line):
        message = compile_check(block.source, block.location)
        if message is not None:
            raise _Refusal("Lua", f"lua compilation error at {block.location} "
                                  f"(line {block.first_line}): {message}", block.first_line)


# -- events -----------------------------------------------------------------------------------
# Lines are 1-based file lines from here on.

@attrs.frozen
class _Text:
    line: int
    text: str


@attrs.frozen
class _Break:
    line: int


@attrs.frozen
class _Heading:
    line: int
    level: int
    name: str


@attrs.frozen
class _Fence:
    line: int
    shared: bool
    source: str
    #: None when closed; "eof" when no closer came; "runs_on" when another
    #: Lua fence opener came first (the closer was not exact).
    failure: str | None = None


_Event = _Text | _Break | _Heading | _Fence


def _scan(lines: list[str], first_line: int) -> list[_Event]:
    """The body as events in file order; body line `index` is file line
    `first_line + index`.  Lines no heading, break or Lua fence covers are text."""
    # markdown-it reads a lone CR as a line end; blank it so indexes stay ours.
    tokens = _MD.parse("\n".join(lines).replace("\r", " "), {"lines": lines})
    marks: dict[int, tuple[_Event, int]] = {}
    for position, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        first, end = token.map
        line = first_line + first
        if token.type == "heading_open":
            name = _inline_text(tokens[position + 1].children or []).strip()
            marks[first] = (_Heading(line, int(token.tag[1]), name), end)
        elif token.type == "hr":
            marks[first] = (_Break(line), end)
        elif token.type == _LUA_FENCE:
            failure = token.meta["failure"]
            source = "" if failure else "\n".join(lines[first + 1:end - 1])
            marks[first] = (_Fence(line, lines[first] == _SHARED_OPEN, source, failure), end)
    events: list[_Event] = []
    index = 0
    while index < len(lines):
        if index in marks:
            event, index = marks[index]
            events.append(event)
        else:
            events.append(_Text(first_line + index, lines[index]))
            index += 1
    return events


def _lua_fence_rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """markdown-it block rule: a Lua fence at `start`, by the rules above.

    Only a top-level exact opener qualifies (anything else falls through to
    CommonMark's fence rule).  A fence with no exact closer swallows the rest
    of the body: "eof" if none comes, "runs_on" if another opener comes first.
    """
    lines = state.env["lines"]
    if state.level != 0 or lines[start] not in (_LUA_OPEN, _SHARED_OPEN):
        return False
    if silent:
        return True
    after, failure = end, "eof"
    for index in range(start + 1, end):
        if lines[index] == _CLOSE:
            after, failure = index + 1, None
            break
        if lines[index] in (_LUA_OPEN, _SHARED_OPEN):
            failure = "runs_on"
            break
    token = state.push(_LUA_FENCE, "code", 0)
    token.map = [start, after]
    token.meta = {"failure": failure}
    state.line = after
    return True


def _markdown() -> MarkdownIt:
    """CommonMark plus the Lua fence rule, on an instance of our own."""
    md = MarkdownIt("commonmark")
    # Same `alt` as CommonMark's fence: an opener may end a paragraph, a
    # reference, a block quote or a list, exactly where any fence may.
    md.block.ruler.before("fence", _LUA_FENCE, _lua_fence_rule,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


_MD = _markdown()


def _inline_text(children: list[Token]) -> str:
    """Heading text: inline code without backticks, other markup as its text."""
    parts = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.children:
            parts.append(_inline_text(child.children))
    return "".join(parts)


# -- the body ---------------------------------------------------------------------------------

@attrs.frozen
class _Body:
    title: str
    h1_blocks: tuple[LuaBlock, ...]
    h1_has_pass: bool
    shared: LuaBlock | None
    sections: tuple[Section, ...]


def _read_body(lines: list[str], offset: int) -> _Body:
    """Fold the body's events into the H1 body and the section tree.

    Checks run in this order: the H1 title; the `lua shared` count, then
    placement; the H1 body's fences; the heading tree; then each section's
    fences and list items, in file order.
    """
    events = _scan(lines, offset + 1)
    title_at = _find_title(events)
    title = events[title_at].name
    groups = list(_groups(events[title_at + 1:]))
    h1_content = groups.pop(0)[1] if groups and groups[0][0] is None else []
    _check_shared(events, h1_content)
    h1_pairs, h1_tail = _pairs(h1_content)
    h1_blocks = _lua_blocks(h1_pairs, title, f"H1 `{title}` lua")
    return _Body(title=title, h1_blocks=h1_blocks,
                 h1_has_pass=bool(h1_blocks) or bool(_prose(h1_tail)),
                 shared=_shared_block(h1_content), sections=_sections(groups))


def _find_title(events: list[_Event]) -> int:
    """The event index of the one H1; an H1 in the pre-title notes counts."""
    h1s = [i for i, e in enumerate(events) if isinstance(e, _Heading) and e.level == 1]
    if not h1s:
        raise _Refusal("Structure", "prompt requires an H1 title")
    if len(h1s) > 1:
        raise _Refusal("Structure", "prompt must contain exactly one H1 title")
    if not events[h1s[0]].name:
        raise _Refusal("Structure", "prompt H1 title must not be empty")
    return h1s[0]


def _groups(events: list[_Event]) -> Iterator[tuple[_Heading | None, list[_Event]]]:
    """Split at headings: (heading, its own content); the H1 body comes first
    with heading None, when it has any events."""
    heading: _Heading | None = None
    content: list[_Event] = []
    for event in events:
        if isinstance(event, _Heading):
            if heading is not None or content:
                yield heading, content
            heading, content = event, []
        else:
            content.append(event)
    if heading is not None or content:
        yield heading, content


def _check_shared(events: list[_Event], h1_content: list[_Event]) -> None:
    shared = [e for e in events if isinstance(e, _Fence) and e.shared]
    if len(shared) > 1:
        raise _Refusal("Fence", "prompt allows at most one `lua shared` fence", shared[1].line)
    for fence in shared:
        if not any(fence is event for event in h1_content):
            raise _Refusal("Fence", "`lua shared` fence is allowed only in H1", fence.line)
        if fence.failure:
            raise _Refusal("Fence", "prompt `lua shared` fence is not closed", fence.line)


def _shared_block(h1_content: list[_Event]) -> LuaBlock | None:
    for event in h1_content:
        if isinstance(event, _Fence) and event.shared:
            return LuaBlock(event.source, event.line + 1, "prompt shared library")
    return None


# -- blocks and prose -------------------------------------------------------------------------

_Pair = tuple[list[_Text], _Fence]


def _pairs(content: list[_Event]) -> tuple[list[_Pair], list[_Text]]:
    """Each `lua` fence with the text lines pending before it, and the text
    pending after the last one.

    Pending text restarts after each fence and each thematic break.  A `lua
    shared` fence is not a block and does not split the prose around it.
    """
    pairs: list[_Pair] = []
    pending: list[_Text] = []
    for event in content:
        if isinstance(event, _Text):
            pending.append(event)
        elif isinstance(event, _Break):
            pending = []
        elif isinstance(event, _Fence) and not event.shared:
            pairs.append((pending, event))
            pending = []
    return pairs, pending


def _prose(pending: list[_Text]) -> str:
    """Pending text as a block reads it: raw lines, blank lines trimmed off both ends."""
    texts = [item.text for item in pending]
    while texts and not texts[0].strip():
        texts.pop(0)
    while texts and not texts[-1].strip():
        texts.pop()
    return "\n".join(texts)


def _position(index: int, count: int, prose: str) -> str:
    """Prologue: the section's first block.  Epilog: its last Lua block, with
    a prose block (even the empty one between two fences) before it."""
    if index == 0 and not prose:
        return _PROLOGUE
    if index == count - 1:
        return _EPILOG
    return _PLAIN


def _lua_blocks(pairs: list[_Pair], section: str,
                label: str | None = None) -> tuple[LuaBlock, ...]:
    """The blocks of one H1 body or section; `label` fixes every location label
    (the H1 body's), else each comes from the block's position."""
    blocks = []
    for index, (pending, fence) in enumerate(pairs):
        prose = _prose(pending)
        position = _position(index, len(pairs), prose)
        if fence.failure:
            raise _unclosed(fence, section, position)
        location = label or f"section `{section}` {position}"
        blocks.append(LuaBlock(fence.source, fence.line + 1, location, prose))
    return tuple(blocks)


def _unclosed(fence: _Fence, section: str, position: str) -> _Refusal:
    if fence.failure == "runs_on":
        message = f"section `{section}` `lua` fence is not closed exactly"
    else:
        message = f"section `{section}` {_UNCLOSED_WORD[position]}`lua` fence is not closed"
    return _Refusal("Fence", message, fence.line)


#: The position word in an unclosed-fence message.  A failed fence swallows
#: the rest of the file, so it is always its section's last one: prologue or
#: epilog in practice, the plain form kept for completeness of the rule.
_UNCLOSED_WORD = {_PROLOGUE: "prologue ", _EPILOG: "epilog ", _PLAIN: ""}


# -- sections ---------------------------------------------------------------------------------

def _sections(groups: list[tuple[_Heading, list[_Event]]]) -> tuple[Section, ...]:
    parents = _tree([heading for heading, _ in groups])
    children: dict[int | None, list[int]] = {}
    for index, parent in enumerate(parents):
        children.setdefault(parent, []).append(index)
    sections = []
    for index, (heading, content) in enumerate(groups):
        pairs, tail = _pairs(content)
        blocks = _lua_blocks(pairs, heading.name)
        items = None if blocks else _items(tail, heading.name)
        sections.append(Section(index=index, name=heading.name, level=heading.level,
                                line=heading.line, parent=parents[index],
                                children=tuple(children.get(index, ())), blocks=blocks,
                                items=items))
    return tuple(sections)


def _tree(headings: list[_Heading]) -> list[int | None]:
    """Each heading's parent index, checking names, levels and sibling names.

    Each heading steps exactly one level below its parent (H2 below the H1);
    a deeper one is an orphan and is never re-parented.
    """
    parents: list[int | None] = []
    open_sections: list[int] = []
    first_line: dict[tuple[int | None, str], int] = {}
    for index, heading in enumerate(headings):
        if not heading.name:
            raise _Refusal("Structure", f"an H{heading.level} section heading must not be empty",
                           heading.line)
        while open_sections and headings[open_sections[-1]].level >= heading.level:
            open_sections.pop()
        parent = open_sections[-1] if open_sections else None
        parent_level = 1 if parent is None else headings[parent].level
        if heading.level != parent_level + 1:
            raise _Refusal("Structure", f"section `{heading.name}` is an orphan "
                                        f"H{heading.level} heading with no parent "
                                        f"H{heading.level - 1}", heading.line)
        key = (parent, heading.name)
        if key in first_line:
            raise _Refusal("Structure", f"duplicate sibling section name `{heading.name}`: first "
                                        f"declared at line {first_line[key]}, again at line "
                                        f"{heading.line}; sibling section names must be unique",
                           heading.line)
        first_line[key] = heading.line
        parents.append(parent)
        open_sections.append(index)
    return parents


def _items(tail: list[_Text], section: str) -> tuple[str, ...] | None:
    """The items of a list section, from the text below its last break.

    A list is text whose every nonblank line is an item; anything else (or
    nothing at all) is prose and has no items.
    """
    lines = [item for item in tail if item.text.strip()]
    matches = [_ITEM.fullmatch(item.text.strip()) for item in lines]
    if not lines or not all(matches):
        return None
    for item, match in zip(lines, matches, strict=True):
        if not match.group(1):
            raise _Refusal("List", f"empty bullet item in list section `{section}`", item.line)
    return tuple(match.group(1) for match in matches)
