"""When two observations of one run are the same behaviour: the
spec-defined equivalence, written once (docs/observation.md, "Equivalence").

Two engines that ran the same prompt on the same decisions must agree on
what the spec fixes; they may differ in what it leaves to the
implementation.  `normative(obs)` keeps only the first:

- `outcome`, `result`, `logs`, `store`, `messages`;
- `error`: its `kind`, `value_kind` and the value's fields (`task`, `tasks`,
  `name`, `path`, `reason`) - not its `message`, whose Lua location prefix
  names the implementation's own chunks, nor a parse error's `line`;
- `tasks`: every task's status table (an optional field left out and a
  null are the same);
- `events`: the run's *task and conversation events* (`NORMATIVE_EVENTS`),
  in the order reported, each as its kind, section, `provenance.task` and
  its own fields.

Implementation-defined, never compared: `provenance.seq` (gaps and
numbering), `execution`, the boundary events (run, section, VM, parse,
store and tool phases: an engine need not report a kind it has no occasion
for), the debug kinds, the optional `effects` and `rounds`, `virtual_time`
(an engine's base latencies are its own unless a case pins them),
`trace_sha256`, and any extra top-level field.

`compare(reference, implementation)` lists the `Difference`s, each with a
*place* (`result`, `events`, `tasks.0.1.state`, `error.kind`; and
`decisions` when an engine asks other decisions than the reference on the
same answers) that a known-differences file can mute (`KnownDifferences`: the expectations
format, place patterns mapped to "fail"), and `render` tells the first one
as a readable diff, naming the first differing event and the clauses the
place touches.  The cases' matchers compare what a case names, by the
same value rule for empty tables (`empty_table`, a module both read); a
fuzzed or explored run, a replay through `--impl`, and `forge replay` of
an engine's record (which holds `normative` of its observation; normative
twice is normative once) compare everything this module calls normative.  The observation schema marks
each field and event kind with the side it is on (`x-equivalence`:
`normative` or `implementation-defined`), and a test holds the schema,
this module and docs/observation.md to one another.

What does not live here: running either engine (`adapters`), searching
schedules (`impl_explore`, `fuzz`).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from forge.conformance.empty_table import empty_table
from forge.deferred import deferred

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import errors
    from forge.conformance import runner
else:
    errors = deferred("forge.errors")
    runner = deferred("forge.conformance.runner")

#: The event kinds whose order and fields the spec fixes for one schedule.
NORMATIVE_EVENTS = frozenset({
    "task_started", "task_succeeded", "task_failed", "task_cancelled", "task_abandoned",
    "lua", "user_input", "assistant_reply", "assistant_tool_calls", "tool_result",
    "task_notice",
})
#: The fields of `error` the spec fixes.
ERROR_FIELDS = ("kind", "value_kind", "task", "tasks", "name", "path", "reason")
#: The observation fields compared, in the order differences are told.
FIELDS = ("outcome", "result", "error", "events", "tasks", "logs", "store", "messages")
#: The clauses a difference at a place touches (the longest matching prefix
#: wins; an event place is `events:KIND`).
CLAUSES: Mapping[str, tuple[str, ...]] = {
    "outcome": ("tasks.errors.run-error-kind-lua",),
    "result": ("tasks.spawn.result-is-section-return", "tasks.wait.join-entries"),
    "error": ("tasks.errors.catchable-shape",),
    "logs": ("events.log-checkpoint",),
    "store": ("tasks.spawn.shared-store",),
    "messages": ("tasks.model.allow.four-builtins",),
    "tasks": ("tasks.status.field-presence",),
    "tasks.*.state": ("tasks.status.state-values",),
    "tasks.*.ok": ("tasks.status.ok-values",),
    "tasks.*.reason": ("tasks.abandon.state",),
    "events:task_started": ("events.task-started", "tasks.ids.child-extends-owner"),
    "events:task_succeeded": ("events.task-terminal",),
    "events:task_failed": ("events.task-terminal",),
    "events:task_cancelled": ("events.task-terminal", "tasks.cancel.marks-cancelled"),
    "events:task_abandoned": ("events.task-terminal", "tasks.abandon.owner-end"),
    "events:lua": ("events.log-checkpoint",),
    "events": ("events.coordinates",),
}


def _clean(value: Any) -> Any:
    """`value` with null fields left out, and an empty table as `{}`
    (`empty_table`)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value] if not empty_table(value) else {}
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two values are the same by the equivalence: null fields as
    left out, an empty table as `[]` or `{}`."""
    return _clean(a) == _clean(b)


def normative_event(event: dict) -> dict:
    """One event as the equivalence sees it: kind, section, `provenance.task`
    (kept under `provenance`, apart from an event's own `task` field: a
    `task_started` names the new task there and its owner in provenance)
    and its own fields.  Normative twice is normative once, so a record
    may hold an observation's normative part (`forge replay`)."""
    fields = {k: v for k, v in event.items()
              if k not in ("kind", "execution", "section", "provenance")}
    provenance = event.get("provenance") if isinstance(event.get("provenance"), dict) else {}
    return _clean({"kind": event.get("kind"), "section": event.get("section"),
                   "provenance": {"task": provenance.get("task")}, **fields})


