"""Differential fuzzing through level 2 (kit: differential-fuzz).

Random task programs run on the reference and on an implementation under one
schedule; the reference served over the pipe never differs, a mutant served
over the pipe does, and the shrunk difference comes back as a case file that
passes on the reference and kills the mutant.
"""

import pathlib
import subprocess
import sys

import pytest

from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter
from forge.conformance.case import load_cases
from forge.conformance.equivalence import KnownDifferences
from forge.conformance.fuzz import case_text, differences, fuzz
from forge.conformance.mutants import by_id
from forge.conformance.runner import run_suite

SERVE2 = [sys.executable, "-m", "forge", "impl-serve", "--level", "2"]
MUTANT = "tie-goes-to-timeout"


def test_the_reference_over_the_pipe_never_differs():
    """40 programs, each under its own drawn schedule: no difference."""
    with SubprocessAdapter(SERVE2, timeout=60) as remote:
        report = fuzz(remote, 40, seed=3)
    assert report.difference is None and report.programs == 40 and report.shrink_runs == 0


def test_a_mutant_over_the_pipe_differs_and_the_shrunk_case_kills_it(tmp_path):
    """The mutant differs within 200 programs; the case file written from the shrunk
    difference loads and passes on the reference, and when the difference shows on
    the canonical schedule the case fails on the mutant (a case names no schedule,
    so one found only on another schedule is named in its description instead)."""
    with SubprocessAdapter(["env", f"FORGE_MUTANT={MUTANT}", *SERVE2], timeout=60) as remote:
        report = fuzz(remote, 200, seed=1)
    found = report.difference
    assert found is not None and found.fields and report.shrink_runs > 0
    assert found.program.count("### W") <= 3      # shrunk towards few workers
    folder = tmp_path / "cases" / "fuzz"
    folder.mkdir(parents=True)
    text = case_text(found, 1)
    (folder / "found.toml").write_text(text)
    cases = load_cases(tmp_path / "cases")
    assert run_suite(cases, InProcessAdapter).summary_line().startswith("1 passed")
    if any(found.answers):
        assert f"decisions answer {list(found.answers)}" in text and found.canonical is not None
    else:
        with by_id()[MUTANT].applied():
            assert run_suite(cases, InProcessAdapter).summary_line().startswith("0 passed, 1 failed")


#: Mutants the fuzzer's earlier generators missed in 100 or 1000 programs (it
#: waited only on live tasks, never twice on a cancelled one, logged no ids,
#: called no chain, nested nothing deep, had no model and re-raised nothing).
SURVIVED_BEFORE = ["double-delivery", "join-any-last-ended", "cancelled-is-consumed",
                   "timed-join-drops-finished", "join-duplicates-consume", "ids-per-section",
                   "timed-wait-takes-no-index", "untimed-wait-takes-index", "ids-string-order",
                   "call-takes-no-index", "taskid-in-call-is-chain", "h1-takes-no-entry",
                   "depth-cap-off-by-one", "task-runs-target-only", "model-tasks-leak",
                   "model-cancel-queues-notice", "ready-false-when-cancelled",
                   "reraise-not-rebuilt"]


@pytest.mark.parametrize("mutant", SURVIVED_BEFORE)
def test_the_fuzzer_finds_each_mutant_that_survived_it_before(mutant):
    """Within 500 programs (seed 0, unshrunk) the served mutant differs from the reference
    (tasks.wait.join-any-set-order-tie, tasks.cancel.rewait-no-consumed,
    tasks.timeouts.join-timed-out, tasks.ids.one-child-counter, tasks.spawn-errors.depth-cap)."""
    with SubprocessAdapter(["env", f"FORGE_MUTANT={mutant}", *SERVE2], timeout=60) as remote:
        report = fuzz(remote, 500, seed=0, shrink=False)
    # Unshrunk: the only runs after the finding are Hypothesis replaying it
    # once and, off the canonical schedule, the one check on it.
    assert report.difference is not None and report.shrink_runs <= 2, mutant


