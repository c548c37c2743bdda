"""Fuzzed protocol streams into `forge impl-serve` (`forge.conformance.serve.serve`).

The reference's side of the pipe reads whatever an implementation author's
harness - or a broken kit build - writes to it.  Each drawn stream is a few
lines: well-formed messages with one field wrong, prompts from the examples
broken as text, harness objects with hostile values, raw JSON values and raw
bytes.  The contract (docs/protocol.md, "Messages"): every non-blank line
before `bye` gets exactly one answer, each answer is one JSON object of type
`hello`, `observation` or `error`, an observation never reports an
`Internal` run error, the loop never dies, and each stream ends within
`cli.MAX_SECONDS`.  One stream also goes through the real `forge impl-serve`
subprocess, so the redirection of stdout and the exit status are covered.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

from hypothesis import example, given
from hypothesis import strategies as st

from forge.conformance.serve import serve
from tests.conftest import EXAMPLES as EXAMPLE_DIR
from tests.fuzz import generators as gen
from tests.fuzz.cli import CODES, COUNTS, FORBIDDEN, FUZZ, MAX_SECONDS, SLOWEST

PROMPTS = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLE_DIR.glob("*.md"))]
#: Answer types the protocol defines for the reference's side.
ANSWERS = {"hello", "observation", "error"}


def _harness():
    return gen.optional_fields({}, {
        "args": gen.maybe(gen.TEXTS),
        "concurrency": gen.maybe(st.one_of(st.integers(0, 9), gen.HUGE_INTS)),
        "store": gen.maybe(st.dictionaries(gen.TEXTS, gen.maybe(gen.TEXTS), max_size=3)),
        "latency": gen.maybe(st.dictionaries(
            st.sampled_from(["store", "model", "operator", "tool", "x"]), gen.delays(),
            max_size=3)),
        "cancel_at": gen.maybe(gen.delays()),
        "refuse": gen.maybe(st.dictionaries(
            st.sampled_from(["read", "write", "append", "list", "x"]),
            gen.maybe(st.lists(gen.TEXTS, max_size=2)), max_size=2)),
        "model_script": gen.maybe(st.none()),
        "operator_script": gen.maybe(st.lists(gen.TEXTS, max_size=2)),
    })


def _messages():
    # Runs are most of a stream and mostly well formed, so the fuzz reaches
    # the engine; the other shapes reach the loop's own checks.
    run = gen.optional_fields(
        {"type": st.just("run"),
         "id": gen.maybe(st.one_of(st.just("case"), gen.TEXTS)),
         "prompt": gen.maybe(st.sampled_from(PROMPTS).flatmap(gen.mutate_text))},
        {"seed": gen.maybe(st.one_of(st.none(), st.integers(0, 50), gen.HUGE_INTS)),
         "harness": gen.maybe(_harness())})
    lifecycle = gen.optional_fields(
        {"type": st.just("run"), "id": gen.maybe(st.just("case")),
         "operations": gen.maybe(st.lists(gen.json_values(4), max_size=3))}, {})
    hello = gen.optional_fields({"type": st.just("hello")},
                                {"protocol": gen.maybe(st.just(1))})
    other = gen.optional_fields({"type": gen.maybe(gen.TEXTS)}, {"id": gen.maybe(gen.TEXTS)})
    return st.one_of(run, run, run, lifecycle, hello, other, gen.json_values(6))


@st.composite
def streams(draw) -> list[bytes]:
    """A few protocol lines, each JSON text (maybe broken) or raw bytes."""
    lines = []
    for message in draw(st.lists(_messages(), min_size=1, max_size=4)):
        text = draw(gen.mutate_text(gen.dumps(message)))
        lines.append(text.encode("utf-8", "surrogatepass"))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))),
                     draw(st.binary(max_size=40)).replace(b"\n", b" "))
    return lines


def _answered(stdin: bytes) -> int:
    """How many answers the protocol owes for this input: one for every
    non-blank line up to the first `bye`."""
    owed = 0
    for raw in stdin.split(b"\n"):
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            continue
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, dict) and message.get("type") == "bye":
            break
        owed += 1
    return owed


def _check_answers(out: bytes, owed: int, shown: str) -> None:
    # Lines end in "\n" (docs/protocol.md), and only there: str.splitlines would also
    # split inside a JSON string holding U+0085 or U+2028, which the protocol sends raw.
    answers = out.decode("utf-8").split("\n")
    assert answers.pop() == "", f"the answers end in a newline: {shown}"
    assert len(answers) == owed, f"{owed} lines owed an answer, got {len(answers)}: {shown}"
    for line in answers:
        answer = json.loads(line)
        assert isinstance(answer, dict) and answer.get("type") in ANSWERS, f"{line}: {shown}"
        if answer["type"] == "observation":
            error = answer["observation"].get("error") or {}
            assert error.get("kind") != "Internal", f"{line[:2000]}: {shown}"
        for word in FORBIDDEN:
            assert word not in line, f"{word!r} in an answer: {line[:2000]}: {shown}"


@FUZZ
@given(streams())
# Found by the large run: an id holding U+0085, echoed raw in the answer.
@example([b'{"type": "", "id": "\xc2\x85"}'])
def test_protocol_streams(lines):
    """kit:protocol-hardening"""
    stdin = b"\n".join(lines) + b"\n"
    out = io.BytesIO()
    started = time.monotonic()
    status = serve(io.BytesIO(stdin), out)
    elapsed = time.monotonic() - started
    COUNTS["protocol stream"] += 1
    CODES["protocol stream", status] += 1
    SLOWEST["protocol stream"] = max(SLOWEST.get("protocol stream", 0.0), elapsed)
    shown = repr(stdin[:3000])
    assert status == 0, shown
    _check_answers(out.getvalue(), _answered(stdin), shown)
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s: {shown}"


def test_hostile_stream_through_the_real_process():
    """kit:protocol-hardening - the console entry point, not only the loop:
    stdout carries nothing but answers, and the process exits 0 at `bye`."""
    lines = [b'{"type": "hello", "protocol": 1}', b"\xff\xfe not json", b"[1, 2]",
             b'{"type": "run", "id": "a", "prompt": 7}',
             b'{"type": "run", "id": "b", "prompt": "# T\\n\\n```lua\\nprint(1)\\nreturn 2\\n```\\n"}',
             b'{"type": "run", "id": "c", "prompt": "# T\\n", "harness": {"concurrency": "x"}}',
             b"[" * 100_000, b'{"type": "run", "id": "d", "seed": ' + b"9" * 5000 + b"}",
             b'{"type": "run", "id": "e", "prompt": "# T\\n", "harness": {"args": 7}}',
             b'{"type": "bye"}', b'{"type": "hello"}']
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    stdin = b"\n".join(lines)
    done = subprocess.run([sys.executable, "-m", "forge", "impl-serve"], input=stdin,
                          capture_output=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    _check_answers(done.stdout, _answered(stdin), repr(done.stderr[-2000:]))
    last = json.loads(done.stdout.splitlines()[-1])
    assert last == {"type": "error", "id": "e",
                    "message": "$.harness.args: expected a string, got 7"}
