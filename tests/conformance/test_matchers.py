"""The matcher language of a case's [expect] (conformance.matchers)."""

import pytest

from forge.conformance.matchers import check, compare, match, render_path

OBS = {
    "outcome": "ok",
    "result": "alpha text + beta text",
    "error": None,
    "logs": ["one", "two", "three"],
    "tasks": {"0.0": {"state": "done", "ok": True, "depth": 1},
              "0.1": {"state": "running", "depth": 1}},
    "virtual_time": 2.0,
}


def test_plain_values_match_exactly():
    """Equal scalars match; a different one is reported with its path."""
    assert match({"outcome": "ok"}, OBS) == []
    assert match({"outcome": "failed"}, OBS) == ['outcome: expected "failed", got "ok"']


def test_numbers_compare_by_value_but_booleans_stay_booleans():
    """1 matches 1.0, while true never matches 1."""
    assert match({"virtual_time": 2}, OBS) == []
    assert match({"tasks": {"0.0": {"depth": True}}}, OBS) == [
        'tasks."0.0".depth: expected true, got 1']


def test_tables_match_as_subsets_and_paths_quote_odd_keys():
    """Keys left out are ignored; a dotted task id is quoted in the path."""
    assert match({"tasks": {"0.0": {"state": "done"}}}, OBS) == []
    assert match({"tasks": {"0.1": {"state": "done"}}}, OBS) == [
        'tasks."0.1".state: expected "done", got "running"']


def test_a_missing_key_is_reported():
    """An expected key the observation lacks says so."""
    assert match({"tasks": {"0.1": {"ok": False}}}, OBS) == [
        'tasks."0.1".ok: expected false, got nothing (no such key)']


def test_lists_match_element_wise_and_by_length():
    """A list must have the same length, and each element must match."""
    assert match({"logs": ["one", "two", "three"]}, OBS) == []
    assert match({"logs": ["one", "2", "three", "four"]}, OBS) == [
        "logs: expected 4 items, got 3",
        'logs[1]: expected "2", got "two"',
    ]


def test_exact_has_no_subset_rule():
    """{exact=...} compares a table whole."""
    assert match({"tasks": {"0.1": {"exact": {"state": "running", "depth": 1}}}}, OBS) == []
    assert match({"tasks": {"0.1": {"exact": {"state": "running"}}}}, OBS) == [
        'tasks."0.1": expected exactly {"state": "running"}, got {"state": "running", "depth": 1}']


def test_contains_and_regex():
    """contains looks for a substring, regex searches."""
    assert match({"result": {"contains": "beta"}, "outcome": {"regex": "^o"}}, OBS) == []
    assert match({"result": {"contains": "gamma"}}, OBS) == [
        'result: expected a string containing "gamma", got "alpha text + beta text"']
    assert match({"result": {"regex": "^beta"}}, OBS) == [
        'result: expected a string matching /^beta/, got "alpha text + beta text"']


def test_absent_accepts_missing_or_null():
    """absent=true holds for a missing key or null; absent=false wants a value."""
    assert match({"error": {"absent": True}, "tasks": {"0.1": {"ok": {"absent": True}}}}, OBS) == []
    assert match({"outcome": {"absent": True}}, OBS) == ['outcome: expected no value, got "ok"']
    assert match({"error": {"absent": False}}, OBS) == ["error: expected a value, got null"]


def test_any_of():
    """any_of holds when one alternative does."""
    assert match({"tasks": {"0.1": {"state": {"any_of": ["done", "running"]}}}}, OBS) == []
    assert match({"outcome": {"any_of": ["failed", "cancelled"]}}, OBS) == [
        'outcome: expected any of ["failed", "cancelled"], got "ok"']


def test_subsequence_allows_gaps_but_keeps_order():
    """subsequence finds the items in order, with anything between them."""
    assert match({"logs": {"subsequence": ["one", "three"]}}, OBS) == []
    assert match({"logs": {"subsequence": ["three", "one"]}}, OBS) == [
        'logs: subsequence item 1 "one" not found after logs[2]']
    assert match({"logs": {"subsequence": ["four"]}}, OBS) == [
        'logs: subsequence item 0 "four" not found']


def test_subsequence_items_match_as_subsets():
    """Each subsequence item is itself an expectation (a table matches as a subset)."""
    events = {"events": [{"kind": "a", "seq": 0}, {"kind": "b", "seq": 1}, {"kind": "c", "seq": 2}]}
    assert match({"events": {"subsequence": [{"kind": "a"}, {"kind": {"regex": "c"}}]}},
                 events) == []


def test_length():
    """length counts list items (or string characters, or table keys)."""
    assert match({"logs": {"length": 3}, "tasks": {"length": 2}}, OBS) == []
    assert match({"logs": {"length": 1}}, OBS) == [
        'logs: expected length 1, got length 3: ["one", "two", "three"]']


def test_matcher_keys_combine():
    """A table of several matcher keys needs all of them."""
    assert match({"logs": {"length": 3, "subsequence": ["two"]}}, OBS) == []
    assert len(match({"logs": {"length": 2, "subsequence": ["nine"]}}, OBS)) == 2


def test_views_show_only_the_mismatches():
    """Where an expectation holds, both views show the observed value."""
    c = compare({"result": {"contains": "alpha"}, "tasks": {"0.1": {"state": "done"}}}, OBS)
    assert c.expected_view == {"result": OBS["result"], "tasks": {"0.1": {"state": "done"}}}
    assert c.observed_view == {"result": OBS["result"], "tasks": {"0.1": {"state": "running"}}}


