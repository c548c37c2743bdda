"""A run's trace drawn as a timeline: one swimlane per chain, virtual time across.

`read_trace` checks a `--trace` JSON-lines file (the fields are in
docs/trace.md), `read_observation` the same run's observation (refusing
another run's by its `trace_sha256`); `render_html` draws its records as one self-contained HTML
page (inline SVG, CSS and a few lines of script; nothing fetched).  Each
chain gets a lane from its spawn to its end; on it are drawn the spans a
chain spends queued for a slot and parked (on a harness operation - store,
model round, operator, tool - or on a wait, with what it waits on), the
instants it runs, and marks for spawns, deliveries, timeouts and each
task's end (succeeded, failed, cancelled, abandoned with its reason).
A liveness violation (`forge.liveness`) shades its hot suffix: from the
record where the state turned hot to the run's end (`hot_suffixes` reads
them off the observation's violations).

The axis is virtual time, one band per instant at which something
happened; inside a band, records keep their trace order, so the many things
that happen at one instant stay apart.  Gaps between instants are drawn the
same width whatever their length, and each band is labelled with its time.

What does not live here: writing the trace (`forge.sim.trace`, the engine), and
the command (`forge.commands.trace`).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.errors import InputError
from forge.sim.readlimited import NotUTF8, TooLarge, read_limited, read_text

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import limits
else:
    limits = deferred("forge.limits")

#: The largest trace file `forge trace` reads.
MAX_TRACE_BYTES = 64 * 1024 * 1024
#: The most drawn records one timeline holds (a browser's SVG stays usable).
MAX_DRAWN = 20_000

#: Records that take a column of the timeline; `event` and `call` do not
#: (a queue pop, and the Lua name of the operation the next record parks on).
_DRAWN = {"run_start", "step", "spawn", "admit", "harness", "wait", "timeout", "deliver",
          "task_end", "call_start", "run_end"}
_ENDS = {"task_succeeded": "succeeded", "task_failed": "failed",
         "task_cancelled": "cancelled", "task_abandoned": "abandoned"}

STEP, GAP, LANE, TOP, LEFT = 12, 22, 34, 46, 190


def read_trace(path: str) -> list[dict[str, Any]]:
    """The records of a trace file, each checked for the fields every record has.

    Raises:
        InputError: unreadable, too large, a line that is not a JSON object,
            or one without an integer `i` and `t` and a string `what`.
    """
    return load_trace(path)[0]


def load_trace(path: str) -> tuple[list[dict[str, Any]], str]:
    """`read_trace`'s records, and the sha256 of the file's bytes: what the
    same run's observation has as `trace_sha256`.

    Raises:
        InputError: as `read_trace`.
    """
    try:
        text = read_text(path, MAX_TRACE_BYTES)
    except OSError as e:
        raise InputError(f"cannot read the trace: {e.strerror}", file=path) from None
    except TooLarge as e:
        raise InputError(f"the trace is {e}", file=path) from None
    except NotUTF8 as e:
        raise InputError(f"the trace is not UTF-8 (byte {e.start})", file=path) from None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError("a trace line is one JSON object (forge run --trace FILE)",
                             file=path, line=number) from None
        if not isinstance(record, dict):
            raise InputError("a trace line is one JSON object", file=path, line=number)
        for key, kind in (("i", int), ("t", int), ("what", str)):
            if not isinstance(record.get(key), kind) or isinstance(record.get(key), bool):
                raise InputError(f"a trace record has `{key}` ({kind.__name__})", file=path,
                                 line=number)
        records.append(record)
    if not records:
        raise InputError("the trace holds no records", file=path)
    return records, hashlib.sha256(text.encode("utf-8")).hexdigest()  # the bytes read, exactly


#: What every observation has, and what the page reads from one.
_OBSERVATION_KEYS = (("outcome", str), ("events", list))


def read_observation(path: str, trace_path: str, trace_sha256: str) -> dict[str, Any]:
    """The observation file `path` (`forge run --json`), checked to be one,
    and to be of the run whose trace file `trace_path` hashes to
    `trace_sha256` when it names its trace's sha256.

    Raises:
        InputError: naming the file: unreadable, not one JSON object, not an
            observation (a replay file, say), or the observation of another run.
    """
    try:
        observation = json.loads(read_limited(path, limits.MAX_SCRIPT_BYTES))
    except OSError as e:
        raise InputError(f"cannot read the observation: {e.strerror}", file=path) from None
    except (ValueError, RecursionError):
        raise InputError("the observation is one JSON object (forge run --json)",
                         file=path) from None
    if not isinstance(observation, dict):
        raise InputError("the observation is one JSON object (forge run --json)", file=path)
    for key, kind in _OBSERVATION_KEYS:
        if not isinstance(observation.get(key), kind):
            what = " (this is a replay file: draw its run with `forge replay FILE --trace T " \
                   "--json`)" if "choices" in observation and "format" in observation else ""
            raise InputError(f"{key}: not an observation (forge run --json), which has "
                             f"`{key}` ({kind.__name__}){what}", file=path)
    recorded = observation.get("trace_sha256")
    if isinstance(recorded, str) and recorded != trace_sha256:
        raise InputError(f"trace_sha256: the observation is of another run: its trace has "
                         f"sha256 {recorded[:12]}..., {trace_path} has {trace_sha256[:12]}...",
                         file=path)
    return observation


def abandon_reasons(observation: Mapping[str, Any]) -> dict[str, str]:
    """`{task id: reason}` from an observation's `task_abandoned` events.

    A trace's `task_end` record carries the reason itself; this reads it
    from the observation of the same run (`forge run --json`) for traces
    written before it did.
    """
    out = {}
    events = observation.get("events")
    for event in events if isinstance(events, list) else ():
        if isinstance(event, Mapping) and event.get("kind") == "task_abandoned":
            out[str(event.get("task"))] = str(event.get("reason"))
    return out


#: How a liveness violation's text names where its hot state began (`forge.sim.trace.Violation`).
_HOT_FROM = re.compile(r"^(.*) \(hot from trace record ([0-9]+), ")


def hot_suffixes(observation: Mapping[str, Any]) -> list[tuple[int, str]]:
    """`(record index, problem)` of each liveness violation the observation
    reports (its `violations`), in the order reported."""
    out = []
    found = observation.get("violations")
    for text in found if isinstance(found, list) else ():
        m = _HOT_FROM.match(str(text))
        if m:
            out.append((int(m.group(2)), m.group(1)))
    return out


# -- layout ----------------------------------------------------------------------------------

@attrs.frozen
class Mark:
    """An instant on a lane: `kind` is its CSS class, `title` its tooltip."""

    kind: str
    lane: str
    x: float
    title: str
    record: Mapping[str, Any] = attrs.field(eq=False, repr=False)


@attrs.frozen
class Span:
    """A stretch of a lane: alive, queued for a slot, or parked on something."""

    kind: str
    lane: str
    x0: float
    x1: float
    title: str


@attrs.define
class _Layout:
    lanes: dict[str, str] = attrs.Factory(dict)        # chain -> title, in drawing order
    marks: list[Mark] = attrs.Factory(list)
    spans: list[Span] = attrs.Factory(list)
    links: list[tuple[str, str, float, str]] = attrs.Factory(list)   # from, to, x, kind
    ticks: list[tuple[float, int]] = attrs.Factory(list)             # x, time
    born: dict[str, float] = attrs.Factory(dict)
    ended: dict[str, float] = attrs.Factory(dict)
    open: dict[str, tuple[str, float, str]] = attrs.Factory(dict)   # parked: kind, x0, title
    queued: dict[str, float] = attrs.Factory(dict)
    width: float = 0.0
    #: Just past the last drawn record: where a lane with no recorded end stops.
    end_x: float = 0.0
    #: Each drawn record's index and x, in trace order (where a hot suffix starts).
    xs: list[tuple[int, float]] = attrs.Factory(list)
    run_end: Mapping[str, Any] | None = None

    def lane(self, chain: str, title: str | None = None) -> None:
        if chain not in self.lanes:
            self.lanes[chain] = title or chain
        elif title:
            self.lanes[chain] = title

    def close(self, chain: str, x: float) -> None:
        if chain in self.open:
            kind, x0, title = self.open.pop(chain)
            self.spans.append(Span(kind, chain, x0, x, title))


def _seconds(ns: Any) -> str:
    if not isinstance(ns, int):
        return "none"
    return f"{ns / 1e9:g} s"


def layout(records: Sequence[Mapping[str, Any]], reasons: Mapping[str, str] | None = None) -> _Layout:
    """Lanes, spans and marks of a trace, at x positions (see the module docstring)."""
    reasons = reasons or {}
    out = _Layout()
    x = float(LEFT)
    now: int | None = None
    pending_call: dict[str, str] = {}
    drawn = 0
    for r in records:
        what = r["what"]
        if what == "call":
            pending_call[str(r.get("chain"))] = str(r.get("op"))
            continue
        if what not in _DRAWN:
            continue
        drawn += 1
        if drawn > MAX_DRAWN:
            raise InputError(f"the trace has more than {MAX_DRAWN} drawn records; draw a "
                             "shorter run (fewer tasks or steps)", file="trace")
        if r["t"] != now:
            x += GAP if now is not None else 0
            now = r["t"]
            out.ticks.append((x, now))
        x += STEP
        out.xs.append((r.get("i", -1), x))
        _place(out, r, x, pending_call, reasons)
    out.end_x = x + STEP
    out.width = x + STEP * 4 + 140      # room for the last mark's label
    for chain in list(out.open):
        out.close(chain, x + STEP)
    return out


def _place(out: _Layout, r: Mapping[str, Any], x: float, pending_call: dict[str, str],
           reasons: Mapping[str, str]) -> None:
    what = r["what"]
    chain = str(r.get("chain", ""))
    if what == "run_start":
        out.lane("0", "0 (root)")
        out.born["0"] = x
    elif what == "step":
        out.lane(chain, None if chain in out.lanes else f"{chain} ({r.get('kind')})")
        out.born.setdefault(chain, x)
        out.close(chain, x)
        if chain in out.queued:
            out.spans.append(Span("queued", chain, out.queued.pop(chain), x,
                                  f"{chain} queued for a slot"))
        out.marks.append(Mark("step", chain, x, f"{chain} runs", r))
    elif what == "spawn":
        task, owner = str(r.get("task")), str(r.get("owner"))
        out.lane(owner)
        out.lane(task, f"{task} {r.get('target')}")
        out.born[task] = x
        out.queued[task] = x
        out.marks.append(Mark("spawn", owner, x, f"{owner} spawns {task} (## {r.get('target')})", r))
        out.links.append((owner, task, x, "spawn"))
    elif what == "admit":
        task = str(r.get("task"))
        out.marks.append(Mark("admit", task, x, f"{task} gets a slot", r))
        out.queued.pop(task, None)
    elif what == "harness":
        op = pending_call.pop(chain, str(r.get("op")))
        detail = ", ".join(f"{k} {r[k]}" for k in ("store", "path", "entry", "answer")
                           if k in r)
        title = f"{chain} parked on {op} ({r.get('op')}{': ' + detail if detail else ''}; " \
                f"takes {_seconds(r.get('duration'))})"
        out.lane(chain)
        out.open[chain] = ("park-harness", x, title)
        out.marks.append(Mark("harness", chain, x, title, r))
    elif what == "wait":
        pending_call.pop(chain, None)
        listed = r.get("members")
        members = ", ".join(str(m) for m in listed) if isinstance(listed, list) else ""
        timeout = r.get("timeout")
        title = (f"{chain} waits in {r.get('call')} on {members or 'nothing'}"
                 + (f" (timeout {_seconds(timeout)})" if timeout is not None else ""))
        out.lane(chain)
        out.open[chain] = ("park-wait", x, title)
        out.marks.append(Mark("wait", chain, x, title, r))
    elif what == "timeout":
        out.marks.append(Mark("timeout", chain, x, f"{chain}'s wait timed out", r))
    elif what == "deliver":
        task = str(r.get("task"))
        out.marks.append(Mark("deliver", chain, x, f"{task}'s result delivered to {chain}", r))
        out.links.append((task, chain, x, "deliver"))
    elif what == "call_start":
        callee = str(r.get("callee"))
        out.lane(callee, f"{callee} (call)")
        out.born[callee] = x
        out.marks.append(Mark("spawn", chain, x, f"{chain} calls into {callee}", r))
        out.links.append((chain, callee, x, "spawn"))
    elif what == "task_end":
        task = str(r.get("task"))
        end = _ENDS.get(str(r.get("end")), str(r.get("end")))
        reason = r.get("reason") or reasons.get(task)
        title = f"{task} {end}" + (f": {reason}" if end == "abandoned" and reason else "")
        out.close(task, x)
        out.queued.pop(task, None)
        out.ended[task] = x
        out.marks.append(Mark(f"end-{end}", task, x, title, r))
    elif what == "run_end":
        out.run_end = r
        out.ended.setdefault("0", x)
        out.marks.append(Mark("run-end", "0", x, f"the run ends {r.get('outcome')}"
                              + (f" ({r.get('error')})" if r.get("error") else ""), r))


# -- drawing ---------------------------------------------------------------------------------

_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 17px; margin: 0 0 4px; } .meta { color: #555; margin-bottom: 8px; }
.scroll { overflow-x: auto; border: 1px solid #ddd; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.lane-label { font-weight: 600; } .lane-bg { fill: #fafafa; } .lane:nth-child(odd) .lane-bg { fill: #f2f4f7; }
.tick line { stroke: #ccd; stroke-dasharray: 2 3; } .tick text { fill: #667; }
.alive { stroke: #9aa; stroke-width: 2; }
.span-park-harness { fill: #7fb3e6; } .span-park-wait { fill: #f2c35a; } .span-queued { fill: #d5d5d5; }
.mark-step { fill: #2c6e2c; } .mark-spawn { fill: #1f5fbf; } .mark-admit { fill: #888; }
.mark-harness { fill: #2b6cb0; } .mark-wait { fill: #b7791f; } .mark-timeout { fill: #c05621; }
.mark-deliver { fill: #2f855a; } .mark-end-succeeded { fill: #2f855a; } .mark-end-failed { fill: #c53030; }
.mark-end-cancelled { fill: #dd6b20; } .mark-end-abandoned { fill: #6b46c1; } .mark-run-end { fill: #111; }
.link-spawn { stroke: #1f5fbf; stroke-width: 1; } .link-deliver { stroke: #2f855a; stroke-dasharray: 3 2; }
.mark, .span { cursor: pointer; } .mark:hover, .span:hover { opacity: .6; }
.legend span { display: inline-block; margin-right: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
#detail { background: #f6f6f6; padding: 6px 8px; min-height: 1.4em; white-space: pre-wrap; }
"""

