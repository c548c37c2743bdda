"""The lifecycle's one action vocabulary: how a run's report is named, alike
in scenario actors (``actors``) and lifecycle cases (the conformance adapter).

A run reports its ending with ``run_completes``, ``run_fails``,
``run_pauses`` (an approval it waits on) or ``run_cancelled``; its text is
``result`` and a failure's message ``error``. The ``run_`` prefix says who
acts: a person's ``stop`` is another action, and the seed's own summary of
task_stop is "Cancel one".

Lives here: ``RUN_ENDINGS`` (action -> the status the run reports), the
earlier scenario spellings (``complete``, ``fail``, ``pause``; ``text``,
``err``) and ``modern``, which reads an old spelling as the current one and
says so. Does not live here: what an action does (``actors``, the adapter),
the file formats that name actions (``scenario``, docs/cases.md).
"""

from __future__ import annotations

from typing import Any

#: action -> the status value the run reports.
RUN_ENDINGS = {"run_completes": "completed", "run_fails": "failed",
               "run_pauses": "input_required", "run_cancelled": "cancelled"}
#: The scenario actions' names before the vocabulary was one.
OLD_ACTIONS = {"complete": "run_completes", "fail": "run_fails", "pause": "run_pauses"}
#: Their parameters' old names (an ending's text and error).
OLD_PARAMS = {"text": "result", "err": "error"}


def modern(name: str, params: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """``(name, params, renamed)``: an old spelling read as the current one;
    ``renamed`` lists each rename as ``old -> new`` (empty when none)."""
    if name not in OLD_ACTIONS:
        return name, params, []
    new = OLD_ACTIONS[name]
    renamed = [f"{name} -> {new}"]
    out = {}
    for key, value in params.items():
        if key in OLD_PARAMS:
            renamed.append(f"{key} -> {OLD_PARAMS[key]}")
            key = OLD_PARAMS[key]
        out[key] = value
    return new, out, renamed
