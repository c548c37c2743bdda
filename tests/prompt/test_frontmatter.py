"""The frontmatter: delimiters, the ten keys, names, declarations, and their errors."""

from __future__ import annotations

import pytest

from forge.errors import PromptError
from forge.prompt import ArgDecl, Capability, FileDecl, ModelRole, parse_prompt

BODY = "# T\n"


def parse(header: str, body: str = BODY):
    return parse_prompt(f"---\n{header}---\n{body}", "t.md")


def refusal(text: str) -> PromptError:
    with pytest.raises(PromptError) as info:
        parse_prompt(text, "t.md")
    assert info.value.file == "t.md"
    return info.value


def header_refusal(header: str, body: str = BODY) -> PromptError:
    error = refusal(f"---\n{header}---\n{body}")
    assert error.kind == "Frontmatter"
    return error


MIN = "name: x\ndescription: d\n"


# -- delimiters -------------------------------------------------------------------------------

def test_missing_opener():
    """A file whose first line is not `---` names no prompt and fails at line 1
    (kit: frontmatter.delimiters)."""
    error = refusal("name: x\n---\n# T\n")
    assert (error.kind, error.message, error.line) == (
        "Frontmatter", "file must begin with a --- frontmatter delimiter", 1)


def test_empty_file_has_no_opener():
    """An empty file fails the same way (kit: frontmatter.delimiters)."""
    assert refusal("").message == "file must begin with a --- frontmatter delimiter"


def test_unclosed_frontmatter():
    """A header with no closing `---` line is refused (kit: frontmatter.delimiters)."""
    error = refusal("---\nname: x\ndescription: d\n# T\n")
    assert (error.kind, error.message) == ("Frontmatter", "frontmatter was not closed with ---")


def test_delimiters_compared_trimmed_and_bom_dropped():
    """A BOM is dropped and delimiter lines may carry surrounding whitespace
    (kit: frontmatter.delimiters)."""
    prompt = parse_prompt("\ufeff--- \nname: x\ndescription: d\n  ---\n# T\n")
    assert (prompt.name, prompt.title) == ("x", "T")


# -- the ten keys ----------------------------------------------------------------------------

def test_name_and_description_verbatim_with_defaults():
    """Only name and description are needed; every other key has its default
    (kit: frontmatter.keys)."""
    prompt = parse("name: shared_library\ndescription: Exercise an H1 shared library, verbatim\n")
    assert prompt.name == "shared_library"
    assert prompt.description == "Exercise an H1 shared library, verbatim"
    assert prompt.promptforge is None and prompt.max_tool_iterations is None
    assert prompt.args_decl is None
    assert (prompt.models, prompt.roles, prompt.tools, prompt.capabilities) == ((), (), (), ())
    assert prompt.input is None and prompt.output is None


def test_strings_read_by_yaml_1_2():
    """`no` and a date are strings, as YAML 1.2 reads them (kit: frontmatter.yaml-1.2)."""
    prompt = parse("name: no\ndescription: 2024-01-01\n")
    assert (prompt.name, prompt.description) == ("no", "2024-01-01")


@pytest.mark.parametrize("header, field", [("description: d\n", "name"),
                                           ("name: x\n", "description")])
def test_missing_required_field(header, field):
    """Leaving out name or description names the missing field (kit: frontmatter.required)."""
    error = header_refusal(header)
    assert error.message == f"invalid frontmatter: missing field `{field}`"


def test_empty_header_misses_name():
    """An empty header reads as an empty map, so name is missing (kit: frontmatter.required)."""
    assert header_refusal("").message == "invalid frontmatter: missing field `name`"


def test_unknown_top_level_key():
    """An unknown key is refused and the accepted ten are listed, at the key's line
    (kit: frontmatter.keys)."""
    error = header_refusal(MIN + "promptforge: 0\nmodel: {}\n")
    assert error.message == (
        "invalid frontmatter: unknown field `model`, expected one of `name`, `description`, "
        "`promptforge`, `max_tool_iterations`, `input`, `output`, `capabilities`, `tools`, "
        "`args`, `models`")
    assert error.line == 5


