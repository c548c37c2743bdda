"""The subprocess adapter against small fake implementations (conformance.adapters)."""

import json
import shlex
import sys
import textwrap

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance.adapters import AdapterError, HelloError, SubprocessAdapter
from forge.conformance.case import Case, HarnessSpec
from forge.conformance.runner import run_suite
from forge.errors import InputError

#: One fake implementation; how it answers a run depends on the case id.
FAKE = textwrap.dedent('''
    import json, sys, time
    with open(sys.argv[1], "a") as f:
        f.write("started\\n")
    def say(msg):
        sys.stdout.write(json.dumps(msg) + "\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            say({"type": "hello", "name": "fake", "features": ["language", "tasks"]})
        elif msg["type"] == "bye":
            break
        elif msg["type"] == "run":
            kind = msg["id"].split("/")[1].rstrip("0123456789")
            print("running", msg["id"], file=sys.stderr, flush=True)
            if kind == "crash":
                print("fatal: the engine fell over", file=sys.stderr, flush=True)
                sys.exit(3)
            if kind == "hang":
                time.sleep(60)
            if kind == "garbage":
                print("this is not json", flush=True)
                continue
            if kind == "decline":
                say({"type": "error", "id": msg["id"], "message": "no fanout here"})
                continue
            say({"type": "observation", "id": msg["id"],
                 "observation": {"outcome": "ok", "result": msg["prompt"], "seed": msg["seed"],
                                 "harness": msg["harness"], "error": None, "logs": [], "events": [], "tasks": {}, "messages": {}, "store": {}, "virtual_time": 0.0}})
''')


def case(case_id, result=None):
    return Case(id=case_id, path=case_id, clauses=("c",), harness=HarnessSpec(args="a b"),
                expect={"outcome": "ok", "result": result or case_id}, prompt=case_id)


@pytest.fixture
def impl(tmp_path):
    """The command line of the fake implementation, and a function counting its starts."""
    script = tmp_path / "fake_impl.py"
    script.write_text(FAKE)
    starts = tmp_path / "starts.log"
    starts.write_text("")
    return [sys.executable, str(script), str(starts)], lambda: len(starts.read_text().split())


def test_a_correct_implementation_answers_hello_and_runs(impl):
    """Handshake, then one observation per run, carrying the prompt, seed and harness."""
    argv, starts = impl
    with SubprocessAdapter(argv, timeout=5) as adapter:
        assert adapter.describe()["name"] == "fake"
        assert adapter.features() == frozenset({"language", "tasks"})
        observation = adapter.run(case("g/ok"), 7)
        assert observation["result"] == "g/ok"
        assert observation["seed"] == 7
        assert observation["harness"]["args"] == "a b"
        assert adapter.run(case("g/ok2"), None)["seed"] is None
    assert starts() == 1


def test_a_crash_errors_the_case_with_stderr_and_the_next_case_restarts(impl):
    """A crashed implementation's case errors with its exit code and stderr tail;
    the next run starts a fresh process."""
    argv, starts = impl
    with SubprocessAdapter(argv, timeout=5) as adapter:
        with pytest.raises(AdapterError) as info:
            adapter.run(case("g/crash"), None)
        assert "crashed while answering case g/crash (exit code 3)" in info.value.reason
        assert info.value.stderr_tail == ("running g/crash", "fatal: the engine fell over")
        assert adapter.run(case("g/ok"), None)["result"] == "g/ok"
    assert starts() == 2


def test_a_hang_times_out(impl):
    """No answer within the timeout errors the case and kills the process."""
    argv, _ = impl
    with SubprocessAdapter(argv, timeout=0.5) as adapter:
        with pytest.raises(AdapterError) as info:
            adapter.run(case("g/hang"), None)
        assert "timed out after 0.5 s waiting for the answer to case g/hang" in info.value.reason
        assert adapter.run(case("g/ok"), None)["result"] == "g/ok"


def test_garbage_on_stdout_errors_the_case(impl):
    """A line that is not JSON is a protocol fault, quoted in the reason."""
    argv, _ = impl
    with SubprocessAdapter(argv, timeout=5) as adapter:
        with pytest.raises(AdapterError) as info:
            adapter.run(case("g/garbage"), None)
        assert ("sent a line that is not JSON while answering case g/garbage: "
                "'this is not json'") in info.value.reason


def test_a_declined_run_keeps_the_process(impl):
    """An `error` answer errors the case with the implementation's message, no restart."""
    argv, starts = impl
    with SubprocessAdapter(argv, timeout=5) as adapter:
        with pytest.raises(AdapterError) as info:
            adapter.run(case("g/decline"), None)
        assert info.value.reason == "the implementation reported an error: no fanout here"
        adapter.run(case("g/ok"), None)
    assert starts() == 1


