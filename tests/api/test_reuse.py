"""What the Python API keeps between calls, and that keeping it changes nothing.

`forge.api` keeps recent run set-ups (the spec and its `Runner`) keyed by
the prompt's text and the options, and freezes an observation's values
when they are first read.  These tests hold that an edited prompt file is
run as edited, that options naming files are read afresh, and that a lazily
frozen observation is the eagerly frozen one: equal, read-only, pickling.
"""

from __future__ import annotations

import json
import pickle

import pytest

import forge.api as api
from forge.engine.run import run_prompt
from forge.prompt import load_prompt

PROMPT = """---
name: reuse
description: returns a word
promptforge: 0
---

# Reuse

## Main

```lua
return '{word}'
```
"""


def test_an_edited_prompt_file_runs_as_edited(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="one"))
    assert api.run_prompt(path).result == "one"
    assert api.run_prompt(path).result == "one"
    path.write_text(PROMPT.format(word="two"))
    assert api.run_prompt(path).result == "two"


def test_a_store_folder_is_read_on_every_call(tmp_path):
    prompt = tmp_path / "p.md"
    prompt.write_text(PROMPT.replace("return '{word}'", "return store.read('a.md')"))
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "a.md").write_text("first")
    assert api.run_prompt(prompt, store=folder).result == "first"
    (folder / "a.md").write_text("second")
    assert api.run_prompt(prompt, store=folder).result == "second"


def test_a_reused_set_up_gives_the_same_observation(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="same"))
    first = api.run_prompt(path, seed=3)
    again = api.run_prompt(path, seed=3)
    assert first.to_json() == again.to_json()
    assert first.trace == again.trace


def _eager(value):
    if isinstance(value, dict):
        return {k: _eager(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_eager(v) for v in value)
    return value


def test_a_lazily_frozen_observation_reads_as_an_eagerly_frozen_one():
    obs = api.run_prompt("examples/two-tasks.md")
    data = json.loads(obs.to_json())
    assert obs.to_dict() == data
    event = obs.events[0]
    with pytest.raises(TypeError):
        event["kind"] = "other"         # type: ignore[index]
    assert dict(event) == _eager(data["events"][0])
    assert isinstance(event["provenance"], api._FrozenMap)
    copy = pickle.loads(pickle.dumps(obs))
    assert copy.to_json() == obs.to_json() and copy == obs
    engine = run_prompt(load_prompt("examples/two-tasks.md")).observation()
    assert repr(obs.tasks) == repr(_eager(engine["tasks"]))


def test_from_dict_keeps_no_reference_to_the_callers_data():
    data = json.loads(api.run_prompt("examples/two-tasks.md").to_json())
    obs = api.Observation.from_dict(data)
    data["events"][0]["kind"] = "changed"
    data["tasks"]["0.0"]["state"] = "changed"
    assert obs.events[0]["kind"] != "changed"
    assert obs.tasks["0.0"]["state"] != "changed"