def test_yaml_slip_reports_file_line():
    """A YAML error in the fourth file line is reported at file line 4 or 5, where the YAML
    reader notices it, without echoing the source line (kit: frontmatter.lines)."""
    error = header_refusal("name: x\ndescription: d\nbad: [1\n")
    assert error.message.startswith("invalid frontmatter: ")
    assert error.line in (4, 5)
    assert "bad: [1" not in error.message


def test_yaml_slip_line_counts_from_opener():
    """Lines count from the opening `---` as line 1 (kit: frontmatter.lines)."""
    error = header_refusal("name: x\ndescription: d\nfoo: bar: baz\n")
    assert error.line == 4


def test_wrong_type():
    """A value of the wrong type says what it found (kit: frontmatter.types)."""
    error = header_refusal("name: 5\ndescription: d\n")
    assert error.message == "invalid frontmatter: invalid type: integer `5`, expected a string"
    assert error.line == 2


def test_frontmatter_checked_before_body():
    """A frontmatter failure wins over a body failure (kit: frontmatter.order)."""
    error = header_refusal("name: x\n", body="no title here\n")
    assert error.message == "invalid frontmatter: missing field `description`"


def test_promptforge_version_kept():
    """`promptforge` is any non-negative integer at parse time; the run checks it
    (kit: frontmatter.promptforge)."""
    assert parse(MIN + "promptforge: 3\n").promptforge == 3
    error = header_refusal(MIN + "promptforge: -1\n")
    assert error.message == ("invalid frontmatter: invalid value: integer `-1`, "
                             "expected a non-negative integer")


@pytest.mark.parametrize("raw, message", [
    ("0", "max_tool_iterations must be a positive integer (>= 1), got 0"),
    ("-3", "max_tool_iterations must be a positive integer (>= 1), got -3"),
    ("1001", "max_tool_iterations must be <= 1000, got 1001"),
    ("99999999999999999999999", "max_tool_iterations must be <= 1000, got 99999999999999999999999"),
])
def test_max_tool_iterations_range(raw, message):
    """Out-of-range round caps echo the value as written, never wrapped
    (kit: frontmatter.max-tool-iterations)."""
    error = header_refusal(MIN + f"max_tool_iterations: {raw}\n")
    assert error.message == "invalid frontmatter: " + message


def test_max_tool_iterations_kept():
    """An in-range round cap is kept (kit: frontmatter.max-tool-iterations)."""
    assert parse(MIN + "max_tool_iterations: 5\n").max_tool_iterations == 5


def test_input_and_output():
    """`input:`/`output:` are kept as written for the host (kit: frontmatter.input-output)."""
    prompt = parse(MIN + "input:\n  path: paper.md\n  description: The input paper\n"
                         "output:\n  path: report.md\n  description: The output report\n")
    assert prompt.input == FileDecl("paper.md", "The input paper")
    assert prompt.output == FileDecl("report.md", "The output report")


def test_input_unknown_and_missing_keys():
    """A file declaration accepts exactly `path` and `description`
    (kit: frontmatter.input-output)."""
    error = header_refusal(MIN + "input:\n  path: a\n  description: b\n  mode: r\n")
    assert error.message == ("invalid frontmatter: unknown field `mode`, "
                             "expected `path` or `description`")
    error = header_refusal(MIN + "output:\n  path: a\n")
    assert error.message == "invalid frontmatter: missing field `description`"


# -- names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, kind", [("tools", "tool alias"), ("models", "model role label"),
                                       ("args", "arg name")])
