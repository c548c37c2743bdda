"""Time and peak memory of every hostile prompt, each in a process of its own.

Usage: `python3 benchmarks/hostile.py [--json] [NAME ...]`.  Runs each entry
of the hostile catalogue (tests/hostile/catalogue.py: the sandbox escapes,
the runaway and resource bombs - result, log, store, memory, pattern - the
hostile values, the prompt Lua the engine reaches from Python, and the loops
of long instructions only the CPU-time backstop stops) as `forge run --json
FILE` under the default budgets, in a child process, and prints its wall
time, CPU time, peak resident memory (`os.wait4`'s ru_maxrss of that child
alone) and how the run ended.  The contract (issue 31, docs/limits.md): each
ends with the error kind its entry names, within its CPU and memory ceilings
(at most 10 s of CPU and 1 GB); the last line names the slowest and the
largest and counts the entries that do not, judged on CPU seconds (wall time
on a loaded machine measures the machine; both are shown).

What does not live here: the catalogue and its assertions on the error kind
and message (the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile.catalogue import ENTRIES, MAX_CPU_SECONDS, MAX_RSS_MB  # noqa: E402

#: A child still running after this is killed and reported as a hang.
KILL_AFTER = 60.0


def entries() -> dict[str, str]:
    """Every hostile prompt of the catalogue, by name, as prompt text."""
    return {name: entry.text for name, entry in ENTRIES.items()}


def measure(text: str) -> dict:
    """Run one prompt in a child; its wall and CPU seconds, peak RSS and ending.

    The child's output goes to a file and only its head is read: a process
    started from a large parent reports that parent's peak as its own
    (Linux keeps the peak across exec), so this process must stay small.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-m", "forge", "run", "--json", f.name],
                                 stdout=out, stderr=err, env=env, cwd=ROOT)
        hung = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > KILL_AFTER and not hung:
                child.kill()
                hung = True
            time.sleep(0.01)
        wall = time.monotonic() - started
        out.seek(0)
        head = _error_of(out)
        err.seek(0)
        tail = err.read()[-400:].decode("utf-8", "replace").strip()
    os.unlink(f.name)
    ending = "hung" if hung else f"exit {os.waitstatus_to_exitcode(status)}"
    m = _ERROR.search(head)
    ending += f" {m.group('kind')}: {m.group('message')[:60]}" if m else f" {tail[-80:]}"
    return {"wall": round(wall, 2), "cpu": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_mb": usage.ru_maxrss // 1024, "ending": ending}


def _error_of(out) -> str:
    """The observation's `"error":{...}` text, found by reading `out` in
    pieces (keys are sorted, so long `effects` may come first)."""
    tail = b""
    while True:
        piece = out.read(1 << 20)
        if not piece:
            return ""
        window = tail + piece
        at = window.find(b'"error":')
        if at >= 0:
            return (window[at:] + out.read(4096)).decode("utf-8", "replace")
        tail = window[-16:]


#: The observation's error.
_ERROR = re.compile(r'"error":\{"kind":"(?P<kind>[^"]*)","message":"(?P<message>(?:[^"\\]|\\.)*)"')


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="only these entries (`RUNAWAY/name` or just `name`)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    opts = parser.parse_args(argv)
    as_json, names = opts.json, opts.names
    catalogue = entries()
    unknown = [n for n in names
               if n not in catalogue and not any(k.split("/", 1)[1] == n for k in catalogue)]
    if unknown:
        parser.error(f"no such entry: {', '.join(unknown)} (entries: "
                     f"{', '.join(sorted(catalogue))})")
    table = {name: text for name, text in catalogue.items()
             if not names or name in names or name.split("/", 1)[1] in names}
    rows = {}
    for name, text in table.items():
        rows[name] = row = measure(text)
        # CPU seconds: on a loaded machine wall time measures the machine.
        entry = ENTRIES[name]
        row["ok"] = (row["cpu"] < min(entry.cpu_seconds, MAX_CPU_SECONDS)
                     and row["rss_mb"] < min(entry.rss_mb, MAX_RSS_MB)
                     and f" {entry.kind}: " in row["ending"])
        if not as_json:
            print(f"{name:42s} {row['wall']:6.2f} s wall {row['cpu']:6.2f} s cpu "
                  f"{row['rss_mb']:5d} MB  {'ok  ' if row['ok'] else 'PAST'} {row['ending']}",
                  flush=True)
    bad = sorted(n for n, r in rows.items() if not r["ok"])
    if as_json:
        print(json.dumps({"entries": rows, "past_the_limits": bad}, indent=1))
    else:
        slowest = max(rows, key=lambda n: rows[n]["cpu"])
        largest = max(rows, key=lambda n: rows[n]["rss_mb"])
        print(f"{len(rows)} hostile prompts; slowest {slowest} {rows[slowest]['cpu']:.2f} s CPU "
              f"({rows[slowest]['wall']:.2f} s wall), largest {largest} "
              f"{rows[largest]['rss_mb']} MB peak; past their ending or ceiling: {len(bad)} "
              f"{bad if bad else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
