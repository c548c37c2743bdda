"""The prompt body: title, sections, fences, prose, list sections, and loading files."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.errors import PromptError
from forge.prompt import LuaBlock, load_prompt, parse_prompt

#: Five frontmatter lines, so body line N is file line N + 5.
HEAD = "---\nname: t\ndescription: d\npromptforge: 0\n---\n"
FENCE = "```"


def lua(source: str = "", opener: str = "lua") -> str:
    body = f"{source}\n" if source else ""
    return f"{FENCE}{opener}\n{body}{FENCE}\n"


def parse(body: str, **kwargs):
    # Structure tests use placeholder block text; compiling is tested on its own.
    kwargs.setdefault("compile_check", None)
    return parse_prompt(HEAD + body, "t.md", **kwargs)


def refusal(body: str, kind: str, **kwargs) -> PromptError:
    with pytest.raises(PromptError) as info:
        parse(body, **kwargs)
    assert (info.value.kind, info.value.file) == (kind, "t.md")
    return info.value


def section(prompt, name):
    return next(s for s in prompt.sections if s.name == name)


# -- line endings ------------------------------------------------------------------------------

def test_crlf_reads_like_lf():
    """CRLF files give the same prompt as LF ones: fences, Lua code, lines
    (kit: parser.line-endings)."""
    body = "# T\n\n## Main\n\nSay it.\n\n" + lua("local a = 1\nreturn a")
    crlf = parse_prompt("\ufeff" + (HEAD + body).replace("\n", "\r\n"), "t.md")
    assert crlf == parse(body)
    assert crlf.sections[0].blocks[0].source == "local a = 1\nreturn a"


# -- the H1 title -----------------------------------------------------------------------------

@pytest.mark.parametrize("body, message", [
    ("## A\n", "prompt requires an H1 title"),
    ("# One\n\n# Two\n", "prompt must contain exactly one H1 title"),
    ("# \n", "prompt H1 title must not be empty"),
    ("#\n\n## A\n", "prompt H1 title must not be empty"),
])
def test_title_errors(body, message):
    """Exactly one non-empty H1; these errors name no line (kit: parser.title)."""
    error = refusal(body, "Structure")
    assert (error.message, error.line) == (message, None)


def test_h1_in_notes_counts():
    """An H1 in the notes before the title counts toward the one-H1 rule (kit: parser.title)."""
    error = refusal("Notes\n\n# Old\n\n# New\n", "Structure")
    assert error.message == "prompt must contain exactly one H1 title"


def test_title_is_text_trimmed():
    """Inner spacing and case are kept; markup keeps only its text (kit: parser.title)."""
    assert parse("#   Demo  *Title*  `x` &amp; y  \n").title == "Demo  Title  x & y"


def test_setext_h1_is_the_title():
    """CommonMark decides headings, so a `===` underline makes an H1 (kit: parser.title)."""
    assert parse("Greeter\n=======\n").title == "Greeter"


def test_hash_in_a_fence_is_code():
    """A `#` line inside any fence is never a heading (kit: parser.sections)."""
    prompt = parse(f"# T\n\n```python\n# comment\n## not a section\n```\n\n## A\n\n"
                   f"{lua('# not a heading either')}")
    assert [s.name for s in prompt.sections] == ["A"]


def test_notes_before_title_are_inert():
    """Headings and fences before the H1 never become sections or blocks (kit: parser.notes)."""
    prompt = parse(f"Editing notes.\n\n## Old section\n\n{lua('x = 1')}\n"
                   "# With Notes\n\n## Answer\n")
    assert prompt.h1_blocks == () and not prompt.h1_has_pass
    assert [s.name for s in prompt.sections] == ["Answer"]


# -- sections ---------------------------------------------------------------------------------

def test_nesting():
    """Sections nest one level at a time; content stops at the next heading
    (kit: parser.sections)."""
    prompt = parse("# Nesting\n\n## Prepare\n\nGather the subject.\n\n### Author note\n\n"
                   "Child prose.\n\n#### Deep\n\n## Finish\n")
    prepare, note, deep, finish = prompt.sections
    assert (prepare.level, note.level, deep.level, finish.level) == (2, 3, 4, 2)
    assert (prepare.parent, note.parent, deep.parent, finish.parent) == (None, 0, 1, None)
    assert (prepare.children, note.children, deep.children) == ((1,), (2,), ())
    assert prompt.top_level == (0, 3)
    assert prepare.line == 8


def test_zero_sections_is_legal():
    """A title alone parses, with no sections (kit: parser.sections)."""
    prompt = parse("# Only a title\n\nText.\n")
    assert prompt.sections == () and prompt.h1_has_pass


def test_section_name_strips_inline_code():
    """`` ## Run `fetch` `` is named `Run fetch` (kit: parser.sections)."""
    assert parse("# T\n\n## Run `fetch`  \n").sections[0].name == "Run fetch"


