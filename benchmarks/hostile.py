"""Time and peak memory of every hostile prompt, each in a process of its own.

Usage: `python3 benchmarks/hostile.py [--json] [NAME ...]`.  Runs each entry
of the hostile-prompt catalogue (tests/engine/test_sandbox.py: the sandbox
escapes, the runaway and resource bombs - result, log, store, memory,
pattern - and the hostile values) as `forge run --json FILE` under the
default budgets, in a child process, and prints its wall time, CPU time,
peak resident memory (`os.wait4`'s ru_maxrss of that child alone) and how
the run ended.  The contract (issue 15): each ends within 10 s with a peak
under 1 GB; the last line counts the entries that do not.  Wall time on a
loaded machine overstates the cost; CPU time is the steadier figure.

What does not live here: the catalogue and its assertions on the error kind
and message (the tests).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import prompt_text, section  # noqa: E402
from tests.engine import test_sandbox as catalogue  # noqa: E402

MAX_SECONDS = 10.0
MAX_RSS_MB = 1024
#: A child still running after this is killed and reported as a hang.
KILL_AFTER = 60.0


def entries() -> dict[str, str]:
    """Every hostile prompt of the catalogue, by name, as prompt text."""
    out = {}
    for name, code in catalogue.ESCAPES.items():
        out[f"escape/{name}"] = prompt_text(section("Main", code))
    for name, (text, _phrase) in catalogue.RUNAWAY.items():
        out[f"runaway/{name}"] = prompt_text(text)
    for name, (code, _kind, _message) in catalogue.HOSTILE_VALUES.items():
        out[f"value/{name}"] = prompt_text(section("Main", code + "\nreturn 'unreachable'"))
    return out


def measure(text: str) -> dict:
    """Run one prompt in a child; its wall and CPU seconds, peak RSS and ending."""
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "forge", "run", "--json", f.name],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda k=k, s=s: out.__setitem__(k, s.read()))
               for k, s in (("stdout", child.stdout), ("stderr", child.stderr))]
    for r in readers:
        r.start()
    hung = False
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > KILL_AFTER:
            child.kill()
            hung = True
        time.sleep(0.01)
    wall = time.monotonic() - started
    for r in readers:
        r.join()
    os.unlink(f.name)
    ending = "hung" if hung else f"exit {os.waitstatus_to_exitcode(status)}"
    try:
        error = json.loads(out["stdout"])["error"] or {}
        ending += f" {error.get('kind')}: {str(error.get('message'))[:60]}"
    except (ValueError, KeyError, TypeError):
        ending += " " + out["stderr"].decode("utf-8", "replace").strip()[-80:]
    return {"wall": round(wall, 2), "cpu": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_mb": usage.ru_maxrss // 1024, "ending": ending}


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    names = [a for a in argv if a != "--json"]
    table = {name: text for name, text in entries().items()
             if not names or name in names or name.split("/", 1)[1] in names}
    rows = {}
    for name, text in table.items():
        rows[name] = row = measure(text)
        row["ok"] = row["wall"] < MAX_SECONDS and row["rss_mb"] < MAX_RSS_MB
        if not as_json:
            print(f"{name:42s} {row['wall']:6.2f} s wall {row['cpu']:6.2f} s cpu "
                  f"{row['rss_mb']:5d} MB  {'ok  ' if row['ok'] else 'PAST'} {row['ending']}",
                  flush=True)
    bad = sorted(n for n, r in rows.items() if not r["ok"])
    if as_json:
        print(json.dumps({"entries": rows, "past_the_limits": bad}, indent=1))
    else:
        worst_wall = max(rows.values(), key=lambda r: r["wall"])["wall"]
        worst_rss = max(rows.values(), key=lambda r: r["rss_mb"])["rss_mb"]
        print(f"{len(rows)} hostile prompts; slowest {worst_wall:.2f} s wall, largest "
              f"{worst_rss} MB peak; past 10 s or 1 GB: {len(bad)} {bad if bad else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
