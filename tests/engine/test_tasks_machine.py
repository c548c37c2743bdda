"""A Hypothesis state machine that writes a prompt one statement at a time and
keeps a model of what each statement must log.

Each rule appends Lua to the main section and predicts its log line: the id a
spawn or call takes from the child counter, what a join delivers, that a
cancelled task stays cancelled however often it is waited on, that a result
is taken once.  At teardown the prompt runs on the canonical schedule and on
random ones, and the logs must equal the prediction on every schedule:
numbering and delivery never depend on timing.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from forge.conformance import oracles
from tests.conftest import run_text

WORKERS = {
    "Quick": ("return 'quick'", True),
    "Slow": ("store.write('slow/' .. sys.taskid, 'x') return 'slow'", True),
    "Bad": ("error('bad worker', 0)", False),
}
SUB = "## Sub\n\n```lua\nreturn sys.taskid\n```\n\n"


class TaskProgram(RuleBasedStateMachine):
    """Rules write a prompt and predict its logs on every schedule: each spawn and call takes
    the next index of one child counter, a call's sys.taskid is the caller's, join gives one
    entry per member, a cancelled task stays cancelled however often it is waited on, a
    second wait on a delivered task raises task_consumed, and tasks.pending lists live tasks
    in spawn order (tasks.ids.one-child-counter, tasks.ids.child-extends-owner,
    tasks.ids.sys-taskid-call-and-task, tasks.wait.join-entries,
    tasks.spawn.error-fails-task, tasks.cancel.marks-cancelled,
    tasks.cancel.rewait-no-consumed, tasks.consumed.second-wait, tasks.pending.sequence,
    kit: determinism.schedules)."""
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = ["local t = {}"]
        self.expected: list[str] = []
        self.counter = 0
        self.handles: list[tuple[str, str]] = []      # (id, worker) by handle index
        self.live: list[int] = []
        # Spawned since the owner last parked: certainly not started yet.
        # Anything older may have ended during the park, on some schedule.
        self.fresh: list[int] = []
        self.delivered: list[int] = []
        self.cancelled: list[int] = []

    def _say(self, lua_expr: str, expected: str) -> None:
        self.lines.append(f"log({lua_expr})")
        self.expected.append(expected)

    @rule(worker=st.sampled_from(sorted(WORKERS)))
    def spawn(self, worker):
        index = len(self.handles) + 1
        task_id = f"0.{self.counter}"
        self.counter += 1
        self.handles.append((task_id, worker))
        self.live.append(index)
        self.fresh.append(index)
        self.lines.append(f"t[{index}] = tasks.spawn('## {worker}')")
        self._say(f"'spawned ' .. t[{index}].task", f"spawned {task_id}")

    @rule()
    def call(self):
        self.counter += 1
        self.fresh = []
        self.lines.append("local who = call('## Sub')")
        self._say("'called from ' .. who", "called from 0")

    @precondition(lambda self: self.live)
    @rule()
    def join_live(self):
        members = ", ".join(f"t[{i}]" for i in self.live)
        self.lines.append(f"do local r = tasks.join({{ {members} }})")
        for pos, i in enumerate(self.live, 1):
            task_id, worker = self.handles[i - 1]
            ok = WORKERS[worker][1]
            self.lines.append(f"log(r[{pos}].task .. ' ok=' .. tostring(r[{pos}].ok))")
            self.expected.append(f"{task_id} ok={str(ok).lower()}")
        self.lines.append("end")
        self.delivered += self.live
        self.live = []
        self.fresh = []

    @precondition(lambda self: self.fresh)
    @rule(data=st.data())
    def cancel(self, data):
        i = data.draw(st.sampled_from(self.fresh))
        self.fresh.remove(i)
        self.live.remove(i)
        self.cancelled.append(i)
        self.lines.append(f"tasks.cancel(t[{i}])")
        self._say(f"tasks.status(t[{i}]).state", "cancelled")

    @precondition(lambda self: self.cancelled)
    @rule(data=st.data())
    def wait_on_cancelled(self, data):
        i = data.draw(st.sampled_from(self.cancelled))
        self.lines.append(f"do local _, ok, e = tasks.join_any({{ t[{i}] }})")
        self.lines.append("log(tostring(ok) .. ' ' .. e.kind) end")
        self.expected.append("false cancelled")
        self.fresh = []

    @precondition(lambda self: self.delivered)
    @rule(data=st.data())
    def wait_again(self, data):
        i = data.draw(st.sampled_from(self.delivered))
        task_id = self.handles[i - 1][0]
        self.lines.append(f"do local ok, e = pcall(tasks.join_any, {{ t[{i}] }})")
        self.lines.append("log(e.kind .. ' ' .. e.task) end")
        self.expected.append(f"task_consumed {task_id}")

    @precondition(lambda self: self.live == self.fresh)
    @rule()
    def pending(self):
        ids = ",".join(self.handles[i - 1][0] for i in self.live)
        self.lines.append("do local p = {} for _, h in ipairs(tasks.pending()) do p[#p + 1] = h.task end")
        self.lines.append("log('pending ' .. table.concat(p, ',')) end")
        self.expected.append(f"pending {ids}")

    def teardown(self):
        body = "\n".join(self.lines + ["for _, h in ipairs(tasks.pending()) do tasks.cancel(h) end",
                                       "return 'end'"])
        text = ("---\nname: m\ndescription: machine\npromptforge: 0\n---\n\n# M\n\n"
                f"## Main\n\n```lua\n{body}\n```\n\n" + SUB +
                "".join(f"## {name}\n\n```lua\n{code}\n```\n\n" for name, (code, _) in WORKERS.items()))
        for seed in (None, 1, 2, 3):
            obs = run_text(text, seed=seed)
            assert obs["outcome"] == "ok", obs["error"]
            assert obs["logs"] == self.expected, f"seed {seed}"
            # The run started exactly the predicted tasks, each at its target
            # (tasks.ids.one-child-counter: ids come from the one child counter).
            started = {i: s["target"] for i, s in obs["tasks"].items()}
            assert started == {i: w for i, w in self.handles}, f"seed {seed}"
            problems = [p for check in oracles.DEFAULT_CHECKS for p in check(obs)]
            assert problems == [], f"seed {seed}: {problems}"


TaskProgram.TestCase.settings = settings(max_examples=40, stateful_step_count=12, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
test_task_program = TaskProgram.TestCase
