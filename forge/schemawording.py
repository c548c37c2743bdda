"""The kit's JSON Schemas as every reader uses them: a folder of them, and an error worded.

Shared by every reader that checks its input against a shipped JSON Schema:
the scripts (`forge.scriptschema`, the folder `forge/schema/`) and the
conformance kit's cases, observations and reports
(`forge.conformance.schemas`, `conformance/schema/`).  A `Shelf` is
one folder of schemas (Draft 2020-12): each read once, each one's
validator built once, `$ref`s between them resolved within the folder, an
instance's errors listed the most relevant first.  `Remembered` holds the
instances a reader found valid, so that it checks each only once.
`describe` words one jsonschema error so a person can act on it, at a JSON
pointer; a value is shown as compact JSON, cut at `SHOW_LIMIT` characters.

What does not live here: which schemas a folder holds and what a reader
does with a violation (the two modules above), which error of several is
shown.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.exceptions import ValidationError


class Shelf:
    """The JSON Schemas of one folder, `NAME.schema.json` each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.schema = functools.cache(self._schema)
        self.validator = functools.cache(self._validator)

    def path_of(self, name: str) -> Path:
        return self.folder / f"{name}.schema.json"

    def _schema(self, name: str) -> dict:
        return json.loads(self.path_of(name).read_text(encoding="utf-8"))

    def _validator(self, name: str, definition: str | None = None
                   ) -> jsonschema.Draft202012Validator:
        """Schema `name`'s validator, or one for its definition `definition` (`$defs`)."""
        # jsonschema is imported at the first check: loading it (and the
        # metaschemas it reads from disk) is most of the kit's import time,
        # and a run with no script never needs it.
        import jsonschema
        from referencing import Registry, Resource

        resources = [(schema["$id"], Resource.from_contents(schema))
                     for schema in (self.schema(p.name.removesuffix(".schema.json"))
                                    for p in sorted(self.folder.glob("*.schema.json")))
                     if "$id" in schema]
        whole = jsonschema.Draft202012Validator(
            self.schema(name), registry=Registry().with_resources(resources))
        if definition is None:
            return whole
        root = self.schema(name)
        return whole.evolve(schema={"$schema": root["$schema"], "$id": root["$id"],
                                    "$defs": root["$defs"], "$ref": f"#/$defs/{definition}"})

    def errors(self, name: str, instance: Any, definition: str | None = None
               ) -> list[ValidationError]:
        """Every error of `instance` against schema `name` (or one of its
        definitions), the most relevant first (jsonschema's ranking: the
        shallowest first)."""
        from jsonschema.exceptions import relevance

        return sorted(self.validator(name, definition).iter_errors(instance), key=relevance,
                      reverse=True)


class Remembered:
    """Instances found valid, by a key of their JSON text, at most `most` of
    them (past that, all are forgotten at once and remembering starts again)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.keys: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def add(self, key: str) -> None:
        if len(self.keys) >= self.most:
            self.keys.clear()
        self.keys.add(key)

#: `'key' was unexpected` / `'a', 'b' were unexpected` in jsonschema's message.
_UNEXPECTED = re.compile(r"\('([^']*)'(?:, '[^']*')* (?:was|were) unexpected\)")
#: Characters of a value shown in a message.
SHOW_LIMIT = 160


def show(value: Any) -> str:
    """`value` as compact JSON for a message, cut at `SHOW_LIMIT` characters."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    if len(text) > SHOW_LIMIT:
        text = text[: SHOW_LIMIT - 1] + "…"
    return text


def pointer(parts: tuple) -> str:
    """JSON pointer (RFC 6901): `("events", 3, "kind")` -> `/events/3/kind`."""
    if not parts:
        return "/"
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


_TYPE_NAMES = {
    "object": "a table",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _type_name(rule: Any, names: dict) -> str:
    if isinstance(rule, list):
        return " or ".join(names.get(r, r) for r in rule)
    return names.get(rule, rule)


#: How a JSON reader (a script) names the types: there is no TOML there.
JSON_TYPE_NAMES = {**_TYPE_NAMES, "object": "a JSON object", "array": "an array"}


def describe(error: ValidationError, root: dict,
             type_names: dict | None = None) -> tuple[tuple, str, tuple]:
    """(path shown, message, path whose line to cite) for one schema error;
    `type_names` words the types (the TOML words of `_TYPE_NAMES` by default)."""
    path = tuple(error.absolute_path)
    value, rule, inst = error.validator, error.validator_value, error.instance
    got = show(inst)
    if value == "required":
        missing = error.message.split("'")[1] if error.message.count("'") >= 2 else rule[0]
        return path, f"missing required field `{missing}`", path
    if value in ("additionalProperties", "unevaluatedProperties"):
        # jsonschema names the unexpected keys, in the instance's order.
        named = _UNEXPECTED.search(error.message)
        known = error.schema.get("properties", {})
        extra = (named.group(1) if named and value == "unevaluatedProperties"
                 else next((k for k in inst if k not in known), "?"))
        return path, f"unknown field `{extra}`", path + (extra,)
    if value == "type":
        return path, f"expected {_type_name(rule, type_names or _TYPE_NAMES)}, got {got}", path
    if value in ("minItems", "minLength", "minProperties") and rule == 1:
        return path, "must not be empty", path
    if value == "minimum":
        return path, f"must be at least {rule}, got {got}", path
    if value == "maximum":
        return path, f"must be at most {rule}, got {got}", path
    if value == "enum":
        if len(rule) > 16:
            return path, f"must be one of the {len(rule)} names the schema lists, got {got}", path
        return path, f"must be one of {', '.join(f'`{x}`' for x in rule)}, got {got}", path
    if value == "const":
        return path, f"must be {show(rule)}, got {got}", path
    if value == "uniqueItems":
        dup = next((x for i, x in enumerate(inst) if x in inst[:i]), None)
        return path, f"lists {show(dup)} twice", path
    if value == "pattern":
        return path, f"must match /{rule}/, got {got}", path
    if value == "propertyNames":
        return path, f"a key breaks the rule for keys: {error.message}", path
    if value in ("anyOf", "oneOf"):
        forms = " or ".join(_form(sub, root) for sub in rule)
        return path, f"expected {forms}, got {got}", path
    return path, error.message, path


def _form(subschema: dict, root: dict) -> str:
    ref = subschema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        subschema = root["$defs"][ref.removeprefix("#/$defs/")]
    if subschema.get("type") == "null":
        return "null"
    return subschema.get("title") or subschema.get("description", "another form")
