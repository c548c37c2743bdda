"""The runner against misbehaving implementations: a catalogue of small fake
engines (Python scripts), each wrong in one way.

Every entry must be reported per case - errored with a reason that says
what happened (or, for an implementation that is slow but right, passed) -
within twice the timeout, and leave no process behind: not the
implementation, not a child in its group, not a grandchild that called
setsid().  Grandchildren write their pid to a file so the test can check.
"""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from forge.conformance import impl_process
from forge.conformance.adapters import SubprocessAdapter
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.runner import run_suite

TIMEOUT = 1.0

#: The fake: a correct implementation until the run, where `BEHAVIOUR` (argv[1]) strikes.
FAKE = textwrap.dedent('''
    import json, os, sys, time
    BEHAVIOUR, PIDS = sys.argv[1], sys.argv[2]
    out = sys.stdout.buffer
    def say(msg):
        out.write((json.dumps(msg) + "\\n").encode()); out.flush()
    def spawn(new_session):
        pid = os.fork()
        if pid == 0:
            if new_session:
                os.setsid()
            if os.fork() == 0:           # a grandchild, in or out of the group
                with open(PIDS, "a") as f:
                    f.write(f"{os.getpid()}\\n")
                time.sleep(600)
            os._exit(0)
        os.waitpid(pid, 0)
    if BEHAVIOUR == "dies-at-start":
        print("cannot start", file=sys.stderr); sys.exit(4)
    if BEHAVIOUR == "never-reads":
        time.sleep(600)
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            if BEHAVIOUR == "rude-hello":
                say({"type": "howdy"}); continue
            say({"type": "hello", "name": "fake", "features": ["language", "tasks"]})
            if BEHAVIOUR == "exits-after-hello":
                sys.exit(0)
            continue
        if msg["type"] != "run":
            break
        ok = {"type": "observation", "id": msg["id"],
              "observation": {"outcome": "ok", "result": "r", "error": None, "logs": [], "events": [], "tasks": {}, "messages": {}, "store": {}, "virtual_time": 0.0}}
        b = BEHAVIOUR
        if b == "hangs":
            time.sleep(600)
        elif b == "endless-stderr-line":
            while True:
                sys.stderr.write("x" * 65536); sys.stderr.flush()
        elif b == "endless-stderr-lines":
            while True:
                sys.stderr.write("noise\\n" * 10000); sys.stderr.flush()
        elif b == "40mib-stderr-then-ok":
            chunk = ("e" * 1023 + "\\n") * 1024
            for _ in range(40):
                sys.stderr.write(chunk)
            sys.stderr.flush()
            say(ok)
        elif b == "endless-stdout-line":
            while True:
                out.write(b"y" * 65536); out.flush()
        elif b == "endless-blank-lines":
            while True:
                out.write(b"\\n" * 65536); out.flush()
        elif b == "huge-line":
            out.write(b"z" * (3 * 1024 * 1024) + b"\\n"); out.flush(); time.sleep(600)
        elif b == "deep-json":
            out.write(b"[" * 200000 + b"]" * 200000 + b"\\n"); out.flush()
        elif b == "huge-number":
            out.write(b'{"type": "observation", "id": "%s", "observation": {"n": %s}}\\n'
                      % (msg["id"].encode(), b"9" * 5000)); out.flush()
        elif b == "deep-observation":
            obs = {"outcome": "ok"}
            for _ in range(100):
                obs = {"a": obs}
            say({"type": "observation", "id": msg["id"], "observation": obs})
        elif b == "odd-observation":
            say({"type": "observation", "id": msg["id"],
                 "observation": {"outcome": 5, "result": [], "logs": "x", "tasks": [], "error": 3}})
        elif b == "invalid-utf8":
            out.write(b"\\xff\\xfe{\\n"); out.flush()
        elif b == "wrong-id":
            say({**ok, "id": "other"})
        elif b == "not-an-object":
            say({"type": "observation", "id": msg["id"], "observation": [1, 2]})
        elif b == "flood-of-other-messages":
            while True:
                say({"type": "log", "text": "busy"})
        elif b == "closes-stdout-keeps-running":
            os.close(1); time.sleep(600)
        elif b == "crash-with-group-child":
            spawn(new_session=False); sys.exit(3)
        elif b == "hang-with-setsid-grandchild":
            spawn(new_session=True); time.sleep(600)
        elif b == "crash-with-setsid-grandchild":
            spawn(new_session=True); print("bye", file=sys.stderr); sys.exit(5)
        elif b == "slow-but-right":
            time.sleep(TIMEOUT_HALF); say(ok)
        else:
            say(ok)
''')

