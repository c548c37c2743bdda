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
#: RequirementsUnmet.
H1_KEEPS = frozenset({"tasks_live", "task_not_owned", "task_consumed", "cancelled", "store", "tool",
                      "tool_loop_exhausted", "out_of_scope_tool", "unbound_tool",
                      "empty_model_reply", "context_exhausted", "internal"})


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

    Returns ("cancelled", error) for a cancelled value raised again after
    another suspending call, else ("failed", error).
    """
    fields = dict(failure.fields)
    if failure.fatal_kind:
        return "failed", RunError(failure.fatal_kind, failure.message, fields)
    kind = failure.kind
    if kind == "lua" and failure.message in QUOTA_MESSAGES:
        return "failed", RunError("Quota", QUOTA_MESSAGES[failure.message])
    if kind is None:
        run_kind = "Lua"
    else:
        fields["value_kind"] = kind
        if kind == "cancelled" and failure.stale:
            return "cancelled", RunError("Cancelled", failure.message, fields)
        run_kind = RUN_KIND.get(kind, "Lua")
        if kind == "internal" and failure.message.startswith(MISSING_MODEL):
            run_kind = "Binding"      # the one internal failure that is not a model's
    if in_h1 and run_kind == "Lua" and kind not in H1_KEEPS:
        run_kind = "RequirementsUnmet"
    return "failed", RunError(run_kind, failure.message, fields)
