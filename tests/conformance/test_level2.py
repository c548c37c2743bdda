"""Level 2 of the protocol: the kit decides a served engine's schedule (kit: protocol-level-2).

The reference served by `forge impl-serve --level 2` asks the kit for every
open decision; the kit answers from its chooser.  These tests hold that the
exchange is the documented one, that the kit's choices are the ones the
engine follows (a run through the pipe equals the in-process run under the
same provider), that the whole suite passes through it on random schedules,
and that exploring through the pipe finds an ordering mutant served there.
"""

import io
import json
import os
import pathlib
import subprocess
import sys

import pytest

from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter, reference_observation
from forge.conformance.case import DEFAULT_CASES_DIR, HarnessSpec, load_cases
from forge.conformance.impl_explore import explore_impl, replay_impl
from forge.conformance.level2 import choose_problem
from forge.conformance.runner import run_suite
from forge.conformance.schemas import violations
from forge.conformance.serve import serve
from forge.runspec import Expectation, spec_from_values
from forge.sim.chooser import Chooser, Provider, RandomProvider

SERVE2 = [sys.executable, "-c", "from forge.cli import main; main()", "impl-serve", "--level", "2"]
CASES = load_cases(DEFAULT_CASES_DIR)
TWO_TASKS = next(c for c in CASES if c.id == "examples/two-tasks")
#: Alpha has always ended when Main asks; Beta has on some schedules only.
#: join_any then delivers the first ended member in set order - Alpha on
#: every schedule - and the mutant `join-any-last-ended` Beta.
FIRST_IN_SET_ORDER = (pathlib.Path(__file__).parent / "first-in-set-order.md").read_text()


class Last(Provider):
    """Always the last option: as far from canonical as a schedule gets.  It
    keeps every option list it was shown (a chooser keeps a live view of the
    ready chains only as what it offered)."""

    name = "last"

    def __init__(self):
        self.shown = []

    def draw(self, kind, options):
        self.shown.append(tuple(options))
        return len(options) - 1


def serve_script(*messages, level=2):
    lines = "\n".join(json.dumps(m) for m in messages) + "\n"
    out = io.BytesIO()
    assert serve(io.BytesIO(lines.encode()), out, level) == 0
    return [json.loads(line) for line in out.getvalue().decode().splitlines()]


def test_the_hello_announces_level_2_only_to_a_kit_that_offers_it():
    """A level-1 kit (no `levels` in its hello) gets a level-1 server that asks nothing."""
    old = serve_script({"type": "hello", "protocol": 1},
                       {"type": "run", "id": "t", "prompt": TWO_TASKS.prompt, "harness": {},
                        "seed": None})
    assert "level" not in old[0] and [m["type"] for m in old] == ["hello", "observation"]
    new = serve_script({"type": "hello", "protocol": 1, "levels": [1, 2]})
    assert new[0]["level"] == 2


def test_the_served_engine_asks_for_every_decision_and_follows_the_answers():
    """The worked exchange: one `choose` per decision the in-process run draws, with
    its kind and labels; `chosen` picks; then the observation those picks give."""
    here = Chooser(Last())
    expected = reference_observation(FIRST_IN_SET_ORDER, HarnessSpec(), None, "p", here)
    picks = [{"type": "chosen", "id": "t", "pick": c.value} for c in here.choices]
    answers = serve_script({"type": "hello", "protocol": 1, "levels": [1, 2]},
                           {"type": "run", "id": "t", "prompt": FIRST_IN_SET_ORDER,
                            "harness": {}, "seed": None}, *picks, {"type": "bye"})
    asked = answers[1:-1]
    assert [(m["kind"], tuple(m["options"])) for m in asked] == \
        [(c.kind, labels) for c, labels in zip(here.choices, here.provider.shown)]
    assert {m["kind"] for m in asked} == {"chain", "latency:store"}
    assert all(choose_problem(m, "t") is None and not violations("protocol", m) for m in asked)
    assert answers[-1] == {"type": "observation", "id": "t", "observation": expected}
    assert expected["result"] == "alpha"


def test_a_malformed_answer_errors_the_run_and_the_server_goes_on():
    """A `chosen` out of range is an error answer for that run, not a crash; it
    says the pick is out of range and which picks the choice had."""
    answers = serve_script({"type": "hello", "protocol": 1, "levels": [1, 2]},
                           {"type": "run", "id": "t", "prompt": TWO_TASKS.prompt, "harness": {},
                            "seed": None}, {"type": "chosen", "id": "t", "pick": 99},
                           {"type": "hello", "protocol": 1, "levels": [1, 2]})
    assert answers[-2] == {"type": "error", "id": "t", "message": (
        "level 2: choice 'chain' with 1 option was answered with pick 99, out of range: "
        "a pick is an index from 0 to 0")}
    assert answers[-1]["type"] == "hello"


def test_a_malformed_answer_is_quoted_as_json():
    """An answer that is no `chosen` is shown as the JSON it was, not a Python repr."""
    answers = serve_script({"type": "hello", "protocol": 1, "levels": [1, 2]},
                           {"type": "run", "id": "t", "prompt": TWO_TASKS.prompt, "harness": {},
                            "seed": None}, {"type": "chosen", "id": "t", "pick": True})
    assert ('answered with {"type": "chosen", "id": "t", "pick": true}; expected'
            in answers[-1]["message"])


