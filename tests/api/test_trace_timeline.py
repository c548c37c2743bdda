"""`forge trace FILE --html OUT` draws a run as swimlanes, checked in headless Chromium."""

from __future__ import annotations

import json
import pathlib
import re
import struct
import subprocess
import sys
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forge
from forge.errors import InputError
from forge.timeline import abandon_reasons, layout, read_trace, render_html

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: One run with every mark: spawns, store calls, a timed wait that times out,
#: a cancel, a delivery, and a task abandoned when its owner returns.
TIMELINE = """---
name: timeline
description: every mark the timeline draws, in one run
promptforge: 0
---

# Timeline

## Main

```lua
local slow = tasks.spawn('## Slow')
local quick = tasks.spawn('## Quick')
local got = tasks.join({ slow }, { timeout = 0.05 })
tasks.cancel(slow)
local _, ok, r = tasks.join_any({ quick })
tasks.spawn('## Leak')
return 'done ' .. tostring(r)
```

## Slow

```lua
for i = 1, 20 do store.write('slow', tostring(i)) end
return 'slow'
```

## Quick

```lua
store.write('quick', 'q')
return 'quick'
```

## Leak

```lua
store.write('leak', 'l')
return 'never joined'
```
"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def _draw(tmp_path: pathlib.Path) -> pathlib.Path:
    obs = forge.run_prompt(source=TIMELINE)
    (tmp_path / "run.jsonl").write_text(obs.trace, encoding="utf-8")
    (tmp_path / "run.json").write_text(obs.to_json(), encoding="utf-8")
    out = tmp_path / "run.html"
    done = subprocess.run([sys.executable, "-m", "forge", "trace", str(tmp_path / "run.jsonl"),
                           "--html", str(out), "--observation", str(tmp_path / "run.json")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def test_the_page_is_self_contained(tmp_path):
    """No script, style, image or link is fetched: everything is inline."""
    page = _draw(tmp_path).read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]


def test_lanes_follow_the_chains_and_parks_say_what_they_wait_on():
    """One lane per chain in order of appearance; a wait names its members and timeout,
    a harness park its operation (kit: trace-timeline)."""
    obs = forge.run_prompt(source=TIMELINE)
    lay = layout([json.loads(line) for line in obs.trace.splitlines()])
    assert list(lay.lanes) == ["0", "0.0", "0.1", "0.3"]
    titles = [s.title for s in lay.spans]
    assert "0 waits in tasks.join on 0.0 (timeout 0.05 s)" in titles
    assert any(t.startswith("0.1 parked on store.write (store: store write, path quick")
               for t in titles)


def test_a_trace_alone_carries_the_abandon_reasons():
    """tasks.reasons.owner-returned: the abandoned task's `task_end` record names its reason,
    so the page shows it with no observation beside the trace (kit: trace-timeline)."""
    obs = forge.run_prompt(source=TIMELINE)
    records = [json.loads(line) for line in obs.trace.splitlines()]
    ends = {r["task"]: r.get("reason") for r in records if r.get("what") == "task_end"}
    assert ends["0.3"] == "owner_returned" and ends["0.1"] is None
    assert "owner_returned" in render_html(records, {})


def test_chromium_renders_every_lane_and_mark(tmp_path, chromium):
    """Headless Chromium parses the page: its script counts four lanes and each kind of mark,
    and the abandon's reason is on the page (kit: trace-timeline)."""
    page = _draw(tmp_path)
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-lanes="4"' in body
    marks = dict(m.split("=") for m in re.search(r'data-marks="([^"]*)"', body).group(1).split())
    for kind in ("spawn", "harness", "wait", "timeout", "deliver", "step", "end-succeeded",
                 "end-cancelled", "end-abandoned", "run-end"):
        assert int(marks.get(kind, 0)) >= 1, (kind, marks)
    assert marks["spawn"] == "3" and marks["end-cancelled"] == "1"
    assert "owner_returned" in dom


def _png_colours(path: pathlib.Path) -> int:
    """Distinct colours in an 8-bit RGB(A) PNG, read with zlib alone."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    channels = 4
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8
            channels = {2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels + 1
    # Rows start with a filter byte; unfiltered values are enough to count colours roughly.
    return len({raw[i:i + channels] for row in range(0, len(raw), stride * 7)
                for i in range(row + 1, row + stride - channels, channels * 5)})


def test_chromium_screenshot_is_not_blank(tmp_path, chromium):
    """A screenshot of the page shows many colours: the lanes and marks are painted."""
    page = _draw(tmp_path)
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                    "--window-size=1200,400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.is_file() and _png_colours(shot) > 20


def test_a_bad_trace_is_one_line_and_exit_2(tmp_path):
    """A line that is not a JSON object is refused naming the file and line."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"i":0,"t":0,"what":"run_start"}\nnot json\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "forge", "trace", str(bad), "--html",
                           str(tmp_path / "x.html")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"forge: {bad}:2: a trace line is one JSON object "
                                   "(forge run --trace FILE)")


