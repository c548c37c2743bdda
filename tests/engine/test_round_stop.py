"""The model script's round stop, `stop_at` (kit: model-script.stop-at): at
that virtual instant every model round in flight fails as a backend failure,
its scripted answer and its completion timer dropped, visible in `effects`.
"""

from __future__ import annotations

import pytest

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness
from forge.prompt import parse_prompt
from forge.scripts import ROUND_STOP_MESSAGE, model_script_from_data
from forge.sim.chooser import Canonical, Chooser, RandomProvider

PROMPT = """---
name: stop
description: Rounds in flight when the model backend stops
promptforge: 0
models:
  writer: {}
---

# Stop

```lua
models.default('writer')
```

## Plan

```lua
local t = tasks.spawn('## Slow')
local ok, err = pcall(models.infer, 'quick question')
log('plan: ' .. tostring(ok) .. ' ' .. tostring(err))
local r = tasks.join({ t })[1]
local again = models.infer('after the stop')
return tostring(r.result) .. ' / ' .. again
```

## Slow

```lua
local msgs = messages.new():user('think long')
local ok, err = pcall(models.loop, msgs)
log('slow: ' .. tostring(ok) .. ' ' .. (ok and '' or err.kind))
return 'slow ' .. #msgs
```
"""

SCRIPT = {"rounds": [
    {"section": "Plan", "user_contains": "quick", "reply": {"text": "answer"}, "delay": 10},
    {"section": "Slow", "reply": {"text": "thought"}, "delay": 100},
    {"section": "Plan", "user_contains": "after", "reply": {"text": "later answer"}, "delay": 2}]}


def run(script: dict, seed: int | None = None) -> dict:
    harness = Harness(model=model_script_from_data(script, "t.model.json"))
    chooser = Chooser(Canonical() if seed is None else RandomProvider(seed))
    return run_prompt(parse_prompt(PROMPT, "stop.md"), harness, chooser,
                      RunConfig()).observation()


def test_a_stop_fails_every_round_in_flight_and_drops_its_timer():
    """Both rounds out at 5 s fail with the backend failure, the run does not
    wait out their 10 s and 100 s, and a round sent after the stop runs as
    usual (kit: model-script.stop-at)."""
    obs = run({**SCRIPT, "stop_at": 5})
    assert obs["logs"] == [f"plan: false {ROUND_STOP_MESSAGE}", "slow: false internal"]
    assert obs["result"] == "slow 1 / later answer"
    assert obs["virtual_time"] == pytest.approx(7.0)
    model = [e for e in obs["effects"] if e["op"] == "model"]
    assert [(e["chain"], e["answer"], e.get("dropped_at"), e["due"]) for e in model] == [
        ("0", "dropped", 5.0, 10.0), ("0.0", "dropped", 5.0, 100.0), ("0", "answered", None, 7.0)]
    # The stopped round sent what it sent: the rounds still show it.
    assert [r["messages"][-1]["content"] for r in obs["rounds"]] == [
        "quick question", "think long", "after the stop"]


def test_without_a_stop_the_rounds_run_their_course():
    """The same run without `stop_at` waits 100 s for ## Slow (kit: model-script.stop-at)."""
    obs = run(SCRIPT)
    assert obs["logs"] == ["plan: true answer", "slow: true "]
    assert obs["virtual_time"] == pytest.approx(102.0)
    assert all(e["answer"] == "answered" for e in obs["effects"])


def test_a_round_due_at_the_stop_instant_is_answered_first():
    """Completions sort before the stop at one instant: no open decision, and
    the same on every schedule (kit: model-script.stop-at)."""
    obs = run({**SCRIPT, "stop_at": 10})
    assert obs["logs"][0] == "plan: true answer"
    assert obs["logs"][1] == "slow: false internal"
    for seed in range(5):
        again = run({**SCRIPT, "stop_at": 10}, seed)
        assert again["logs"][1] == "slow: false internal"


def test_a_cancelled_tasks_round_is_dropped_once():
    """A task cancelled while its round is out leaves a late answer to discard
    (tasks.cancel.harness-wait-safe); a stop before that answer drops it, once,
    and fails no chain: only the round its chain still waits on fails
    (kit: model-script.stop-at)."""
    prompt = PROMPT.replace(
        "local r = tasks.join({ t })[1]\nlocal again = models.infer('after the stop')",
        "tasks.cancel(t)\nlocal r = tasks.join({ t })[1]\n"
        "local fine, again = pcall(models.infer, 'after the stop')\n"
        "if not fine then again = again.message end")
    script = {**SCRIPT, "stop_at": 20}
    script["rounds"] = [*SCRIPT["rounds"][:2], {**SCRIPT["rounds"][2], "delay": 50}]
    harness = Harness(model=model_script_from_data(script, "t.model.json"))
    obs = run_prompt(parse_prompt(prompt, "stop.md"), harness, Chooser(Canonical()),
                     RunConfig()).observation()
    assert obs["outcome"] == "ok", obs["error"]
    assert obs["tasks"]["0.0"]["state"] == "cancelled"
    assert obs["logs"] == ["plan: true answer"]
    assert obs["result"] == f"task `0.0` was cancelled / {ROUND_STOP_MESSAGE}"
    assert obs["virtual_time"] == pytest.approx(20.0)
    model = [e for e in obs["effects"] if e["op"] == "model"]
    assert [(e["chain"], e["answer"], e.get("dropped_at")) for e in model] == [
        ("0", "answered", None), ("0.0", "dropped", 20.0), ("0", "dropped", 20.0)]