_SCRIPT = """
(function () {
  var detail = document.getElementById('detail');
  document.querySelectorAll('.mark, .span').forEach(function (el) {
    el.addEventListener('click', function () {
      detail.textContent = el.getAttribute('data-title') + '\\n' + (el.getAttribute('data-record') || '');
    });
  });
  var marks = {};
  document.querySelectorAll('.mark').forEach(function (el) {
    var k = el.getAttribute('data-kind'); marks[k] = (marks[k] || 0) + 1;
  });
  document.body.setAttribute('data-lanes', document.querySelectorAll('g.lane').length);
  document.body.setAttribute('data-marks', Object.keys(marks).sort().map(function (k) {
    return k + '=' + marks[k]; }).join(' '));
})();
"""

_COLOURS = {"span-park-harness": "#7fb3e6", "span-park-wait": "#f2c35a", "span-queued": "#d5d5d5",
            "mark-step": "#2c6e2c", "mark-spawn": "#1f5fbf", "mark-deliver": "#2f855a",
            "mark-timeout": "#c05621", "mark-end-succeeded": "#2f855a",
            "mark-end-failed": "#c53030", "mark-end-cancelled": "#dd6b20",
            "mark-end-abandoned": "#6b46c1"}
_LEGEND = [("span-park-harness", "parked on a harness call"), ("span-park-wait", "parked on a wait"),
           ("span-queued", "queued for a slot"), ("mark-step", "runs"), ("mark-spawn", "spawn"),
           ("mark-deliver", "delivery"), ("mark-timeout", "timeout"),
           ("mark-end-succeeded", "succeeded"), ("mark-end-failed", "failed"),
           ("mark-end-cancelled", "cancelled"), ("mark-end-abandoned", "abandoned")]


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def render_html(records: Sequence[Mapping[str, Any]], reasons: Mapping[str, str] | None = None,
                title: str | None = None, hot: Sequence[tuple[int, str]] = ()) -> str:
    """One self-contained HTML page drawing the trace (see the module
    docstring); `hot` shades each liveness violation's suffix (`hot_suffixes`)."""
    lay = layout(records, reasons)
    start = next((r for r in records if r["what"] == "run_start"), {})
    ending = lay.run_end or {}
    row = {chain: k for k, chain in enumerate(lay.lanes)}
    height = TOP + LANE * len(lay.lanes) + 10
    svg: list[str] = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width:.0f}" '
                      f'height="{height}" role="img" aria-label="timeline">']
    svg.append('<g class="lanes">')
    for chain, label in lay.lanes.items():
        y = TOP + LANE * row[chain]
        svg.append(f'<g class="lane" data-chain="{_e(chain)}">'
                   f'<rect class="lane-bg" x="0" y="{y}" width="{lay.width:.0f}" height="{LANE}"/>'
                   f'<text class="lane-label" x="6" y="{y + LANE / 2 + 4:.0f}">{_e(label)}</text>')
        x0, x1 = lay.born.get(chain, LEFT), lay.ended.get(chain, lay.end_x)
        svg.append(f'<line class="alive" x1="{x0:.0f}" x2="{x1:.0f}" y1="{y + LANE / 2:.0f}" '
                   f'y2="{y + LANE / 2:.0f}"/></g>')
    svg.append("</g>")
    for since, problem in hot:
        x0 = next((x for i, x in lay.xs if i >= since), lay.end_x)
        svg.append(f'<rect class="hot" data-title="{_e(problem)}" x="{x0 - STEP / 2:.0f}" '
                   f'y="{TOP}" width="{max(lay.end_x - x0, STEP):.0f}" '
                   f'height="{height - TOP - 6}" fill="#f4a6a6" fill-opacity="0.35">'
                   f'<title>hot until the end: {_e(problem)}</title></rect>')
    for x, t in lay.ticks:
        svg.append(f'<g class="tick"><line x1="{x:.0f}" x2="{x:.0f}" y1="{TOP - 14}" '
                   f'y2="{height - 6}"/><text x="{x + 2:.0f}" y="{TOP - 18}">'
                   f'{_e(_seconds(t))}</text></g>')
    for span in lay.spans:
        y = TOP + LANE * row[span.lane] + 9
        svg.append(f'<rect class="span span-{span.kind}" data-kind="{span.kind}" '
                   f'data-title="{_e(span.title)}" x="{span.x0:.0f}" y="{y}" '
                   f'width="{max(span.x1 - span.x0, 3):.0f}" height="{LANE - 18}" rx="3">'
                   f'<title>{_e(span.title)}</title></rect>')
    for source, target, x, kind in lay.links:
        if source in row and target in row:
            y0 = TOP + LANE * row[source] + LANE / 2
            y1 = TOP + LANE * row[target] + LANE / 2
            svg.append(f'<line class="link link-{kind}" x1="{x:.0f}" x2="{x:.0f}" '
                       f'y1="{y0:.0f}" y2="{y1:.0f}"/>')
    for mark in lay.marks:
        svg.append(_mark(mark, TOP + LANE * row.get(mark.lane, 0) + LANE / 2))
    if lay.run_end is not None:
        x = next(m.x for m in lay.marks if m.kind == "run-end")
        svg.append(f'<line class="run-end" x1="{x:.0f}" x2="{x:.0f}" y1="{TOP}" '
                   f'y2="{height - 6}" stroke="#111" stroke-width="1.5"/>')
    svg.append("</svg>")
    heading = title or f"Timeline of {start.get('prompt', 'a run')}"
    outcome = ending.get("outcome", "no end recorded")
    error = f" ({ending['error']})" if ending.get("error") else ""
    legend = "".join(f'<span><i style="background:{_COLOURS[cls]}"></i>{_e(text)}</span>'
                     for cls, text in _LEGEND)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_e(heading)}</title><style>{_CSS}</style></head>\n<body>"
        f"<h1>{_e(heading)}</h1><div class=\"meta\">args {_e(_args_text(start.get('args', '')))}"
        f" &middot; {len(lay.lanes)} chains &middot; ends {_e(outcome)}{_e(error)} at "
        f"{_e(_seconds(ending.get('t')))} virtual &middot; {len(records)} trace records</div>"
        f"<div class=\"legend\">{legend}</div>"
        f"<div class=\"scroll\">{''.join(svg)}</div>"
        "<p>Click a mark or a span for its trace record.</p><div id=\"detail\"></div>"
        f"<script>{_SCRIPT}</script></body></html>\n")


