"""Same prompt, arguments and seed: byte-identical output in separate processes;
different seeds really give different schedules; nothing prints an address.

The processes run with different PYTHONHASHSEED values, so anything that
iterated an unordered set or dict, read an address or the wall clock would
show up as a difference.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT, run_text


def forge(*args: str, hashseed: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )


@pytest.mark.parametrize("seed", ["3", "17"])
@pytest.mark.parametrize("name", ["freeform.md", "checked-join.md", "leaky-walk.md"])
def test_same_seed_same_bytes_across_processes(tmp_path, name, seed):
    """The same example, seed and options give byte-identical JSON output and trace in three
    processes with different hash seeds (kit: determinism.processes)."""
    outputs, traces = [], []
    for i, hashseed in enumerate(["0", "12345", "random"]):
        trace = tmp_path / f"trace{i}.jsonl"
        done = forge("run", str(EXAMPLES / name), "--seed", seed, "--json", "--trace", str(trace),
                     hashseed=hashseed)
        assert done.returncode in (0, 1), done.stderr
        outputs.append(done.stdout)
        traces.append(trace.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    assert traces[0] == traces[1] == traces[2]
    assert traces[0], "the trace is not empty"


def test_different_seeds_explore_different_schedules():
    """Random schedules really differ: twenty seeds give more than one trace hash
    (kit: determinism.schedules)."""
    text = (EXAMPLES / "freeform.md").read_text()
    hashes = {run_text(text, seed=s)["trace_sha256"] for s in range(20)}
    assert len(hashes) > 1


PROBES = """---
name: probes
description: What standard Lua would make vary between processes
promptforge: 0
---

# Probes

## A

```lua
local t, f = {}, function() end
local keys = {}
for k in pairs({ z = 1, a = 2, [3] = 'x', [true] = 1 }) do keys[#keys + 1] = tostring(k) end
math.randomseed()
return table.concat({ math.random(1, 10^9), tostring(t), tostring(f), string.format('%s', t),
                      table.concat(keys, ',') }, ' ')
```
"""


def test_addresses_and_random_numbers_are_reproducible(tmp_path):
    """Printed table and function addresses, math.random after math.randomseed() and the pairs
    order are the same in every process (kit: determinism.addresses)."""
    path = tmp_path / "probes.md"
    path.write_text(PROBES)
    outs = {forge("run", str(path), "--seed", "9", hashseed=h).stdout for h in ("1", "2", "3")}
    assert len(outs) == 1
    (out,) = outs
    assert "table: 0x00000001 function: 0x00000002 table: 0x00000001" in out
    assert out.strip().endswith("true,3,a,z")


def test_format_p_is_refused():
    """string.format('%p') is refused because it would print an address
    (kit: determinism.format-p)."""
    from tests.conftest import prompt_text, section

    obs = run_text(prompt_text(section("A", "return string.format('%p', {})")))
    assert "%p prints an address" in obs["error"]["message"]


def _rewritten(code) -> bool:
    """Whether pytest's assertion rewriting reached `code` or a function inside it."""
    if any(name.startswith("@py_assert") for name in code.co_varnames):
        return True
    return any(_rewritten(c) for c in code.co_consts if hasattr(c, "co_varnames"))


def _functions(module):
    """The functions and methods `module` defines."""
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            yield value
        elif inspect.isclass(value):
            yield from (f for f in vars(value).values() if inspect.isfunction(f))


def test_the_kits_own_asserts_are_not_rewritten_under_pytest():
    """The kit is a pytest plugin, so pytest marks its packages for assertion
    rewriting; a rewritten assert's message then carries object reprs with
    addresses (`<... object at 0x...>`), which reached a crashed run's
    observation and a lifecycle scenario's problems and made a replay of the
    same schedule differ under pytest.  Every kit module that asserts opts out
    with PYTEST_DONT_REWRITE (kit: determinism.addresses)."""
    import importlib
    import pkgutil

    import forge
    import forge.conformance
    import forge.sim
    import forge.spec

    seen = []
    names = [info for package in (forge, forge.sim, forge.conformance, forge.spec)
             for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for info in names:
        if info.name == "forge.__main__":     # importing it runs the command line
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:      # an optional extra's module (dask) on a machine without it
            continue
        seen.append(info.name)
        rewritten = [f.__qualname__ for f in _functions(module) if _rewritten(f.__code__)]
        assert rewritten == [], f"{info.name}: pytest rewrote the asserts of {rewritten}"
    assert {"forge.engine.kernel", "forge.sim.kernel", "forge.conformance.mutants",
            "forge.lifecycle.scenario"} <= set(seen)
