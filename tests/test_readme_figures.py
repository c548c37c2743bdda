"""The measured figures of docs/benchmarks.md are the block `benchmarks/readme.py` writes.

The numbers move from run to run, so this checks the block's markers and
wording: the page's block must read exactly as `render` words some
measurement, any numbers in the number slots.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _readme_module():
    spec = importlib.util.spec_from_file_location("benchmarks_readme",
                                                  ROOT / "benchmarks" / "readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme = _readme_module()


def _measured(x: float) -> tuple[dict, dict]:
    """Stand-ins for run.py --json and scaling.py --json, every figure `x`."""
    pair = {"min": x, "median": x * 1.1}
    run = {"ratios": {k: pair for k in ("two_tasks_vs_fresh_floor", "two_tasks_vs_reused_floor",
                                         "run_creation_vs_bare_runtime")},
           "conformance": {"cases": 300, "cases_per_s": x * 10, "case_vs_fresh_floor": x},
           "endless_jump_s": pair,
           "phases": {k: x / 10 for k in ("creation", "execute", "observation_less_hash",
                                          "trace_hash")},
           "users": {**{k: pair for k in (
               "run_vs_fresh_floor", "run_with_observation_vs_fresh_floor",
               "api_run_prompt_vs_fresh_floor", "api_explore_random_vs_fresh_floor",
               "api_explore_random_first_vs_fresh_floor",
               "api_explore_random_unseen_vs_fresh_floor",
               "api_explore_pct_vs_fresh_floor", "lua_kernel_bound_vs_fresh_floor",
               "python_kernel_bound_vs_fresh_floor")},
               # As run.py gives it (it rendered nothing but a KeyError before).
               "parallel_exhaustive": {"clock": "wall", "schedules": 10_080, "speedup": pair}}}
    rows = [{"tasks": n, "min_s": x, "median_s": x * 1.1} for n in (1_000, 10_000)]
    series = {"rows": rows, "calls_exponent": x, "fit": x}
    return run, {"joins": series, "store_writes": series}


def _words(text: str) -> str:
    return " ".join(text.split())


def _shape(block: str) -> re.Pattern:
    """`block` with every number a slot any number fills."""
    parts = re.split(r"[0-9][0-9.,/]*", _words(block))
    return re.compile(r"[0-9][0-9.,/]*".join(re.escape(p) for p in parts))


def test_the_readme_has_one_figures_block_in_the_words_render_gives():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert text.count(readme.BEGIN) == 1 and text.count(readme.END) == 1
    block = readme.current_block(text)
    shape = _shape(readme.render(*_measured(3.25)))
    assert shape.fullmatch(_words(block)), "docs/benchmarks.md's figures were edited by hand: " \
        "run python3 benchmarks/readme.py"


def test_the_block_is_rewritten_in_place_and_nothing_else_moves():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    block = readme.render(*_measured(7.5))
    new = readme.replace_block(text, block)
    assert readme.current_block(new) == block
    start = text.index(readme.BEGIN)
    assert new[:start] == text[:start]
    assert new.endswith(text[text.index(readme.END) + len(readme.END):])
    assert "7.5" in block and len(block.splitlines()) <= 18


@pytest.mark.parametrize("text", ["no markers here", f"{readme.BEGIN}\n{readme.BEGIN}\n{readme.END}"])
def test_a_readme_without_exactly_one_block_is_refused(text):
    with pytest.raises(ValueError):
        readme.replace_block(text, "x")


def test_saved_benchmark_json_renders(tmp_path):
    run, scaling = _measured(2.0)
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "scaling.json").write_text(json.dumps(scaling))
    assert readme._measure("run.py", str(tmp_path / "run.json")) == run