@pytest.mark.parametrize("body, message, line", [
    ("# T\n\n##\n", "an H2 section heading must not be empty", 8),
    ("# T\n\n## A\n\n###   <br>  \n", "an H3 section heading must not be empty", 10),
    ("# T\n\n## A\n\n#### Deep\n", "section `Deep` is an orphan H4 heading with no parent H3", 10),
    ("# T\n\n### First\n", "section `First` is an orphan H3 heading with no parent H2", 8),
    ("# T\n\n## A\n\n### B\n\n## C\n\n#### D\n",
     "section `D` is an orphan H4 heading with no parent H3", 14),
])
def test_heading_errors(body, message, line):
    """Empty and orphan headings are refused at their line, never re-parented
    (kit: parser.sections)."""
    error = refusal(body, "Structure")
    assert (error.message, error.line) == (message, line)


def test_duplicate_sibling_guide_example():
    """The guide's `dup` prompt: first at line 9, again at line 13 (kit: parser.sections)."""
    text = ("---\nname: dup\ndescription: Two sibling sections share a name\npromptforge: 0\n"
            "---\n\n# T\n\n## S\n\nFirst.\n\n## S\n\nSecond.\n")
    with pytest.raises(PromptError) as info:
        parse_prompt(text, "dup.md")
    assert info.value.message == ("duplicate sibling section name `S`: first declared at line 9, "
                                  "again at line 13; sibling section names must be unique")
    assert (info.value.kind, info.value.line) == ("Structure", 13)


def test_same_name_under_different_parents():
    """Sibling names are unique only among siblings (kit: parser.sections)."""
    prompt = parse("# T\n\n## A\n\n### S\n\n## B\n\n### S\n")
    assert [s.ref for s in prompt.sections] == ["## A", "### S", "## B", "### S"]


def test_setext_pitfall():
    """A prose line right above `---` becomes an H2 named after it (kit: parser.sections)."""
    prompt = parse(f"# T\n\n## S\n\nSome prose\n---\n\nMore prose\n\n{lua('return prose')}")
    assert [s.name for s in prompt.sections] == ["S", "Some prose"]
    assert prompt.sections[1].blocks[0].prose == "More prose"


# -- fences -------------------------------------------------------------------------------------

@pytest.mark.parametrize("opener", ["```lua ", "```Lua", "````lua", " ```lua", "```luа",
                                    "```lua  shared", "~~~lua"])
def test_only_exact_openers_are_lua(opener):
    """Any other opening line is an ordinary code block in the prose (kit: parser.fences)."""
    prompt = parse(f"# T\n\n## A\n\n{opener}\nreturn 1\n{FENCE}\n")
    assert prompt.sections[0].blocks == ()


def test_other_fences_are_prose_verbatim():
    """A `python` fence stays whole in the next block's prose (kit: parser.fences)."""
    prompt = parse(f"# T\n\n## Main\n\nExplain what this code prints:\n\n"
                   f"```python\nprint(1)\n```\n\n{lua('return prose')}")
    assert prompt.sections[0].blocks[0].prose == ("Explain what this code prints:\n\n"
                                                   "```python\nprint(1)\n```")


def test_nested_fence_lines_stay_prose():
    """Fence lines nested in a four-backtick block are prose, shared ones too
    (kit: parser.fences)."""
    inner = f"{lua('return 1')}{lua('x = 1', 'lua shared')}"
    prompt = parse(f"# T\n\n````markdown\n{inner}````\n\n## A\n")
    assert prompt.h1_blocks == () and prompt.shared is None
    assert prompt.h1_has_pass


