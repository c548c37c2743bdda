"""How a failure ends a chain, and how a chain failure ends a run.

A chain fails with a Lua value: a host error value (a table with `kind` and
`message`, built by the engine) or whatever else the prompt raised (a string
with its `location:line:` prefix, or a table of its own).  `Failure` is that
value seen from Python.  `RunError` is the run-level classification: the run
error kind (`Lua`, `Vfs`, `RequirementsUnmet`, ...) with its message and the
value's fields.

The spec's run error kinds follow the value's kind: `lua` and the task
misuse kinds end as `Lua`, `store` as `Vfs`, tool kinds as `Tool`, and so on;
in the H1 pass, a failure that would end as `Lua` ends as
`RequirementsUnmet` instead.  `Budget` is the kit's own kind for a run that
exhausted the harness's instruction budget or Lua memory.
"""

from __future__ import annotations

from typing import Any

import attrs

from forge.variation import declare

#: Error value kind -> run error kind when it ends the run uncaught.
RUN_KIND = {
    "lua": "Lua",
    "store": "Vfs",
    "tasks_live": "Lua",
    "task_not_owned": "Lua",
    "task_consumed": "Lua",
    "cancelled": "Lua",
    "tool": "Tool",
    "tool_loop_exhausted": "Tool",
    "out_of_scope_tool": "Tool",
    "unbound_tool": "Tool",
    "empty_model_reply": "Completion",
    "context_exhausted": "ContextExhausted",
    "internal": "Completion",
}

#: The missing-model error's message starts so; uncaught it ends the run as
#: `Binding` rather than `Completion`.
MISSING_MODEL = "model binding required for section "

#: Kinds that keep their run kind in the H1 pass instead of becoming
#: RequirementsUnmet, when they end the run as they were first raised.
H1_KEEPS = frozenset({"tasks_live", "task_not_owned", "task_consumed", "cancelled", "store", "tool",
                      "tool_loop_exhausted", "out_of_scope_tool", "unbound_tool",
                      "empty_model_reply", "context_exhausted", "internal"})

#: A value raised again after another suspending call is rebuilt from its
#: kind: these kinds keep a run kind of their own; every other kind
#: (`out_of_scope_tool`, `unbound_tool`, `tasks_live`, `lua`, `internal`)
#: is rebuilt as `Lua`.  `cancelled` is the cancelled outcome instead.
REBUILT_KIND = {
    "tool_loop_exhausted": "Tool",
    "tool": "Tool",
    "empty_model_reply": "Completion",
    "context_exhausted": "ContextExhausted",
    "store": "Vfs",
    "task_not_owned": "Lua",
    "task_consumed": "Lua",
}

#: Rebuilt kinds that stay `Lua` in the H1 pass too (task misuse with its task).
REBUILT_H1_KEEPS = frozenset({"task_not_owned", "task_consumed"})

#: The fields a value of each kind carries; a rebuilt value missing one is
#: rebuilt as `Lua` whatever its kind.
KIND_FIELDS = {
    "context_exhausted": ("reason",),
    "store": ("reason",),
    "tasks_live": ("tasks",),
    "task_not_owned": ("task",),
    "task_consumed": ("task",),
    "out_of_scope_tool": ("name",),
    "unbound_tool": ("name",),
}


REBUILT_IGNORED = declare("errors.reraise-not-rebuilt", "errors",
                          "a value raised again after another suspending call keeps the kind it "
                          "had when first raised (only cancelled is told apart)")


@attrs.frozen
class Failure:
    """A chain's failure, as data.

    `kind` is the host error value's kind, or None for a value the prompt
    raised itself (a runtime error string or a table of its own).
    """

    kind: str | None
    message: str
    fields: tuple[tuple[str, str], ...] = ()
    #: The Lua value itself, to hand to a caller or a wait unchanged.
    value: Any = attrs.field(default=None, eq=False, repr=False)
    #: Whether the value was raised again after another suspending call.
    stale: bool = False
    #: The run must end with this classification whoever catches it
    #: (instruction budget, memory, uncatchable jump or store conflict).
    fatal_kind: str | None = None

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)


@attrs.frozen
class RunError:
    kind: str
    message: str
    fields: dict = attrs.field(factory=dict)

    def to_json(self) -> dict:
        out = {"kind": self.kind, "message": self.message}
        out.update(sorted(self.fields.items()))
        return out


#: A refused log call caught by pcall reads as a budget; left uncaught it
#: ends the run as a Quota failure with the quota's own wording.
QUOTA_MESSAGES = {
    "lua log event budget exceeded": "lua log event quota exceeded",
    "lua log cumulative byte budget exceeded": "lua log byte quota exceeded",
}


def classify(failure: Failure, in_h1: bool) -> tuple[str, RunError | None]:
    """The run outcome and error for a failure that ends the main walk.

    A value raised as it was first raised ends the run by `RUN_KIND` (and the
    H1 gate turns the plain Lua failures into `RequirementsUnmet`).  A value
    raised again after another suspending call (`stale`) is rebuilt from its
    kind (`REBUILT_KIND`), and the H1 gate applies to what is rebuilt as
    `Lua`, except task misuse that still names its task.
    """
    fields = dict(failure.fields)
    if failure.fatal_kind:
        return "failed", RunError(failure.fatal_kind, failure.message, fields)
    kind = failure.kind
    if kind == "lua" and failure.message in QUOTA_MESSAGES:
        return "failed", RunError("Quota", QUOTA_MESSAGES[failure.message])
    if kind is None:
        run_kind, gated = "Lua", True
    elif failure.stale and not REBUILT_IGNORED.on:
        fields["value_kind"] = kind
        if kind == "cancelled":
            return "cancelled", RunError("Cancelled", failure.message, fields)
        complete = all(name in fields for name in KIND_FIELDS.get(kind, ()))
        run_kind = REBUILT_KIND.get(kind, "Lua") if complete else "Lua"
        gated = run_kind == "Lua" and not (complete and kind in REBUILT_H1_KEEPS)
    elif kind == "cancelled" and failure.stale:
        fields["value_kind"] = kind           # (only under errors.reraise-not-rebuilt)
        return "cancelled", RunError("Cancelled", failure.message, fields)
    else:
        fields["value_kind"] = kind
        run_kind = RUN_KIND.get(kind, "Lua")
        if kind == "internal" and failure.message.startswith(MISSING_MODEL):
            run_kind = "Binding"      # the one internal failure that is not a model's
        gated = run_kind == "Lua" and kind not in H1_KEEPS
    if in_h1 and gated:
        run_kind = "RequirementsUnmet"
    return "failed", RunError(run_kind, failure.message, fields)
