"""The reference engine behind the protocol, end to end (conformance.serve)."""

import io
import json
import pathlib
import re
import subprocess
import sys

import pytest

from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, Case, HarnessSpec, load_cases
from forge.conformance.runner import run_suite
from forge.conformance.serve import serve

SERVE = [sys.executable, "-c", "from forge.cli import main; main()", "impl-serve"]

TWO_TASKS = next(c for c in load_cases(DEFAULT_CASES_DIR) if c.id == "examples/two-tasks")


def exchange(*messages):
    """Feed `messages` (objects or raw strings) to serve(); the answers it wrote."""
    lines = [m if isinstance(m, str) else json.dumps(m) for m in messages]
    out = io.BytesIO()
    assert serve(io.BytesIO(("\n".join(lines) + "\n").encode()), out) == 0
    return [json.loads(line) for line in out.getvalue().decode().splitlines()]


def test_hello_run_bye():
    """serve() shakes hands, answers a run with an observation, and stops at bye."""
    answers = exchange({"type": "hello", "protocol": 1},
                       {"type": "run", "id": "x/two", "prompt": TWO_TASKS.prompt,
                        "harness": {}, "seed": None},
                       {"type": "bye"},
                       {"type": "run", "id": "never", "prompt": "", "harness": {}, "seed": None})
    assert answers[0] == {"type": "hello", "protocol": 1, "name": "forge-reference",
                          "features": ["language", "store", "tasks", "fanout", "models", "tools",
                                       "operator", "tasks-model", "lifecycle"],
                          "steps": ["cancel"]}
    assert answers[1]["type"] == "observation" and answers[1]["id"] == "x/two"
    assert answers[1]["observation"]["result"] == "alpha text + beta text"
    assert len(answers) == 2


def test_the_docs_show_the_hello_impl_serve_sends():
    """docs/protocol.md and docs/report.md showed a hello of four features without
    `language`, which, copied, skipped every prompt case: every sample hello of
    forge-reference, and report.md's implementation features, are what serve()
    sends (kit: protocol.hello)."""
    root = pathlib.Path(__file__).resolve().parents[2] / "docs"
    sent = exchange({"type": "hello", "protocol": 1})[0]
    protocol = (root / "protocol.md").read_text(encoding="utf-8")
    samples = [json.loads(m) for m in re.findall(
        r'(\{"type":"hello","protocol":1,"name":"forge-reference".*?\})\s*$', protocol,
        re.MULTILINE)]
    assert len(samples) == 2
    for sample in samples:
        sample.pop("level", None)   # the level-2 exchange's; serve() here is level 1
        assert sample == sent
    report = (root / "report.md").read_text(encoding="utf-8")
    sample = json.loads(report.split("```json\n", 1)[1].split("```", 1)[0])
    assert sample["implementation"]["features"] == sent["features"]


def test_bad_messages_get_error_answers_and_serving_goes_on():
    """Garbage, unknown types and malformed runs are answered with errors, not a crash."""
    answers = exchange("not json", {"type": "dance", "id": "q"},
                       {"type": "run", "id": "x/a", "harness": {}},
                       {"type": "run", "id": "x/b", "operations": [], "harness": {}},
                       {"type": "run", "id": "x/c", "prompt": "# P", "seed": "7"},
                       {"type": "hello", "protocol": 1})
    assert [(a["type"], a.get("id")) for a in answers] == [
        ("error", None), ("error", "q"), ("error", "x/a"), ("error", "x/b"), ("error", "x/c"),
        ("hello", None)]
    assert answers[1]["message"] == "unknown message type 'dance'"
    assert answers[3]["message"].endswith("operations: operations: is a non-empty list of "
                                          "operation tables")


def test_a_prompt_the_parser_refuses_is_a_parse_failure_observation():
    """Refusing a prompt is behaviour: outcome failed, error kind Parse."""
    bad = Case(id="g/bad", path="g/bad.toml", clauses=("c",), harness=HarnessSpec(),
               expect={}, prompt="---\nname: [unclosed\n---\n# X\n")
    observation = InProcessAdapter().run(bad, None)
    assert observation["outcome"] == "failed"
    assert observation["error"]["kind"] == "Parse"


def test_the_shipped_suite_passes_through_impl_serve():
    """`forge conformance --impl 'forge impl-serve'`: the protocol path agrees with the spec.
    At level 1 the decision cases, which check what a level-2 engine asks, are
    skipped (kit: protocol.decision-points)."""
    cases = load_cases(DEFAULT_CASES_DIR)
    decisions = sum(1 for c in cases if "decisions" in c.expect)
    report = run_suite(cases, lambda: SubprocessAdapter(SERVE, timeout=60))
    assert report.summary_line() == (f"{len(cases) - decisions} passed, 0 failed, 0 errored, "
                                     f"{decisions} skipped"), report.render_text()


def test_in_process_and_subprocess_observations_are_identical():
    """Same case, same seed: the same observation, trace hash included, across processes."""
    with SubprocessAdapter(SERVE, timeout=60) as remote:
        for seed in (None, 5):
            assert remote.run(TWO_TASKS, seed) == InProcessAdapter().run(TWO_TASKS, seed)


@pytest.mark.parametrize("line, words", [
    (b"[" * 100_000 + b"\n", "nested deeper than 64 levels"),
    (b'{"type":"run","id":"x","operations":[{"op":{}}],"harness":{}}\n', "unknown op {}"),
])
def test_hostile_messages_get_an_error_answer_and_the_server_goes_on(line, words):
    """impl-serve answers a message nested too deep, or an operation name that is
    not a string, with one error message and keeps serving (kit: protocol.errors)."""
    done = subprocess.run(SERVE, input=line + b'{"type":"bye"}\n', capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.decode().splitlines()[0])
    assert answer["type"] == "error" and words in answer["message"]