def test_closer_is_exactly_three_backticks():
    """Only an exact ``` line closes; other backtick lines are Lua source (kit: parser.fences)."""
    prompt = parse("# T\n\n## A\n\n```lua\nx = [[\n````\n ```\n``` \n]]\n```\n")
    assert prompt.sections[0].blocks[0].source == "x = [[\n````\n ```\n``` \n]]"


def test_empty_block_is_valid():
    """An opener followed at once by its closer is an empty block (kit: parser.fences)."""
    block = parse(f"# T\n\n## A\n\n{lua()}").sections[0].blocks[0]
    assert (block.source, block.location) == ("", "section `A` prologue")


@pytest.mark.parametrize("body, message, line", [
    ("# T\n\n```lua shared\nx = 1\n", "prompt `lua shared` fence is not closed", 8),
    ("# T\n\n## Main\n\n```lua\nx = 1\n\n## Next\n",
     "section `Main` prologue `lua` fence is not closed", 10),
    ("# T\n\n## Main\n\nProse.\n\n```lua\nx = 1\n",
     "section `Main` epilog `lua` fence is not closed", 12),
    (f"# T\n\n## Main\n\n{lua()}\n```lua\nx = 1\n````\n",
     "section `Main` epilog `lua` fence is not closed", 13),
    ("# Title\n\n```lua\nx = 1\n", "section `Title` prologue `lua` fence is not closed", 8),
    (f"# T\n\n## Main\n\n```lua\nx = 1\n````\n\nProse.\n\n{lua('y = 2')}",
     "section `Main` `lua` fence is not closed exactly", 10),
])
def test_unclosed_fences(body, message, line):
    """Unclosed fences are refused by position, at the opener's line (kit: parser.fences)."""
    error = refusal(body, "Fence")
    assert (error.message, error.line) == (message, line)


# -- the shared library -------------------------------------------------------------------------

def test_shared_library():
    """One `lua shared` fence in the H1 body is the library, not an H1 block
    (kit: parser.shared-library)."""
    library = lua("function d(v) return v end", "lua shared")
    prompt = parse(f"# Decorated\n\nWraps a word.\n\n{library}"
                   f"\n## Answer\n\n{lua('return d(1)')}")
    assert prompt.shared == LuaBlock("function d(v) return v end", 11, "prompt shared library")
    assert prompt.h1_blocks == ()
    assert [s.name for s in prompt.sections] == ["Answer"]


def test_shared_alone_makes_no_h1_pass():
    """A `lua shared` fence alone gives no H1 pass (kit: parser.shared-library)."""
    prompt = parse(f"# T\n\n{lua('x = 1', 'lua shared')}\n## A\n")
    assert prompt.shared is not None and not prompt.h1_has_pass


def test_lone_plain_fence_is_not_the_library():
    """A plain `lua` fence in the H1 body is live code (kit: parser.shared-library)."""
    prompt = parse(f"# T\n\n{lua('return 1')}")
    assert prompt.shared is None and prompt.h1_has_pass
    assert prompt.h1_blocks[0].location == "H1 `T` lua"


def test_shared_counted_before_placement():
    """Two shared fences fail on the count, even when one is misplaced
    (kit: parser.shared-library)."""
    error = refusal(f"# T\n\n{lua('a = 1', 'lua shared')}\n## A\n\n{lua('b = 1', 'lua shared')}",
                    "Fence")
    assert (error.message, error.line) == ("prompt allows at most one `lua shared` fence", 14)


@pytest.mark.parametrize("body, line", [
    (f"# T\n\n## A\n\n{lua('a = 1', 'lua shared')}", 10),
    (f"Notes.\n\n{lua('a = 1', 'lua shared')}\n# T\n", 8),
])
def test_shared_only_in_h1(body, line):
    """A shared fence in a section or in the notes is refused (kit: parser.shared-library)."""
    error = refusal(body, "Fence")
    assert (error.message, error.line) == ("`lua shared` fence is allowed only in H1", line)


