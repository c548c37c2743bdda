"""Tests for forge.engine.substitution: §15 worked examples and every
substitution error message, letter for letter.

The placeholder chapter is not in the clause catalogue (spec/*.toml), so these tests cite
kit: substitution tags."""

from __future__ import annotations

import importlib.util
import pathlib
from typing import Any

import pytest

try:
    from forge.engine.substitution import SubstitutionError, render
except Exception:  # noqa: BLE001
    # `forge.engine/__init__` imports the whole engine, which other work in
    # progress can leave unimportable.  The substitution module imports
    # nothing from forge, so load it on its own rather than fail collection.
    _path = pathlib.Path(__file__).resolve().parents[2] / "forge" / "engine" / "substitution.py"
    _spec = importlib.util.spec_from_file_location("_substitution_under_test", _path)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    SubstitutionError, render = _mod.SubstitutionError, _mod.render

ABSENT = object()


class NotData(Exception):
    """Stands in for the host's NotData: carries the Lua type name."""

    def __init__(self, typename: str) -> None:
        super().__init__(typename)
        self.typename = typename


class FakeResolver:
    def __init__(self, args: str = "", argv: Any = ABSENT, var: dict | None = None,
                 sys: dict | None = None, item: Any = ABSENT,
                 globals_: dict | None = None) -> None:
        self._args = args
        # No `args:` declaration: argv is {prose = args}.
        self._argv = {"prose": args} if argv is ABSENT else argv
        self._var = var if var is not None else {}
        self._sys = sys if sys is not None else {
            "id": "0.1", "taskid": "0", "section_name": "Only", "execution": "sequential",
            "section_count": 1, "when": "2026-01-01T00:00:00Z",
        }
        self._item = item
        self._globals = globals_ or {}
        self.calls: list[str] = []

    def args(self) -> str:
        self.calls.append("args")
        return self._args

    def argv(self) -> Any:
        self.calls.append("argv")
        return self._argv

    def var(self) -> dict:
        self.calls.append("var")
        return self._var

    def sys(self) -> dict:
        self.calls.append("sys")
        return self._sys

    def item(self) -> tuple[bool, Any]:
        self.calls.append("item")
        return (False, None) if self._item is ABSENT else (True, self._item)

    def global_(self, name: str) -> tuple[bool, Any]:
        self.calls.append(f"global:{name}")
        if name not in self._globals:
            return False, None
        value = self._globals[name]
        if isinstance(value, NotData):
            raise value
        return True, value


def fails(text: str, resolver: FakeResolver | None = None) -> SubstitutionError:
    with pytest.raises(SubstitutionError) as info:
        render(text, resolver or FakeResolver())
    return info.value


# ---------------------------------------------------------------- worked examples

def test_hello_args():
    """{{ args }} inserts the argument string (kit: substitution.args)."""
    assert render("hi {{ args }}!", FakeResolver(args="Acme Corp")) == "hi Acme Corp!"


def test_prose_without_placeholders_is_unchanged():
    """Prose without placeholders, and empty prose, come back unchanged
    (kit: substitution.plain-text)."""
    text = "plain text\nwith lines"
    assert render(text, FakeResolver()) == text
    assert render("", FakeResolver()) == ""


def test_globals_example():
    """A global renders as its value, a field path into it, or compact JSON for a table
    (kit: substitution.globals)."""
    r = FakeResolver(globals_={"answer": 42, "data": {"score": 9}})
    text = "The answer is {{ answer }}; score {{ data.score }}; raw {{ data }}."
    assert render(text, r) == "The answer is 42; score 9; raw {\"score\":9}."


def test_inner_text_is_trimmed_and_may_span_lines():
    """The text inside the braces is trimmed and may span lines (kit: substitution.trim)."""
    r = FakeResolver(args="x")
    assert render("{{args}} and {{ args }} and {{\nargs\n}}", r) == "x and x and x"


def test_args_is_verbatim():
    """args is inserted verbatim, spaces and braces included (kit: substitution.args)."""
    r = FakeResolver(args="  spaced { not json ")
    assert render("Args: {{ args }}", r) == "Args:   spaced { not json "


