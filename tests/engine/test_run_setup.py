"""What a run builds once instead of at every step, and that doing so changes
nothing a prompt can see: the host library built in one Lua call, the model
side only for prompts that can name it, section VMs built in one call with one
prose callback per run, remembered heading resolutions, and events built when
read (kit: speed)."""

from __future__ import annotations

import attrs
import pytest

from forge.engine.run import Run, run_prompt
from forge.prompt import parse_prompt
from forge.prompt.headings import MAX_REMEMBERED, HeadingError, resolve
from tests.conftest import prompt_text, run_text, section

#: Every name of the host library, by table (None: the library itself).
LIBRARY = {
    None: {"log", "list_from_section", "jump", "call", "fanout", "store", "tasks", "models",
           "messages", "compactors", "tools", "input"},
    "store": {"write", "append", "read", "read_numbered", "str_replace", "delete", "glob",
              "exists"},
    "tasks": {"spawn", "concurrency", "ready", "status", "pending", "note", "cancel",
              "join_any", "join"},
    "models": {"default", "use", "get", "infer", "loop"},
    "messages": {"new"},
    "compactors": {"fail"},
    "tools": {"always", "add", "add_local", "allow_tasks", "call"},
    "input": {"ask", "connected"},
}
MODEL_SIDE = {"models", "messages", "compactors", "tools", "input"}


def _keys(table) -> set[str]:
    return {k.decode() for k in table.keys()}


def _run(text: str) -> Run:
    return Run(parse_prompt(text, "t.md"))


def test_library_built_in_one_call_has_every_name():
    """The host library built from one spec holds exactly the names the
    namespaces had when each was built by its own calls (kit: speed)."""
    run = _run(prompt_text(section("Main", "return type(models)")))
    lib = run.host.lib
    assert _keys(lib) == LIBRARY[None]
    for name, keys in LIBRARY.items():
        if name is not None:
            assert _keys(lib[name.encode()]) == keys, name


@pytest.mark.parametrize("word", sorted(MODEL_SIDE | {"_G", "_ENV"}))
def test_model_side_installed_when_the_prompt_can_name_it(word):
    """A prompt whose code names a model-side global, or `_G`/`_ENV`, gets the
    whole model side (kit: speed)."""
    run = _run(prompt_text(section("Main", f"local _ = {word} return 'x'")))
    assert MODEL_SIDE <= _keys(run.host.lib)


def test_model_side_left_out_when_no_code_can_name_it():
    """A prompt that never names the model side runs without it (kit: speed)."""
    run = _run(prompt_text(section("Main", "return tasks.join({ tasks.spawn('## W') })[1].result"),
                           section("W", "return 'w'")))
    assert not MODEL_SIDE & _keys(run.host.lib)
    assert run.execute().observation()["result"] == "w"


def test_model_side_named_in_prose_is_installed():
    """A placeholder in a block's prose reads globals too: naming `models` there
    installs the model side (kit: speed)."""
    text = prompt_text("## Main\n\nSee {{ models }}.\n\n```lua\nreturn 'x'\n```\n\n")
    assert MODEL_SIDE <= _keys(_run(text).host.lib)


def test_enumerating_the_environment_sees_the_model_side():
    """pairs over `_ENV` lists the model side's globals, as before the model
    side became optional (kit: speed)."""
    code = """
    local names = {}
    for k in pairs(_ENV) do names[#names + 1] = k end
    return table.concat(names, ',')
    """
    names = set(run_text(prompt_text(section("Main", code)))["result"].split(","))
    assert MODEL_SIDE <= names


def test_prose_renders_per_chain_in_tasks_and_calls():
    """Each chain's `prose` renders its own block's prose through the run's one
    prose callback: the root, a task and a called chain (kit: speed)."""
    text = prompt_text(
        "## Main\n\nmain prose\n\n```lua\n"
        "local h = tasks.spawn('## T')\n"
        "local got = tasks.join({ h })[1].result\n"
        "return prose .. '|' .. got .. '|' .. call('### C')\n```\n\n"
        "### C\n\ncalled prose\n\n```lua\nreturn prose\n```\n\n"
        "## T\n\ntask prose\n\n```lua\nreturn prose\n```\n\n")
    assert run_text(text)["result"] == "main prose|task prose|called prose"


def test_heading_resolutions_are_remembered_with_their_errors():
    """A resolution is remembered on the prompt, a failed one with its message,
    and a prompt remembers at most MAX_REMEMBERED (kit: speed)."""
    prompt = parse_prompt(prompt_text(section("A", "return 1"), section("B", "return 2")), "t.md")
    assert resolve(prompt, None, "## B") == resolve(prompt, None, "## B") == 1
    for _ in range(2):
        with pytest.raises(HeadingError, match="section heading `## Z` not found"):
            resolve(prompt, None, "## Z")
    for i in range(MAX_REMEMBERED + 10):
        with pytest.raises(HeadingError):
            resolve(prompt, None, f"## N{i}")
    assert len(prompt.resolved) == MAX_REMEMBERED


