"""Random task programs, as a Hypothesis strategy: prompts for fuzzing.

A plan is a main section that spawns workers and then waits on them in a
random mix of ways (join_any, timed join_any, join, timed join, cancel,
status reads, a second join of a task that may have been delivered), and then settles everything or leaks what is left; workers
touch the store, may note progress, may spawn and join (or cancel) a nested
task, and may fail.  Every plan is a valid prompt whose outcome may depend
on the schedule, but whose invariants may not - and two engines that agree
on the spec agree on its observation under one schedule, which is what the
differential fuzzer (`fuzz`) relies on.

Hypothesis is an install extra (`pip install 'forge-kit[test]'`); importing
this module without it raises an ImportError that says so.  What does not
live here: running the programs or comparing engines (`fuzz`), schedules as
a strategy (`forge.sim.hypothesis`).
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ModuleNotFoundError:  # pragma: no cover - depends on the install
    raise ImportError(
        "random task programs need the Hypothesis package, an optional extra of the forge kit: "
        "pip install 'forge-kit[test]' (or pip install hypothesis)"
    ) from None

HEADER = "---\nname: plan\ndescription: generated workload\npromptforge: 0\n---\n\n# Plan\n\n"

#: The ways main may wait on, stop or look at its live tasks, one statement each.
LIVE = "do local live = tasks.pending() if #live > 0 then {} end end"


@st.composite
def worker(draw, index: int, notes: bool = False) -> str:
    lines = []
    for n in range(draw(st.integers(0, 3))):
        lines.append(f"store.write('w{index}/{n}', 'x')")
    if notes and draw(st.booleans()):
        lines.append(f"tasks.note('w{index} halfway')")
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
def plans(draw, richer: bool = False) -> str:
    """A whole prompt.  `richer` also draws notes, status reads and leaks
    (the fuzzer's programs; the engine's own property tests keep the
    original mix, so their shrunk examples stay as they were)."""
    count = draw(st.integers(1, 5))
    workers = [draw(worker(i, notes=richer)) for i in range(count)]
    ops = []
    if draw(st.booleans()):
        ops.append(f"tasks.concurrency({draw(st.integers(1, 4))})")
    ops.append("local set = {}")
    for i in range(count):
        ops.append(f"set[#set + 1] = tasks.spawn('### W{i}')")
    kinds = ["any", "timed-any", "cancel", "timed-join", "store"] + (["status", "rejoin"] if richer else [])
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(kinds))
        # The richer mix logs what a wait delivered, so delivery rules show.
        seen = (" log('got ' .. tostring(got and got.task) .. ' ' .. tostring(ok) .. ' ' .. "
                "tostring(r))") if richer else ""
        if kind == "any":
            ops.append(LIVE.format(f"local got, ok, r = tasks.join_any(live){seen}"))
        elif kind == "timed-any":
            t = draw(st.sampled_from(["0", "0.005", "0.01", "0.02", "1"]))
            ops.append(LIVE.format(f"local got, ok, r = tasks.join_any(live, {{ timeout = {t} }})"
                                   f"{seen}"))
        elif kind == "rejoin":
            i = draw(st.integers(0, count - 1))
            ops.append(f"log('rejoin W{i} ' .. tostring(pcall(tasks.join, {{ set[{i + 1}] }})))")
        elif kind == "timed-join":
            t = draw(st.sampled_from(["0", "0.01", "0.05"]))
            ops.append(LIVE.format(f"tasks.join(live, {{ timeout = {t} }})"))
        elif kind == "cancel":
            ops.append(LIVE.format("tasks.cancel(live[1])"))
        elif kind == "status":
            i = draw(st.integers(0, count - 1))
            ops.append(f"log('W{i} ' .. tasks.status(set[{i + 1}]).state)")
        else:
            ops.append("store.write('main', 'x')")
    ending = draw(st.sampled_from(["join", "cancel", "leak"] if richer else ["join", "cancel"]))
    if ending == "join":
        ops.append(LIVE.format("tasks.join(live)"))
    elif ending == "cancel":
        ops.append("for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end")
    ops.append("return 'done'")
    body = "\n".join(ops)
    return HEADER + f"## Main\n\n```lua\n{body}\n```\n\n" + "".join(workers)
