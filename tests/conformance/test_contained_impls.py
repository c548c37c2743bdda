"""Contained foreign engines: every process an `--impl` engine starts ends
when the kit stops the engine - whatever it did to its session or its
environment - and one run of an engine is bounded in time and in decisions
(kit: impl.containment, kit: impl.bounds).

The fake engine speaks level 2.  At its first run it starts an escapee: a
child that calls setsid(), then a grandchild that replaces itself with a
program run under an empty environment (so it holds no FORGE_IMPL_TOKEN)
and sleeps.  The escapee writes its pid and the size of its environment to
a file, so the test can check it really left with nothing, and that it is
gone when `forge conformance --impl` and `forge explore --impl` return.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from forge.conformance import impl_process
from forge.conformance.adapters import AdapterError, SubprocessAdapter
from forge.conformance.case import Case, HarnessSpec

from tests.conformance.test_misbehaving_impls import alive, soon

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: argv: BEHAVIOUR PIDS.  Behaviours: `escape` (start the escapee at the
#: first run, then answer), `escape-at-hello`, `ask-forever` (a `choose`
#: after another), `ask-slowly` (one every 0.2 s, each within any timeout).
FAKE = textwrap.dedent('''
    import json, os, sys, time
    BEHAVIOUR, PIDS = sys.argv[1], sys.argv[2]
    ESCAPEE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "escapee.py")
    started = False
    def escape():
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve(sys.executable, [sys.executable, "-I", ESCAPEE, PIDS], {})
            os._exit(0)
        while not open(PIDS).read():     # answer only once the escapee is out
            time.sleep(0.01)
    def say(msg):
        sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            say({"type": "hello", "name": "fake", "features": ["language", "tasks"], "level": 2})
            if BEHAVIOUR == "escape-at-hello":
                escape()
            continue
        if msg["type"] != "run":
            break
        if not started and BEHAVIOUR != "escape-at-hello":
            started = True
            escape()
        if BEHAVIOUR in ("ask-forever", "ask-slowly"):
            while True:
                if BEHAVIOUR == "ask-slowly":
                    time.sleep(0.2)
                say({"type": "choose", "id": msg["id"], "kind": "chain", "options": ["root:0"]})
                sys.stdin.readline()
        say({"type": "observation", "id": msg["id"], "observation": {
            "outcome": "ok", "result": "r", "error": None, "logs": [], "events": [],
            "tasks": {}, "messages": {}, "store": {}, "virtual_time": 0.0}})
''')

#: The escapee, run with an empty environment: its pid, and the size of the
#: environment it was started with, as the kernel shows it.
ESCAPEE = textwrap.dedent('''
    import os, sys, time
    with open("/proc/self/environ", "rb") as f:
        size = len(f.read())
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()} {size}\\n")
    time.sleep(600)
''')


@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake.py"
    script.write_text(FAKE)
    (tmp_path / "escapee.py").write_text(ESCAPEE)
    pids = tmp_path / "pids"
    pids.write_text("")

    def argv(behaviour: str) -> list[str]:
        return [sys.executable, str(script), behaviour, str(pids)]

    def escapees() -> list[int]:
        """The escapees' pids, once each wrote itself down (each with an empty environment)."""
        assert soon(lambda: pids.read_text().strip() != ""), "no escapee started"
        found = []
        for line in pids.read_text().split("\n"):
            if line:
                pid, env = map(int, line.split())
                assert env == 0, "the escapee kept an environment"   # /proc/PID/environ's size
                found.append(pid)
        return found

    argv.escapees = escapees
    return argv