def test_a_model_program_difference_is_written_with_its_model_script(tmp_path):
    """A mutant of the model's task built-ins differs on a program where the model
    starts tasks; the case written from it carries the model script, loads, passes
    on the reference and fails on the mutant (tasks.leak.model-tasks-excluded)."""
    mutant = "model-tasks-leak"
    with SubprocessAdapter(["env", f"FORGE_MUTANT={mutant}", *SERVE2], timeout=60) as remote:
        report = fuzz(remote, 500, seed=0, shrink=False)
    found = report.difference
    assert found is not None and found.model is not None
    folder = tmp_path / "cases" / "fuzz"
    folder.mkdir(parents=True)
    (folder / "found.toml").write_text(case_text(found, 0))
    cases = load_cases(tmp_path / "cases")
    assert cases[0].harness.model_script == found.model
    assert run_suite(cases, InProcessAdapter).summary_line().startswith("1 passed")
    with by_id()[mutant].applied():
        assert run_suite(cases, InProcessAdapter).summary_line().startswith("0 passed, 1 failed")


def test_differences_name_the_first_differing_entry():
    """Events differ at their first unequal normative event, tasks at each
    unequal field; the trace hash and seq numbers are never compared."""
    def started(task, seq):
        return {"kind": "task_started", "execution": "r", "section": "Main",
                "provenance": {"task": "0", "seq": seq}, "task": task, "target": "W",
                "origin": "author"}
    a = {"events": [started("0.0", 1), started("0.1", 2)],
         "tasks": {"0.0": {"state": "done"}, "0.1": {"state": "done"}}, "trace_sha256": "a"}
    b = {"events": [started("0.0", 4), started("0.2", 9)],
         "tasks": {"0.0": {"state": "done"}, "0.1": {"state": "cancelled"}}, "trace_sha256": "b"}
    lines = differences(a, b)
    assert lines[0].startswith('events[1]: reference {"kind": "task_started", "origin": "author", '
                               '"provenance": {"task": "0"}, "section": "Main", "target": "W", '
                               '"task": "0.1"}')
    assert lines[1] == 'tasks.0.1.state: reference "done" != implementation "cancelled"'
    assert len(lines) == 2


def test_fuzz_flags_refuse_what_cannot_be_compared():
    """--fuzz without --impl, or with a level-1 implementation, is bad input (exit 2)."""
    forge = [sys.executable, "-m", "forge", "conformance"]
    alone = subprocess.run([*forge, "--fuzz", "3"], capture_output=True, text=True, timeout=60)
    assert alone.returncode == 2 and "--fuzz" in alone.stderr and "--impl" in alone.stderr
    level1 = subprocess.run([*forge, "--impl", "forge impl-serve", "--fuzz", "3"],
                            capture_output=True, text=True, timeout=60)
    assert level1.returncode == 2 and "speaks level 1" in level1.stderr


PARTIAL = [sys.executable, str(pathlib.Path(__file__).parent / "partial_engine.py")]


def test_a_partial_engine_is_fuzzed_with_its_known_differences_muted(tmp_path):
    """A partial engine (no `models`, no `effects`/`rounds`/boundary events,
    seq gaps, its own virtual times, no `depth`): the fuzzer sends it no
    model program, calls only the missing `depth` a difference, and with
    that muted the reference behind it passes; the same filter over a
    mutant then shows the planted difference behind the muted one
    (kit: differential-fuzz.partial; tasks.status.depth)."""
    with SubprocessAdapter([*PARTIAL, *SERVE2], timeout=60) as remote:
        unmuted = fuzz(remote, 30, seed=3, shrink=False)
    assert unmuted.difference is not None
    assert all(".depth:" in line for line in unmuted.difference.fields), unmuted.difference.fields
    known = tmp_path / "known.toml"
    known.write_text('"tasks.*.depth" = "fail"\n')
    muted = KnownDifferences.load(str(known))
    with SubprocessAdapter([*PARTIAL, *SERVE2], timeout=60) as remote:
        report = fuzz(remote, 60, seed=3, known=muted)
    assert report.difference is None and report.programs == 60
    with SubprocessAdapter([*PARTIAL, "env", f"FORGE_MUTANT={MUTANT}", *SERVE2],
                           timeout=60) as remote:
        planted = fuzz(remote, 200, seed=1, known=muted)
    assert planted.difference is not None
    assert not any(".depth:" in line for line in planted.difference.fields)
