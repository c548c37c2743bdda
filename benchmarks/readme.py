"""The measured figures of docs/benchmarks.md, written from the benchmarks' JSON, never typed by hand.

    python3 benchmarks/readme.py [--run-json FILE] [--scaling-json FILE] [--print]

Runs `benchmarks/run.py --json` and `benchmarks/scaling.py --json` (or reads
their saved output from the files given) and rewrites the block of
docs/benchmarks.md between `BEGIN` and `END` with the figures they measured: CPU
time, min and median, as ratios to baselines taken in the same process.
`--print` prints the block instead of writing it.  tests/test_readme_figures.py
checks that the page's block has the markers and the wording `render`
gives (numbers aside, since they move from run to run).

What does not live here: the measurements themselves (`run.py`, `scaling.py`).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- figures: benchmarks/readme.py writes this block -->"
END = "<!-- /figures -->"
WIDTH = 78


def _span(pair: dict, digits: int = 1) -> str:
    """`min/median` of a {min, median} pair, one figure when they round alike."""
    low, high = f"{pair['min']:.{digits}f}", f"{pair['median']:.{digits}f}"
    return low if low == high else f"{low}/{high}"


def _pair(row: dict) -> dict:
    return {"min": row["min_s"], "median": row["median_s"]}


def render(run: dict, scaling: dict) -> str:
    """The block's text (markers included) from `run.py --json` and `scaling.py --json`."""
    ratios = run["ratios"]
    joins, writes = scaling["joins"], scaling["store_writes"]
    largest = joins["rows"][-1]
    written = writes["rows"][-1]
    conformance = run["conformance"]
    phases = run["phases"]
    text = (
        "On the 2-core development machine (CPU time, min/median, ratios "
        "to baselines measured in the same process): a two-task run costs "
        f"{_span(ratios['two_tasks_vs_fresh_floor'])}x the fresh-runtime floor and "
        f"{_span(ratios['two_tasks_vs_reused_floor'])}x the reused-runtime floor; creating "
        f"a run costs {_span(ratios['run_creation_vs_bare_runtime'])}x a bare runtime (of a "
        f"two-task run, creating it takes {phases['creation']:.0%}, executing it "
        f"{phases['execute']:.0%}, building its observation {phases['observation_less_hash']:.0%} "
        f"and hashing its trace, as the floors do too, {phases['trace_hash']:.0%}); a "
        f"conformance case about {conformance['case_vs_fresh_floor']:.0f} floors "
        f"({conformance['cases']} cases, {conformance['cases_per_s']:.0f} a second). The "
        f"endless-jump runaway stops after {_span(run['endless_jump_s'])} s. Joining "
        f"{largest['tasks']:,} tasks takes {_span(_pair(largest))} s, "
        f"{_span(_pair(written))} s with a store write in each; "
        f"the Python calls per task grow with exponent {joins['calls_exponent']:.3f} "
        f"from {joins['rows'][-2]['tasks']:,} to {largest['tasks']:,} tasks, CPU time "
        f"with {joins['fit']:.2f} fitted from 100 tasks."
    )
    users = run.get("users")
    if users is not None:
        text += (
            " Through the Python API, on the prompt's path: `forge.api.run_prompt` costs "
            f"{_span(users['api_run_prompt_vs_fresh_floor'])}x the floor (the engine's run "
            f"{_span(users['run_vs_fresh_floor'])}x, with its observation "
            f"{_span(users['run_with_observation_vs_fresh_floor'])}x), one schedule of "
            f"`forge.api.explore` {_span(users['api_explore_random_vs_fresh_floor'])}x "
            f"(random; a process's first campaign "
            f"{_span(users['api_explore_random_first_vs_fresh_floor'])}x) and "
            f"{_span(users['api_explore_pct_vs_fresh_floor'])}x (PCT; a repeated schedule "
            "is not run again, one never seen costs "
            f"{_span(users['api_explore_random_unseen_vs_fresh_floor'])}x); the happy-path "
            f"kernel bounds {_span(users['lua_kernel_bound_vs_fresh_floor'])}x in Lua, "
            f"{_span(users['python_kernel_bound_vs_fresh_floor'])}x in Python."
        )
        if users.get("parallel_exhaustive") is not None:
            text += (" An exhaustive search with 2 workers runs "
                     f"{_span(users['parallel_exhaustive']['speedup'])}x as fast as serial (wall "
                     "clock; the other core may be busy).")
    return "\n".join([BEGIN, textwrap.fill(text, WIDTH, break_on_hyphens=False), END])


def replace_block(readme: str, block: str) -> str:
    """`readme` with its one figures block replaced by `block`."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ValueError(f"docs/benchmarks.md needs exactly one `{BEGIN}` and one `{END}`")
    start = readme.index(BEGIN)
    stop = readme.index(END, start) + len(END)
    return readme[:start] + block + readme[stop:]


def current_block(readme: str) -> str:
    start = readme.index(BEGIN)
    return readme[start: readme.index(END, start) + len(END)]


def _measure(script: str, path: str | None) -> dict:
    if path is not None:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--json"],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-json", help="saved output of benchmarks/run.py --json")
    parser.add_argument("--scaling-json", help="saved output of benchmarks/scaling.py --json")
    parser.add_argument("--print", action="store_true", help="print the block, write nothing")
    opts = parser.parse_args(argv)
    block = render(_measure("run.py", opts.run_json), _measure("scaling.py", opts.scaling_json))
    if opts.print:
        print(block)
        return 0
    README.write_text(replace_block(README.read_text(encoding="utf-8"), block), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
