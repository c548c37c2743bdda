"""Heading references: normalising, the visible set, and resolving."""

from __future__ import annotations

import pytest

from forge.prompt import HeadingError, parse_prompt, resolve
from forge.prompt.headings import normalise, visible

HEAD = "---\nname: t\ndescription: d\npromptforge: 0\n---\n"

#: Main > Kid > Grand, Sibling > Niece, Last: the guide's visibility example.
FAMILY = parse_prompt(HEAD + "# T\n\n## Main\n\n### Kid\n\n#### Grand\n\n## Sibling\n\n"
                             "### Niece\n\n## Last\n\n### Worker\n")
MAIN, KID, GRAND, SIBLING, NIECE, LAST, WORKER = range(7)


def message(from_index, ref) -> str:
    with pytest.raises(HeadingError) as info:
        resolve(FAMILY, from_index, ref)
    assert str(info.value) == info.value.message
    return info.value.message


# -- normalise ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ref, heading", [
    ("## Main", "## Main"), (" ##  Main ", "## Main"), ("###\tWorker  Two", "### Worker  Two"),
    ("## #tag", "## #tag"),
])
def test_normalise(ref, heading):
    """The whole reference and the name are trimmed; inner spacing and case stay
    (kit: headings.normalise)."""
    assert normalise(ref) == heading


@pytest.mark.parametrize("ref, expected", [
    ("Main", "section heading must include ### markers, got bare name: Main"),
    ("  Main  ", "section heading must include ### markers, got bare name: Main"),
    ("", "section heading must include ### markers, got bare name: "),
    ("###", "section heading has no name: ###"),
    ("### ", "section heading has no name: ###"),
    ("###Worker", "section heading must have whitespace after the ### markers: ###Worker"),
    (" ##Main ", "section heading must have whitespace after the ## markers: ##Main"),
])
def test_malformed_references(ref, expected):
    """Malformed references fail in order: markers, then a name, then whitespace
    (kit: headings.malformed)."""
    assert message(None, ref) == expected


# -- visibility --------------------------------------------------------------------------------

def test_visible_from_h1_is_every_top_level_section():
    """The H1 pass sees the top-level sections and no children (kit: headings.visible)."""
    assert visible(FAMILY, None) == (MAIN, SIBLING, LAST)


def test_visible_from_main():
    """From `## Main`: its siblings and its own children, in file order (kit: headings.visible)."""
    assert visible(FAMILY, MAIN) == (KID, SIBLING, LAST)


def test_visible_from_a_child():
    """A child sees its own children and no siblings, when it has none (kit: headings.visible)."""
    assert visible(FAMILY, KID) == (GRAND,)
    assert visible(FAMILY, GRAND) == ()


@pytest.mark.parametrize("ref, index", [("## Sibling", SIBLING), ("### Kid", KID),
                                        ("  ##   Last ", LAST)])
def test_resolve_from_main(ref, index):
    """From `## Main`, siblings and direct children resolve (kit: headings.resolve)."""
    assert resolve(FAMILY, MAIN, ref) == index


@pytest.mark.parametrize("ref", ["## Main", "#### Grand", "### Niece", "## Missing", "## Kid",
                                 "### Worker", "## main"])
def test_not_visible_from_main(ref):
    """Never itself, grandchildren, nieces, wrong levels or wrong case (kit: headings.resolve)."""
    assert message(MAIN, ref) == f"section heading `{ref}` not found"


def test_not_found_names_the_normalised_heading():
    """The message shows the trimmed reference with one space after the markers
    (kit: headings.not-found)."""
    assert message(MAIN, "  ##   Missing  ") == "section heading `## Missing` not found"


def test_level_must_match():
    """`## Worker` does not name the visible `### Worker` (kit: headings.resolve)."""
    assert resolve(FAMILY, LAST, "### Worker") == WORKER
    assert message(LAST, "## Worker") == "section heading `## Worker` not found"


def test_from_h1():
    """From the H1 pass, top-level sections resolve and children do not (kit: headings.resolve)."""
    assert resolve(FAMILY, None, "## Last") == LAST
    assert message(None, "### Kid") == "section heading `### Kid` not found"


def test_child_cannot_reach_parent_or_uncle():
    """From `### Kid`: not its parent, not its parent's siblings (kit: headings.resolve)."""
    assert message(KID, "## Main") == "section heading `## Main` not found"
    assert message(KID, "## Sibling") == "section heading `## Sibling` not found"
    assert resolve(FAMILY, KID, "#### Grand") == GRAND


def test_names_with_inline_code_resolve_by_text():
    """A section named from `` ## Run `fetch` `` is addressed as `## Run fetch`
    (kit: headings.resolve)."""
    prompt = parse_prompt(HEAD + "# T\n\n## Run `fetch`\n")
    assert resolve(prompt, None, "## Run fetch") == 0
