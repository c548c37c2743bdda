"""The reference engine as an adapter: a case's harness reaches the run
(conformance.adapters.InProcessAdapter)."""

import sys
import types

import pytest

from forge.conformance.adapters import AdapterError, InProcessAdapter
from forge.conformance.case import Case, HarnessSpec

READER = """\
---
name: reader
description: Logs its arguments and returns a store file
promptforge: 0
---

# Reader

## Main

```lua
log(args)
return store.read('in.md')
```
"""


def observe(prompt=READER, seed=None, **harness):
    c = Case(id="g/reader", path="g/reader.toml", clauses=("c",), harness=HarnessSpec(**harness),
             expect={}, prompt=prompt)
    return InProcessAdapter().run(c, seed)


def test_args_and_store_reach_the_run():
    """harness.args is the run's argument string; harness.store seeds the store."""
    o = observe(args="x y", store={"in.md": "hello"})
    assert (o["outcome"], o["result"], o["logs"]) == ("ok", "hello", ["x y"])


def test_pinned_latency_sets_virtual_time():
    """A pinned store latency is the virtual duration of the store call."""
    assert observe(store={"in.md": "x"}, latency={"store": 2.0})["virtual_time"] == 2.0


def test_refuse_and_cancel_at_are_host_faults():
    """A refused read fails as a store error; a host cancel ends the run cancelled."""
    refused = observe(store={"in.md": "x"}, refuse={"read": ["in.md"]})
    assert (refused["outcome"], refused["error"]["kind"]) == ("failed", "Vfs")
    cancelled = observe(store={"in.md": "x"}, latency={"store": 2.0}, cancel_at=1.0)
    assert (cancelled["outcome"], cancelled["virtual_time"]) == ("cancelled", 1.0)


def test_the_observation_is_plain_json_and_deterministic():
    """Two runs on one seed give equal observations, made of JSON types only."""
    first, second = observe(seed=3, store={"in.md": "x"}), observe(seed=3, store={"in.md": "x"})
    assert first == second
    assert isinstance(first["logs"], list) and isinstance(first["tasks"], dict)


def test_a_model_script_needs_forge_scripts(monkeypatch):
    """Without forge.scripts, a case with a model script errors and says why."""
    monkeypatch.setitem(sys.modules, "forge.scripts", None)
    with pytest.raises(AdapterError) as info:
        observe(store={"in.md": "x"}, model_script={"rounds": []})
    assert info.value.reason == ("this case needs a model script, and this engine build has no "
                                 "forge.scripts.model_script_from_data to read one")


def test_scripts_are_built_from_the_case_data(monkeypatch):
    """With forge.scripts, the inline scripts are handed over with a source label."""
    calls = []
    fake = types.ModuleType("forge.scripts")
    fake.model_script_from_data = lambda data, source: calls.append((data, source))
    fake.operator_script_from_data = lambda data, source: calls.append((data, source))
    monkeypatch.setitem(sys.modules, "forge.scripts", fake)
    observe(store={"in.md": "x"}, model_script={"rounds": []}, operator_script=["yes"])
    assert calls == [({"rounds": []}, "g/reader.toml [harness.model_script]"),
                     (["yes"], "g/reader.toml [harness.operator_script]")]


def _plain(value, where="observation"):
    """Where `value` is not plain JSON data (dicts with string keys, lists,
    strings, numbers, booleans, None), or None."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := _plain(v, f"{where}[{i}]"))), None)
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where}: key {k!r}"
            if (p := _plain(v, f"{where}.{k}")):
                return p
        return None
    return f"{where}: {type(value).__name__}"


def test_observations_are_plain_json_data_as_a_subprocess_would_send():
    """The adapter hands observations over without a JSON round trip, so the
    engine must build them as plain JSON data: every shipped case and example,
    and a prompt the parser refuses (kit: conformance.in-process)."""
    import json
    import pathlib

    from forge.conformance.adapters import _reference_run
    from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
    from forge.engine.run import observation_json

    cases = [c for c in load_cases(DEFAULT_CASES_DIR) if c.prompt is not None]
    examples = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.md"))
    assert len(cases) > 100 and examples
    runs = [(c.id, c.prompt, c.harness) for c in cases]
    runs += [(p.name, p.read_text(encoding="utf-8"), HarnessSpec()) for p in examples]
    runs.append(("refused", "no frontmatter here", HarnessSpec()))
    for name, prompt, harness in runs:
        observation = _reference_run(prompt, harness, None, name)[0]
        assert _plain(observation) is None, (name, _plain(observation))
        assert json.loads(observation_json(observation)) == observation, name


def test_plain_finds_what_json_would_change():
    assert _plain({"a": [1, {"b": (1, 2)}]}) == "observation.a[1].b: tuple"
    assert _plain({1: "x"}) == "observation: key 1"
    assert _plain({"a": [None, True, 1.5, "s"]}) is None