def test_a_record_without_its_fields_is_refused(tmp_path):
    """Every record has an integer `i` and `t` and a string `what`."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"i":0,"t":"soon","what":"run_start"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="has `t` \\(int\\)"):
        read_trace(str(bad))


WHATS = ["run_start", "step", "call", "harness", "wait", "event", "spawn", "admit", "deliver",
         "timeout", "task_end", "call_start", "run_end", "something_new"]
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)
FIELDS = st.sampled_from(["chain", "task", "owner", "members", "timeout", "duration", "op",
                          "call", "end", "reason", "kind", "callee", "outcome", "error"])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(WHATS), st.integers(0, 10**12),
                          st.dictionaries(FIELDS, JSON, max_size=4)), max_size=30),
       st.dictionaries(st.sampled_from(["events", "tasks"]), JSON, max_size=2))
def test_any_well_formed_records_draw_without_a_crash(rows, observation):
    """Records with the three fields every record has draw, whatever else they hold
    (fields of the wrong type, unknown kinds), and so does any observation (kit: trace-timeline)."""
    records = [{"i": i, "t": t, "what": what, **fields}
               for i, (what, t, fields) in enumerate(rows)]
    page = render_html(records, abandon_reasons(observation))
    assert page.startswith("<!DOCTYPE html>")


def test_without_html_the_trace_prints_as_a_text_timeline(tmp_path):
    """`forge trace FILE` prints the run in virtual time, a line a step, exit 0;
    the page's own flags without --html are one line, exit 2."""
    trace = tmp_path / "run.jsonl"
    trace.write_text(forge.run_prompt(source=TIMELINE).trace, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "forge", "trace", str(trace)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "0.000s  root chain 0 runs"
    assert any(" spawns task 0.3 " in line for line in lines)
    assert lines[-1].split("  ", 1)[1].startswith("the run ends ")
    every = subprocess.run([sys.executable, "-m", "forge", "trace", str(trace), "--every"],
                           capture_output=True, text=True, cwd=ROOT)
    assert len(every.stdout.splitlines()) > len(lines)
    titled = subprocess.run([sys.executable, "-m", "forge", "trace", str(trace), "--title", "x"],
                            capture_output=True, text=True, cwd=ROOT)
    assert titled.returncode == 2
    assert titled.stderr == "forge: --title: the page's heading; give --html FILE too\n"


def _trace_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge", "trace", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_an_observation_of_another_run_or_a_replay_file_is_refused(tmp_path):
    """`--observation` must be this run's observation: another run's (its
    `trace_sha256` is another trace's) and a replay file (not an observation)
    are refused in one line naming the file, exit 2; the run's own is drawn
    (kit: trace-timeline)."""
    own = forge.run_prompt(source=TIMELINE, seed=1, replay_out=tmp_path / "run.replay.json")
    other = forge.run_prompt(ROOT / "examples" / "two-tasks.md")
    (tmp_path / "run.jsonl").write_text(own.trace, encoding="utf-8")
    (tmp_path / "run.json").write_text(own.to_json(), encoding="utf-8")
    (tmp_path / "other.json").write_text(other.to_json(), encoding="utf-8")
    trace, page = str(tmp_path / "run.jsonl"), str(tmp_path / "run.html")
    assert _trace_cli(trace, "--html", page, "--observation", str(tmp_path / "run.json")) \
        .returncode == 0
    wrong = _trace_cli(trace, "--html", page, "--observation", str(tmp_path / "other.json"))
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
    assert wrong.stderr.startswith(f"forge: {tmp_path / 'other.json'}: trace_sha256: the "
                                   "observation is of another run")
    replay = _trace_cli(trace, "--html", page, "--observation",
                        str(tmp_path / "run.replay.json"))
    assert replay.returncode == 2 and replay.stderr.count("\n") == 1
    assert replay.stderr.startswith(f"forge: {tmp_path / 'run.replay.json'}: outcome: not an "
                                    "observation") and "replay file" in replay.stderr


def test_forge_replay_writes_the_trace_forge_trace_draws(tmp_path):
    """`forge replay FILE --trace T` writes the recorded run's trace, the bytes
    `forge run --trace` wrote for it, and `forge trace` draws it with the
    replay's observation (kit: trace-timeline)."""
    (tmp_path / "p.md").write_text(TIMELINE, encoding="utf-8")
    ran = subprocess.run([sys.executable, "-m", "forge", "run", "p.md", "--seed", "2", "--trace",
                          "run.jsonl", "--replay-out", "r.json"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert ran.returncode in (0, 1), ran.stderr
    again = subprocess.run([sys.executable, "-m", "forge", "replay", "r.json", "--trace",
                            "again.jsonl", "--json"], capture_output=True, text=True, cwd=tmp_path)
    # The replay's verdict is the run's: a run that ended failed fails again.
    assert again.returncode == ran.returncode, again.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "run.jsonl").read_bytes()
    (tmp_path / "again.json").write_text(again.stdout, encoding="utf-8")
    drawn = _trace_cli(str(tmp_path / "again.jsonl"), "--html", str(tmp_path / "p.html"),
                       "--observation", str(tmp_path / "again.json"))
    assert drawn.returncode == 0, drawn.stderr
