"""The case format: one TOML file per case, `cases/<group>/<name>.toml`.

A case is a prompt (or, for the lifecycle manager, a list of `operations`),
the harness it runs under, and what the observation must show:

    clauses = ["tasks.glance.example-two-tasks"]   # required, catalogue ids
    features = ["tasks"]                           # what an implementation needs
    flags = ["any-schedule"]                       # or "canonical" (the default)
    description = "..."
    prompt = '''...the whole prompt file...'''

    [harness]                       # every field optional
    args = ""
    concurrency = 8
    store = { "notes.md" = "..." }
    model_script = { rounds = [...], default = {...} }
    operator_script = [...]
    latency = { store = 0.01, model = 1.0 }   # pinned virtual seconds
    cancel_at = 2.5                           # a host cancel at this instant
    refuse = { write = ["out.md"] }           # store operations the host refuses
    seeds = 20                                # random schedules for any-schedule

    [expect]     # any of outcome, result, error, logs, tasks, events,
    outcome = "ok"                  # messages, store, virtual_time;
    result = "alpha text + beta text"   # see `forge.conformance.matchers`

The id of a case is its path under the cases directory without `.toml`
(`examples/two-tasks`).  `load_case` checks the file against
`schema/case.schema.json` and then the rules a schema cannot say, and refuses
a malformed case with an `InputError` that names the file, the line where it
can find one, and the rule: `FILE:LINE: schema: $.harness.concurrency: must
be at least 1, got 0`.  The limits of docs/limits.md (file size, nesting,
64-bit integers, finite seconds up to `forge.limits.MAX_SECONDS`, prompt
size) are checked first, so no input reaches the schema or the engine past
them.  `load_cases` reads every file of a directory before it refuses, so
one run names every malformed case (`CaseErrors`); a case citing clause
ids the catalogue lacks is refused naming every one of them.

`HarnessSpec` is the protocol's `harness` object (`to_json`) however a run
is described: a case's `[harness]` table (`from_json`), a `run` message
(`from_message`), or a run spec built from the harness flags (`from_run`,
for `forge explore --impl`).

What does not live here: running cases (`runner`) and comparing observations
(`matchers`).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from forge.conformance import matchers, schemas
from forge.conformance._toml import line_of, read_toml
from forge.conformance.catalogue import did_you_mean
from forge.errors import InputError
from forge.limits import MAX_PROMPT_BYTES, MAX_SECONDS
from forge.run.options import CANCEL_AT, CASE, CONCURRENCY, LATENCY, MAX_CONCURRENCY, \
    MODEL_SCRIPT, OPERATOR_SCRIPT, REFUSE, STORE, TOOL_SCRIPT

SCHEMA_PATH = schemas.path_of(schemas.CASE)
#: The suite shipped with the package.
DEFAULT_CASES_DIR = Path(__file__).resolve().parent / "cases"
#: Random schedules an `any-schedule` case is checked on besides the canonical one.
DEFAULT_SEEDS = 20

ANY_SCHEDULE = "any-schedule"
CANONICAL = "canonical"


def _harness_fields() -> dict[str, Any]:
    """A case harness's fields: each run option a case carries
    (`forge.run.options.CASE`) by its row's name and default, a mapping
    empty by default (the store, the latencies, the refusals), then `seeds`."""
    fields: dict[str, Any] = {
        o.name: attrs.field(factory=dict) if o.shape in _MAPPINGS else attrs.field(default=o.default)
        for o in CASE}
    fields["seeds"] = attrs.field(default=DEFAULT_SEEDS)
    return fields


#: The shapes a case gives as a mapping: a store's files, pinned virtual
#: durations per operation kind (kinds left out keep the implementation's
#: defaults), store operations refused.
_MAPPINGS = ("folder", "op_seconds", "op_paths")


@attrs.frozen(these=_harness_fields())
class HarnessSpec:
    """The harness a case runs under; `to_json` is the protocol's `harness`
    object.  Its fields are the run options a case carries, by their rows'
    names (`forge.run.options.CASE`: the argument string, the ceiling, the
    store's files, the model, operator and tool scripts' data, the pinned
    latencies, a cancel instant, the refusals) and the `seeds` to try."""

    if TYPE_CHECKING:   # the fields are made from the rows; mypy reads the one it cannot see
        seeds: int

    @classmethod
    def from_json(cls, data: dict) -> HarnessSpec:
        return cls(**{f.name: data[f.name] for f in attrs.fields(cls) if f.name in data})

    @classmethod
    def from_message(cls, data: dict) -> HarnessSpec:
        """The `harness` object of a protocol `run` message, checked as a case's
        harness table is (fields it does not know are ignored, as the protocol
        says); raises `InputError` naming the field."""
        # `null` is how the protocol spells a field left out (TOML has none).
        known = {f.name: data[f.name] for f in attrs.fields(cls)
                 if data.get(f.name) is not None}
        errors = schemas.errors(schemas.CASE, known, definition="harness")
        if errors:
            path, message, _ = schemas.describe(errors[0], schemas.schema(schemas.CASE))
            raise InputError(f"{json_path(('harness', *path))}: {message}")
        _check_bounds({"harness": known}, "", "harness")
        return cls.from_json(known)

    @classmethod
    def from_run(cls, spec: Any) -> HarnessSpec:
        """The harness of a run spec (`forge.run.spec.RunSpec`: what `forge
        explore --impl` sends), every field the protocol carries filled from
        it, so a run sent from flags and one sent from a case reach the
        implementation alike.  What the protocol does not carry (faults, the
        instruction budget, the latency menu) is the caller's to refuse."""
        def data(script: Any) -> Any:
            return None if script is None else script.data

        return cls(**{o.name: o.of(spec) for o in CASE if o.into is not None},
                   **{STORE.name: dict(spec.store_files), MODEL_SCRIPT.name: data(spec.model),
                      OPERATOR_SCRIPT.name: data(spec.operator),
                      TOOL_SCRIPT.name: data(spec.tool), LATENCY.name: dict(spec.latency_base),
                      REFUSE.name: {op: list(paths) for op, paths in spec.refusals.items()}})

    def to_json(self) -> dict:
        out = attrs.asdict(self)
        # How many schedules to try is the runner's business, not the run's.
        del out["seeds"]
        # Left out when absent, so a harness without tools reads as before tool scripts.
        if out[TOOL_SCRIPT.name] is None:
            del out[TOOL_SCRIPT.name]
        return out