def test_the_kit_decides_the_schedule_over_the_pipe():
    """Through the pipe, the run follows the kit's chooser: random and last-option
    schedules give the in-process observation of the same provider."""
    with SubprocessAdapter(SERVE2, timeout=60) as remote:
        assert remote.level == 2
        for make in (lambda: RandomProvider(7), Last):
            kit = Chooser(make(), seed=7)
            piped = remote.run_with(TWO_TASKS, 7, kit)
            here = reference_observation(TWO_TASKS.prompt, TWO_TASKS.harness, 7, TWO_TASKS.path,
                                         Chooser(make(), seed=7))
            assert kit.choices and piped == here
        assert remote.run(TWO_TASKS, None) == InProcessAdapter().run(TWO_TASKS, None)


def test_the_whole_suite_passes_through_level_2_on_random_schedules():
    """`forge conformance --impl 'forge impl-serve --level 2'`: every case, any-schedule
    cases on the kit's random schedules (two implementation processes, ~40 s)."""
    report = run_suite(CASES, lambda: SubprocessAdapter(SERVE2, timeout=60), workers=2)
    assert report.summary_line() == f"{len(CASES)} passed, 0 failed, 0 errored, 0 skipped", \
        report.render_text()


def explore_through(mutant: str | None):
    # `env` puts the mutant switch in the served process's environment only.
    argv = ["env", f"FORGE_MUTANT={mutant or ''}", *SERVE2]
    spec = spec_from_values("first-in-set-order.md", FIRST_IN_SET_ORDER)
    expect = Expectation(result="alpha")
    with SubprocessAdapter(argv, timeout=60) as remote:
        outcome = explore_impl(remote, spec, expect=expect, runs=60, shrink_budget=200)
        replayed = None
        if outcome.record is not None:
            rec = outcome.record
            replayed = replay_impl(remote, spec, rec["run"]["seed"], rec["choices"], expect)
    return outcome, replayed


def test_exploring_through_the_pipe_passes_the_reference():
    """60 schedules of the reference through level 2: every one delivers Alpha."""
    outcome, _ = explore_through(None)
    assert outcome.report.runs == 60 and not outcome.report.findings
    assert outcome.report.distinct_traces > 1      # the kit really varied the schedule


def test_exploring_through_the_pipe_finds_an_ordering_mutant_shrunk():
    """`join-any-last-ended` served over level 2: canonical passes, a random schedule
    fails, the shrinker brings it to one deviation, and the replay reproduces it."""
    outcome, (problems, drift) = explore_through("join-any-last-ended")
    found = outcome.report.findings[0]
    assert found.seed is not None and found.deviations == 1
    assert len(found.shrunk) < len(found.choices)
    assert outcome.story and "latency:store" in outcome.story[0]
    assert problems and drift is None


def test_explore_impl_on_the_command_line(tmp_path):
    """`forge explore --impl CMD PROMPT` exits 1 on the mutant and writes a replay file
    that `forge explore --impl CMD FILE` runs again through the pipe."""
    prompt = tmp_path / "p.md"
    prompt.write_text(FIRST_IN_SET_ORDER)
    cmd = "forge impl-serve --level 2"
    env = {**os.environ, "FORGE_MUTANT": "join-any-last-ended"}
    forge = [sys.executable, "-m", "forge"]
    out = subprocess.run([*forge, "explore", "--impl", cmd, str(prompt), "--expect-result",
                          "alpha", "--runs", "40", "--replay-out", str(tmp_path / "r.json")],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "FAILED at seed" in out.stdout and "latency:store" in out.stdout
    again = subprocess.run([*forge, "explore", "--impl", cmd, str(tmp_path / "r.json")],
                           env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "replayed the recorded schedule" in again.stdout
    level1 = subprocess.run([*forge, "explore", "--impl", "forge impl-serve", str(prompt)],
                            capture_output=True, text=True, timeout=120)
    assert level1.returncode == 2 and "speaks level 1" in level1.stderr


@pytest.mark.parametrize("message, words", [
    ({"type": "choose", "id": "other", "kind": "chain", "options": ["a"]}, "for run 'other'"),
    ({"type": "choose", "id": "t", "options": ["a"]}, "without a string `kind`"),
    ({"type": "choose", "id": "t", "kind": "weird", "options": ["a"]},
     'of unknown kind "weird"; the kinds are chain, latency:store,'),
    ({"type": "choose", "id": "t", "kind": "chian", "options": ["a"]},
     "(did you mean `chain`?)"),
    ({"type": "choose", "id": "t", "kind": "chain", "options": []}, "not a list of 1 to"),
    ({"type": "choose", "id": "t", "kind": "chain", "options": [1]}, "not a list of 1 to"),
])
def test_a_malformed_choose_is_a_fault_named_in_the_report(message, words):
    """The kit refuses a `choose` it cannot answer, saying why."""
    assert words in choose_problem(message, "t")


def test_the_choice_kinds_are_those_the_reference_asks():
    """protocol.schema.json's closed set of kinds is every decision the engine
    draws at the harness boundary: chain, a latency per operation, a fault
    per fault kind and the cancel instant - so a kind the kit refuses is one
    no engine of the spec needs."""
    from forge.conformance.level2 import kinds
    from forge.harness import DEFAULT_LATENCY, FAULT_KINDS

    assert set(kinds()) == {"chain", "fault:cancel_at",
                            *(f"latency:{op}" for op in DEFAULT_LATENCY),
                            *(f"fault:{kind}" for kind in FAULT_KINDS)}
    assert violations("protocol", {"type": "choose", "id": "t", "kind": "weird",
                                   "options": ["a"]})