def test_a_bad_handshake_is_an_adapter_error(tmp_path):
    """An implementation that answers hello wrongly cannot be used."""
    script = tmp_path / "rude.py"
    script.write_text("import sys\nsys.stdin.readline()\nprint('{\"type\": \"howdy\"}', flush=True)\n")
    adapter = SubprocessAdapter([sys.executable, str(script)], timeout=5)
    with adapter, pytest.raises(AdapterError, match='answered the handshake with {"type": "howdy"}'):
        adapter.features()


def test_a_missing_program_is_an_adapter_error(tmp_path):
    """A command that cannot start is reported, not raised as OSError."""
    with pytest.raises(AdapterError, match="cannot start implementation"):
        SubprocessAdapter([str(tmp_path / "nope")]).start()


def test_the_suite_survives_every_kind_of_fault(impl):
    """Crash, hang and garbage each error one case; the others pass."""
    argv, _ = impl
    cases = [case("g/ok1"), case("g/crash"), case("g/ok2"), case("g/hang"), case("g/garbage"),
             case("g/ok3"), case("g/ok4", result="something else")]
    report = run_suite(cases, lambda: SubprocessAdapter(argv, timeout=0.5))
    assert [r.status for r in report.results] == [
        "passed", "errored", "passed", "errored", "errored", "passed", "failed"]
    assert report.summary_line() == "3 passed, 1 failed, 3 errored, 0 skipped"


def test_threads_each_get_their_own_process(impl):
    """With workers, each thread borrows its own implementation process."""
    argv, starts = impl
    cases = [case(f"g/ok{i}") for i in range(8)]
    report = run_suite(cases, lambda: SubprocessAdapter(argv, timeout=5), workers=3)
    assert report.summary_line() == "8 passed, 0 failed, 0 errored, 0 skipped"
    assert 1 <= starts() <= 3


#: An implementation whose hello is argv[1] (JSON) and whose answer to every
#: run is argv[2] (JSON, with ID standing for the run's id).
SCRIPTED = textwrap.dedent('''
    import json, sys
    hello, answer = sys.argv[1], sys.argv[2]
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "hello":
            print(hello, flush=True)
        elif msg["type"] == "run":
            print(answer.replace("ID", msg["id"]), flush=True)
        else:
            break
''')

GOOD_HELLO = {"type": "hello", "name": "s", "features": ["language", "tasks"]}


def scripted(tmp_path, hello=GOOD_HELLO, answer=None):
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPTED)
    return [sys.executable, str(script), json.dumps(hello), json.dumps(answer or {})]


@pytest.mark.parametrize("hello, words", [
    ({**GOOD_HELLO, "features": ["tasks", "langauge"]},
     'sent a hello naming an unknown feature at /features/1: "langauge" '
     "(did you mean `language`?); the features are language, store, tasks,"),
    ({**GOOD_HELLO, "level": 3},
     "sent a hello that breaks protocol.schema.json at /level: must be one of `1`, `2`, got 3"),
    ({**GOOD_HELLO, "features": ["tasks", "tasks"]},
     'at /features: lists "tasks" twice'),
    ({**GOOD_HELLO, "protocol": 2}, "speaks protocol 2; this kit speaks 1"),
    ({"type": "hello", "name": "s"}, "at /: missing required field `features`"),
])
def test_a_hello_that_breaks_the_protocol_stops_the_suite_as_bad_input(tmp_path, hello, words):
    """A misspelt feature made every case a skip and the run green (0 passed, 445
    skipped, exit 0), and `"level": 3` was taken for level 1: the hello is checked
    against protocol.schema.json and the feature names, and `forge conformance`
    refuses it in one line naming --impl, exit 2, running no case (kit: protocol.hello)."""
    argv = scripted(tmp_path, hello)
    with SubprocessAdapter(argv, timeout=5) as adapter, pytest.raises(HelloError) as info:
        adapter.start()
    assert words in info.value.reason
    assert isinstance(info.value, InputError)     # what forge.api callers catch
    with pytest.raises(HelloError):
        run_suite([case("g/ok")], lambda: SubprocessAdapter(argv, timeout=5))
    result = CliRunner().invoke(main, ["conformance", "--impl", shlex.join(argv),
                                       "-k", "^examples/two-tasks$"])
    assert result.exit_code == 2
    assert result.stderr.startswith("forge: --impl: implementation `")
    assert words in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""


@pytest.mark.parametrize("answer, reason", [
    ({"type": "error", "id": "ID"},
     "the implementation reported an error without its `message` field"),
    ({"type": "error", "id": "ID", "message": None},
     "the implementation reported an error whose `message` is not a string: null"),
    ({"type": "observation", "id": "ID"},
     "sent an observation message for case g/ok without its `observation` field"),
])
def test_a_missing_field_is_named_not_shown_as_none(tmp_path, answer, reason):
    """An error without `message` read `reported an error: None`, an observation
    message without `observation` read `not a JSON object: null` (kit: protocol.errors)."""
    with SubprocessAdapter(scripted(tmp_path, answer=answer), timeout=5) as adapter:
        with pytest.raises(AdapterError) as info:
            adapter.run(case("g/ok"), None)
    assert info.value.reason.endswith(reason)
    assert "None" not in info.value.reason
