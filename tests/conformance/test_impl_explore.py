"""`forge explore --impl` as an outsider's engine meets it (kit: explore-impl).

The run it sends carries the harness its flags describe, as a case's would;
an exhaustive search reports its coverage as the reference's does; an
engine that misbehaves fails the exploration (exit 1), as it errors a case
under `forge conformance`, while bad input stays exit 2; and a replay file
of the reference's exhaustive search (orders mode) is refused.

Most tests run the reference in this process behind a stand-in for the
pipe (`InProcessPipe`: the served engine's decisions answered by the kit's
chooser, which is what `forge impl-serve --level 2` does over the pipe), so
they exercise the command and `impl_explore` without starting processes;
the faults go through a real pipe to a small script.
"""

from __future__ import annotations

import json
import pathlib
import sys

import attrs
import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.commands.explore_report import report_json
from forge.conformance import adapters
from forge.conformance.case import HarnessSpec
from forge.conformance.impl_explore import case_of, explore_impl
from forge.run.spec import Script
from forge.runspec import Expectation, spec_from_values

PROMPT = pathlib.Path(__file__).parent / "first-in-set-order.md"
TOOLS = {"tools": {"promptforge/web/fetch": {"description": "Fetch a page",
                                             "default": {"result": "page text"}}}}


class InProcessPipe:
    """A level-2 implementation without the pipe: the reference engine, each
    decision answered by the kit's chooser.  It keeps every harness sent."""

    level = 2
    sent: list[dict] = []

    def __init__(self, argv, timeout=10.0, **limits):
        self.argv = argv

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def step_kinds(self):
        return frozenset({"cancel"})      # the reference reports every step kind

    def run_with(self, case, seed, chooser, steps=False):
        InProcessPipe.sent.append(case.harness.to_json())
        return adapters.reference_observation(case.prompt, case.harness, seed, case.id, chooser,
                                              steps=steps)


@pytest.fixture
def pipe(monkeypatch):
    InProcessPipe.sent = []
    monkeypatch.setattr(adapters, "SubprocessAdapter", InProcessPipe)
    return InProcessPipe


def forge(*args):
    return CliRunner().invoke(main, list(args))


def explore(*args, impl=sys.executable):
    return forge("explore", "--impl", impl, *args)


def test_the_harness_from_flags_is_the_one_a_case_sends():
    """Every field of the protocol's harness is filled from a run spec that sets
    them all: none is left at its default, so none is dropped (refuse and
    tool_script were)."""
    spec = spec_from_values("p.md", PROMPT.read_text(), args="a", store_files={"s": "t"},
                            concurrency=3, model=Script("m", {"rounds": []}),
                            operator=Script("o", ["yes"]), tool=Script("t", TOOLS),
                            cancel_at=2.5, latency_base={"store": 0.5},
                            refusals={"write": ("main",)})
    harness = HarnessSpec.from_run(spec)
    default = HarnessSpec()
    unset = [f.name for f in attrs.fields(HarnessSpec)
             if f.name != "seeds" and getattr(harness, f.name) == getattr(default, f.name)]
    assert unset == []
    sent = case_of(spec).harness.to_json()
    assert sent["refuse"] == {"write": ["main"]} and sent["tool_script"] == TOOLS
    assert json.loads(json.dumps(sent)) == sent


