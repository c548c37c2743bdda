"""Model script entries keyed by round and by the latest user message, echo
replies and replies held until a virtual instant (kit: model-script).
"""

from __future__ import annotations

import pytest

from forge.engine.run import RunConfig, run_prompt
from forge.errors import InputError
from forge.harness import Harness
from forge.prompt import parse_prompt
from forge.scripts import model_script_from_data
from forge.sim.chooser import Canonical, Chooser

PROMPT = """---
name: t
description: t
promptforge: 0
models:
  writer: {}
---

# T

```lua
models.default('writer')
```

## Go

```lua
local msgs = messages.new():user('hello there')
models.loop(msgs)
local a = msgs[#msgs].content
msgs:user('second question')
models.loop(msgs)
local b = msgs[#msgs].content
local c = models.infer('third')
return a .. '|' .. b .. '|' .. c
```
"""


def run(script: dict):
    harness = Harness(model=model_script_from_data(script, "t.model.json"))
    return run_prompt(parse_prompt(PROMPT, "t.md"), harness, Chooser(Canonical()),
                      RunConfig()).observation()


def test_entries_keyed_by_user_message_and_round_echo_and_until():
    """`user_contains` and `round` pick the entry; `echo` answers with the user
    message; `until` holds the reply to that instant (kit: model-script)."""
    obs = run({"rounds": [
        {"user_contains": "second", "reply": {"text": "matched second"}, "until": 7.5},
        {"round": 3, "reply": {"text": "round three"}}],
        "default": {"echo": True}})
    assert obs["result"] == "hello there|matched second|round three"
    # round 1 at 0-1 s, round 2 held until 7.5 s, the infer 1 s more.
    assert obs["virtual_time"] == pytest.approx(8.5)


def test_an_entry_for_a_later_round_waits_for_it():
    """An entry keyed to round 2 is not taken by round 1 (kit: model-script)."""
    obs = run({"rounds": [{"round": 2, "reply": {"text": "two"}},
                          {"reply": {"text": "any"}}],
               "default": {"text": "dflt"}})
    assert obs["result"] == "any|two|dflt"


def test_an_until_already_past_takes_no_time():
    """`until` before the send instant: the round takes no time (kit: model-script)."""
    obs = run({"default": {"text": "x", "until": 0}})
    assert obs["virtual_time"] == 0


@pytest.mark.parametrize("script, message", [
    ({"rounds": [{"round": 0, "reply": {"text": "x"}}]}, "/rounds/0/round: must be at least 1, got 0"),
    ({"rounds": [{"user_contains": "", "reply": {"text": "x"}}]},
     "/rounds/0/user_contains: must be a non-empty string"),
    ({"rounds": [{"reply": {"text": "x"}, "delay": 1, "until": 2}]},
     "/rounds/0: `delay` and `until` exclude each other"),
    ({"default": {"echo": True, "text": "x"}}, "/default: an `echo` reply takes its text"),
    ({"default": {"echo": "yes"}}, "/default/echo: expected true or false, got \"yes\""),
])
def test_bad_keys_name_the_entry_and_rule(script, message):
    """A bad key is bad input naming file, entry and rule (kit: model-script)."""
    with pytest.raises(InputError) as e:
        model_script_from_data(script, "t.model.json")
    assert message in str(e.value) and "t.model.json" in str(e.value)
