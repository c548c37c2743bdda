"""Hypothesis strategies: random task workloads written as prompts.

`plans` and `worker` live in the package (`forge.conformance.programs`),
where the differential fuzzer draws from them; the tests import them from
here.  `racing_prompts` is the reduction's differential test's own: small
prompts whose tasks race on the store and whose main task reads what the
others show of themselves (notes, states) between its own operations.
"""

from hypothesis import strategies as st

from forge.conformance.programs import HEADER, plans, worker

#: A task's operation: a store write, then what it does before the next
#: (a note twice as often as the rest, as main's look at a note: the
#: reduction once missed exactly that pair).
_TASK_WRITES = ("store.write('t{n}', '{v}')", "store.write('shared', '{v}')")
_TASK_AFTER = ("", "tasks.note('{v}')", "tasks.note('{v}')", "seen[#seen + 1] = read('shared')",
               "seen[#seen + 1] = read('t{m}')")
#: The main task's operation: a store write, then a look at the store or at
#: a task (`{k}`: which).
_MAIN_WRITES = ("store.write('shared', 'm{v}')", "store.write('m', '{v}')")
_MAIN_AFTER = ("", "seen[#seen + 1] = read('shared')",
               "seen[#seen + 1] = tostring(tasks.status(ts[{k}]).note)",
               "seen[#seen + 1] = tostring(tasks.status(ts[{k}]).note)",
               "seen[#seen + 1] = tostring(tasks.status(ts[{k}]).note)",
               "seen[#seen + 1] = tostring(tasks.status(ts[{k}]).blocked)",
               "seen[#seen + 1] = tostring(tasks.ready(ts[{k}]))",
               "seen[#seen + 1] = tostring(#tasks.pending())")
_READ = ("local function read(p) local ok, v = pcall(store.read, p) "
         "return ok and v or 'none' end\nlocal seen = {}\n")


def _steps(draw, writes, after, count: int, **names) -> list[str]:
    lines = []
    for i in range(count):
        lines.append(draw(st.sampled_from(writes)).format(v=i, **names))
        then = draw(st.sampled_from(after)).format(v=i, **names)
        if then:
            lines.append(then)
    return lines


@st.composite
def racing_prompts(draw, tasks: int = 2, writes: int = 6) -> str:
    """A prompt of 1 to `tasks` tasks of one or more store writes each, and
    a main task of none or more between spawning and joining them, `writes`
    at most in all (each section at most 3: sleep sets prune only past a
    few, and the unreduced tree grows as a multinomial); after
    each write a task may note, or read the store, and main may read the
    store or look at a task (its note, what it is blocked on, whether it is
    ready, how many are pending).  Every value read shows in the result."""
    count = draw(st.integers(1, tasks))
    per = min(3, writes // (count + 1))
    sections = []
    for n in range(count):
        body = _steps(draw, _TASK_WRITES, _TASK_AFTER, draw(st.integers(1, per)),
                      n=n, m=(n + 1) % count)
        sections.append(f"## T{n}\n\n```lua\n{_READ}" + "\n".join(body)
                        + "\nreturn table.concat(seen, ',')\n```\n")
    main = _steps(draw, _MAIN_WRITES, _MAIN_AFTER, draw(st.integers(0, per)),
                  k=draw(st.integers(1, count)))
    spawn = ", ".join(f"tasks.spawn('## T{n}')" for n in range(count))
    return ("---\nname: racing\ndescription: generated\npromptforge: 0\n---\n\n# Racing\n\n"
            f"## Main\n\n```lua\n{_READ}local ts = {{ {spawn} }}\n" + "\n".join(main)
            + "\nlocal rs = tasks.join(ts)\nfor i = 1, #rs do seen[#seen + 1] = "
            "tostring(rs[i].result) end\nreturn table.concat(seen, ',')\n```\n\n"
            + "\n".join(sections))


__all__ = ["HEADER", "plans", "racing_prompts", "worker"]