@pytest.mark.parametrize("name", ["1abc", "web.fetch", "é", "a" * 65, "has space"])
def test_name_grammar(key, kind, name):
    """Names outside the grammar are refused with the grammar, at the name's line
    (kit: frontmatter.names)."""
    value = {"tools": "promptforge/web/search", "models": "{}", "args": "{type: string}"}[key]
    error = header_refusal(MIN + f"{key}:\n  '{name}': {value}\n")
    assert error.message == (f"invalid frontmatter: invalid {kind} `{name}`: "
                             "expected [A-Za-z][A-Za-z0-9_-]{0,63}")
    assert error.line == 5


@pytest.mark.parametrize("key, kind, value", [("tools", "tool alias", "promptforge/web/fetch"),
                                              ("models", "model role label", "{}"),
                                              ("args", "arg name", "{type: string}")])
def test_duplicate_names(key, kind, value):
    """A name used twice in one map is refused at its second line (kit: frontmatter.names)."""
    error = header_refusal(MIN + f"{key}:\n  a1: {value}\n  a1: {value}\n")
    assert error.message == (f"invalid frontmatter: duplicate {kind} `a1`: "
                             "contract map keys must be unique")
    assert error.line == 6


def test_grammar_checked_before_uniqueness():
    """A bad name is reported as a grammar error even when repeated (kit: frontmatter.names)."""
    error = header_refusal(MIN + "tools:\n  _x: a\n  _x: a\n")
    assert error.message.startswith("invalid frontmatter: invalid tool alias `_x`")


@pytest.mark.parametrize("key, kind", [("tools", "tool alias"), ("models", "model role label"),
                                       ("args", "arg name")])
def test_contract_map_must_be_a_map(key, kind):
    """A contract key holding a list says what it found (kit: frontmatter.contract)."""
    error = header_refusal(MIN + f"{key}: [a]\n")
    assert error.message == (f"invalid frontmatter: invalid type: sequence, "
                             f"expected a map of {kind} keys to declarations")


def test_names_in_grammar_parse():
    """Letters, digits, `_` and `-`, up to 64 characters, all parse (kit: frontmatter.names)."""
    long = "a" * 64
    prompt = parse(MIN + f"tools:\n  web_fetch: x/y\n  web-fetch2: x/z\n  A: x/w\n  {long}: x/v\n")
    assert [alias for alias, _ in prompt.tools] == ["web_fetch", "web-fetch2", "A", long]


# -- declarations ------------------------------------------------------------------------------

def test_full_contract_parses():
    """Capabilities, tools, roles and args are kept in file order (kit: frontmatter.contract)."""
    prompt = parse(MIN + """capabilities:
  - promptforge/web
  - ref: io.github.corp/mcp
    optional: true
    config: {servers: [a, b]}
tools:
  search: promptforge/web/search
models:
  writer: {}
  analyst:
    keywords: [frontier, thinking]
    min_context: 200000
    description: Deep analysis
args:
  query:
    type: string
    description: What to search for
  limit:
    type: integer
    optional: true
    default: 3
""")
    assert prompt.capabilities == (Capability("promptforge/web"),
                                   Capability("io.github.corp/mcp", optional=True))
    assert prompt.tools == (("search", "promptforge/web/search"),)
    assert prompt.models == ("writer", "analyst")
    assert prompt.roles[1] == ModelRole("analyst", ("frontier", "thinking"), 200000,
                                        "Deep analysis")
    assert prompt.args_decl == (ArgDecl("query", "string", description="What to search for"),
                                ArgDecl("limit", "integer", optional=True, default=3))


def test_explicit_empty_args_is_not_absent():
    """`args: {}` is an explicit declaration, unlike no `args:` at all (kit: frontmatter.args)."""
    assert parse(MIN + "args: {}\n").args_decl == ()


def test_capability_entry_errors():
    """A capability `ref:` map has exactly `ref`, `optional` and `config`
    (kit: frontmatter.capabilities)."""
    error = header_refusal(MIN + "capabilities:\n  - reff: a/b\n")
    assert error.message == ("invalid frontmatter: unknown field `reff`, "
                             "expected one of `ref`, `optional`, `config`")
    error = header_refusal(MIN + "capabilities:\n  - optional: true\n")
    assert error.message == "invalid frontmatter: missing field `ref`"
    error = header_refusal(MIN + "capabilities:\n  - {ref: a/b, ref: c/d}\n")
    assert error.message == "invalid frontmatter: duplicate field `ref`"