#: behaviour -> (status, words the reason must hold).
CATALOGUE = {
    "dies-at-start": ("errored", "crashed while answering the handshake (exit code 4)"),
    "rude-hello": ("errored", 'answered the handshake with {"type": "howdy"}'),
    "exits-after-hello": ("errored", "crashed while answering case g/c (exit code 0)"),
    "never-reads": ("errored", "timed out after 1 s"),
    "hangs": ("errored", "timed out after 1 s waiting for the answer to case g/c"),
    "endless-stderr-line": ("errored", "timed out after 1 s"),
    "endless-stderr-lines": ("errored", "timed out after 1 s"),
    "40mib-stderr-then-ok": ("passed", ""),
    "endless-stdout-line": ("errored", "wrote a line longer than"),
    "endless-blank-lines": ("errored", "timed out after 1 s"),
    "huge-line": ("errored", "wrote a line longer than 1048576 bytes on stdout"),
    "deep-json": ("errored", "sent a line the kit will not read"),
    "huge-number": ("errored", "sent a line the kit will not read"),
    "deep-observation": ("errored", "past the kit's limits"),
    "odd-observation": ("errored", "breaks observation.schema.json at /outcome"),
    "invalid-utf8": ("errored", "sent a line that is not JSON"),
    "wrong-id": ("errored", "where the observation of case g/c was expected"),
    "not-an-object": ("errored", "that is not a JSON object"),
    "flood-of-other-messages": ("errored", 'sent {"type": "log", "text": "busy"}'),
    "closes-stdout-keeps-running": ("errored", "closed its stdout while answering case g/c"),
    "crash-with-group-child": ("errored", "crashed while answering case g/c (exit code 3)"),
    "hang-with-setsid-grandchild": ("errored", "timed out after 1 s"),
    "crash-with-setsid-grandchild": ("errored", "crashed while answering case g/c (exit code 5)"),
    "slow-but-right": ("passed", ""),
}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def soon(check, seconds: float = 5.0) -> bool:
    """Whether `check()` holds within `seconds`: a SIGKILLed process leaves
    the process table a moment after the signal, later on a busy machine."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("behaviour", sorted(CATALOGUE))
def test_a_misbehaving_implementation_is_one_clean_case(tmp_path, monkeypatch, behaviour):
    monkeypatch.setattr(impl_process, "MAX_MESSAGE_BYTES", 1024 * 1024)
    script = tmp_path / "fake.py"
    script.write_text(f"TIMEOUT_HALF = {TIMEOUT / 2}\n" + FAKE)
    pids = tmp_path / "pids"
    pids.write_text("")
    argv = [sys.executable, str(script), behaviour, str(pids)]
    case = Case(id="g/c", path="g/c", clauses=("c",), harness=HarnessSpec(),
                expect={"outcome": "ok", "result": "r"}, prompt="p")
    tokens = []
    real = impl_process.ImplProcess.__init__

    def spy(self, argv):
        real(self, argv)
        tokens.append(self.token)

    monkeypatch.setattr(impl_process.ImplProcess, "__init__", spy)
    started = time.monotonic()
    report = run_suite([case], lambda: SubprocessAdapter(argv, timeout=TIMEOUT))
    elapsed = time.monotonic() - started
    status, words = CATALOGUE[behaviour]
    [result] = report.results
    assert result.status == status, result.problems
    assert words in "\n".join(result.problems)
    assert len("\n".join(result.problems)) < 20_000  # the report keeps a capped tail
    # Twice the timeout, plus the handshake's own (a handshake fault can use it).
    assert elapsed < 2 * TIMEOUT + (TIMEOUT if "start" in behaviour or "reads" in behaviour
                                     else 0) + 1.0, elapsed
    for pid in map(int, pids.read_text().split()):
        assert soon(lambda: not alive(pid)), f"grandchild {pid} outlived the run"
    for token in tokens:
        assert soon(lambda: impl_process.marked_processes(token) == []), \
            "a marked process outlived the run"


@pytest.mark.parametrize("behaviour", ["dies-at-start", "never-reads", "rude-hello"])
def test_an_implementation_that_fails_its_handshake_errors_every_case_at_once(tmp_path, behaviour):
    """The handshake that describes the implementation failed: each case is errored with that
    reason, without starting the implementation again and waiting out the same fault per case
    (ten cases of a never-reading implementation took ten timeouts) (kit: runner.misbehaving)."""
    script = tmp_path / "fake.py"
    script.write_text(f"TIMEOUT_HALF = {TIMEOUT / 2}\n" + FAKE)
    pids = tmp_path / "pids"
    argv = [sys.executable, str(script), behaviour, str(pids)]
    cases = [Case(id=f"g/c{i}", path=f"g/c{i}", clauses=("c",), harness=HarnessSpec(),
                  expect={"outcome": "ok", "result": "r"}, prompt="p") for i in range(10)]
    started = time.monotonic()
    report = run_suite(cases, lambda: SubprocessAdapter(argv, timeout=TIMEOUT))
    elapsed = time.monotonic() - started
    assert [r.status for r in report.results] == ["errored"] * 10
    assert len({r.problems for r in report.results}) == 1
    assert "handshake" in report.results[0].problems[0]
    assert elapsed < 2 * TIMEOUT + 1.0, elapsed
