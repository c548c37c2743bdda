"""Any argument to any host function ends as a Lua error or a result - never
a Python exception.  Hypothesis throws values of every Lua type at every
function a prompt can reach."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_text

FUNCTIONS = [
    "tasks.spawn", "tasks.join_any", "tasks.join", "tasks.concurrency", "tasks.ready",
    "tasks.status", "tasks.pending", "tasks.note", "tasks.cancel",
    "store.write", "store.append", "store.read", "store.read_numbered", "store.str_replace",
    "store.delete", "store.glob", "store.exists",
    "call", "jump", "fanout", "log", "list_from_section",
    "models.default", "models.use", "models.get", "models.infer", "models.loop",
    "tools.call", "tools.allow_tasks", "tools.add_local", "input.ask", "messages.new",
]

LUA_VALUES = st.sampled_from([
    "nil", "true", "0", "-1", "1.5", "1e300", "0/0", "'## Child'", "'### Kid'", "'0.0'", "'0.99'",
    "'x.y'", "''", "'\\255'", "{}", "{ 1, 2 }", "{ task = '0.0' }", "{ task = 5 }",
    "{ timeout = -1 }", "{ timeout = 0 }", "{ origin = 'model' }", "{ input = 'x', index = 2 }",
    "{ item = { a = 1 } }", "{ '## Child' }", "function() end", "tasks.spawn('## Child')",
    "string.rep('a', 300)", "'notes/a.md'", "'/abs'", "'**/*.md'",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(FUNCTIONS), st.lists(LUA_VALUES, max_size=3)),
                min_size=1, max_size=6))
def test_host_functions_never_raise_python_exceptions(calls):
    """Random arguments to every host function end the run with a result or an engine error
    kind, never a Python exception (kit: sandbox.host-call-fuzz)."""
    lines = [f"pcall({fn}, {', '.join(args)})" if args else f"pcall({fn})" for fn, args in calls]
    lines.append("for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end")
    lines.append("return 'survived'")
    body = "\n".join(lines)
    text = ("---\nname: f\ndescription: fuzz\npromptforge: 0\nmodels:\n  writer: {}\n---\n\n# F\n\n"
            f"## Main\n\n```lua\n{body}\n```\n\n### Kid\n\n```lua\nreturn 'kid'\n```\n\n"
            "## Child\n\n```lua\nreturn 'child'\n```\n")
    obs = run_text(text)
    assert obs["outcome"] in ("ok", "failed", "cancelled")
    if obs["outcome"] == "failed":
        # jump applies at block end; a bad jump target is the only uncatchable failure here
        assert obs["error"]["kind"] in ("Lua", "Harness", "Budget", "Deadlock"), obs["error"]
