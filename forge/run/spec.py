"""A run's definition as a frozen value: `RunSpec`, its scripts (`Script`), the prompt's hash.

A `RunSpec` holds everything but the choice sequence that decides a run:
the prompt (path, sha256 and text), each plain run option of the options
table by its row's name (`forge.run.options.PLAIN`), the store's files, the
model, operator and tool scripts' content, the fault plan, the latencies,
the refusals and the orders mode.

What does not live here: building one from flags, files or data and running
it (`forge.runspec`), its replay record (`forge.run.record`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from forge.harness import DEFAULT_LATENCY, LATENCY_MENU, FaultPlan
from forge.run.options import PLAIN


@attrs.frozen
class Script:
    """A script's path (for messages) and its decoded JSON content."""

    path: str
    data: Any = attrs.field(eq=False)


def _spec_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {
        "prompt_path": attrs.field(), "prompt_sha256": attrs.field(),
        # The prompt's text (what the sha256 is of), so a run needs no file.
        "prompt_text": attrs.field(eq=False, repr=False)}
    # The plain run options, each a field by its row's name and default.
    fields.update((o.name, attrs.field(default=o.default)) for o in PLAIN)
    fields.update(
        store_files=attrs.field(factory=dict),
        model=attrs.field(default=None), operator=attrs.field(default=None),
        # The fault plan (`--faults` and `--fault-budget`, with the cancel
        # instants or steps drawn for it: `forge.runspec.with_cancel_instants`).
        fault_plan=attrs.field(default=FaultPlan()),
        latency_base=attrs.field(factory=lambda: dict(DEFAULT_LATENCY)),
        latency_menu=attrs.field(default=LATENCY_MENU),
        # The tool script (`forge.toolscript`): the run's tool catalogue.
        tool=attrs.field(default=None),
        # Store operations the host refuses: operation (or `*`) -> paths (or `*`).
        refusals=attrs.field(factory=dict),
        # Orders mode (`forge.sim.orders`): durations stay canonical and the
        # chooser picks which completion fires next (exhaustive search's mode).
        orders=attrs.field(default=False),
        # Tie-seeking durations (`forge.harness.LatencyModel.ties`); off for
        # a replay file written before them, which does not say `ties`.
        latency_ties=attrs.field(default=True))
    return fields


#: A run's whole definition but its choices (frozen): the prompt (path,
#: sha256, text), each plain run option of the options table
#: (`forge.run.options.PLAIN`) by its name, the store's files, the model,
#: operator and tool scripts (`Script`), the fault plan, the latencies, the
#: refusals and the orders mode.  Built by keyword.
RunSpec = attrs.make_class("RunSpec", _spec_fields(), frozen=True, kw_only=True)
RunSpec.__module__ = __name__


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
