"""The features an implementation declares, and what a case needs.

An implementation's hello lists the features it has; the runner skips a case
needing one it lacks, with the reason.  The features split the Tasks chapter
from what it builds on, so an engine without models, tools or a store can
still run every case it could pass:

    language     sections and Lua blocks, the walk, `call`, `jump`, prose
                 substitution, `argv`, `sys.*`, `list_from_section`
    store        the store operations (`store.write`, `store.read`, ...) and a
                 case's seeded store files and refusals
    tasks        the chapter's Lua built-ins (`tasks.spawn`, `tasks.join`, ...)
    fanout       `fanout(TARGET, LIST)`
    models       model sections on a scripted model (`models.*`, `messages.*`,
                 a `models:` frontmatter, `model_script`)
    tools        local tools a section offers the model (`tools.add_local`,
                 `tools.call`)
    operator     `input.ask` answered by an operator script
    tasks-model  the model's task built-ins (`tools.allow_tasks()`, a scripted
                 call of `task`, `task_cancel`, `task_status`, `await_tasks`)
    lifecycle    the task lifecycle manager (cases of operations, no prompt)

`needs(case)` reads what a case uses from its prompt's code and its harness;
`tests/conformance/test_case_features.py` holds every shipped case to
declaring at least that, so no case can hide a dependency behind `tasks`.
The detection is textual (the prompt is not run), so it errs towards
needing more: a word in prose that looks like a call counts.

What does not live here: skipping (`adapters.Adapter.skip_reason`) and the
clause catalogue's own `feature` groups (`forge.spec`), which sort clauses
for coverage, not implementations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from forge.engine.tools import BUILTINS
from forge.run.options import MODEL_SCRIPT, OPERATOR_SCRIPT, REFUSE, STORE, TOOL_SCRIPT

#: Every feature name, in the order docs and reports list them, with what it
#: covers (`forge conformance --help` lists the names; docs/cases.md the table).
FEATURES: Mapping[str, str] = {
    "language": "sections and Lua blocks, the walk, call, jump, prose substitution, "
                "argv, sys.*, list_from_section",
    "store": "the store operations and a case's seeded store files and refusals",
    "tasks": "the Tasks chapter's Lua built-ins (tasks.spawn, tasks.join, ...)",
    "fanout": "fanout(TARGET, LIST)",
    "models": "model sections on a scripted model (models.*, messages.*, model_script)",
    "tools": "local tools a section offers the model (tools.add_local, tools.call)",
    "operator": "input.ask answered by an operator script",
    "tasks-model": "the model's task built-ins task, task_cancel, task_status, await_tasks",
    "lifecycle": "the task lifecycle manager (cases of operations, no prompt)",
}

#: The model's task built-ins (named once, by the engine); a scripted call of
#: one needs `tasks-model`.
_MODEL_BUILTINS = frozenset(BUILTINS)

#: (feature, what in a prompt's text uses it): a built-in named as code, a
#: call or a value (`pcall(tasks.spawn, ...)`).  `_NAME` ends where a dotted
#: word in prose would go on (`tasks.spawn.returns-handle` is a clause id).
_NAME = r"[a-z_]+\b(?![.\-])"
_USES = (
    ("store", re.compile(rf"\bstore\.{_NAME}")),
    ("tasks", re.compile(rf"\btasks\.{_NAME}")),
    ("fanout", re.compile(r"\bfanout\s*[(,)]")),
    ("models", re.compile(rf"\b(?:models|messages)\.{_NAME}|^models:", re.MULTILINE)),
    ("tools", re.compile(r"\btools\.(?:add_local|call)\b")),
    ("operator", re.compile(r"\binput\.ask\b")),
    ("tasks-model", re.compile(r"\btools\.allow_tasks\b")),
)


def needs(prompt: str | None, harness: Mapping[str, Any], lifecycle: bool = False) -> set[str]:
    """The features a case with this prompt and harness uses."""
    if lifecycle:
        return {"lifecycle"}
    found = {"language"}
    text = prompt or ""
    found.update(feature for feature, pattern in _USES if pattern.search(text))
    if STORE.of(harness) or REFUSE.of(harness):
        found.add("store")
    script = MODEL_SCRIPT.of(harness)
    if script:
        found.add("models")
        if _calls_builtin(script):
            found.add("tasks-model")
    if OPERATOR_SCRIPT.of(harness):
        found.add("operator")
    if TOOL_SCRIPT.of(harness):
        found.add("tools")
    return found


def _calls_builtin(script: Any) -> bool:
    """Whether a model script's replies call one of the model's task built-ins."""
    if isinstance(script, Mapping):
        call_name = script.get("name")
        if isinstance(call_name, str) and call_name in _MODEL_BUILTINS and "arguments" in script:
            return True
        return any(_calls_builtin(value) for value in script.values())
    if isinstance(script, list):
        return any(_calls_builtin(value) for value in script)
    return False