# -- blocks, labels, prose ------------------------------------------------------------------------

def blocks_of(content: str):
    return parse(f"# T\n\n## S\n\n{content}").sections[0].blocks


def test_shape_prose_only():
    """Prose alone makes no Lua block (kit: parser.block-shapes)."""
    assert blocks_of("Just prose.\n") == ()


def test_shape_one_fence_is_prologue():
    """A single fence (blank lines before it are fine) is only a prologue
    (kit: parser.block-shapes)."""
    (block,) = blocks_of(f"\n\n{lua('x = 1')}\nTrailing prose.\n")
    assert (block.location, block.prose) == ("section `S` prologue", "")


def test_shape_prose_then_fence_is_epilog():
    """Prose then one fence: the fence is the epilog (kit: parser.block-shapes)."""
    (block,) = blocks_of(f"Say hello to the reader.\n\n{lua('return prose')}")
    assert (block.location, block.prose) == ("section `S` epilog", "Say hello to the reader.")


@pytest.mark.parametrize("between", ["", "\n", "   \n\t\n"])
def test_shape_back_to_back_fences(between):
    """Two fences with only whitespace between: prologue and epilog, empty prose
    (kit: parser.block-shapes)."""
    first, second = blocks_of(f"{lua('-- prologue')}{between}{lua('return 1')}")
    assert (first.location, second.location) == ("section `S` prologue", "section `S` epilog")
    assert second.prose == ""


def test_shape_many_fences():
    """First is prologue, last is epilog, the rest plain `lua`, each with its own prose
    (kit: parser.block-shapes)."""
    blocks = blocks_of(f"First.\n\n{lua('var.word = 1')}\nSecond.\n\n{lua('x = 2')}"
                       f"\nThird.\n\n{lua('return prose')}\nTrailing.\n")
    assert [b.location for b in blocks] == ["section `S` lua", "section `S` lua",
                                           "section `S` epilog"]
    assert [b.prose for b in blocks] == ["First.", "Second.", "Third."]
    blocks = blocks_of(f"{lua()}\nMiddle.\n\n{lua()}{lua()}")
    assert [b.location for b in blocks] == ["section `S` prologue", "section `S` lua",
                                           "section `S` epilog"]


def test_h1_blocks_all_share_one_label():
    """Every H1 body block is labelled with the title (kit: parser.block-shapes)."""
    prompt = parse(f"# Two Turns\n\n{lua('a = 1')}\nName one planet.\n\n{lua('b = 2')}\n"
                   "## Answer\n")
    assert [b.location for b in prompt.h1_blocks] == ["H1 `Two Turns` lua"] * 2
    assert prompt.h1_blocks[1].prose == "Name one planet."


def test_prose_excludes_heading_and_blank_lines():
    """`## Run`, a blank line and `Done.` give the prose `Done.` (kit: parser.prose)."""
    (block,) = parse(f"# T\n\n## Run\n\n\nDone.\n\n\n{lua('return prose')}").sections[0].blocks
    assert block.prose == "Done."


def test_prose_never_crosses_sections():
    """A section starts with no pending prose (kit: parser.prose)."""
    prompt = parse(f"# T\n\n## A\n\nProse for A.\n\n## B\n\n{lua('return prose')}")
    assert prompt.sections[1].blocks[0].prose == ""


def test_thematic_break_resets_prose():
    """Only the text below the last break is captured; the break line is not
    (kit: parser.prose)."""
    (block,) = blocks_of(f"Working notes.\n\n---\n\nOld.\n\n***\n\nWrite this.\n\n{lua('x')}")
    assert block.prose == "Write this."


def test_break_inside_fences_is_inert():
    """`---` in a text fence or a Lua comment resets nothing (kit: parser.prose)."""
    comment = lua("--[[\n\n---\n]]")
    first, second = blocks_of(f"Keep me.\n\n```text\n\n---\n```\n\n{comment}Also.\n\n{lua('x')}")
    assert first.prose == "Keep me.\n\n```text\n\n---\n```"
    assert first.source == "--[[\n\n---\n]]"
    assert second.prose == "Also."