def test_render_path():
    """Bare keys join with dots, odd keys are quoted, indices are bracketed."""
    assert render_path(("tasks", "0.0", "state")) == 'tasks."0.0".state'
    assert render_path(("logs", 2)) == "logs[2]"
    assert render_path(()) == "<root>"


@pytest.mark.parametrize("expect, problem", [
    ({"result": {"regex": "("}},
     (("result", "regex"),
      "invalid regular expression: missing ), unterminated subpattern at position 0")),
    ({"result": {"contains": 3}}, (("result", "contains"), "expected a string, got 3")),
    ({"error": {"absent": "yes"}}, (("error", "absent"), 'expected true or false, got "yes"')),
    ({"logs": {"length": -1}}, (("logs", "length"), "expected a non-negative integer, got -1")),
    ({"outcome": {"any_of": []}}, (("outcome", "any_of"), "expected a non-empty list, got []")),
    ({"logs": {"subsequence": [{"regex": "["}]}},
     (("logs", "subsequence", 0, "regex"),
      "invalid regular expression: unterminated character set at position 0")),
])
def test_check_finds_malformed_matchers(expect, problem):
    """check() names the matcher key at fault and what is wrong with it."""
    assert check(expect) == [problem]


EVENTS = [{"kind": "task_started", "task": "0.0"}, {"kind": "task_succeeded", "task": "0.0"},
          {"kind": "task_started", "task": "0.1"}, {"kind": "task_cancelled", "task": "0.1"}]


def test_none_refuses_any_matching_element_and_names_it():
    """(kit: matchers)"""
    assert compare({"none": [{"kind": "task_failed"}]}, EVENTS).ok
    problems = compare({"none": [{"kind": "task_failed"}, {"task": "0.1", "kind": "task_cancelled"}]},
                       EVENTS).problems
    assert problems == ('<root>: none item 1 {"task": "0.1", "kind": "task_cancelled"} matches [3]: '
                        '{"kind": "task_cancelled", "task": "0.1"}',)
    assert not compare({"none": []}, "not a list").ok


def test_once_counts_exactly_one_match_per_item():
    """(kit: matchers)"""
    assert compare({"once": [{"kind": "task_succeeded"}, {"task": "0.1", "kind": "task_started"}]},
                   EVENTS).ok
    assert compare({"once": [{"kind": "task_started"}]}, EVENTS).problems == (
        '<root>: once item 0 {"kind": "task_started"} matches 2 elements ([0], [2])',)
    assert compare({"once": [{"kind": "task_failed"}]}, EVENTS).problems == (
        '<root>: once item 0 {"kind": "task_failed"} matches 0 elements',)


def test_keys_of_one_matcher_table_combine():
    """(kit: matchers)"""
    both = {"subsequence": [{"kind": "task_started"}, {"kind": "task_cancelled"}],
            "none": [{"kind": "task_abandoned"}], "once": [{"task": "0.0", "kind": "task_succeeded"}]}
    assert compare(both, EVENTS).ok
    assert not compare({**both, "none": [{"kind": "task_succeeded"}]}, EVENTS).ok
    assert check({"once": "x", "none": [{"regex": "("}]}) == [
        (("once",), 'expected a list, got "x"'),
        (("none", 0, "regex"), "invalid regular expression: missing ), unterminated subpattern at position 0")]


def test_all_of_needs_every_expectation():
    """(kit: matchers)"""
    ordered = {"all_of": [{"subsequence": [{"task": "0.0"}, {"kind": "task_succeeded"}]},
                          {"subsequence": [{"task": "0.1"}, {"kind": "task_cancelled"}]}]}
    assert compare(ordered, EVENTS).ok
    swapped = {"all_of": [{"subsequence": [{"task": "0.0"}]}, {"subsequence": [{"task": "0.1"}, {"task": "0.0"}]}]}
    assert compare(swapped, EVENTS).problems == (
        '<root>: all_of item 1: <root>: subsequence item 1 {"task": "0.0"} not found after [2]',)


@pytest.mark.parametrize("expect, observed, problem", [
    ({"result": {"regx": "h"}}, {"result": "hello"},
     'result: expected a table, got "hello"; `regx` is not a matcher name '
     "(did you mean `regex`?)"),
    ({"tasks": {"0.0": {"state": {"contain": "do"}}}}, {"tasks": {"0.0": {"state": "done"}}},
     'tasks."0.0".state: expected a table, got "done"; `contain` is not a matcher name '
     "(did you mean `contains`?)"),
    ({"logs": {"lenght": 3}}, {"logs": ["a"]},
     'logs: expected a table, got ["a"]; `lenght` is not a matcher name '
     "(did you mean `length`?)"),
])
def test_a_misspelt_matcher_is_named_in_its_mismatch(expect, observed, problem):
    """`{regx = "h"}` silently became a one-key subset table: it stays one (a store
    path may be any word), but its mismatch names the matcher it may have meant
    (kit: matchers)."""
    assert match(expect, observed) == [problem]


def test_a_one_key_table_that_is_no_near_miss_gets_no_hint():
    """(kit: matchers)"""
    assert match({"tasks": {"0.9": {"state": "done"}}}, OBS) == [
        'tasks."0.9": expected {"state": "done"}, got nothing (no such key)']
    assert match({"store": {"regx": "h"}}, {"store": {"regx": "h"}}) == []
