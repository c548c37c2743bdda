"""Decision cases: cases whose `[expect] decisions` lists the decisions a
level-2 engine asks on the canonical schedule (docs/protocol.md, "Decision
cases"), so a porter learns the decision points from failing cases
(kit: protocol.decision-points).

They pass on the reference, in process and served at level 2; a level-1
engine skips them with the reason; an engine that asks one decision more
or less fails them, naming the first that differs; and each worked
exchange of docs/protocol.md is the decisions of a case.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

from forge.conformance.adapters import InProcessAdapter, SubprocessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, load_case, load_cases
from forge.conformance.mutants import find
from forge.conformance.runner import FAILED, PASSED, SKIPPED, run_case
from forge.errors import InputError

from test_decision_points import exchanges

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "forge", "impl-serve"]
CASES = [c for c in load_cases(DEFAULT_CASES_DIR) if "decisions" in c.expect]


def test_there_are_decision_cases_for_each_rule_of_the_page():
    names = {c.id for c in CASES}
    assert len(CASES) >= 12
    assert {"decisions/call-queues-behind-ready", "decisions/timed-wait-tie-options",
            "decisions/queued-admitted-in-order", "decisions/store-ops",
            "decisions/cancel-queued", "decisions/completions-one-at-a-time",
            "decisions/timer-no-decision", "decisions/spawn-in-call"} <= names


def test_every_decision_case_passes_on_the_reference_in_process_and_served(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    adapter = InProcessAdapter()
    assert all(run_case(adapter, c).status == PASSED for c in CASES)
    with SubprocessAdapter([*SERVE, "--level", "2"]) as served:
        results = [run_case(served, c) for c in CASES]
    assert [(r.case_id, r.problems) for r in results if r.status != PASSED] == []


def test_a_level_1_engine_skips_them_saying_why(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with SubprocessAdapter(SERVE) as served:
        result = run_case(served, CASES[0])
    assert result.status == SKIPPED
    assert result.problems == ("the case checks the decisions a level-2 engine asks, and "
                               "this implementation speaks level 1",)


@pytest.mark.parametrize("mutant,case", [
    ("no-concurrency-limit", "decisions/queued-admitted-in-order"),
    ("writes-land-late", "decisions/store-ops"),
    ("waiting-task-keeps-slot", "decisions/wait-releases-slot"),
    ("tie-goes-to-timeout", "decisions/timed-wait-tie-options"),
])
def test_an_engine_asking_other_decisions_fails_naming_the_first(mutant, case, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    chosen = next(c for c in CASES if c.id == case)
    with SubprocessAdapter(["env", f"FORGE_MUTANT={mutant}", *SERVE, "--level", "2"]) as served:
        result = run_case(served, chosen)
    assert result.status == FAILED
    assert any(p.startswith("decisions") for p in result.problems), result.problems
    with find(mutant, "FORGE_MUTANT").applied():
        assert run_case(InProcessAdapter(), chosen).status == FAILED


def test_each_worked_exchange_of_the_page_is_a_cases_decisions():
    by_prompt = {c.prompt: c for c in CASES}
    for head, lines in exchanges():
        prompt = (ROOT / head.split()[1]).read_text()
        case = by_prompt[prompt]
        assert [f"{d} -> 0" for d in case.expect["decisions"]] == lines, case.id
        concurrency = head.split("--concurrency ")[1] if "--concurrency" in head else "8"
        assert case.harness.concurrency == int(concurrency)


def test_a_decision_case_cannot_be_any_schedule(tmp_path):
    text = (ROOT / "conformance/cases/decisions/spawn-join.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('features = ', 'flags = ["any-schedule"]\nfeatures = '))
    with pytest.raises(InputError, match="cannot be flagged `any-schedule`"):
        load_case(bad)
