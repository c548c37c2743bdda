"""The kernel and the closed set of requests (forge.engine.kernel, forge.engine.requests).

Clauses: tasks.status.blocked-values (what `blocked` reads for each request).
"""

from __future__ import annotations

import pytest

from forge.engine import requests
from forge.engine.run import Run
from forge.errors import ForgeInternalError
from forge.prompt import parse_prompt

PROMPT = """---
name: k
description: kernel
promptforge: 0
---

# K

## Main

```lua
return 'ok'
```
"""


def _run() -> Run:
    return Run(parse_prompt(PROMPT, "k.md"))


def test_blocked_reads_the_request_kind():
    """tasks.status.blocked-values: chat, tool_call, store, tasks, queued, call."""
    expected = {
        requests.StoreOp("write", "a"): "store",
        requests.ModelRound("chat", "r1"): "chat",
        requests.OperatorQuestion(1, None): "tool_call",
        requests.CalledChain(None): "call",
        requests.Join("tasks.join", (), every=True, timed=False): "tasks",
        requests.FanoutArms((), ()): "tasks",
        requests.AwaitTasks(None, None, timed=False): "tasks",
        requests.Slot(None): "queued",
    }
    assert {type(r) for r in expected} == set(requests.REQUESTS)
    for request, blocked in expected.items():
        assert requests.blocked_of(request) == blocked


def test_a_chain_cannot_park_on_anything_outside_the_closed_set():
    run = _run()
    run.execute()
    with pytest.raises(ForgeInternalError, match="not a request"):
        run.scheduler.park(run.root, object())


def test_an_unknown_suspending_call_is_an_internal_error_that_says_so():
    run = _run()
    with pytest.raises(ForgeInternalError, match="unknown suspending call 'nope'"):
        run.scheduler._dispatch(None, "nope", ())


def test_an_unknown_event_is_an_internal_error_that_says_so():
    run = _run()
    with pytest.raises(ForgeInternalError, match="unknown event 'bogus'"):
        run.scheduler._handle(("bogus",))


def test_requests_compare_by_identity():
    """A late answer is dropped because the chain waits on another request
    object, even one with equal fields."""
    a, b = requests.StoreOp("read", "x"), requests.StoreOp("read", "x")
    assert a is not b and a != b


def test_a_chain_made_ready_twice_is_caught():
    run = _run()
    run.execute()
    chain = run.root
    chain.state = "parked"          # as if parked, to reach the transition's check
    run.scheduler.make_ready(chain, None)
    with pytest.raises(AssertionError, match="made ready twice"):
        run.scheduler.make_ready(chain, None)
