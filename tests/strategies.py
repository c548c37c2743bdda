"""Hypothesis strategies: random task workloads written as prompts.

A plan is a main section that spawns workers and then waits on them in a
random mix of ways (join_any, timed join_any, join, timed join, cancel),
settling everything before it returns; workers touch the store, may spawn
and join a nested task, and may fail.  Every plan is a valid prompt whose
outcome may depend on the schedule, but whose invariants may not.
"""

from __future__ import annotations

from hypothesis import strategies as st

HEADER = "---\nname: plan\ndescription: generated workload\npromptforge: 0\n---\n\n# Plan\n\n"


@st.composite
def worker(draw, index: int) -> str:
    lines = []
    for n in range(draw(st.integers(0, 3))):
        lines.append(f"store.write('w{index}/{n}', 'x')")
    if draw(st.booleans()):
        lines.append("local c = tasks.spawn('#### Leaf')")
        if draw(st.booleans()):
            lines.append("tasks.join({ c })")
        else:
            lines.append("tasks.cancel(c)")
    if draw(st.integers(0, 4)) == 0:
        lines.append(f"error('worker {index} failed', 0)")
    lines.append(f"return 'w{index}'")
    body = "\n".join(lines)
    return (f"### W{index}\n\n```lua\n{body}\n```\n\n"
            f"#### Leaf\n\n```lua\nstore.exists('leaf')\nreturn 'leaf'\n```\n\n")


@st.composite
def plans(draw) -> str:
    count = draw(st.integers(1, 5))
    workers = [draw(worker(i)) for i in range(count)]
    ops = []
    if draw(st.booleans()):
        ops.append(f"tasks.concurrency({draw(st.integers(1, 4))})")
    ops.append("local set = {}")
    for i in range(count):
        ops.append(f"set[#set + 1] = tasks.spawn('### W{i}')")
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["any", "timed-any", "cancel", "timed-join", "store"]))
        if kind == "any":
            ops.append("do local live = tasks.pending() if #live > 0 then tasks.join_any(live) end end")
        elif kind == "timed-any":
            t = draw(st.sampled_from(["0", "0.005", "0.01", "0.02", "1"]))
            ops.append("do local live = tasks.pending() "
                       f"if #live > 0 then tasks.join_any(live, {{ timeout = {t} }}) end end")
        elif kind == "timed-join":
            t = draw(st.sampled_from(["0", "0.01", "0.05"]))
            ops.append("do local live = tasks.pending() "
                       f"if #live > 0 then tasks.join(live, {{ timeout = {t} }}) end end")
        elif kind == "cancel":
            ops.append("do local live = tasks.pending() if #live > 0 then tasks.cancel(live[1]) end end")
        else:
            ops.append("store.write('main', 'x')")
    if draw(st.booleans()):
        ops.append("do local live = tasks.pending() if #live > 0 then tasks.join(live) end end")
    else:
        ops.append("for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end")
    ops.append("return 'done'")
    body = "\n".join(ops)
    return HEADER + f"## Main\n\n```lua\n{body}\n```\n\n" + "".join(workers)