def test_prompt_derived_fields_follow_evolve():
    """`top_level` and `words` are derived from the sections, also on a copy
    made with attrs.evolve, and take no part in equality (kit: speed)."""
    prompt = parse_prompt(prompt_text(section("A", "return tasks"), section("B", "return 2")), "t.md")
    assert prompt.top_level == (0, 1)
    assert "tasks" in prompt.words
    fewer = attrs.evolve(prompt, sections=prompt.sections[:1])
    assert fewer.top_level == (0,)
    assert fewer.words == {"return", "tasks"}
    assert attrs.evolve(prompt) == prompt


def test_events_read_mid_run_and_at_the_end_agree():
    """Events are built into dicts when read; reading them early and again
    later gives one list, equal to a run never read early (kit: speed)."""
    prompt = parse_prompt(prompt_text(section("Main", "log('a') log('b') return 'x'")), "t.md")
    run = Run(prompt)
    run.walk.start()
    early = list(run.events)
    run.scheduler.loop()
    assert run.events[:len(early)] == early
    assert run.events == run_prompt(prompt).events
    assert run.observation()["events"] == run.events


def test_section_entries_hand_lua_no_python_object(monkeypatch):
    """After a run is set up, entering sections passes no new Python object
    into Lua: lupa 2.8's Lua 5.5 backend can mix up the identity of Python
    objects handed to Lua and released (lupa issue #294), so per-entry
    callbacks are Lua closures over a number, never Python closures
    (kit: speed)."""
    from forge.lua.runtime import LuaRuntime

    text = prompt_text(section("A", "var.n = (var.n or 0) + 1 if var.n < 40 then jump('## B') end "
                                    "return prose .. var.n"),
                       section("B", "jump('## A')"))
    run = Run(parse_prompt(text, "t.md"))
    wrapped = []
    for name in ("host", "_slot"):
        original = getattr(LuaRuntime, name)
        monkeypatch.setattr(LuaRuntime, name, lambda self, key, route, _o=original, _n=name:
                            wrapped.append(_n) or _o(self, key, route))
    obs = run.execute().observation()
    assert obs["result"] == "40"
    assert run.entries == 79
    assert wrapped == []


def test_blocks_load_their_bytecode_compiled_once_per_process():
    """Every section VM loads a block's bytecode, compiled once per process
    (`forge.lua.runtime.loadable`); the dump keeps the chunk name and lines, so
    an error reads exactly as from the text (kit: speed)."""
    from forge.lua.runtime import COMPILED_CHUNK_BYTES, loadable

    text = prompt_text(section("A", "local x = 1\nerror('boom at two')"))
    prompt = parse_prompt(text, "t.md")
    block = prompt.sections[0].blocks[0]
    code, name, mode = loadable(block.chunk, block.chunkname)
    assert mode == b"b" and code.startswith(b"\x1bLua") and name == block.chunkname
    assert loadable(block.chunk, block.chunkname)[0] is code          # kept, not rebuilt
    obs = run_prompt(prompt).observation()
    where, line = block.location, block.first_line + 1
    assert obs["error"]["message"] == f'{where}:{line}: [string "{where}"]:{line}: boom at two'
    # Text that does not compile, and a block past the cache's bound, load as text.
    assert loadable(b"return +", b"x")[2] == b"t"
    big = b"return '" + b"x" * COMPILED_CHUNK_BYTES + b"'"
    assert loadable(big, b"x") == (big, b"x", b"t")


def test_the_kept_bytecode_is_bounded_in_bytes(monkeypatch):
    """Past `COMPILED_BYTES`, the block loaded least recently is compiled again
    when next loaded (kit: speed)."""
    from forge.lua import runtime as lua_runtime

    a, b = b"return 'first'", b"return 'second'"
    first = lua_runtime.loadable(a, b"a")[0]
    size = len(a) + len(first)
    monkeypatch.setattr(lua_runtime, "COMPILED_BYTES", size + 8)    # room for one of them
    lua_runtime.loadable(b, b"b")          # over the bound: everything before it goes
    again = lua_runtime.loadable(a, b"a")[0]
    assert again == first and again is not first


def test_a_run_executes_once():
    """A second `execute` is refused in one clear line: the first gave the runtime
    back and let go of the run's parts (kit: speed)."""
    run = Run(parse_prompt(prompt_text(section("A", "return 'a'")), "t.md"))
    assert run.execute().outcome == "ok"
    with pytest.raises(RuntimeError, match="already executed; build a new Run"):
        run.execute()
    assert run.observation()["result"] == "a"
