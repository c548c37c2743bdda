"""Differential exploration: `forge explore --impl CMD` runs every schedule
on the reference too, on the decisions the implementation asked, and a
difference in what the spec fixes is a failure - shrunk, recorded and told
as a diff - with no hand-written check (kit: explore-impl.differential).

The implementations are the reference served over the pipe with a declared
mutant switched on (`FORGE_MUTANT` in the served process only), and
without one (no false alarm).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest
from click.testing import CliRunner

from forge.cli import main

HERE = pathlib.Path(__file__).parent / "differential"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def served(mutant: str | None = None) -> str:
    env = f"env FORGE_MUTANT={mutant} " if mutant else ""
    return f"{env}{sys.executable} -m forge impl-serve --level 2"


def explore(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["explore", *args])
    return done.exit_code, done.output


@pytest.fixture(autouse=True)
def served_from_this_tree(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


#: mutant -> the prompt its bug class shows on.
BUGS = {
    # a timed join whose timeout wins a same-instant tie
    "tie-goes-to-timeout": "tie.md",
    # a join_any that returns the later of two same-instant finishers
    "join-any-last-ended": "first-in-set-order.md",
}


@pytest.mark.parametrize("mutant", sorted(BUGS))
def test_a_planted_bug_is_found_within_200_schedules_without_a_check(tmp_path, mutant):
    """kit: explore-impl.differential; tasks.timeouts.tie-member-wins; tasks.wait.join-any-set-order-tie"""
    replay = tmp_path / "found.replay.json"
    code, out = explore("--impl", served(mutant), str(HERE / BUGS[mutant]), "--runs", "200",
                        "--replay-out", str(replay), "--json")
    assert code == 1, out
    report = json.loads(out)
    assert report["runs"] <= 200
    assert any("differs from the reference" in p for p in report["problems"]), report
    assert report["diff"][0].startswith("the implementation differs from the reference at ")
    assert "touching " in report["diff"][0]
    # The record replays on the implementation (still failing) ...
    code, again = explore("--impl", served(mutant), str(replay))
    assert code == 1, again
    assert "differs from the reference" in again
    # ... and on the reference, whose run of the same choices is compared
    # with the observation the record holds, by the spec's equivalence: the
    # difference shows again (or the other decisions the engine asked).
    done = CliRunner().invoke(main, ["replay", str(replay)])
    assert done.exit_code == 1, done.output
    if any("asked other decisions" in p for p in report["problems"]):
        assert "the recorded engine asked other decisions than the reference does" \
            in done.output, done.output
    else:
        assert "the recorded engine differs from the reference at " in done.output, done.output


@pytest.mark.parametrize("prompt", ["tie.md", "first-in-set-order.md"])
def test_the_reference_served_over_the_pipe_is_no_false_alarm(prompt):
    """kit: explore-impl.differential"""
    code, out = explore("--impl", served(), str(HERE / prompt), "--runs", "200")
    assert code == 0, out
    assert "200 schedules" in out


def test_without_the_differential_the_tie_watcher_still_finds_the_tie(tmp_path):
    """With --no-differential the tie mutant is still found: the watcher
    that sees ties in process reads the engine's steps over the pipe
    (kit: explore-impl.watchers; tasks.timeouts.tie-member-wins)."""
    code, out = explore("--impl", served("tie-goes-to-timeout"), str(HERE / "tie.md"),
                        "--runs", "200", "--no-differential", "--replay-out",
                        str(tmp_path / "r.json"))
    assert code == 1, out
    assert "timeout won the tie with task 0.0" in out
    assert "differs from the reference" not in out


def test_a_known_difference_is_muted(tmp_path):
    """Muting every place the tie mutant changes - its result, and the extra
    decision it asks - leaves only what the watchers see (the tie, on the
    engine's steps); muting only the decisions shows the next difference.
    The file is the expectations format (kit: explore-impl.known-differences)."""
    known = tmp_path / "known.toml"
    known.write_text('result = "fail"\ndecisions = "fail"\n')
    code, out = explore("--impl", served("tie-goes-to-timeout"), str(HERE / "tie.md"),
                        "--runs", "200", "--known-differences", str(known), "--replay-out",
                        str(tmp_path / "r.json"))
    assert code == 1, out
    assert "timeout won the tie" in out and "differs from the reference" not in out
    known.write_text('decisions = "fail"\n')
    code, out = explore("--impl", served("tie-goes-to-timeout"), str(HERE / "tie.md"),
                        "--runs", "200", "--known-differences", str(known), "--replay-out",
                        str(tmp_path / "r.json"))
    assert code == 1, out
    assert "FAILED on the canonical schedule: differs from the reference: result" in out
    known.write_text('result = "skip"\n')
    code, out = explore("--impl", served(), str(HERE / "tie.md"), "--known-differences",
                        str(known))
    assert code == 2
    assert 'marked "fail"' in out


def test_a_repro_of_a_fixed_bug_says_fixed_with_its_own_exit_code(tmp_path):
    """Found on the mutant, replayed on the engine without it: the same
    decisions, no difference - "fixed", exit 4; replayed on the mutant it
    still fails, exit 1 (kit: explore-impl.replay-verdicts)."""
    replay = tmp_path / "found.replay.json"
    code, _ = explore("--impl", served("join-any-last-ended"),
                      str(HERE / "first-in-set-order.md"), "--replay-out", str(replay))
    assert code == 1
    code, out = explore("--impl", served(), str(replay))
    assert code == 4, out
    assert out.splitlines()[1].startswith("fixed: the recorded failure no longer shows (")
    code, out = explore("--impl", served("join-any-last-ended"), str(replay), "--json")
    assert code == 1 and json.loads(out)["verdict"] == "fails"


def test_a_repro_on_an_engine_asking_other_decisions_says_so_in_one_line(tmp_path):
    """The tie mutant asks one more decision than the reference on its
    schedule: replayed on the fixed engine, the drift is one line, and the
    run is still compared as far as it goes (kit: explore-impl.replay-verdicts)."""
    replay = tmp_path / "found.replay.json"
    code, _ = explore("--impl", served("tie-goes-to-timeout"), str(HERE / "tie.md"),
                      "--replay-out", str(replay))
    assert code == 1
    code, out = explore("--impl", served(), str(replay))
    assert code == 1, out
    first, second = out.splitlines()[:2]
    assert first.startswith("drifted: the engine now asks other decisions than the record "
                            "holds: choice ")
    assert second.startswith("no problem on the run as it went")
