"""The flags that bound one run of a foreign engine (`--impl`), shared by
`forge conformance` and `forge explore`: `--max-run-seconds` and
`--max-decisions`, beside each command's own `--timeout` per answer.

Kept apart from `cli` so `forge explore` can take them without importing
the conformance suite.  What does not live here: enforcing them
(`adapters.SubprocessAdapter`), their defaults (`impl_process`).
"""

from __future__ import annotations

import click

from forge.commands.params import BoundedInt, Seconds
from forge.conformance.impl_process import RUN_DECISIONS, RUN_SECONDS
from forge.runspec import RULES

#: The flags that bound one run of an --impl engine (`impl_limit_options`).
LIMIT_FLAGS = ("--timeout", "--max-run-seconds", "--max-decisions")
#: The most decisions `--max-decisions` allows.
MAX_DECISIONS_FLAG = 100_000_000


def impl_limit_options(command):
    """`--max-run-seconds` and `--max-decisions`: the bounds of one run of an
    --impl engine (`adapters.SubprocessAdapter`), for `forge conformance` and
    `forge explore`.  The command receives them as `run_seconds` and
    `max_decisions`."""
    command = click.option(
        "--max-decisions", "max_decisions", type=BoundedInt(1, MAX_DECISIONS_FLAG),
        default=RUN_DECISIONS, show_default=True,
        help="With --impl: the decisions (level-2 `choose` messages) one run may ask for "
             "before it fails.")(command)
    return click.option(
        "--max-run-seconds", "run_seconds", type=Seconds.of(RULES["timeout"]),
        default=RUN_SECONDS, show_default=True,
        help="With --impl: seconds of wall time one run may take in all, however fast "
             "each answer comes, before it fails and the program's processes are "
             "ended.")(command)
