"""Hypothesis strategies: random task workloads written as prompts.

`plans` and `worker` live in the package (`forge.conformance.programs`),
where the differential fuzzer draws from them; the tests import them from
here.  `racing_prompts` is the reduction's differential test's own: small
prompts whose tasks race on the store and whose main task reads what the
others show of themselves (notes, states) between its own operations;
`bounded_prompts` are such prompts run under a tight quota, which the
order of their steps decides who passes.
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


#: What a quota-bound prompt's task does: a write of a drawn size (`{w}`),
#: then before the next a note of a drawn size (`{s}`), a delete (the
#: store's bytes go down as well as up), or a read.
_QUOTA_WRITES = ("store.write('t{n}', string.rep('x', {w}))",
                 "store.write('shared', string.rep('y', {w}))",
                 "store.write('t{n}x{v}', string.rep('z', {w}))")
_QUOTA_AFTER = ("", "tasks.note(string.rep('n', {s}))", "tasks.note(string.rep('n', {s}))",
                "pcall(store.delete, 't{n}')", "seen[#seen + 1] = read('shared')")
_QUOTA_MAIN = ("store.write('m', string.rep('m', {w}))", "store.write('shared', '{v}')")
_QUOTA_MAIN_AFTER = ("", "seen[#seen + 1] = tostring(tasks.status(ts[{k}]).note)",
                     "seen[#seen + 1] = read('shared')")
#: Per budget: the sizes of writes and of notes, and the budget's values.
#: A size is small or a good part of the budget, so that two or three of
#: them pass it; the entries and steps are drawn around what a prompt makes.
_BUDGETS = {
    "store_bytes": ((1, 30, 60), (1,), st.sampled_from((60, 100, 130))),
    "max_kept_bytes": ((1,), (1, 300, 600), st.sampled_from((700, 1000, 1300))),
    "max_entries": ((1,), (1,), None),
    "max_steps": ((1,), (1,), None),
}


def _sized_steps(draw, writes, after, count: int, sizes, **names) -> list[str]:
    lines = []
    for i in range(count):
        for choices in (writes, after):
            line = draw(st.sampled_from(choices)).format(
                v=i, w=draw(st.sampled_from(sizes[0])), s=draw(st.sampled_from(sizes[1])),
                **names)
            if line:
                lines.append(line)
    return lines


@st.composite
def bounded_prompts(draw, tasks: int = 2, writes: int = 9) -> tuple[str, dict]:
    """A racing prompt whose writes and notes have drawn sizes, and the one
    tight budget it runs under, as (prompt, limits for
    `tests.sim.subjects.text`): the store's bytes, the kept bytes (notes,
    results, task data), the section entries or the scheduler's steps, each
    drawn near what the prompt uses, so that which step passes it - or
    whether one does - depends on the order."""
    limit = draw(st.sampled_from(sorted(_BUDGETS)))
    write_sizes, note_sizes, values = _BUDGETS[limit]
    sizes = (write_sizes, note_sizes)
    count = draw(st.integers(1, tasks))
    per = min(3, writes // (count + 1))
    sections = []
    for n in range(count):
        body = _sized_steps(draw, _QUOTA_WRITES, _QUOTA_AFTER, draw(st.integers(1, per)),
                            sizes, n=n)
        sections.append(f"## T{n}\n\n```lua\n{_READ}" + "\n".join(body)
                        + "\nreturn table.concat(seen, ',')\n```\n")
    main = _sized_steps(draw, _QUOTA_MAIN, _QUOTA_MAIN_AFTER, draw(st.integers(0, per)),
                        sizes, k=draw(st.integers(1, count)))
    spawn = ", ".join(f"tasks.spawn('## T{n}')" for n in range(count))
    prompt = ("---\nname: bounded\ndescription: generated\npromptforge: 0\n---\n\n"
              f"# Bounded\n\n## Main\n\n```lua\n{_READ}local ts = {{ {spawn} }}\n"
              + "\n".join(main) + "\nlocal rs = tasks.join(ts)\nfor i = 1, #rs do "
              "seen[#seen + 1] = tostring(rs[i].result) end\nreturn table.concat(seen, ',')"
              "\n```\n\n" + "\n".join(sections))
    if values is None:
        # Main and each task enter one section; steps: a few per operation.
        values = (st.integers(count, count + 1) if limit == "max_entries"
                  else st.integers(4, 4 + 3 * len(body) * count))
    return prompt, {limit: draw(values)}


__all__ = ["HEADER", "bounded_prompts", "plans", "racing_prompts", "worker"]
