"""The flags of a foreign engine's runs (`--impl`), shared by `forge
conformance` and `forge explore`: the bounds of one run (`--max-run-seconds`,
`--max-decisions`, beside each command's own `--timeout` per answer), and
how it is judged against the reference (`--differential/--no-differential`,
`--known-differences`).

Kept apart from `cli` so `forge explore` can take them without importing
the conformance suite.  What does not live here: enforcing them
(`adapters.SubprocessAdapter`), their defaults (`impl_process`).
"""

from __future__ import annotations

import click

from forge.commands.params import BoundedInt, InputPath, Seconds
from forge.conformance.impl_process import RUN_DECISIONS, RUN_SECONDS
from forge.run.options import RULES

#: The flags that bound or judge the runs of an --impl engine: refused without --impl.
LIMIT_FLAGS = ("--timeout", "--max-run-seconds", "--max-decisions", "--no-differential",
               "--differential", "--known-differences")
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


def known_differences_option(command):
    """`--known-differences FILE`; the command receives `known_differences`."""
    return click.option(
        "--known-differences", "known_differences", metavar="FILE", default=None,
        type=InputPath(),
        help='With --impl: differences from the reference you accept, TOML or JSON in the '
             'expectations format: {PLACE = "fail"}, PLACE a pattern such as `tasks.*.note` '
             "or `events` (docs/observation.md, \"Equivalence\").")(command)


def differential_options(command):
    """`--differential/--no-differential` and `--known-differences FILE`;
    the command receives `differential` and `known_differences`."""
    command = known_differences_option(command)
    return click.option(
        "--differential/--no-differential", default=True, show_default=True,
        help="With --impl: run each schedule on the reference too, on the same decisions, "
             "and fail where the observations differ (docs/observation.md, "
             "\"Equivalence\").")(command)
