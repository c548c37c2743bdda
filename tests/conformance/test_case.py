"""Loading and checking case files (conformance.case)."""

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance.case import DEFAULT_CASES_DIR, CaseErrors, load_case, load_cases
from forge.conformance.catalogue import default_catalogue_dir, load_catalogue
from forge.errors import InputError

GOOD = '''\
clauses = ["tasks.a"]
features = ["tasks"]
flags = ["any-schedule"]
prompt = "# P"

[harness]
concurrency = 2
store = { "in.md" = "x" }
latency = { model = 0.5 }
seeds = 3

[expect]
outcome = "ok"
result = { contains = "x" }
'''


def write(tmp_path, text, name="g/c.toml"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def refusal(tmp_path, text, catalogue=None):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_case(path, tmp_path, catalogue)
    return str(info.value).replace(str(path), "FILE")


def test_a_good_case_loads_with_its_id_and_schedules(tmp_path):
    """The id is the path under the root; any-schedule adds harness.seeds random schedules."""
    case = load_case(write(tmp_path, GOOD), tmp_path, {"tasks.a"})
    assert case.id == "g/c"
    assert case.clauses == ("tasks.a",)
    assert case.seeds == [None, 1, 2, 3]
    assert case.harness.concurrency == 2
    assert case.harness.to_json() == {
        "args": "", "concurrency": 2, "store": {"in.md": "x"}, "model_script": None,
        "operator_script": None, "latency": {"model": 0.5}, "cancel_at": None, "refuse": {},
    }


def test_a_case_without_flags_runs_only_the_canonical_schedule(tmp_path):
    """No flag means the canonical schedule alone."""
    case = load_case(write(tmp_path, 'clauses = ["x"]\nprompt = "# P"\n'), tmp_path)
    assert case.seeds == [None]


def test_toml_syntax_error_names_the_line(tmp_path):
    """A TOML error gives the file, the line and tomllib's reason."""
    assert refusal(tmp_path, 'clauses = ["x"]\nprompt "# P"\n') == (
        "FILE:2: TOML: Expected '=' after a key in a key/value pair (column 8)")


@pytest.mark.parametrize("text, message", [
    ('prompt = "# P"\n', "FILE: schema: $: missing required field `clauses`"),
    ('clauses = []\nprompt = "# P"\n', "FILE:1: schema: $.clauses: must not be empty"),
    ('clauses = ["x", "x"]\nprompt = "# P"\n', 'FILE:1: schema: $.clauses: lists "x" twice'),
    ('clauses = ["Bad Id"]\nprompt = "# P"\n',
     'FILE:1: schema: $.clauses[0]: must match /^[a-z0-9][a-z0-9_.-]*$/, got "Bad Id"'),
    ('clauses = ["x"]\nprompt = "# P"\nflags = ["fast"]\n',
     'FILE:3: schema: $.flags[0]: must be one of `any-schedule`, `canonical`, got "fast"'),
    ('clauses = ["x"]\nprompt = "# P"\n[harness]\nconcurency = 2\n',
     "FILE:4: schema: $.harness: unknown field `concurency`"),
    ('clauses = ["x"]\nprompt = "# P"\n[harness]\nconcurrency = 0\n',
     "FILE:4: schema: $.harness.concurrency: must be at least 1, got 0"),
    ('clauses = ["x"]\nprompt = "# P"\n[harness]\nconcurrency = "8"\n',
     'FILE:4: schema: $.harness.concurrency: expected an integer, got "8"'),
    ('clauses = ["x"]\nprompt = "# P"\n[harness]\nlatency = { model = -1 }\n',
     "FILE:4: schema: $.harness.latency.model: must be at least 0, got -1"),
    ('clauses = ["x"]\nprompt = "# P"\n[harness]\nstore = { "a.md" = 3 }\n',
     'FILE:4: schema: $.harness.store."a.md": expected a string, got 3'),
    ('clauses = ["x"]\nprompt = "# P"\n[expect]\noutcome = "done"\n',
     ("FILE:4: schema: $.expect.outcome: expected one of `ok`, `failed`, `cancelled` "
      'or a matcher table, got "done"')),
    ('clauses = ["x"]\nprompt = "# P"\n[expect]\nreslt = "x"\n',
     "FILE:4: schema: $.expect: unknown field `reslt`"),
])
def test_schema_violations_name_the_json_path_and_the_rule(tmp_path, text, message):
    """Each schema rule is reported in words, at the JSON path and (where found) the line."""
    assert refusal(tmp_path, text) == message


def test_prompt_or_operations_exactly_one(tmp_path):
    """A case holds a prompt or lifecycle operations, not both and not neither."""
    message = "FILE: case: needs exactly one of `prompt` or `operations`"
    assert refusal(tmp_path, 'clauses = ["x"]\n') == message
    assert refusal(tmp_path, 'clauses = ["x"]\nprompt = "# P"\noperations = [{op = "spawn"}]\n') \
        == message


def test_flags_exclude_each_other(tmp_path):
    """any-schedule and canonical cannot both be set."""
    assert refusal(tmp_path, 'clauses = ["x"]\nprompt = "# P"\n'
                             'flags = ["any-schedule", "canonical"]\n') == (
        "FILE:3: case: flags `any-schedule` and `canonical` exclude each other")


def test_malformed_matcher_names_its_path(tmp_path):
    """A matcher with a bad argument is refused at load time, not at run time."""
    assert refusal(tmp_path, 'clauses = ["x"]\nprompt = "# P"\n[expect.error]\n'
                             'message = { regex = "(" }\n') == (
        "FILE:4: matcher: $.expect.error.message.regex: invalid regular expression: "
        "missing ), unterminated subpattern at position 0")


def test_unknown_clause_id_is_refused_against_a_catalogue(tmp_path):
    """With a catalogue, every cited clause id must be in it."""
    text = 'clauses = [\n  "tasks.a",\n  "tasks.nope",\n]\nprompt = "# P"\n'
    assert refusal(tmp_path, text, {"tasks.a"}) == (
        "FILE:3: clause: unknown clause id `tasks.nope` (not in the catalogue)")
    assert load_case(write(tmp_path, text), tmp_path).clauses == ("tasks.a", "tasks.nope")


def test_load_cases_sorts_by_id_and_refuses_an_empty_directory(tmp_path):
    """Cases come back in id order; a directory without cases is bad input."""
    write(tmp_path, 'clauses = ["x"]\nprompt = "# P"\n', "b/z.toml")
    write(tmp_path, 'clauses = ["x"]\nprompt = "# P"\n', "a/y.toml")
    assert [c.id for c in load_cases(tmp_path)] == ["a/y", "b/z"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no cases"):
        load_cases(tmp_path / "empty")


def test_every_malformed_case_file_is_reported_one_line_each(tmp_path):
    """Only the first bad file of a directory was reported: every file is read,
    and `forge conformance` names each bad one in a line of its own, then exits 2
    (kit: cases.load)."""
    head = 'clauses = ["tasks.glance.example-two-tasks"]\nprompt = "# P"\n'
    write(tmp_path, head, "a/good.toml")
    one = write(tmp_path, head + 'flags = ["anyschedule"]\n', "a/one.toml")
    two = write(tmp_path, 'clauses = [\n', "b/two.toml")
    three = write(tmp_path, 'prompt = "# P"\n', "c/three.toml")
    with pytest.raises(CaseErrors) as info:
        load_cases(tmp_path)
    assert [e.file for e in info.value.errors] == [str(one), str(two), str(three)]
    assert str(info.value).endswith("(and 2 more malformed case files)")
    result = CliRunner().invoke(main, ["conformance", "--cases", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"forge: {e.render()}" for e in info.value.errors]


def test_the_shipped_cases_cite_real_clauses():
    """Every case shipped with the kit loads against the catalogue."""
    catalogue = {c["id"] for c in load_catalogue(default_catalogue_dir())}
    cases = load_cases(DEFAULT_CASES_DIR, catalogue)
    assert {"examples/two-tasks", "examples/checked-join", "examples/leak-check"} <= {
        c.id for c in cases}


def test_catalogue_refuses_a_repeated_id(tmp_path):
    """Two clauses with one id are a catalogue error."""
    (tmp_path / "a.toml").write_text('[[clause]]\nid = "x"\nfeature = "tasks"\n'
                                     '[[clause]]\nid = "x"\nfeature = "tasks"\n')
    with pytest.raises(InputError) as info:
        load_catalogue(tmp_path)
    assert str(info.value).endswith("catalogue: clause id `x` is given twice (first in a.toml)")
