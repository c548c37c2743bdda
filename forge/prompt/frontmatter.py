"""The frontmatter: the YAML header between a prompt's two `---` lines.

What lives here: splitting the header off the file, reading it as YAML, and
checking it against the prompt contract (the ten keys, the name grammar for
tool aliases, model role labels and arg names, arg declarations, model roles,
capability entries, `input:`/`output:`).  Every refusal is a `FrontmatterError`
carrying the detail that follows `invalid frontmatter: ` and a 1-based file
line; `forge.prompt.parser` turns it into a `PromptError`.

What does not: the Markdown body, the `promptforge` version gate (a run-time
check), and anything a capability id or tool path means - those two get shape
checks only.

The messages follow the serde conventions the reference engine's own messages
use (`unknown field ..., expected one of ...`, `invalid type: {found}, expected
...`), and values are read with the YAML 1.2 core schema, so `name: no` is the
string `no` and `description: 2024-01-01` a string, as in the reference.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import attrs
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from forge.limits import MAX_FRONTMATTER_BYTES
from forge.prompt.model import ArgDecl, Capability, FileDecl, ModelRole

#: The grammar every tool alias, model role label and arg name follows.
NAME_GRAMMAR = "[A-Za-z][A-Za-z0-9_-]{0,63}"
_NAME = re.compile(NAME_GRAMMAR)

_ARG_TYPES = ("string", "boolean", "integer", "number")
_KEYWORDS = ("thinking", "no-thinking", "frontier", "fast", "small", "creative", "chat")
_MAX_ROUNDS = 1000
_MAX_CONTEXT = 2**32 - 1
_I64 = range(-(2**63), 2**63)


class FrontmatterError(Exception):
    """A frontmatter refusal: the whole message and the 1-based file line."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _invalid(detail: str, node: Node | None = None, line: int | None = None) -> FrontmatterError:
    """The `invalid frontmatter: {detail}` refusal, placed at `node` if given."""
    where = _at(node) if node is not None else line
    return FrontmatterError(f"invalid frontmatter: {detail}", where)


@attrs.frozen
class Frontmatter:
    """The checked header, ready to be copied into a `Prompt`."""

    name: str
    description: str
    promptforge: int | None = None
    max_tool_iterations: int | None = None
    input: FileDecl | None = None
    output: FileDecl | None = None
    capabilities: tuple[Capability, ...] = ()
    tools: tuple[tuple[str, str], ...] = ()
    #: The `args:` declaration (the `Prompt`'s `args_decl`).
    args_decl: tuple[ArgDecl, ...] | None = None
    roles: tuple[ModelRole, ...] = ()


def split(lines: list[str]) -> tuple[list[str], int]:
    """Return the header lines and the index of the first body line.

    Delimiter lines are compared trimmed, so `--- ` still opens and closes.
    """
    if not lines or lines[0].strip() != "---":
        raise FrontmatterError("file must begin with a --- frontmatter delimiter", 1)
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return lines[1:index], index + 1
    raise FrontmatterError("frontmatter was not closed with ---", 1)


def read(header: list[str]) -> Frontmatter:
    """Parse and check the header lines (the ones between the delimiters).

    A header past `forge.limits.MAX_FRONTMATTER_BYTES` is refused before the
    YAML parser sees it: a long line costs the parser time out of proportion.
    """
    size = 0
    for index, line in enumerate(header):
        size += len(line) + 1  # characters: a cheap lower bound of the bytes
        if size > MAX_FRONTMATTER_BYTES:
            raise _invalid(f"the frontmatter is larger than the limit of {MAX_FRONTMATTER_BYTES} "
                           "bytes (docs/limits.md)", line=index + 2)
    root = _compose("\n".join(header))
    fields = _struct(root, _TOP_READERS, required=("name", "description"),
                     expecting="a map of frontmatter keys")
    return Frontmatter(**{_TOP_ATTRS.get(key, key): value for key, value in fields.items()})


# -- YAML ------------------------------------------------------------------------------

#: libyaml's parser when PyYAML has it (several times faster); the pure-Python
#: one otherwise.  Both resolve with the core-schema resolvers installed below.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreLoader(_SafeLoader):
    """A safe loader that resolves plain scalars by the YAML 1.2 core schema.

    PyYAML speaks YAML 1.1, where `yes`, `off` and `2024-01-01` are not
    strings and `010` is octal; the reference reads 1.2, so we swap resolvers.
    """

    yaml_implicit_resolvers: dict = {}

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = self.construct_scalar(node)
        if text[:2] in ("0o", "0x"):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text)


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _CoreLoader.construct_yaml_int)
for _tag, _pattern, _first in (
    ("null", r"~|null|Null|NULL|", "~nN"),
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", "-+.0123456789"),
):
    _CoreLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(rf"^(?:{_pattern})$"),
                                      [*_first, ""] if _tag == "null" else list(_first))


