"""The hostile catalogue: every runaway and sandbox case the kit knows, each with the run error
it must end in and the CPU and memory it may take.

What lives here: `ENTRIES`, by name (`escape/...`, `runaway/...`, `value/...`, `python-lua/...`,
`python-lua-unrun/...`, `backstop/...`), each an `Entry`.  The sandbox escapes, runaway prompts and hostile values are
the ones `tests/engine/test_sandbox.py` asserts in detail; the prompt Lua reached from Python
and the long-instruction loops are `tests/hostile/test_entry_points.py`'s.  What does not:
running them - `tests/hostile/test_catalogue.py` checks the catalogue and runs its entries at
a CI-sized budget, and `benchmarks/hostile.py` runs every entry in a process of its own under
the default budgets, measuring its CPU time and peak memory against its ceiling.

The guarantee (docs/limits.md): every run ends within `MAX_CPU_SECONDS` of CPU time and
`MAX_RSS_MB` of resident memory.
"""

from __future__ import annotations

import attrs

from tests.conftest import prompt_text, section
from tests.engine import test_sandbox as sandbox
from tests.hostile import test_entry_points as entry_points

MAX_CPU_SECONDS = 10.0
MAX_RSS_MB = 1024


@attrs.frozen
class Entry:
    """One hostile prompt: its text, the run error kind and message phrase it ends with,
    and its ceilings (CPU seconds and peak resident MB of a `forge run` process)."""

    text: str
    kind: str
    phrase: str
    cpu_seconds: float = MAX_CPU_SECONDS
    rss_mb: int = MAX_RSS_MB


def _entries() -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for name, code in sandbox.ESCAPES.items():
        out[f"escape/{name}"] = Entry(prompt_text(section("Main", code)), "Lua", "")
    for name, (text, phrase) in sandbox.RUNAWAY.items():
        out[f"runaway/{name}"] = Entry(prompt_text(text), "Budget", phrase)
    for name, (code, kind, message) in sandbox.HOSTILE_VALUES.items():
        text = prompt_text(section("Main", code + "\nreturn 'unreachable'"))
        out[f"value/{name}"] = Entry(text, kind, message)
    for name, text in entry_points.ENTRIES.items():
        out[f"python-lua/{name}"] = Entry(prompt_text(text), "Budget",
                                          "instruction budget exhausted")
    for name, (text, kind, phrase) in entry_points.UNRUN.items():
        out[f"python-lua-unrun/{name}"] = Entry(prompt_text(text), kind, phrase)
    for name, code in entry_points.BACKSTOP.items():
        out[f"backstop/{name}"] = Entry(prompt_text(section("Main", code)), "Backstop",
                                        "CPU time limit reached")
    return out


ENTRIES: dict[str, Entry] = _entries()
