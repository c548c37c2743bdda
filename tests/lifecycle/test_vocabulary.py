"""One lifecycle action vocabulary (issue 27 item 7): a run's report has the
same name and the same parameter names in scenario actors and in lifecycle
cases; the old scenario spellings are only read, never offered."""

from __future__ import annotations

from forge.conformance.lifecycle_adapter import _OPS

from forge.lifecycle.actors import ACTIONS
from forge.lifecycle.vocabulary import OLD_ACTIONS, OLD_PARAMS, RUN_ENDINGS, modern


def test_a_runs_report_is_named_alike_in_actors_and_cases():
    for name, status in RUN_ENDINGS.items():
        assert name in ACTIONS and name in _OPS, name
        case_keys = set(_OPS[name][0] + _OPS[name][1])
        # what the report carries (its text, its error) is spelled alike
        for key in ("result", "error"):
            assert (key in ACTIONS[name]) == (key in case_keys), (name, key)
        assert status in ("completed", "failed", "input_required", "cancelled")
    assert not set(OLD_ACTIONS) & set(ACTIONS) and not set(OLD_ACTIONS) & set(_OPS)


def test_old_spellings_map_onto_the_vocabulary():
    assert set(OLD_ACTIONS.values()) <= set(RUN_ENDINGS)
    assert modern("fail", {"err": "e", "text": "t", "run": "first"}) == (
        "run_fails", {"error": "e", "result": "t", "run": "first"},
        ["fail -> run_fails", "err -> error", "text -> result"])
    assert modern("stop", {"graceful": True}) == ("stop", {"graceful": True}, [])
    assert set(OLD_PARAMS.values()) <= set(ACTIONS["run_fails"])
