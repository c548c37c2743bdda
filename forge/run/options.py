"""The options table: every run option, one row each, and the rules of the other values.

A run option is a value that changes the run a prompt makes (the argument
string, the concurrency ceiling, the cancel instant, the instruction
budget, the store, the scripts, the latencies, the refusals, the faults).
Its row (`Option`) says everything the front ends and the run need to know:

- `name`: the Python API's keyword; the flag is the name in kebab case
  (`--max-instructions`), which each refusal names on the command line;
- `rule`: its value's rule and bounds (`forge.run.values`), worded once;
- `help` and `metavar`: the flag's help;
- `default`: its value when not given (the API's default and the flag's);
- `shape`: how the front ends take it besides the rule's one value: a
  folder, a script (a path, or its data in the API), `OP=SECONDS`
  (`op_seconds`) or `OP[:PATH]` (`op_paths`) pairs, a list of kinds;
- `into`: where it goes, for a plain value: a keyword of the engine's
  `RunConfig` (`config`) or of the `Harness` (`harness`); None for the
  options the run definition builds a structure from (`forge.runspec`);
- `recorded`: whether a replay record's `run` section holds the plain value
  (`always`), or only when it is not the default (`when_set`: what a row
  added later says, so replay files written before still read, and every
  recorded digest stays the same).

From the rows are built: the click options (`forge.commands.params.
harness_options`), the API's argument checks and its keywords
(`forge.api`), the run's frozen definition (`forge.run.spec.RunSpec`'s plain
fields and where they go) and the replay record's `run` section and its
checks (`forge.run.record`).  Adding a run option is one row here and the
one place the engine reads it (CONTRIBUTING.md, "Adding a run option").

It also holds `RULES`: each value's rule by the API's name for it, the
rows' and those of the values a search or the suite takes (a seed, the
runs, the workers, a timeout, ...).

What does not live here: the rule classes (`forge.run.values`), the flags'
click types (`forge.commands.params`), a run's definition
(`forge.runspec`).  Core: it imports neither the command line nor the API.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict, Union

import attrs

from forge.run.values import Choice, FilePath, Rule, Seconds, Text, Whole
from forge.sim.strategies import EXPLORING, pct

#: The most tasks a harness lets run at once, and the most faults one run draws.
MAX_CONCURRENCY = MAX_FAULT_BUDGET = 1_000_000
#: The smallest instruction budget a run may be given.
MIN_INSTRUCTIONS = 1000
#: The most schedules one exploration tries (each is a whole run), and the
#: most runs shrinking a failure may take.
MAX_RUNS = 10_000_000
#: The most worker processes one exploration or one conformance run starts.
MAX_WORKERS = 256
#: The longest wall-clock timeout an implementation gets per answer (one day).
MAX_TIMEOUT = 86400.0
#: The widest bound on an exhaustive walk's deviations.
MAX_DEVIATIONS = 1_000_000
#: The deepest PCT a search or a spelling may ask for (the strategy's own bound).
MAX_PCT_DEPTH = pct.MAX_DEPTH

Shape = Literal["value", "folder", "script", "op_seconds", "op_paths", "kinds"]


@attrs.frozen
class Option:
    """One run option (see the module docstring for each field)."""

    name: str
    rule: Rule
    help: str
    default: Any = None
    shape: Shape = "value"
    into: tuple[Literal["config", "harness"], str] | None = None
    recorded: Literal["always", "when_set"] = "always"
    metavar: str | None = None
    #: Its place in a conformance case's harness (the protocol's `harness`
    #: object), which carries it under its name; None: a case does not.
    case: int | None = None

    @property
    def flag(self) -> str:
        """The command line's name for it."""
        return "--" + self.name.replace("_", "-")

    def of(self, holder: Any, default: Any = None) -> Any:
        """Its value in `holder`: an attribute (a spec, a case's harness) or
        a key (a mapping), `default` when absent."""
        if isinstance(holder, Mapping):
            return holder.get(self.name, default)
        return getattr(holder, self.name, default)


#: Every run option, in the order `--help` lists them.
OPTIONS: tuple[Option, ...] = (
    Option("args", Text(), "The run's argument string (read as `args`).", default="",
           into=("config", "args"), case=0),
    Option("store", FilePath(), "Seed the in-memory store from the files in this folder.",
           shape="folder", case=2),
    Option("concurrency", Whole(1, MAX_CONCURRENCY),
           "The harness's ceiling on tasks running at once.", default=8,
           into=("harness", "ceiling"), case=1),
    Option("model_script", FilePath(), "A JSON model script that answers model rounds.",
           shape="script", case=3),
    Option("operator_script", FilePath(), "A JSON operator script that answers input.ask().",
           shape="script", case=4),
    Option("tool_script", FilePath(),
           "A JSON tool script: the tools a `tools:` slot binds and their replies.",
           shape="script", case=5),
    Option("latency", Seconds(), "The canonical virtual duration of one operation kind "
                                 "(store, model, operator, tool); repeatable.", shape="op_seconds",
           case=6),
    Option("refuse", Text(), "Have the host refuse a store operation (read, write, ..., or *) "
                             "on PATH, or on every path; repeatable.", shape="op_paths",
           case=8),
    Option("cancel_at", Seconds(), "Have the host cancel the run at this virtual instant.",
           into=("harness", "cancel_at"), metavar="SECONDS", case=7),
    Option("max_instructions", Whole(MIN_INSTRUCTIONS),
           "Lua instruction budget for the whole run (ends runaway loops).",
           into=("config", "max_instructions")),
    Option("max_steps", Whole(1), "The most scheduling steps the run may take (ends unbounded "
                                  "spawning or waiting).", into=("config", "max_steps"),
           recorded="when_set"),
    Option("max_cpu_seconds", Seconds(MAX_TIMEOUT, positive=True),
           "CPU seconds the run may use before the backstop ends it as `Backstop`, an ending "
           "that is not deterministic (default 8).", into=("config", "max_cpu_seconds"),
           recorded="when_set", metavar="SECONDS"),
    Option("faults", Text(), "Let the chooser inject faults: a comma-separated list of store, "
                             "model, tool, operator, cancel.", default="", shape="kinds",
           metavar="KINDS"),
    Option("fault_budget", Whole(0, MAX_FAULT_BUDGET), "The most faults one run may draw.",
           default=1),
)