def test_model_role_errors():
    """A role takes only its three keys and the seven keywords (kit: frontmatter.models)."""
    error = header_refusal(MIN + "models:\n  writer:\n    temperature: 1\n")
    assert error.message == ("invalid frontmatter: unknown field `temperature`, "
                             "expected one of `keywords`, `min_context`, `description`")
    error = header_refusal(MIN + "models:\n  writer: {keywords: [fancy]}\n")
    assert error.message.startswith("invalid frontmatter: unknown variant `fancy`")
    error = header_refusal(MIN + "models:\n  writer: {min_context: 0}\n")
    assert error.message.startswith("invalid frontmatter: invalid value: integer `0`")


def test_arg_missing_type():
    """A declaration without `type:` is refused (kit: frontmatter.args)."""
    error = header_refusal(MIN + "args:\n  query:\n    optional: true\n")
    assert error.message == "invalid frontmatter: missing field `type`"


def test_arg_unknown_type():
    """`type:` takes one of four words (kit: frontmatter.args)."""
    error = header_refusal(MIN + "args:\n  query:\n    type: str\n")
    assert error.message == ("invalid frontmatter: unknown variant `str`, expected one of "
                             "`string`, `boolean`, `integer`, `number`")
    assert error.line == 6


def test_arg_unknown_field():
    """A typo in a declaration names the four accepted keys (kit: frontmatter.args)."""
    error = header_refusal(MIN + "args:\n  query:\n    type: string\n    desc: x\n")
    assert error.message == ("invalid frontmatter: unknown field `desc`, expected one of "
                             "`type`, `optional`, `default`, `description`")


@pytest.mark.parametrize("declared, default", [("boolean", "'true'"), ("string", "42"),
                                               ("integer", "1.5"),
                                               ("integer", "9223372036854775808"),
                                               ("number", "[1]")])
def test_arg_default_mismatch(declared, default):
    """A default must match the declared type; the error names the type (kit: frontmatter.args)."""
    error = header_refusal(MIN + f"args:\n  a:\n    type: {declared}\n    default: {default}\n")
    assert error.message == ("invalid frontmatter: the default does not match the declared "
                             f"type `{declared}`")
    assert error.line == 7


@pytest.mark.parametrize("declared, default, value", [
    ("string", "'x'", "x"), ("boolean", "true", True), ("integer", "3", 3),
    ("number", "1.5", 1.5), ("number", "2", 2), ("integer", "null", None)])
def test_arg_default_matches(declared, default, value):
    """Matching defaults are kept; `default: null` means no default (kit: frontmatter.args)."""
    decl = parse(MIN + f"args:\n  a:\n    type: {declared}\n    default: {default}\n").args_decl
    assert decl[0].default == value


def test_arg_entry_must_be_a_map():
    """An arg whose value is a scalar is a Frontmatter error (kit: frontmatter.args)."""
    error = header_refusal(MIN + "args:\n  a: string\n")
    assert error.message.startswith("invalid frontmatter: invalid type: string \"string\"")


@pytest.mark.parametrize("header", [
    "name: !!int nope\ndescription: d\n",
    "name: x\ndescription: \x01\n",
    "name: x\ndescription: d\n...\nmore: 1\n",
    "[" * 5000 + "\n",
    "name: x\ndescription: d\nargs: {a: {type: [1]}}\n",
    "name: x\ndescription: d\ncapabilities: [[1]]\n",
    "? [a]\n: 1\n",
])
def test_odd_yaml_is_refused_cleanly(header):
    """Tags, control characters and deep nesting end in a Frontmatter error
    (kit: frontmatter.yaml-robustness)."""
    assert header_refusal(header).message.startswith("invalid frontmatter: ")
