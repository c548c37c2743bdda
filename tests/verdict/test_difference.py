"""Failures that show the difference (`forge.difference`): the path to the
first differing field, both values, long values cut in the middle but never
at the point of difference; in text and in `--json` (kit: structured-diff).
"""

from __future__ import annotations

import json
import pickle

from click.testing import CliRunner

from forge.cli import main
from forge.difference import (Difference, Problem, differences_of, first_difference,
                              problem, show)
from tests.conftest import EXAMPLES


def test_the_path_leads_to_the_first_differing_field():
    canonical = {"messages": {"Lead": [{"content": "a", "tool_calls": [{"arguments": "x"}]}]},
                 "tasks": {"0.1": {"state": "done"}}}
    this_run = {"messages": {"Lead": [{"content": "a", "tool_calls": [{"arguments": "y"}]}]},
                "tasks": {"0.1": {"state": "done"}}}
    found = first_difference(canonical, this_run)
    assert found == Difference("$.messages.Lead[0].tool_calls[0].arguments", "x", "y",
                               "value", 0)
    assert first_difference(canonical, canonical) is None
    assert first_difference({"tasks": {"0.1": 1}}, {"tasks": {"0.1": 2}}).path == \
        '$.tasks["0.1"]'


def test_missing_extra_type_and_length():
    assert first_difference({"a": 1}, {}) == Difference("$.a", 1, None, "missing")
    assert first_difference({}, {"b": 1}) == Difference("$.b", None, 1, "extra")
    assert first_difference([1, 2], [1]) == Difference("$[1]", 2, None, "missing")
    assert first_difference(None, "x").kind == "type"
    assert first_difference(1, 1.0).kind == "type"      # equal to Python, not as JSON


def test_long_strings_show_the_window_at_the_difference_not_their_ends():
    head, tail = "x" * 500, "y" * 500
    expected, actual = head + "MIDDLE-A" + tail, head + "MIDDLE-B" + tail
    found = first_difference(expected, actual)
    assert found.offset == 507
    text = "\n".join(found.lines())
    assert "MIDDLE-A" in text and "MIDDLE-B" in text
    assert all(len(line) < 120 for line in found.lines())
    shown = show(actual, found.offset)
    assert shown.startswith('"...') and shown.endswith('..."')


def test_a_long_value_is_cut_in_the_middle():
    value = list(range(200))
    text = show(value)
    assert text.startswith("[0, 1, 2") and text.endswith("198, 199]") and " ... " in text
    assert len(text) <= 100


def test_a_problem_is_a_plain_string_that_carries_its_difference():
    found = first_difference("a", "b")
    p = problem("result 'b' != 'a'", found)
    assert p.splitlines() == ["result 'b' != 'a'", "  at $: differs (first at character 0)",
                              '    expected: "a"', '    actual  : "b"']
    assert isinstance(p, str) and differences_of([p, "plain"])[1] is None
    assert differences_of([p])[0]["path"] == "$"
    again = pickle.loads(pickle.dumps(p))
    assert isinstance(again, Problem) and again.difference == found and again == p
    assert problem("same", None) == "same"


def test_expect_result_on_an_erroring_run_shows_the_error_and_the_difference():
    """Where it said only `result None != 'x'`, the problem now says how the run ended."""
    result = CliRunner().invoke(main, ["explore", str(EXAMPLES / "leaky-walk.md"), "--runs", "5",
                                       "--allow-failed", "--expect-result", "counter=2",
                                       "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output.splitlines()[-1])
    problems = report["failures"][0]["problems"]
    assert problems[0].startswith("result None != 'counter=2' (the run ended failed with a "
                                  "Lua error: chain ended with author tasks still live")
    assert report["differences"][0]["kind"] == "type"
    assert report["differences"][0]["expected"] == "counter=2"
    # the story ends with the run's error kind and message
    assert any("the run ends failed (Lua): chain ended with author tasks still live" in line
               for line in report["story"])


def test_schedule_independent_shows_the_first_differing_field_in_text_and_json():
    prompt = str(EXAMPLES / "explore" / "slowest-first.md")
    text = CliRunner().invoke(main, ["explore", prompt, "--schedule-independent", "--runs", "50"])
    assert text.exit_code == 1
    assert ("schedule-dependent result: this schedule differs from the canonical one\n"
            "    at $.result: differs (first at character 2)\n"
            '      canonical: "0.0"\n'
            '      this run : "0.1"\n') in text.output
    data = CliRunner().invoke(main, ["explore", prompt, "--schedule-independent", "--runs", "50",
                                     "--json"])
    report = json.loads(data.output.splitlines()[-1])
    assert report["differences"] == [{"path": "$.result", "kind": "value", "offset": 2,
                                      "expected": "0.0", "actual": "0.1",
                                      "expected_shown": '"0.0"', "actual_shown": '"0.1"'}]