def test_args_reads_chain_input_not_the_global():
    """{{ args }} reads the chain's input, never a global named args
    (kit: substitution.builtins-first)."""
    r = FakeResolver(args="original", globals_={"args": "changed", "argv": 1, "var": 2})
    assert render("Input: {{ args }}", r) == "Input: original"
    assert "global:args" not in r.calls


def test_builtins_beat_globals():
    """args, argv, var, sys and item resolve as built-ins without looking at globals of those
    names (kit: substitution.builtins-first)."""
    r = FakeResolver(args="a", argv={"q": 1}, var={"k": "v"}, item="it",
                     globals_={"args": "g", "argv": "g", "var": "g", "sys": "g", "item": "g"})
    assert render("{{ args }} {{ argv.q }} {{ var.k }} {{ sys.id }} {{ item }}", r) == "a 1 v 0.1 it"
    assert not any(c.startswith("global:") for c in r.calls)


def test_argv_whole_and_fields():
    """argv renders whole as compact JSON or by field path (kit: substitution.argv)."""
    r = FakeResolver(argv={"query": "papers", "row": {"a": 1}})
    text = "got {{ argv }}\nq={{ argv.query }} cell={{ argv.row.a }}"
    assert render(text, r) == 'got {"query":"papers","row":{"a":1}}\nq=papers cell=1'


def test_tables_render_compact_json_with_sorted_keys():
    """Tables render as compact JSON with sorted keys, arrays as arrays
    (kit: substitution.json)."""
    r = FakeResolver(argv={"query": "papers", "n": 2})
    assert render("{{ argv }}", r) == '{"n":2,"query":"papers"}'
    r = FakeResolver(var={"arr": [1, 2, 3], "row": {"a": 1}}, globals_={"row": {"a": 1}})
    assert render("{{ var.arr }} {{ var.row }} {{ row }}", r) == '[1,2,3] {"a":1} {"a":1}'


def test_scalar_argv_and_implicit_prose_argv():
    """A scalar argv renders as its value, and the implicit argv.prose may be empty
    (kit: substitution.argv)."""
    assert render("{{ argv }}", FakeResolver(argv=42)) == "42"
    assert render("{{ argv }}", FakeResolver(argv=True)) == "true"
    assert render("{{ argv.prose }}|", FakeResolver(args="")) == "|"


def test_var_sys_and_global_values():
    """var fields, nested paths and plain globals render as text (kit: substitution.values)."""
    r = FakeResolver(var={"kind": "library", "count": 3, "row": {"a": 1}})
    text = "a {{ var.kind }} paper, {{ var.count }} copies, cell {{ var.row.a }}"
    assert render(text, r) == "a library paper, 3 copies, cell 1"
    r = FakeResolver(var={"first": "Ada", "full": "Ada Lovelace"},
                     globals_={"greeting": "hello", "name": "Ada", "row": {"a": {"b": 2}}})
    assert render("Name: {{ var.full }}", r) == "Name: Ada Lovelace"
    assert render("{{ greeting }}, {{ name }}.", r) == "hello, Ada."
    assert render("cell {{ row.a.b }}", r) == "cell 2"


def test_first_tag_and_whole_array():
    """A string field renders as text and a whole array as JSON (kit: substitution.values)."""
    r = FakeResolver(var={"tags": ["red", "green"], "first_tag": "red"})
    text = "First tag: {{ var.first_tag }}; all: {{ var.tags }}"
    assert render(text, r) == 'First tag: red; all: ["red","green"]'


@pytest.mark.parametrize("value, shown", [
    ("plain", "plain"),
    ("the angle", "the angle"),
    (7, "7"),
    (2.5, "2.5"),
    (True, "true"),
    (False, "false"),
    ([7, "x"], '[7,"x"]'),
    ({"k": 1}, '{"k":1}'),
    ({"key": "alpha", "value": 1}, '{"key":"alpha","value":1}'),
    (None, "null"),
])
def test_item_rendering(value, shown):
    """{{ item }} renders strings and numbers as text, booleans and null as words, tables as
    compact JSON (kit: substitution.item)."""
    assert render("{{ item }}", FakeResolver(item=value)) == shown


