"""`forge trace`: draw one run's trace as a timeline page.

    forge run my.md --seed 7 --trace run.jsonl --json > run.json
    forge trace run.jsonl --html run.html --observation run.json

What does not live here: reading and drawing the trace (`forge.timeline`),
its fields (docs/trace.md).
"""

from __future__ import annotations

import click

from forge.commands.params import InputPath, OutputPath, write_output


@click.command()
@click.argument("trace_file", type=InputPath(dir_okay=False))
@click.option("--html", "html_out", type=OutputPath(), default=None,
              help="Write the timeline here: one self-contained HTML page (- for stdout).")
@click.option("--observation", "observation_file", type=InputPath(dir_okay=False),
              default=None,
              help="The same run's observation (forge run --json), for abandon reasons; "
                   "refused when its trace_sha256 is another trace's.")
@click.option("--title", default=None, help="The page's heading.")
def trace(trace_file, html_out, observation_file, title):
    """Draw TRACE_FILE (from `forge run --trace`) as swimlanes: one lane per
    chain, virtual time across, with parks, harness calls, spawns,
    deliveries, timeouts and every task's end marked.

    \b
    Exit codes: 0 written, 2 bad input (the trace, the observation or a flag).
    """
    from forge.errors import InputError
    from forge.timeline import abandon_reasons, load_trace, read_observation, render_html

    if html_out is None:
        # Checked here, not by click: its "missing option" error has no text to show.
        raise InputError("required: the file to write the page to (- for standard output)",
                         file="--html")
    records, sha256 = load_trace(trace_file)
    reasons = {}
    if observation_file is not None:
        reasons = abandon_reasons(read_observation(observation_file, trace_file, sha256))
    write_output(html_out, render_html(records, reasons, title))