def _args_text(text: Any) -> str:
    """A run's argument string as the page shows it: quoted, or `(none)`."""
    return f"“{text}”" if text else "(none)"


def _mark(mark: Mark, y: float) -> str:
    x = mark.x
    attrs_text = (f'class="mark mark-{mark.kind}" data-kind="{_e(mark.kind)}" '
                  f'data-lane="{_e(mark.lane)}" data-title="{_e(mark.title)}" '
                  f'data-record="{_e(json.dumps(dict(mark.record), sort_keys=True))}"')
    tip = f"<title>{_e(mark.title)}</title>"
    if mark.kind == "step":
        shape = f'<rect {attrs_text} x="{x - 2:.0f}" y="{y - 7:.0f}" width="4" height="14">'
        return shape + tip + "</rect>"
    if mark.kind.startswith("end-"):
        shape = (f'<path {attrs_text} d="M{x:.0f},{y - 8:.0f} L{x + 8:.0f},{y:.0f} '
                 f'L{x:.0f},{y + 8:.0f} L{x - 8:.0f},{y:.0f} Z">')
        label = ""
        if mark.kind == "end-abandoned" and ": " in mark.title:
            label = (f'<text class="reason" x="{x + 10:.0f}" y="{y - 6:.0f}">'
                     f'{_e(mark.title.split(": ", 1)[1])}</text>')
        return shape + tip + "</path>" + label
    if mark.kind == "timeout":
        shape = (f'<path {attrs_text} d="M{x - 6:.0f},{y - 6:.0f} L{x + 6:.0f},{y + 6:.0f} '
                 f'M{x + 6:.0f},{y - 6:.0f} L{x - 6:.0f},{y + 6:.0f}" stroke="#c05621" '
                 'stroke-width="3">')
        return shape + tip + "</path>"
    if mark.kind == "run-end":
        shape = f'<rect {attrs_text} x="{x - 4:.0f}" y="{y - 4:.0f}" width="8" height="8">'
        return shape + tip + "</rect>"
    radius = 3 if mark.kind in ("admit", "harness", "wait") else 4.5
    return f'<circle {attrs_text} cx="{x:.0f}" cy="{y:.0f}" r="{radius}">' + tip + "</circle>"

