"""`forge replay` of an engine under test's record compares by the spec's
equivalence (docs/observation.md, "Equivalence"; kit: equivalence.contract).

A record `forge explore --impl` writes holds the engine's observation, the
part the equivalence compares; `forge replay FILE` runs the reference on
the recorded choices and compares its observation with that one - a
difference fails the replay with the diff, implementation-defined detail
never does, and other decisions than the engine asked are said in one line.
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.conformance import equivalence
from forge.errors import InputError
from forge.run.record import read_replay

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
SKETCH = f"{sys.executable} {HERE / 'sketch_engine.py'}"


@pytest.fixture(autouse=True)
def served_from_this_tree(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def found(tmp_path: pathlib.Path, bug: str, prompt: str, *flags: str) -> pathlib.Path:
    """The replay file `forge explore --impl` writes for the sketch with `bug`."""
    replay = tmp_path / "found.replay.json"
    done = CliRunner().invoke(main, ["explore", "--impl", f"{SKETCH} --bug {bug}",
                                     str(HERE / "differential" / prompt), *flags, "--runs", "200",
                                     "--replay-out", str(replay)])
    assert done.exit_code == 1, done.output
    return replay


def replay(path: pathlib.Path) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["replay", str(path)])
    return done.exit_code, done.output


def test_a_difference_the_record_holds_fails_the_replay_on_the_reference(tmp_path):
    path = found(tmp_path, "join-any-latest", "first-in-set-order.md")
    recorded = json.loads(path.read_text())["observation"]
    assert set(recorded) == set(equivalence.FIELDS)
    code, out = replay(path)
    assert code == 1, out
    assert "the recorded engine differs from the reference at result, touching " \
           "tasks.spawn.result-is-section-return" in out
    assert '  - "alpha"\n  + "beta"' in out


def test_other_decisions_are_one_line_and_the_comparison_goes_on(tmp_path):
    path = found(tmp_path, "cancel-forgets-queued", "cancel-queued.md", "--concurrency", "1")
    code, out = replay(path)
    assert code == 1, out
    assert "the recorded engine asked other decisions than the reference does, at choice " in out
    assert "drifted from the record" not in out


def test_implementation_defined_detail_never_fails_the_replay(tmp_path):
    """The record's observation replaced by the reference's own run, with
    its implementation-defined detail changed (seq numbering, boundary
    events, an empty table's shape): the replay passes."""
    path = found(tmp_path, "join-any-latest", "first-in-set-order.md")
    data = json.loads(path.read_text())
    done = CliRunner().invoke(main, ["replay", str(path), "--json", "-"])
    ours = json.loads(done.output.split("\n", 1)[0] if done.output.startswith("{") else
                      done.output[:done.output.rindex("}") + 1])
    ours["events"] = [{**e, "provenance": {**e["provenance"], "seq": 10 * e["provenance"]["seq"]}}
                      for e in ours["events"] if not e["kind"].startswith(("run_", "section_"))]
    for e in ours["events"]:
        if e.get("var") == {}:
            e["var"] = []
    data["observation"] = equivalence.normative(ours)
    path.write_text(json.dumps(data))
    code, out = replay(path)
    assert code == 0, out
    assert "the reference's run is the recorded engine's behaviour by the spec's equivalence" \
        in out


def test_normative_twice_is_normative_once_and_keeps_who_started_a_task():
    obs = {"outcome": "ok", "result": "x", "error": None, "logs": [], "store": {},
           "messages": {}, "tasks": {"0.0.0": {"state": "done", "note": None}},
           "events": [{"kind": "task_started", "task": "0.0.0", "section": "Helper",
                       "execution": "r", "provenance": {"task": "0", "seq": 3}, "var": []}]}
    once = equivalence.normative(obs)
    assert equivalence.normative(once) == once
    moved = json.loads(json.dumps(obs))
    moved["events"][0]["provenance"]["task"] = "0.0"
    assert [d.place for d in equivalence.compare(obs, moved)] == ["events"]


def test_a_recorded_observation_is_checked_when_the_file_is_read(tmp_path):
    path = found(tmp_path, "join-any-latest", "first-in-set-order.md")
    data = json.loads(path.read_text())
    del data["observation"]["store"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"\$\.observation\.store: missing"):
        read_replay(str(path))
    data = json.loads((tmp_path / "found.replay.json").read_text())
    data["observation"]["store"] = {}
    data["trace_sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="only a record of an engine under test"):
        read_replay(str(path))


def test_the_api_shows_the_differences_forge_replay_prints(tmp_path):
    """`forge.replay` of an engine under test's record: `engine` is a
    frozen value with each normative difference (place, both sides, the
    clauses it touches), the one line on other decisions, and the diff
    `forge replay` prints; None for a record of the reference."""
    import copy
    import pickle

    import attrs

    import forge

    path = found(tmp_path, "join-any-latest", "first-in-set-order.md")
    report = forge.replay(path)
    engine = report.engine
    assert isinstance(engine, forge.EngineComparison) and not engine.same
    first = engine.differences[0]
    assert (first.place, first.reference, first.engine) == ("result", "alpha", "beta")
    assert first.clauses == ("tasks.spawn.result-is-section-return", "tasks.wait.join-entries")
    assert engine.other_decisions is None
    code, out = replay(path)
    assert code == 1 and all(line in out for line in engine.diff)
    assert engine.diff[0].startswith("the recorded engine differs from the reference at result")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        engine.diff = ()  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(report)).engine == engine == copy.deepcopy(engine)
    assert json.loads(report.to_json())["engine"]["differences"][0] == {
        "place": "result", "reference": "alpha", "engine": "beta", "index": None,
        "clauses": ["tasks.spawn.result-is-section-return", "tasks.wait.join-entries"]}

    drifted = forge.replay(found(tmp_path, "cancel-forgets-queued", "cancel-queued.md",
                                 "--concurrency", "1")).engine
    assert drifted is not None and not drifted.same
    assert drifted.other_decisions is not None and drifted.other_decisions.startswith(
        "the recorded engine asked other decisions than the reference does, at choice ")
    assert drifted.diff[0] == drifted.other_decisions

    ours = tmp_path / "ours.replay.json"
    forge.run_prompt(HERE / "differential" / "first-in-set-order.md", replay_out=ours)
    assert forge.replay(ours).engine is None