def test_item_array_member():
    """An array item renders as compact JSON inside prose (kit: substitution.item)."""
    assert render("Item: {{ item }}.", FakeResolver(item=[7, "x"])) == 'Item: [7,"x"].'


@pytest.mark.parametrize("value, shown", [
    (3, "3"),
    (3.0, "3"),
    (-2.0, "-2"),
    (2.5, "2.5"),
    (0.1, "0.1"),
    (1e20, "1e20"),
    (1.5e-7, "1.5e-7"),
    (-(2**63), str(-(2**63))),
])
def test_numbers_render_naturally(value, shown):
    """Numbers render in their shortest natural form, whole floats without a fraction
    (kit: substitution.numbers)."""
    assert render("{{ n }}", FakeResolver(globals_={"n": value})) == shown


def test_numbers_inside_tables_render_naturally():
    """Numbers inside tables render naturally and keys stay sorted at every level
    (kit: substitution.numbers)."""
    r = FakeResolver(globals_={"t": {"b": [3.0, 2.5], "a": {"z": None, "y": True}}})
    assert render("{{ t }}", r) == '{"a":{"y":true,"z":null},"b":[3,2.5]}'


def test_strings_inside_tables_are_json_escaped():
    """Strings inside tables are JSON-escaped, non-ASCII kept (kit: substitution.json)."""
    r = FakeResolver(globals_={"t": {"s": 'q"\\\n\x01é'}})
    assert render("{{ t }}", r) == '{"s":"q\\"\\\\\\n\\u0001é"}'


# ---------------------------------------------------------------- escapes, one pass

def test_escapes():
    """A backslash escapes an opening or closing pair and a backslash, in one pass
    (kit: substitution.escapes)."""
    r = FakeResolver(args="Acme Corp")
    assert render("\\{{x}}{{ args }}", r) == "{{x}}Acme Corp"
    assert render("\\{{ a \\}}", r) == "{{ a }}"
    assert render("\\\\", r) == "\\"
    assert render("\\\\\\\\", r) == "\\\\"
    # An escaped backslash leaves the following `{{` live.
    assert render("\\\\{{ args }}", r) == "\\Acme Corp"


def test_other_backslashes_are_literal():
    """Backslashes before anything else are literal (kit: substitution.escapes)."""
    r = FakeResolver()
    for text in ("C:\\temp\\new", "\\n", "\\d+", "end\\", "\\{x} \\}"):
        assert render(text, r) == text


def test_lone_braces_are_literal():
    """Single braces and a lone closing pair are literal text (kit: substitution.escapes)."""
    assert render("Set {x} and close }} here.", FakeResolver()) == "Set {x} and close }} here."


def test_inline_code_and_html_comments_are_substituted():
    """Placeholders inside inline code and HTML comments are substituted too
    (kit: substitution.everywhere)."""
    text = "Insert a value with `\\{{ var.name }}`. <!-- written for {{ args }} -->"
    assert render(text, FakeResolver(args="docs")) == \
        "Insert a value with `{{ var.name }}`. <!-- written for docs -->"


def test_inserted_text_is_not_rescanned():
    """Inserted text is never scanned again for placeholders or escapes
    (kit: substitution.one-pass)."""
    r = FakeResolver(args="SECRET", var={"payload": "{{ args }}"})
    assert render("value: {{ var.payload }}", r) == "value: {{ args }}"
    r = FakeResolver(args="{{ var.x }} \\{{")
    assert render("{{ args }}", r) == "{{ var.x }} \\{{"


def test_placeholder_ends_at_first_close():
    """A placeholder ends at the first closing pair (kit: substitution.close)."""
    r = FakeResolver(args="A")
    assert render("{{ args }}}", r) == "A}"


# ---------------------------------------------------------------- errors (§15 worked)