def test_h1_break_and_shared_fence():
    """In the H1 body a break drops the text above it; a shared fence below it
    is still live and does not split the prose (kit: parser.prose)."""
    prompt = parse(f"# T\n\nDescription above.\n\n---\n\n{lua('s = 1', 'lua shared')}"
                   f"\nBelow prose.\n\n{lua('return prose')}")
    assert prompt.shared is not None
    assert prompt.h1_blocks[0].prose == "Below prose."


def test_h1_has_pass():
    """The H1 pass runs iff the H1 body has a Lua block or prose (kit: parser.h1-pass)."""
    assert not parse("# T\n\n## A\n").h1_has_pass
    assert not parse("# T\n\nNotes.\n\n---\n\n## A\n").h1_has_pass
    assert parse("# Summary\n\n---\n\nReturns a greeting.\n\n## Main\n").h1_has_pass
    assert parse(f"# T\n{lua('local x = 1')}").h1_has_pass


def test_first_line_guide_example():
    """The guide's `checker`: the epilog's first Lua line is file line 13
    (kit: parser.line-numbers)."""
    text = ("---\nname: checker\ndescription: Shows how error lines map\npromptforge: 0\n---\n"
            "# Checker\n\n## Check\n\nAsk the model.\n\n```lua\nlocal a = 1\nassert(false)\n```\n")
    (block,) = parse_prompt(text).sections[0].blocks
    assert (block.first_line, block.location) == (13, "section `Check` epilog")
    assert block.source == "local a = 1\nassert(false)"


def test_first_line_counts_a_longer_frontmatter():
    """Block lines count the whole file, frontmatter included (kit: parser.line-numbers)."""
    text = ("---\nname: t\ndescription: d\npromptforge: 0\nmodels:\n  writer: {}\n---\n"
            f"# T\n{lua('x = 1', 'lua shared')}{lua('y = 1')}\n## Main\n{lua('z = 1')}")
    prompt = parse_prompt(text)
    assert prompt.shared.first_line == 10
    assert prompt.h1_blocks[0].first_line == 13
    assert prompt.sections[0].blocks[0].first_line == 18


# -- list sections -----------------------------------------------------------------------------

def items_of(content: str, name: str = "Topics"):
    return section(parse(f"# T\n\n## {name}\n\n{content}"), name).items


@pytest.mark.parametrize("content, items", [
    ("- alpha\n- beta\n3. gamma\n", ("alpha", "beta", "gamma")),
    ("1. first\n2. second\n3) third\n", ("first", "second", "third")),
    ("- alpha\n* beta\n- gamma\n", ("alpha", "beta", "gamma")),
    ("- alpha\n\n- beta\n   \n- gamma\n", ("alpha", "beta", "gamma")),
    ("- alpha\n  - nested\n    * deeper\n", ("alpha", "nested", "deeper")),
    ("-   spaced\n- trail   \n", ("  spaced", "trail")),
    ("10. ten\n007) seven\n", ("ten", "seven")),
    ("- alpha\n\n---\n\n- beta\n", ("beta",)),
    ("---\n\n- alpha\n- beta\n", ("alpha", "beta")),
    ("Commentary above.\n\n---\n\n- kept\n", ("kept",)),
])
def test_list_items(content, items):
    """Markers with their space, flat, only below the last break (kit: parser.list-sections)."""
    assert items_of(content) == items


@pytest.mark.parametrize("content", [
    "", "   \n\n", "Here is context.\n- one incidental bullet\nMore prose follows.\n",
    f"- alpha\n- beta\n\n{lua('return 1')}", "-alpha\n", "- alpha\n\n---\n",
    f"Do work on {{{{ item }}}}.\n\n{lua('return item')}",
])
def test_not_a_list(content):
    """Blank sections, any other line, or any Lua block: prose, no items
    (kit: parser.list-sections)."""
    assert items_of(content) is None


def test_list_in_a_child_section():
    """List sections work at any depth (kit: parser.list-sections)."""
    prompt = parse("# T\n\n## Parent\n\n### Items\n\n- one\n- two\n")
    assert section(prompt, "Items").items == ("one", "two")
    assert section(prompt, "Parent").items is None