def normative(obs: Mapping[str, Any]) -> dict:
    """The part of an observation the spec fixes (the module docstring)."""
    error = obs.get("error")
    return {
        "outcome": obs.get("outcome"),
        "result": obs.get("result"),
        "error": (_clean({k: error.get(k) for k in ERROR_FIELDS})
                  if isinstance(error, dict) else None),
        "events": [normative_event(e) for e in obs.get("events") or ()
                   if isinstance(e, dict) and e.get("kind") in NORMATIVE_EVENTS],
        "tasks": {k: _clean(v) for k, v in (obs.get("tasks") or {}).items()},
        "logs": list(obs.get("logs") or ()),
        "store": dict(obs.get("store") or {}),
        "messages": _clean(dict(obs.get("messages") or {})),
    }


@attrs.frozen
class Difference:
    #: Where: `result`, `error.kind`, `tasks.0.1.state`, `events`, ...
    place: str
    reference: Any
    implementation: Any
    #: For `events`: the index of the first differing normative event.
    index: int | None = None

    def clauses(self) -> tuple[str, ...]:
        return clauses_of(self.place if self.index is None else f"events:{self._kind()}")

    def _kind(self) -> str:
        for side in (self.reference, self.implementation):
            if isinstance(side, dict) and "kind" in side:
                return str(side["kind"])
        return ""

    def line(self) -> str:
        at = f"{self.place}[{self.index}]" if self.index is not None else self.place
        return f"{at}: reference {brief(self.reference)} != implementation {brief(self.implementation)}"


def clauses_of(place: str) -> tuple[str, ...]:
    """The clauses a place touches: the entry of its longest matching pattern."""
    best = ""
    for pattern in CLAUSES:
        if fnmatch.fnmatchcase(place, pattern) or fnmatch.fnmatchcase(place, pattern + ".*"):
            if len(pattern) > len(best):
                best = pattern
    return CLAUSES.get(best, ())


def compare(reference: Mapping[str, Any], implementation: Mapping[str, Any]) -> list[Difference]:
    """Every normative difference, field by field (a list at its first
    differing entry, a table at each differing key)."""
    a, b = normative(reference), normative(implementation)
    out: list[Difference] = []
    for field in FIELDS:
        x, y = a[field], b[field]
        if x == y:
            continue
        if field == "events":
            i = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            out.append(Difference("events", x[i] if i < len(x) else None,
                                  y[i] if i < len(y) else None, i))
        elif field in ("tasks", "error") and isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y)):
                if x.get(key) == y.get(key):
                    continue
                p, q = x.get(key), y.get(key)
                if field == "tasks" and isinstance(p, dict) and isinstance(q, dict):
                    out += [Difference(f"tasks.{key}.{k}", p.get(k), q.get(k))
                            for k in sorted(set(p) | set(q)) if p.get(k) != q.get(k)]
                else:
                    out.append(Difference(f"{field}.{key}", p, q))
        elif field == "logs":
            i = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            out.append(Difference("logs", x[i] if i < len(x) else None,
                                  y[i] if i < len(y) else None, None))
        else:
            out.append(Difference(field, x, y))
    return out


@attrs.frozen
class KnownDifferences:
    """Places a porter accepts as different, as patterns (`tasks.*.note`,
    `events`): the expectations format, `{PATTERN = "fail"}` in TOML or JSON."""

    patterns: tuple[str, ...] = ()

    def mutes(self, difference: Difference) -> bool:
        return any(fnmatch.fnmatchcase(difference.place, p) for p in self.patterns)

    def keep(self, found: Iterable[Difference]) -> list[Difference]:
        return [d for d in found if not self.mutes(d)]

    @classmethod
    def load(cls, path: str) -> KnownDifferences:
        """Read a known-differences file.

        Raises:
            InputError: naming the file: unreadable, or a value that is not "fail".
        """
        table = runner.load_expectations(path)
        wrong = [k for k, v in table.items() if v != "fail"]
        if wrong:
            raise errors.InputError(f"a known difference is marked \"fail\" (accepted); "
                                    f"{wrong[0]!r} is marked {table[wrong[0]]!r}", file=path)
        return cls(tuple(sorted(table)))


def differences(reference: Mapping[str, Any], implementation: Mapping[str, Any],
                known: KnownDifferences = KnownDifferences()) -> list[Difference]:
    """`compare`, without what `known` mutes."""
    return known.keep(compare(reference, implementation))


def render(found: Sequence[Difference], reference: Mapping[str, Any],
           implementation: Mapping[str, Any], context: int = 3) -> list[str]:
    """A readable diff of two observations: the first difference, the
    clauses it touches, and for events the ones just before it."""
    if not found:
        return []
    first = found[0]
    lines = [f"the implementation differs from the reference at {first.place}"
             + (f" (normative event #{first.index})" if first.index is not None else "")
             + (f", touching {', '.join(first.clauses())}" if first.clauses() else "")]
    if first.index is not None:
        ours = normative(reference)["events"]
        for i in range(max(0, first.index - context), first.index):
            lines.append(f"    #{i} {brief(ours[i])}")
        lines.append(f"  - #{first.index} {brief(first.reference) if first.reference else '(none)'}")
        lines.append(f"  + #{first.index} "
                     f"{brief(first.implementation) if first.implementation else '(none)'}")
    else:
        lines.append(f"  - {brief(first.reference)}")
        lines.append(f"  + {brief(first.implementation)}")
    lines += [f"  also {d.line()}" for d in found[1:6]]
    if len(found) > 6:
        lines.append(f"  and {len(found) - 6} more")
    return lines


def brief(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