def test_missing_key_error_text():
    """A missing var field gives the MissingKey message with its byte offset
    (kit: substitution.errors)."""
    e = fails("Missing: {{ var.missing }}.")
    assert (e.kind, e.message, e.offset) == ("MissingKey", "missing {{ var.missing }}", 9)
    assert e.render() == "missing {{ var.missing }} [MissingKey at byte 9]"
    assert str(e) == e.render()


def test_unknown_namespace_error_text():
    """An unknown root gives the UnknownNamespace message (kit: substitution.errors)."""
    e = fails("prefix {{ ghost.x }}")
    assert e.render() == "unknown namespace or global 'ghost' in {{ ghost.x }} [UnknownNamespace at byte 7]"
    e = fails("{{ ghost }} here.")
    assert e.message == "unknown namespace or global 'ghost' in {{ ghost }}"


def test_offset_counts_utf8_bytes():
    """Error offsets count UTF-8 bytes (kit: substitution.errors)."""
    e = fails("é→ {{ var.x }}")
    assert e.offset == len("é→ ".encode())


# ---------------------------------------------------------------- every error message

def test_unclosed():
    """An unclosed opening pair gives the Unclosed message at its offset; a single brace opens
    nothing (kit: substitution.errors)."""
    e = fails("An unclosed {{ placeholder")
    assert e.render() == "unclosed '{{' in prose [Unclosed at byte 12]"
    # Only `{{` opens; a lone `{` never does.
    assert fails("a { b {{").offset == 6


@pytest.mark.parametrize("inner, path", [
    ("var.", "var."),
    ("var..x", "var..x"),
    ("", ""),
    ("   ", ""),
    ("var. x", "var. x"),
    ("var .x", "var .x"),
    (".x", ".x"),
    ("a b", "a b"),
])
def test_empty_segment(inner, path):
    """Empty, padded or spaced path segments give the EmptySegment message
    (kit: substitution.errors)."""
    e = fails("{{" + inner + "}}")
    assert e.kind == "EmptySegment"
    assert e.message == f"empty or padded path segment in {{{{ {path} }}}}"
    assert e.offset == 0


def test_empty_segment_runs_before_lookup():
    """The segment check runs before any lookup (kit: substitution.errors)."""
    r = FakeResolver(var={"x": 1})
    e = fails("{{ var. x }}", r)
    assert e.render() == "empty or padded path segment in {{ var. x }} [EmptySegment at byte 0]"
    assert r.calls == []


def test_bad_path():
    """A bare var or sys gives the BadPath message (kit: substitution.errors)."""
    assert fails("{{ var }}").render() == "bad path: {{ var }} [BadPath at byte 0]"
    assert fails("x {{sys}}").render() == "bad path: {{ sys }} [BadPath at byte 2]"


@pytest.mark.parametrize("root", ["args", "item"])
@pytest.mark.parametrize("item", [ABSENT, {"title": "t"}, "s"])
def test_not_a_table(root, item):
    """A field of args or of a non-table item gives the NotATable message
    (kit: substitution.errors)."""
    e = fails(f"{{{{ {root}.title }}}}", FakeResolver(item=item))
    assert e.render() == f"{root} is a string, not a table [NotATable at byte 0]"


def test_missing_key_variants():
    """Paths past a scalar, an index, a null or a missing field give MissingKey
    (kit: substitution.errors)."""
    r = FakeResolver(var={"s": "text", "arr": [1, 2], "n": {"a": None}},
                     globals_={"g": "str", "t": {}},
                     argv={"q": "x"})
    assert fails("{{ sys.bogus }}", r).render() == "missing {{ sys.bogus }} [MissingKey at byte 0]"
    assert fails("{{ var.s.x }}", r).message == "missing {{ var.s.x }}"          # past a scalar
    assert fails("{{ var.arr.1 }}", r).message == "missing {{ var.arr.1 }}"      # no indices
    assert fails("{{ var.n.a.b }}", r).kind == "MissingKey"                        # past a null
    assert fails("{{ argv.nope }}", r).message == "missing {{ argv.nope }}"
    assert fails("{{ g.x }}", r).message == "missing {{ g.x }}"
    assert fails("{{ t.x }}", r).kind == "MissingKey"