def test_refuse_and_tool_script_flags_reach_the_engine(pipe, tmp_path):
    """`--refuse write:main --tool-script F`: the harness sent carries both, and the
    engine refuses the write (every run fails at it; without it, every run is ok)."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    result = explore(str(PROMPT), "--refuse", "write:main", "--tool-script", str(tools),
                     "--runs", "2", "--replay-out", str(tmp_path / "r.json"),
                     "--expect-outcome", "failed")
    assert pipe.sent[0]["refuse"] == {"write": ["main"]}
    assert pipe.sent[0]["tool_script"] == TOOLS
    assert result.exit_code == 0 and "outcomes: 2 failed" in result.stdout, result.output


def test_an_exhaustive_search_cut_short_says_so_and_exits_3(pipe, tmp_path):
    """The reference's coverage line, through the pipe: STOPPED at --runs (exit 3),
    or the whole tree covered (exit 0)."""
    out = str(tmp_path / "r.json")
    short = explore(str(PROMPT), "--strategy", "exhaustive", "--runs", "2", "--replay-out", out)
    assert short.exit_code == 3, short.output
    assert "STOPPED at --runs: " in short.stdout and "unfinished" in short.stdout
    whole = explore(str(PROMPT), "--strategy", "exhaustive", "--runs", "10000",
                    "--replay-out", out)
    assert whole.exit_code == 0, whole.output
    assert "covered the whole tree: " in whole.stdout


def test_the_json_report_has_the_reference_fields(pipe, tmp_path):
    """`--json` carries every field of `forge explore --json`, plus the shrunk run's
    problems and its decisions."""
    result = explore(str(PROMPT), "--runs", "3", "--json", "--replay-out",
                     str(tmp_path / "r.json"))
    data = json.loads(result.stdout)
    reference = forge("explore", str(PROMPT), "--runs", "3", "--json", "--replay-out",
                      str(tmp_path / "r.json"))
    assert set(json.loads(reference.stdout)) <= set(data)
    assert {"problems", "story"} <= set(data) and data["complete"] is True


def test_a_failure_on_the_canonical_schedule_lists_no_empty_decisions(pipe, tmp_path):
    """A schedule shrunk to the canonical one has no decision that differs: the
    report says so instead of an empty heading."""
    result = explore(str(PROMPT), "--expect-result", "beta", "--runs", "3",
                     "--replay-out", str(tmp_path / "r.json"))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert "its decisions that differ from canonical: none (it fails on the canonical " \
           "schedule)" in lines
    assert "its decisions that differ from canonical:" not in lines


def test_a_replay_of_the_reference_exhaustive_search_is_refused(pipe, tmp_path):
    """A record in orders mode (completions, not durations) is refused naming the
    file, as `forge run --strategy replay:` refuses it; the engine is not started."""
    record = tmp_path / "orders.replay.json"
    found = forge("explore", str(PROMPT), "--strategy", "exhaustive", "--expect-result",
                  "beta", "--replay-out", str(record))
    assert found.exit_code == 1 and json.loads(record.read_text())["run"]["latency"]["orders"]
    result = explore(str(record))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"forge: {record}: replay: $.run.latency.orders: ")
    assert "orders mode" in result.stderr and pipe.sent == []


ENGINE = '''
import json, sys
mode = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello":
        print(json.dumps({"type": "hello", "protocol": 1, "name": "fake",
                          "features": ["language", "tasks"], "level": 2}), flush=True)
    elif m["type"] == "run":
        if mode == "crash":
            sys.exit(7)
        print(json.dumps({"type": "choose", "id": m["id"], "kind": "latency:stor",
                          "options": ["x1.0"]}), flush=True)
        sys.stdin.readline()
'''


@pytest.mark.parametrize("mode, words", [
    ("unknown-kind", "asked a choice of unknown kind \"latency:stor\" (did you mean "
                     "`latency:store`"),
    ("crash", "crashed while answering case explore (exit code 7)"),
])
def test_a_misbehaving_engine_fails_the_exploration_not_the_input(tmp_path, mode, words):
    """An engine that crashes or asks an unknown kind of choice fails on the
    canonical schedule (exit 1, as its case errors under `forge conformance`),
    with a replay file; nothing else is tried."""
    engine = tmp_path / "engine.py"
    engine.write_text(ENGINE)
    replay = tmp_path / "r.json"
    result = explore(str(PROMPT), "--runs", "50", "--replay-out", str(replay),
                     impl=f"{sys.executable} {engine} {mode}")
    assert result.exit_code == 1, result.output
    assert "FAILED on the canonical schedule: the implementation errored: " in result.stdout
    assert words in result.stdout
    assert result.stdout.startswith("1 schedules, ")
    assert json.loads(replay.read_text())["failure"]["outcome"] == "errored"


def test_a_level_1_engine_is_still_bad_input(tmp_path):
    """A level-1 hello cannot be explored: exit 2, naming --impl."""
    engine = tmp_path / "engine.py"
    engine.write_text(ENGINE.replace(', "level": 2', ''))
    result = explore(str(PROMPT), impl=f"{sys.executable} {engine} x")
    assert result.exit_code == 2 and result.stderr.startswith("forge: --impl: ")
    assert "speaks level 1" in result.stderr


def test_explore_impl_finds_the_mutant_in_process():
    """The stand-in pipe is faithful: exploring it finds what the pipe finds
    for `join-any-last-ended` (test_level2 holds the pipe's side)."""
    from forge.conformance.mutants import by_id

    spec = spec_from_values("first-in-set-order.md", PROMPT.read_text())
    with by_id()["join-any-last-ended"].applied():
        outcome = explore_impl(InProcessPipe(["x"]), spec, expect=Expectation(result="alpha"),
                               runs=40, shrink_budget=200)
    assert outcome.report.findings and outcome.report.findings[0].deviations == 1
    assert report_json(outcome.report, None, "r.json")["failures"]


def test_the_timeout_reaches_the_pipe_and_needs_impl(pipe, monkeypatch):
    """`forge explore --impl CMD --timeout S` gives the program S seconds an
    answer, as `forge conformance --timeout` does (docs/protocol.md); without
    --impl the flag has nothing to time and is refused."""
    timeouts = []
    original = InProcessPipe.__init__

    def init(self, argv, timeout=10.0, **limits):
        timeouts.append(timeout)
        original(self, argv, timeout)

    monkeypatch.setattr(InProcessPipe, "__init__", init)
    done = explore(str(PROMPT), "--runs", "1", "--timeout", "2.5")
    assert done.exit_code == 0, done.output
    assert timeouts == [2.5]
    alone = forge("explore", str(PROMPT), "--runs", "1", "--timeout", "2.5")
    assert alone.exit_code == 2
    assert "--timeout: bounds what an --impl program may take" in alone.output


def test_a_record_of_an_engine_under_test_replays_without_crying_bug(pipe, tmp_path):
    """A failure found through --impl is recorded with no trace sha256, even
    when the engine reports one (the reference does): `forge replay` runs the
    schedule on the reference and re-checks the expectation, instead of
    comparing with bytes another engine made and calling the difference a
    kit bug."""
    out = tmp_path / "r.json"
    done = explore(str(PROMPT), "--runs", "2", "--expect-result", "not this",
                   "--replay-out", str(out))
    assert done.exit_code == 1, done.output
    assert json.loads(out.read_text())["trace_sha256"] is None
    again = forge("replay", str(out))
    assert again.exit_code == 1, again.output
    assert "please report this" not in again.output
