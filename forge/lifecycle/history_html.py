"""A history of store operations as one self-contained HTML page.

One lane per process; each operation a bar from its call to its return
(times replaced by their rank, so short and long calls are both readable),
labelled with the call and its answer; an operation whose outcome is unknown
runs to the right edge, hatched. Below the lanes, the same operations as a
table. ``forge lifecycle check --html`` draws the minimal non-linearizable
sub-history with it.

Lives here: ``render``. Does not live here: checking (``linearizability``).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from forge.lifecycle.history import Operation

_STYLE = """
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 16px; }
.lanes { position: relative; border-top: 1px solid #ccc; }
.lane { position: relative; height: 44px; border-bottom: 1px solid #eee; }
.lane-name { position: absolute; left: 0; top: 14px; width: 110px; font-weight: 600;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.op { position: absolute; top: 8px; height: 28px; background: #4a90d9; color: #fff;
  border-radius: 4px; font-size: 11px; line-height: 14px; padding: 0 4px;
  overflow: hidden; white-space: nowrap; box-sizing: border-box; }
.op.unknown { background: repeating-linear-gradient(45deg, #d98c4a, #d98c4a 6px,
  #e9b27f 6px, #e9b27f 12px); }
table { border-collapse: collapse; margin-top: 16px; }
td, th { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
code { font-size: 12px; }
"""


def render(ops: Sequence[Operation], title: str) -> str:
    """The page for ``ops`` under ``title``."""
    times = sorted({op.call for op in ops} | {op.ret for op in ops if op.ret is not None})
    rank = {t: i for i, t in enumerate(times)}
    width = max(len(times), 1)
    processes: list = []
    for op in ops:
        if op.process not in processes:
            processes.append(op.process)
    lanes = []
    for proc in processes:
        bars = []
        for op in ops:
            if op.process != proc:
                continue
            left = 120 + rank[op.call] * 860 / width
            right = 120 + (width if op.unknown else rank[op.ret] + 1) * 860 / width
            cls = "op unknown" if op.unknown else "op"
            label = html.escape(op.describe())
            bars.append(f'<div class="{cls}" title="{label}" style="left:{left:.1f}px;'
                        f'width:{max(right - left - 2, 24):.1f}px">{html.escape(op.op)}<br>'
                        f'{label}</div>')
        lanes.append(f'<div class="lane" data-process="{html.escape(str(proc))}">'
                     f'<div class="lane-name">process {html.escape(str(proc))}</div>'
                     + "".join(bars) + "</div>")
    rows = "".join(
        f"<tr><td>{html.escape(str(op.process))}</td><td>{op.call}</td>"
        f"<td>{'unknown' if op.unknown else op.ret}</td>"
        f"<td><code>{html.escape(op.describe())}</code></td></tr>" for op in ops)
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><div class=\"lanes\">{''.join(lanes)}</div>"
            "<table><tr><th>process</th><th>call</th><th>return</th><th>operation</th></tr>"
            f"{rows}</table></body></html>\n")