def test_null_value():
    """A path ending at null gives the NullValue message (kit: substitution.errors)."""
    r = FakeResolver(argv={"note": None}, var={"n": {"a": None}}, globals_={"z": None})
    e = fails("{{ argv.note }}", r)
    assert e.render() == "missing {{ argv.note }} [NullValue at byte 0]"
    assert fails("{{ var.n.a }}", r).kind == "NullValue"


def test_nil_item():
    """{{ item }} outside a fanout arm gives the NilItem message (kit: substitution.errors)."""
    e = fails("topic: {{ item }}")
    assert e.render() == "{{ item }} is nil (not inside a fanout arm) [NilItem at byte 7]"


def test_nil_argv():
    """argv that is nil gives the NilArgv message, whole or by field (kit: substitution.errors)."""
    r = FakeResolver(argv=None)
    e = fails("Value: {{ argv }}", r)
    assert e.render() == "{{ argv }} is nil (the args string is not JSON) [NilArgv at byte 7]"
    assert fails("{{ argv.query }}", r).message == "{{ argv.query }} is nil (the args string is not JSON)"


def test_serialize_non_data_global():
    """A global that is not JSON data gives the Serialize message (kit: substitution.errors)."""
    r = FakeResolver(globals_={"fn": NotData("function")})
    e = fails("{{ fn }}", r)
    assert e.render() == "global 'fn' in {{ fn }} is not JSON data [Serialize at byte 0]"
    assert fails("{{ fn.x }}", r).message == "global 'fn' in {{ fn.x }} is not JSON data"


def test_serialize_prose():
    """{{ prose }} gives the Serialize message without reading the global
    (kit: substitution.errors)."""
    r = FakeResolver(globals_={"prose": "should never be read"})
    assert fails("{{ prose }}", r).render() == \
        "global 'prose' in {{ prose }} is not JSON data [Serialize at byte 0]"
    assert "global:prose" not in r.calls


def test_other_resolver_exceptions_propagate():
    """Exceptions other than the resolver's NotData propagate unchanged
    (kit: substitution.errors)."""
    class Boom(Exception):
        pass

    class R(FakeResolver):
        def global_(self, name):
            raise Boom()

    with pytest.raises(Boom):
        render("{{ x }}", R())


def test_first_failure_in_text_order_wins():
    """The first failure in text order is reported (kit: substitution.errors)."""
    e = fails("{{ var.a }} {{ ghost }} {{")
    assert (e.kind, e.offset) == ("MissingKey", 0)
    # A failure after an unclosed `{{` is never reached.
    assert fails("ok {{ var.a").kind == "Unclosed"


# ---------------------------------------------------------------- path display

def test_path_display_escapes_controls():
    """Control characters in a displayed path are escaped (kit: substitution.path-display)."""
    e = fails("{{ var.a\tb }}")
    assert e.message == "empty or padded path segment in {{ var.a\\tb }}"
    e = fails("{{ var.\nx }}")
    assert e.message == "empty or padded path segment in {{ var.\\nx }}"
    e = fails("{{ var.x\ry }}")
    assert e.message == "empty or padded path segment in {{ var.x\\ry }}"
    e = fails("{{ gh\x1bost.x\x7f\x9f }}")
    assert e.message == ("unknown namespace or global 'gh\\u{001b}ost' in "
                         "{{ gh\\u{001b}ost.x\\u{007f}\\u{009f} }}")


def test_path_display_cuts_long_paths_before_escaping():
    """Displayed paths are cut at 80 characters before escaping
    (kit: substitution.path-display)."""
    long = "var." + "k" * 100
    assert fails("{{ " + long + " }}").message == f"missing {{{{ {long[:80]}... }}}}"
    exactly = "var." + "k" * 76
    assert fails("{{ " + exactly + " }}").message == f"missing {{{{ {exactly} }}}}"
    # The cut is taken on characters before escaping, so the preview may exceed 80.
    tabbed = "var.a\tb" + "c" * 90
    assert fails("{{ " + tabbed + " }}").message == \
        "empty or padded path segment in {{ var.a\\tb" + "c" * 73 + "... }}"