@attrs.frozen
class Case:
    """One validated case."""

    id: str
    path: str
    clauses: tuple[str, ...]
    harness: HarnessSpec
    expect: dict[str, Any]
    features: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    description: str = ""
    prompt: str | None = None
    operations: list | None = None

    @property
    def seeds(self) -> list[int | None]:
        """The schedules to check: None is the canonical one."""
        extra = list(range(1, self.harness.seeds + 1)) if ANY_SCHEDULE in self.flags else []
        return [None, *extra]

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "path": self.path,
            "clauses": list(self.clauses),
            "features": list(self.features),
            "flags": list(self.flags),
            "description": self.description,
            "prompt": self.prompt,
            "operations": self.operations,
            "harness": {**self.harness.to_json(), "seeds": self.harness.seeds},
            "expect": self.expect,
        }


# -- loading -------------------------------------------------------------------------------

class CaseErrors(InputError):
    """Several malformed case files, each refused by its own `InputError`
    (`errors`, in path order).  It reads as the first, with a count of the
    rest; `forge conformance` prints every one, one line each."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = tuple(errors)
        first = errors[0]
        more = len(errors) - 1
        super().__init__(f"{first.message} (and {more} more malformed case "
                         f"file{'s' if more != 1 else ''})",
                         file=first.file, line=first.line, kind=first.kind)


def load_cases(root: str | Path, catalogue: Collection[str] | None = None) -> list[Case]:
    """Every case under `root` (a directory, searched recursively, or one file), by id.

    Raises:
        InputError: no cases, or one malformed case file.
        CaseErrors: several malformed case files (every file is read, so one
            run names them all).
    """
    root = Path(root)
    if root.is_file():
        return [load_case(root, root.parent.parent, catalogue)]
    if not root.is_dir():
        raise InputError("no such cases directory", file=str(root))
    files = sorted(_toml_files(root))
    if not files:
        raise InputError("no cases (*.toml) in this directory", file=str(root))
    cases, errors = [], []
    for f in files:
        try:
            cases.append(load_case(f, root, catalogue))
        except InputError as e:
            errors.append(e)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise CaseErrors(errors)
    return sorted(cases, key=lambda c: c.id)


def _toml_files(root: Path) -> list[Path]:
    # os.walk, not Path.rglob: it skips what vanishes or cannot be read during
    # the walk (a --cases of / meets /proc) and never follows a link loop.
    return [Path(dirpath) / name for dirpath, _, names in os.walk(root)
            for name in names if name.endswith(".toml")]


def load_case(path: str | Path, root: str | Path | None = None,
              catalogue: Collection[str] | None = None) -> Case:
    """Load and check one case; its id is its path under `root` without `.toml`.

    `catalogue`, when given, is the set of known clause ids.

    Raises:
        InputError: the file is unreadable, not TOML, breaks the schema or a
            case rule, or cites a clause id the catalogue does not have.
    """
    path = Path(path)
    name = str(path)
    text, data = read_toml(path)
    _check_schema(data, text, name)
    _check_rules(data, text, name, catalogue)
    base = Path(root) if root is not None else path.parent.parent
    try:
        case_id = path.with_suffix("").relative_to(base).as_posix()
    except ValueError:
        case_id = f"{path.parent.name}/{path.stem}"
    return Case(
        id=case_id,
        path=name,
        clauses=tuple(data["clauses"]),
        harness=HarnessSpec.from_json(data.get("harness", {})),
        expect=data.get("expect", {}),
        features=tuple(data.get("features", ())),
        flags=tuple(data.get("flags", ())),
        description=data.get("description", ""),
        prompt=data.get("prompt"),
        operations=data.get("operations"),
    )


def _check_schema(data: dict, text: str, name: str) -> None:
    found = schemas.errors(schemas.CASE, data)
    if not found:
        return
    # The shallowest error first (jsonschema's own notion of relevance), so a
    # missing table is reported before the fields inside it.
    path, message, locate = schemas.describe(found[0], schemas.schema(schemas.CASE))
    raise InputError(f"{json_path(path)}: {message}", file=name, line=line_of(text, locate),
                     kind="schema")


def _check_rules(data: dict, text: str, name: str, catalogue: Collection[str] | None) -> None:
    if ("prompt" in data) == ("operations" in data):
        raise InputError("needs exactly one of `prompt` or `operations`", file=name, kind="case")
    _check_bounds(data, text, name)
    flags = data.get("flags", [])
    if ANY_SCHEDULE in flags and CANONICAL in flags:
        raise InputError(f"flags `{ANY_SCHEDULE}` and `{CANONICAL}` exclude each other",
                         file=name, line=line_of(text, ("flags",)), kind="case")
    if ANY_SCHEDULE in flags and "decisions" in data.get("expect", {}):
        raise InputError(f"`expect.decisions` are the canonical schedule's: a case that names "
                         f"them cannot be flagged `{ANY_SCHEDULE}`",
                         file=name, line=line_of(text, ("flags",)), kind="case")
    for path, message in matchers.check(data.get("expect", {}), ("expect",)):
        raise InputError(f"{json_path(path)}: {message}", file=name,
                         line=line_of(text, path), kind="matcher")
    unknown = ([cid for cid in data["clauses"] if cid not in catalogue]
               if catalogue is not None else [])
    if unknown:
        ids = ", ".join(f"`{cid}`" for cid in unknown)
        s = "s" if len(unknown) > 1 else ""
        raise InputError(f"unknown clause id{s} {ids} (not in the catalogue)"
                         f"{did_you_mean(unknown, catalogue)}",
                         file=name, line=_line_of_string(text, unknown[0]), kind="clause")


def _check_bounds(data: dict, text: str, name: str) -> None:
    """The limits of docs/limits.md that the schema does not carry."""
    harness = data.get("harness", {})

    def refuse(path: tuple, rule: str):
        raise InputError(f"{json_path(path)}: {rule}", file=name, line=line_of(text, path),
                         kind="limits")

    seconds = [(("harness", LATENCY.name, k), v) for k, v in LATENCY.of(harness, {}).items()]
    if CANCEL_AT.of(harness) is not None:
        seconds.append((("harness", CANCEL_AT.name), CANCEL_AT.of(harness)))
    for path, value in seconds:
        if value > MAX_SECONDS:
            refuse(path, f"must be at most {MAX_SECONDS:g} seconds, got {value:g}")
    if CONCURRENCY.of(harness, 1) > MAX_CONCURRENCY:
        refuse(("harness", CONCURRENCY.name), f"must be at most {MAX_CONCURRENCY}")
    # The lifecycle adapter checks operations in depth; it looks names up in
    # a table, so a name must at least be a string by then.
    for i, op in enumerate(data.get("operations") or ()):
        if isinstance(op, dict) and "op" in op and not isinstance(op["op"], str):
            raise InputError(f"$.operations[{i}].op: an operation's name is a string, got "
                             f"{matchers.show(op['op'])}", file=name,
                             line=line_of(text, ("operations",)), kind="case")
    prompt = data.get("prompt")
    if isinstance(prompt, str) and len(prompt.encode("utf-8")) > MAX_PROMPT_BYTES:
        refuse(("prompt",), f"a prompt is at most {MAX_PROMPT_BYTES} bytes")


# -- readable schema errors ----------------------------------------------------------------

def json_path(parts: tuple[str | int, ...]) -> str:
    """`("harness", "concurrency")` -> `$.harness.concurrency`."""
    if not parts:
        return "$"
    return "$" + ("" if isinstance(parts[0], int) else ".") + matchers.render_path(tuple(parts))


# -- best-effort line numbers (`_toml.line_of` finds a key's line) ----------------------

def _line_of_string(text: str, value: str) -> int | None:
    for i, line in enumerate(text.split("\n"), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return i
    return None
