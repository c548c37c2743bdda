"""Heading references: the `'## Name'` strings that name a section.

What lives here: checking and normalising a reference, the visible set a
piece of code may address, and resolving a reference against it.  `jump`,
`call`, `fanout`, `list_from_section`, `tasks.spawn`, `tools.allow_tasks` and
the model's `task` built-in all go through `resolve`.

What does not: the type check on the Lua value (`section target must be a
string, got ...`), which belongs to the Lua bridge, and when a failed lookup is
raised (at the call, or after the block for `jump`), which is the engine's.
"""

from __future__ import annotations

from forge.prompt.model import Prompt


class HeadingError(Exception):
    """A reference that is malformed or names no visible section; `message`
    is the exact Lua error text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def normalise(ref: str) -> str:
    """Return `ref` as `{markers} {name}`, trimmed around the whole and the name.

    Checks in order, each on the trimmed text: markers present, a name after
    them, whitespace between them.  Case and inner spacing are kept exactly.

    Raises:
        HeadingError: the reference is malformed.
    """
    text = ref.strip()
    name = text.lstrip("#")
    markers = text[:len(text) - len(name)]
    if not markers:
        raise HeadingError(f"section heading must include ### markers, got bare name: {text}")
    if not name.strip():
        raise HeadingError(f"section heading has no name: {text}")
    if not name[0].isspace():
        raise HeadingError(f"section heading must have whitespace after the {markers} markers: "
                           f"{text}")
    return f"{markers} {name.strip()}"


def visible(prompt: Prompt, from_index: int | None) -> tuple[int, ...]:
    """The sections code may address, in file order.

    From the H1 pass (`from_index` None): every top-level section.  From a
    section: its siblings other than itself, and its own direct children -
    never itself, its parent, or anything further away.
    """
    if from_index is None:
        return prompt.top_level
    siblings = (i for i in prompt.siblings(from_index) if i != from_index)
    return tuple(sorted((*siblings, *prompt.sections[from_index].children)))


#: How many resolutions one prompt remembers (code may compute any number
#: of distinct references; past this, they are resolved each time).
MAX_REMEMBERED = 4096


def resolve(prompt: Prompt, from_index: int | None, ref: str) -> int:
    """The index of the visible section `ref` names, matching level and name.

    A prompt never changes, so each answer is remembered on it.

    Raises:
        HeadingError: `ref` is malformed or names no visible section.
    """
    memo = prompt.resolved
    key = (from_index, ref)
    answer = memo.get(key)
    if answer is None:
        try:
            answer = _resolve(prompt, from_index, ref)
        except HeadingError as e:
            answer = e.message
        if len(memo) < MAX_REMEMBERED:
            memo[key] = answer
    if isinstance(answer, str):
        raise HeadingError(answer)
    return answer


def _resolve(prompt: Prompt, from_index: int | None, ref: str) -> int:
    heading = normalise(ref)
    for index in visible(prompt, from_index):
        if prompt.sections[index].ref == heading:
            return index
    raise HeadingError(f"section heading `{heading}` not found")