def _compose(text: str) -> Node | None:
    try:
        return _CoreLoader(text).get_single_node()
    except yaml.MarkedYAMLError as exc:
        detail = exc.problem or "invalid YAML"
        if exc.context:
            detail += ", " + exc.context
        mark = exc.problem_mark or exc.context_mark
        raise _invalid(detail, line=_line(mark)) from None
    except yaml.reader.ReaderError as exc:
        line = text[:exc.position].count("\n") + 2
        raise _invalid(f"unacceptable character #x{exc.character:04x}: "
                       "special characters are not allowed", line=line) from None
    except yaml.YAMLError as exc:
        raise _invalid(str(exc)) from None
    except RecursionError:
        raise _invalid("the YAML is nested too deeply") from None


def _line(mark: Any) -> int | None:
    # Marks count from 0 within the header; the opening `---` is file line 1.
    return None if mark is None else mark.line + 2


def _at(node: Node) -> int | None:
    return _line(node.start_mark)


def _scalar(node: Node) -> Any:
    """The Python value of a scalar node (YAML 1.2 core types)."""
    try:
        return _CoreLoader("").construct_object(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        raise _invalid(f"invalid value for tag {node.tag}", node) from None


def _found(node: Node) -> str:
    """Describe a value the way serde's `invalid type` messages do."""
    if isinstance(node, SequenceNode):
        return "sequence"
    if isinstance(node, MappingNode):
        return "map"
    value = _scalar(node)
    if value is None:
        return "unit value"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{'NaN' if math.isnan(value) else repr(value)}`"
    if isinstance(value, str):
        return "string " + json.dumps(value, ensure_ascii=False)
    return f"{node.tag} value"


def _invalid_type(node: Node, expected: str) -> FrontmatterError:
    return _invalid(f"invalid type: {_found(node)}, expected {expected}", node)


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"


# -- structs and contract maps ------------------------------------------------------------

_Reader = Callable[[Node], Any]


def _one_of(names: tuple[str, ...]) -> str:
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def _key(node: Node) -> str:
    if not isinstance(node, ScalarNode):
        raise _invalid_type(node, "a field name")
    return node.value


def _entries(node: Node | None, expecting: str) -> list[tuple[Node, Node]]:
    """The (key, value) pairs of a map; an empty header or `~` is an empty map."""
    if node is None or _is_null(node):
        return []
    if not isinstance(node, MappingNode):
        raise _invalid_type(node, expecting)
    return node.value


def _struct(node: Node | None, readers: dict[str, _Reader], *, required: tuple[str, ...],
            expecting: str) -> dict[str, Any]:
    """Read a fixed-key map in document order, like a serde struct.

    Unknown and repeated keys are refused where they stand; a value read as
    None (an optional key written `~`) counts as absent; missing required keys
    are reported last, at the map.
    """
    values: dict[str, Any] = {}
    seen: set[str] = set()
    for key_node, value_node in _entries(node, expecting):
        key = _key(key_node)
        if key not in readers:
            raise _invalid(f"unknown field `{key}`, expected {_one_of(tuple(readers))}", key_node)
        if key in seen:
            raise _invalid(f"duplicate field `{key}`", key_node)
        seen.add(key)
        value = readers[key](value_node)
        if value is not None:
            values[key] = value
    for key in required:
        if key not in values:
            raise _invalid(f"missing field `{key}`", node)
    return values


def _contract_map(kind: str, reader: _Reader) -> _Reader:
    """A reader for `tools:`/`models:`/`args:`: names by the grammar, each once."""

    def read_map(node: Node) -> tuple[tuple[str, Any], ...] | None:
        if _is_null(node):
            return None
        if not isinstance(node, MappingNode):
            raise _invalid_type(node, f"a map of {kind} keys to declarations")
        entries: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = _key(key_node)
            if not _NAME.fullmatch(name):
                raise _invalid(f"invalid {kind} `{name}`: expected {NAME_GRAMMAR}", key_node)
            if name in entries:
                raise _invalid(f"duplicate {kind} `{name}`: contract map keys must be unique",
                               key_node)
            entries[name] = reader(value_node)
        return tuple(entries.items())

    return read_map


def _optional(reader: _Reader) -> _Reader:
    return lambda node: None if _is_null(node) else reader(node)


# -- scalar readers ---------------------------------------------------------------------------

def _string(node: Node) -> str:
    value = _scalar(node) if isinstance(node, ScalarNode) else None
    if not isinstance(value, str):
        raise _invalid_type(node, "a string")
    return value


def _boolean(node: Node) -> bool:
    value = _scalar(node) if isinstance(node, ScalarNode) else None
    if not isinstance(value, bool):
        raise _invalid_type(node, "a boolean")
    return value


def _integer(node: Node, expected: str) -> int:
    value = _scalar(node) if isinstance(node, ScalarNode) else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid_type(node, expected)
    return value


def _promptforge(node: Node) -> int:
    value = _integer(node, "a non-negative integer")
    if value < 0:
        raise _invalid(f"invalid value: integer `{value}`, expected a non-negative integer", node)
    return value


def _max_tool_iterations(node: Node) -> int:
    value = _integer(node, "a positive integer")
    # `{raw}` echoes the value as written; Python ints never wrap.
    if value < 1:
        raise _invalid(f"max_tool_iterations must be a positive integer (>= 1), "
                       f"got {node.value}", node)
    if value > _MAX_ROUNDS:
        raise _invalid(f"max_tool_iterations must be <= {_MAX_ROUNDS}, got {node.value}", node)
    return value


# -- declarations -------------------------------------------------------------------------------

def _file_decl(node: Node) -> FileDecl:
    fields = _struct(node, {"path": _string, "description": _string},
                     required=("path", "description"), expecting="a file declaration map")
    return FileDecl(**fields)


def _capability(node: Node) -> Capability:
    if isinstance(node, MappingNode):
        # `config` takes any YAML value unchecked; it is not kept.
        fields = _struct(node, {"ref": _string, "optional": _boolean, "config": lambda _: None},
                         required=("ref",), expecting="a capability entry")
        return Capability(**fields)
    ref = _scalar(node) if isinstance(node, ScalarNode) else None
    if not isinstance(ref, str):
        raise _invalid_type(node, "a capability id or a `ref:` map")
    return Capability(ref)


def _capabilities(node: Node) -> tuple[Capability, ...]:
    if not isinstance(node, SequenceNode):
        raise _invalid_type(node, "a sequence of capabilities")
    return tuple(_capability(entry) for entry in node.value)


def _keywords(node: Node) -> tuple[str, ...]:
    if not isinstance(node, SequenceNode):
        raise _invalid_type(node, "a sequence of keywords")
    words = tuple(_string(entry) for entry in node.value)
    for word, entry in zip(words, node.value, strict=True):
        if word not in _KEYWORDS:
            raise _invalid(f"unknown variant `{word}`, expected {_one_of(_KEYWORDS)}", entry)
    return words


def _min_context(node: Node) -> int:
    value = _integer(node, "a context size in tokens")
    if not 1 <= value <= _MAX_CONTEXT:
        raise _invalid(f"invalid value: integer `{value}`, expected a context size "
                       f"from 1 to {_MAX_CONTEXT}", node)
    return value


def _role(node: Node) -> dict[str, Any]:
    return _struct(node, {"keywords": _keywords, "min_context": _min_context,
                          "description": _string},
                   required=(), expecting="a model role declaration map")


def _arg_type(node: Node) -> str:
    value = _string(node)
    if value not in _ARG_TYPES:
        raise _invalid(f"unknown variant `{value}`, expected {_one_of(_ARG_TYPES)}", node)
    return value


def _arg(node: Node) -> dict[str, Any]:
    fields = _struct(node, {"type": _arg_type, "optional": _boolean, "default": _default_value,
                            "description": _string},
                     required=("type",), expecting="an arg declaration map")
    if "default" in fields and not _matches(fields["default"], fields["type"]):
        default_node = next(value for key, value in node.value if key.value == "default")
        raise _invalid(f"the default does not match the declared type `{fields['type']}`",
                       default_node)
    return fields


def _default_value(node: Node) -> Any:
    # A list or map default stays a node, which matches no declared type.
    return _scalar(node) if isinstance(node, ScalarNode) else node


def _matches(value: Any, declared: str) -> bool:
    if isinstance(value, bool):
        return declared == "boolean"
    if isinstance(value, int):
        return declared == "number" or (declared == "integer" and value in _I64)
    if isinstance(value, float):
        return declared == "number"
    return isinstance(value, str) and declared == "string"


def _tools(node: Node) -> tuple[tuple[str, str], ...] | None:
    return _contract_map("tool alias", _string)(node)


def _models(node: Node) -> tuple[ModelRole, ...] | None:
    entries = _contract_map("model role label", _role)(node)
    return None if entries is None else tuple(ModelRole(label, **role) for label, role in entries)


def _args(node: Node) -> tuple[ArgDecl, ...] | None:
    entries = _contract_map("arg name", _arg)(node)
    return None if entries is None else tuple(ArgDecl(name, **decl) for name, decl in entries)


_TOP_READERS: dict[str, _Reader] = {
    "name": _string,
    "description": _string,
    "promptforge": _optional(_promptforge),
    "max_tool_iterations": _optional(_max_tool_iterations),
    "input": _optional(_file_decl),
    "output": _optional(_file_decl),
    "capabilities": _optional(_capabilities),
    "tools": _tools,
    "args": _args,
    "models": _models,
}
#: Keys whose `Frontmatter` attribute has another name.
_TOP_ATTRS = {"models": "roles", "args": "args_decl"}
