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