def forge(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "forge", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def gone(pids: list[int]) -> bool:
    return soon(lambda: not any(alive(pid) for pid in pids))


def test_linux_runs_the_engine_under_the_subreaper(fake):
    """On Linux the kit contains an engine with the shepherd (a child subreaper),
    not only its process group and token (kit: impl.containment)."""
    with SubprocessAdapter(fake("escape")) as adapter:
        adapter.describe()
        assert adapter._proc.containment == impl_process.SUBREAPER


def test_forge_conformance_impl_leaves_no_escapee(fake):
    """kit: impl.containment"""
    done = forge("conformance", "--impl", " ".join(fake("escape")), "-k", "^examples/two-tasks$")
    assert done.returncode == 1, done.stdout + done.stderr      # the fake's answer is wrong
    escapees = fake.escapees()
    assert gone(escapees), f"escapees {escapees} outlived forge conformance --impl"


def test_forge_explore_impl_leaves_no_escapee(fake, tmp_path):
    """kit: impl.containment"""
    prompt = os.path.join(ROOT, "examples", "two-tasks.md")
    done = forge("explore", "--impl", " ".join(fake("escape")), prompt, "--runs", "3",
                 "--replay-out", str(tmp_path / "r.json"))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    escapees = fake.escapees()
    assert gone(escapees), f"escapees {escapees} outlived forge explore --impl"


def test_an_engine_dies_with_the_kit(fake, tmp_path):
    """A kit killed without a chance to clean up (SIGKILL) still takes the
    engine's whole tree with it: the shepherd waits on the kit's lifeline
    (kit: impl.containment)."""
    kit = tmp_path / "kit.py"
    kit.write_text(textwrap.dedent(f'''
        import sys, time
        from forge.conformance.adapters import SubprocessAdapter
        adapter = SubprocessAdapter({fake("escape-at-hello")!r})
        adapter.describe()
        print("ready", flush=True)
        time.sleep(600)
    '''))
    proc = subprocess.Popen([sys.executable, str(kit)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert proc.stdout.readline().strip() == "ready"
        escapees = fake.escapees()
        assert all(alive(p) for p in escapees)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert gone(escapees), f"escapees {escapees} outlived the kit"
    finally:
        proc.kill()
        proc.wait()


CASE = Case(id="g/c", path="g/c", clauses=("c",), harness=HarnessSpec(),
            expect={"outcome": "ok"}, prompt="p")


def test_a_run_past_its_decision_limit_fails_and_ends_the_tree(fake):
    """An engine that keeps asking is stopped at --max-decisions, with a
    message naming the flag, and its escapee ends with it (kit: impl.bounds)."""
    from forge.assembly import make_chooser

    adapter = SubprocessAdapter(fake("ask-forever"), timeout=5.0, max_decisions=50)
    with adapter, pytest.raises(AdapterError) as failed:
        adapter.run_with(CASE, 0, make_chooser(0, None))
    assert "asked more than 50 choices in one run (--max-decisions)" in failed.value.reason
    assert gone(fake.escapees())


def test_a_run_past_its_time_limit_fails_however_fast_each_answer_comes(fake):
    """Each `choose` comes well within the per-message timeout, yet the run
    as a whole is stopped at --max-run-seconds (kit: impl.bounds)."""
    from forge.assembly import make_chooser

    adapter = SubprocessAdapter(fake("ask-slowly"), timeout=5.0, run_seconds=1.0)
    started = time.monotonic()
    with adapter, pytest.raises(AdapterError) as failed:
        adapter.run_with(CASE, 0, make_chooser(0, None))
    assert "ran past the limit of 1 s for one run (--max-run-seconds)" in failed.value.reason
    assert time.monotonic() - started < 5.0
    assert gone(fake.escapees())


def test_the_bounds_are_flags_of_both_commands(fake, tmp_path):
    """kit: impl.bounds"""
    prompt = os.path.join(ROOT, "examples", "two-tasks.md")
    done = forge("explore", "--impl", " ".join(fake("ask-forever")), prompt, "--runs", "2",
                 "--max-decisions", "20", "--replay-out", str(tmp_path / "r.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "asked more than 20 choices in one run (--max-decisions)" in done.stdout
    done = forge("conformance", "--impl", " ".join(fake("ask-slowly")), "-k",
                 "^examples/two-tasks$", "--max-run-seconds", "0.5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ran past the limit of 0.5 s for one run (--max-run-seconds)" in done.stdout
    alone = forge("explore", prompt, "--runs", "1", "--max-decisions", "5")
    assert alone.returncode == 2
    assert "--max-decisions: bounds what an --impl program may take" in alone.stderr