@pytest.mark.parametrize("empty", ["-", "- ", "*", "1.", "2)"])
def test_empty_bullet_item(empty):
    """A marker with no text fails in whatever section it sits, at its line
    (kit: parser.list-sections)."""
    error = refusal(f"# T\n\n## A\n\n### Items\n\n- one\n{empty}\n- three\n", "List")
    assert (error.message, error.line) == ("empty bullet item in list section `Items`", 13)


# -- compile check ---------------------------------------------------------------------------

def test_compile_check_sees_every_block_in_file_order():
    """Each block is compiled once, source unpadded, named by its label
    (kit: parser.compile-check)."""
    seen = []
    parse(f"# T\n\n{lua('h = 1')}{lua('s = 1', 'lua shared')}\n## A\n\n{lua('a = 1')}",
          compile_check=lambda source, name: seen.append((source, name)))
    assert seen == [("h = 1", "H1 `T` lua"), ("s = 1", "prompt shared library"),
                    ("a = 1", "section `A` prologue")]


def test_compile_error():
    """A compiler message refuses the prompt with kind Lua at the first Lua line
    (kit: parser.compile-check)."""
    def check(source, chunkname):
        return f'[string "{chunkname}"]:2: syntax error' if "oops" in source else None

    text = ("---\nname: checker\ndescription: d\npromptforge: 0\n---\n"
            "# Checker\n\n## Check\n\nAsk the model.\n\n```lua\nlocal a = 1\noops(\n```\n")
    with pytest.raises(PromptError) as info:
        parse_prompt(text, "c.md", compile_check=check)
    assert info.value.message == ("lua compilation error at section `Check` epilog (line 13): "
                                  '[string "section `Check` epilog"]:2: syntax error')
    assert (info.value.kind, info.value.line, info.value.file) == ("Lua", 13, "c.md")


# -- loading files ------------------------------------------------------------------------------

def test_load_prompt(tmp_path):
    """A file on disk parses with its path as the label (kit: parser.loading)."""
    path = tmp_path / "greeter.md"
    path.write_bytes((HEAD + f"# Greeter\n\n## Say hi\n\n{lua('return 1')}").encode())
    prompt = load_prompt(path)
    assert (prompt.path, prompt.title) == (str(path), "Greeter")


def test_load_missing_file(tmp_path):
    """An unreadable file names the file (kit: parser.loading)."""
    path = tmp_path / "missing.md"
    with pytest.raises(PromptError) as info:
        load_prompt(path)
    assert info.value.file == str(path)
    assert info.value.message.startswith("cannot read prompt file")


def test_load_non_utf8(tmp_path):
    """A file that is not UTF-8 names the file and the line (kit: parser.loading)."""
    path = tmp_path / "latin1.md"
    path.write_bytes(HEAD.encode() + b"# Caf\xe9\n")
    with pytest.raises(PromptError) as info:
        load_prompt(path)
    assert (info.value.file, info.value.line) == (str(path), 6)
    assert "not valid UTF-8" in info.value.message


# -- robustness --------------------------------------------------------------------------------

_PIECES = st.sampled_from(["# T", "## A", "### B", "#### C", "#", "---", "***", "===", "- x", "-",
                           "1.", "```lua", "```lua shared", "```", "````", "```python", "> q",
                           "<div>", "text", "", "   ", "\r", "\t- y", "name: x", "\ufeff",
                           "{{ x }}", "`"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=30), st.booleans())
def test_any_body_parses_or_is_refused(pieces, with_head):
    """No input ever escapes as anything but a Prompt or a PromptError (kit: parser.robustness)."""
    text = (HEAD if with_head else "") + "\n".join(pieces)
    try:
        parse_prompt(text, compile_check=lambda source, name: None)
    except PromptError as error:
        assert error.kind in (None, "Frontmatter", "Structure", "Fence", "List", "Lua")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_is_refused(text):
    """Arbitrary text, frontmatter or not, ends in a Prompt or a PromptError
    (kit: parser.robustness)."""
    for candidate in (text, HEAD + text, "---\n" + text + "\n---\n# T\n"):
        try:
            parse_prompt(candidate)
        except PromptError:
            pass
