"""`forge trace`: one run's trace as a text timeline, or drawn as a page.

    forge run my.md --seed 7 --trace run.jsonl --json > run.json
    forge trace run.jsonl                                      # the timeline, in words
    forge trace run.jsonl --html run.html --observation run.json

What does not live here: reading and drawing the trace (`forge.timeline`),
the words for each record (`forge.repro.describe`), its fields (docs/trace.md).
"""

from __future__ import annotations
from typing import TYPE_CHECKING

import click

from forge.commands.params import InputPath, OutputPath, write_output
from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import repro, timeline
else:
    repro = deferred("forge.repro")
    timeline = deferred("forge.timeline")


@click.command()
@click.argument("trace_file", type=InputPath(dir_okay=False))
@click.option("--html", "html_out", type=OutputPath(), default=None,
              help="Write the timeline here: one self-contained HTML page (- for stdout).")
@click.option("--observation", "observation_file", type=InputPath(dir_okay=False),
              default=None,
              help="The same run's observation (forge run --json), for abandon reasons; "
                   "refused when its trace_sha256 is another trace's.")
@click.option("--title", default=None, help="The page's heading.")
@click.option("--every", is_flag=True, help="Text: a line for every record, bookkeeping too.")
def trace(trace_file, html_out, observation_file, title, every):
    """Print TRACE_FILE (from `forge run --trace`) as a timeline in virtual
    time, one line a step; with --html, draw it as swimlanes: one lane per
    chain, virtual time across, with parks, harness calls, spawns,
    deliveries, timeouts and every task's end marked.

    \b
    Exit codes: 0 printed or written, 2 bad input (the trace, the observation
    or a flag).
    """
    records, sha256 = timeline.load_trace(trace_file)
    if html_out is None:
        if title is not None:
            raise InputError("the page's heading; give --html FILE too", file="--title")
        if observation_file is not None:
            raise InputError("gives the page its abandon reasons (the text names them from "
                             "the trace); give --html FILE too", file="--observation")
        for rec in records:
            line = repro.describe(rec, every=every)
            if line is not None:
                click.echo(line)
        return
    reasons, hot = {}, []
    if observation_file is not None:
        observed = timeline.read_observation(observation_file, trace_file, sha256)
        reasons, hot = timeline.abandon_reasons(observed), timeline.hot_suffixes(observed)
    write_output(html_out, timeline.render_html(records, reasons, title, hot))