@attrs.frozen
class Named:
    """A value an exploration takes besides the run options, by the Python
    API's keyword (`name`) and the command line's flag (`flag`): what a
    core refusal of it carries (`forge.errors.InputError.option`), so that
    each front end names it its own way."""

    name: str
    flag: str


#: The user's checks named `module:function` (`forge.runspec.load_check`),
#: and the user's probes named so (`forge.runspec.load_probe`; the API takes
#: probes as callables only).
NAMED_CHECKS = Named("named_checks", "--check")
NAMED_PROBES = Named("probes", "--probe")

#: The rows by name.
BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
#: The plain options: values the run hands to the engine as they are.
PLAIN: tuple[Option, ...] = tuple(o for o in OPTIONS if o.into is not None)
#: The options a conformance case's harness carries.
CASE: tuple[Option, ...] = tuple(sorted((o for o in OPTIONS if o.case is not None),
                                         key=lambda o: o.case or 0))

# The rows other modules read a value through (`row.of(holder)`, `row.name`),
# so that no module but this one spells an option's name.
ARGS, STORE, CONCURRENCY, MODEL_SCRIPT, OPERATOR_SCRIPT, TOOL_SCRIPT, LATENCY, REFUSE, \
    CANCEL_AT, FAULTS, FAULT_BUDGET = (BY_NAME[n] for n in (
        "args", "store", "concurrency", "model_script", "operator_script", "tool_script", "latency",
        "refuse", "cancel_at", "faults", "fault_budget"))
#: The script options, model, operator and tool, in that order.
SCRIPTS = (MODEL_SCRIPT, OPERATOR_SCRIPT, TOOL_SCRIPT)

#: The rule of each value the flags and the API both take, by the API's name
#: for it: the run options' plain values, and a search's and the suite's.
RULES: dict[str, Rule] = {
    **{o.name: o.rule for o in OPTIONS if o.shape == "value"},
    "seed": Whole(), "start_seed": Whole(),
    "runs": Whole(1, MAX_RUNS), "shrink_budget": Whole(0, MAX_RUNS),
    "pct_depth": Whole(1, MAX_PCT_DEPTH), "pct_horizon": Whole(0), "max_deviations": Whole(0, MAX_DEVIATIONS),
    "fair": Whole(0),
    "workers": Whole(1, MAX_WORKERS), "timeout": Seconds(MAX_TIMEOUT, positive=True),
    "strategy": Choice(EXPLORING),
}

#: A file path: a `str` or an `os.PathLike` (a `pathlib.Path`).
PathLike = Union[str, "os.PathLike[str]"]
#: Store refusals: `OP[:PATH]` strings as `--refuse` takes them, or a case's
#: `{operation: [paths]}` (`*` for every operation or path).
Refusals = Union[str, Iterable[str], Mapping[str, Union[str, Iterable[str]]]]


class RunOptions(TypedDict, total=False):
    """The run options as the Python API's keywords, for type checkers: the
    rows' names, each with the Python types its front end takes (a test
    holds the two equal).  `forge.replay` takes scripts and the store as
    paths only, as its flags do."""

    args: str
    store: PathLike | Mapping[str, str] | None
    concurrency: int
    model_script: PathLike | Mapping[str, Any] | None
    operator_script: PathLike | Mapping[str, Any] | Sequence[Any] | None
    tool_script: PathLike | Mapping[str, Any] | None
    latency: Mapping[str, float] | None
    refuse: Refusals | None
    cancel_at: float | None
    max_instructions: int | None
    max_steps: int | None
    max_cpu_seconds: float | None
    faults: str | Iterable[str]
    fault_budget: int


def plain_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The plain options among `values` (a spec's, a record's)."""
    return {o.name: values[o.name] for o in PLAIN if o.name in values}


def engine_keywords(spec: Any, part: Literal["config", "harness"]) -> dict[str, Any]:
    """The keywords `spec`'s plain options give the engine's `part` (its
    `RunConfig` or its `Harness`): an option left unset (None), or that
    `spec` does not carry (a case's harness has no instruction budget), is
    left out, so the engine's own default holds."""
    return {o.into[1]: o.of(spec) for o in PLAIN
            if o.into is not None and o.into[0] == part and o.of(spec) is not None}

