"""The kernel and the closed set of requests (forge.engine.kernel, forge.engine.requests).

Each test cites the clause it checks, or a kit: tag for the kernel's own rules."""

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
    """Each kind of request a chain parks on reads as the `blocked` value the chapter gives:
    chat, tool_call, store, tasks, queued, call (tasks.status.blocked-values,
    tasks.concurrency.queued)."""
    expected = {
        requests.StoreOp("write", "a"): "store",
        requests.ModelRound("chat", "r1"): "chat",
        requests.OperatorQuestion(1, None): "tool_call",
        requests.ToolCall("fetch", "tools[\"a/b/c\"].default"): "tool_call",
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
    """Parking a chain on a value outside the closed set of requests is an internal error that
    says so (kit: kernel.closed-requests)."""
    run = _run()
    run.execute()
    with pytest.raises(ForgeInternalError, match="not a request"):
        run.scheduler.park(run.root, object())


def test_an_unknown_suspending_call_is_an_internal_error_that_says_so():
    """A suspending call the kernel does not know is an internal error naming it
    (kit: kernel.unknown-call)."""
    run = _run()
    with pytest.raises(ForgeInternalError, match="unknown suspending call 'nope'"):
        run.scheduler._dispatch(None, "nope", ())


def test_an_unknown_event_is_an_internal_error_that_says_so():
    """An event the kernel does not know is an internal error naming it
    (kit: kernel.unknown-event)."""
    run = _run()
    with pytest.raises(ForgeInternalError, match="unknown event 'bogus'"):
        run.scheduler._handle(("bogus",))


def test_requests_compare_by_identity():
    """Two requests with equal fields are distinct values compared by identity, which is what
    lets a late answer to an older request be dropped (kit: kernel.request-identity)."""
    a, b = requests.StoreOp("read", "x"), requests.StoreOp("read", "x")
    assert a is not b and a != b


def test_a_chain_made_ready_twice_is_caught():
    """The transition's assert catches a chain made ready twice
    (kit: kernel.transition-asserts)."""
    run = _run()
    run.execute()
    chain = run.root
    chain.state = "parked"          # as if parked, to reach the transition's check
    run.scheduler.make_ready(chain, None)
    with pytest.raises(AssertionError, match="made ready twice"):
        run.scheduler.make_ready(chain, None)


def test_a_decision_among_many_ready_chains_keeps_no_copy_of_them():
    """With a ceiling that lets 2,000 tasks be ready at once, each chain choice
    offers them all (read through the ready list) and the chooser keeps what it
    offered, not a copy: O(1) a step, where a copy made the run quadratic in time
    and memory (kit: speed)."""
    from forge.engine.run import RunConfig, run_prompt
    from forge.harness import Harness
    from forge.repro import tell
    from forge.sim.chooser import Chooser, Offered, RandomProvider

    n = 2000
    text = ("---\nname: wide\ndescription: d\npromptforge: 0\n---\n\n# Wide\n\n## Main\n\n"
            f"```lua\nlocal hs = {{}}\nfor i = 1, {n} do hs[i] = tasks.spawn('### W') end\n"
            "return tostring(#tasks.join(hs))\n```\n\n### W\n\n```lua\nreturn 'w'\n```\n")
    chooser = Chooser(RandomProvider(7))
    run = run_prompt(parse_prompt(text, "t.md"), Harness(ceiling=n + 10), chooser,
                     RunConfig(max_tasks=n + 10))
    assert run.result == str(n)
    offered = [o for c, o in zip(chooser.choices, chooser.options) if c.kind == "chain"]
    assert max(len(o) for o in offered) == n
    assert all(isinstance(o, Offered) for o in offered)
    lines = tell(run.trace.records, chooser)
    assert "non-canonical choices:" in lines
    assert any(" chain: task:0." in line and "(canonical: " in line for line in lines)


def test_a_fanouts_arms_are_counted_down_not_walked_at_each_end(monkeypatch):
    """Each arm's end counts the waiting chain down; walking every arm at each
    end made a fanout of N items cost N^2 (kit: speed)."""
    from forge.engine.fanout import Fanout
    from forge.engine.run import run_prompt
    from forge.engine.state import Task

    reads = []
    live = Task.live

    def counted(self):
        reads.append(self)
        return live.fget(self)

    monkeypatch.setattr(Task, "live", property(counted))
    ends = []
    arm_ended = Fanout.arm_ended
    monkeypatch.setattr(Fanout, "arm_ended",
                        lambda self, *a: ends.append(1) or arm_ended(self, *a))
    n = 400
    text = ("---\nname: fan\ndescription: d\npromptforge: 0\n---\n\n# Fan\n\n## Main\n\n"
            f"```lua\nlocal items = {{}}\nfor i = 1, {n} do items[i] = i end\n"
            "local r = fanout('### W', items)\nreturn tostring(#r) .. r[7].text\n```\n\n"
            "### W\n\n```lua\nreturn tostring(item)\n```\n")
    run = run_prompt(parse_prompt(text, "t.md"))
    assert run.result == f"{n}7"
    assert len(ends) == n
    assert len(reads) < 30 * n, len(reads)
