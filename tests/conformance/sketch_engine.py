"""A sketch engine for the tests: a second, independent implementation of a
small part of the Tasks chapter, written from the spec and docs/protocol.md
alone, speaking level 2 of the protocol.

    python3 sketch_engine.py [--bug NAME]...

It runs prompts whose sections are `##` headings with one `lua` block each,
using `tasks.spawn`, `tasks.join`, `tasks.join_any` (with `timeout`),
`tasks.cancel`, `tasks.concurrency`, `store.write`, `log` and a string
result - enough for the tests' prompts, nothing more.  Each `--bug` plants
one of the three bug classes a quick engine gets wrong:

- `tie-to-timeout`: a timed wait's timer fires before a completion due at
  the same instant (the timeout wins the tie);
- `join-any-latest`: `join_any` delivers the member that ended last among
  those that have ended, not the first in set order;
- `cancel-forgets-queued`: `cancel` of a task still queued behind the
  concurrency limit marks it cancelled but leaves it in the queue, so it is
  admitted and runs later.

Without `--bug` it must be indistinguishable from the reference by the
spec's equivalence on those prompts (no false alarm).  It reports only the
normative events (no boundary events, no `effects` or `rounds`), numbers
`seq` its own way, and declares only the `language` and `tasks` features.
"""

import heapq
import json
import re
import sys

from lupa import LuaRuntime

BUGS = set()
MENU = (1.0, 0.0, 0.5, 2.0, 5.0)
LABELS = [f"x{m}" for m in MENU]
STORE_BASE = 0.01
COMPLETE, TIMER = 0, 10

PRELUDE = r"""
tasks, store = {}, {}
local y = coroutine.yield
function tasks.spawn(target) return y('spawn', target) end
function tasks.cancel(h) return y('cancel', h) end
function tasks.concurrency(n) return y('concurrency', n) end
function tasks.join(set, opts) local r = y('join', set, opts) return r[1] end
function tasks.join_any(set, opts)
  local r = y('join_any', set, opts) return r[1], r[2], r[3]
end
function store.write(p, c) return y('write', p, c) end
function log(m) return y('log', m) end
function chain_body(f) return function() local r = f() y('end', r) end end
"""


def sections(prompt: str) -> dict:
    out, heading = {}, None
    for block in re.split(r"^(#{1,6} .*)$", prompt, flags=re.M):
        if re.match(r"^#{1,6} ", block):
            heading = block.lstrip("#").strip()
        elif heading is not None:
            code = re.search(r"```lua\n(.*?)```", block, re.S)
            if code:
                out[heading] = code.group(1)
    return out


class Chain:
    def __init__(self, kind, cid, co, task=None):
        self.kind, self.id, self.co, self.task = kind, cid, co, task
        self.value = None
        self.waiting = None         # (call, members, timer seq)
        self.children = 0

    @property
    def label(self):
        return f"{self.kind}:{self.id}"


class Run:
    def __init__(self, run_id, prompt, harness, ask):
        self.run_id, self.ask = run_id, ask
        self.lua = LuaRuntime(unpack_returned_tuples=True)
        self.lua.execute(PRELUDE)
        self.code = sections(prompt)
        self.now, self.seq = 0, 0
        self.queue = []
        self.ready = []
        self.limit = harness.get("concurrency", 8)
        self.running = 0
        self.admit_queue = []
        self.tasks = {}            # id -> status table
        self.chains = {}           # task id -> chain
        self.ended_order = []
        self.events, self.logs = [], []
        self.store = dict(harness.get("store") or {})
        self.counters = {}
        self.outcome = self.result = None

    def chain_for(self, kind, cid, section, task=None):
        fn = self.lua.eval("load")(self.code[section])
        co = self.lua.globals().chain_body(fn)
        return Chain(kind, cid, self.lua.eval("coroutine.wrap")(co), task)

    def event(self, kind, section, by, **fields):
        n = self.counters.get(by, 0)
        self.counters[by] = n + 2          # our own numbering: gaps are ours to make
        self.events.append({"kind": kind, "execution": self.run_id, "section": section,
                            "provenance": {"task": by, "seq": n}, **fields})

    def schedule(self, delay_ns, priority, action):
        self.seq += 1
        heapq.heappush(self.queue, (self.now + delay_ns, priority, self.seq, action))
        return self.seq

    # -- the loop
    def go(self):
        root = self._root = self.chain_for("root", "0", "Main")
        self.ready.append(root)
        self.cancelled_timers = set()
        while self.outcome is None:
            if self.ready:
                pick = self.ask("chain", [c.label for c in self.ready])
                self.step(self.ready.pop(pick))
                continue
            if not self.queue:
                self.outcome = "failed"
                return
            at, _, seq, action = heapq.heappop(self.queue)
            self.now = at
            if seq not in self.cancelled_timers:
                action()

    def step(self, chain):
        value = chain.value
        chain.value = None
        while True:
            got = chain.co(value)
            op, args = got[0], got[1:]
            if op == "end":
                return self.finish(chain, args[0])
            value = getattr(self, "op_" + op)(chain, *args)
            if value is PARK:
                return

    def resume(self, chain, value):
        chain.value = value
        self.ready.append(chain)

    # -- operations
    def op_log(self, chain, message):
        self.logs.append(str(message))
        self.event("lua", self.section_of(chain), chain.id, message=str(message))

    def section_of(self, chain):
        return "Main" if chain.task is None else self.tasks[chain.task]["target"]

    def op_concurrency(self, chain, n):
        self.limit = int(n)

    def op_spawn(self, chain, target):
        target = target.lstrip("#").strip()
        tid = f"{chain.id}.{chain.children}"
        chain.children += 1
        self.event("task_started", self.section_of(chain), chain.id, task=tid, target=target,
                   origin="author", input=None, item=None, index=None, var=[])
        self.tasks[tid] = {"depth": tid.count("."), "ok": False, "origin": "author",
                           "state": "running", "target": target, "tasks": [], "turns": 0}
        self.admit_queue.append(tid)
        self.admit()
        return self.lua.table_from({"id": tid})

    def admit(self):
        while self.admit_queue and self.running < self.limit:
            tid = self.admit_queue.pop(0)
            if self.tasks[tid]["state"] != "running" and "cancel-forgets-queued" not in BUGS:
                continue
            self.running += 1
            chain = self.chain_for("task", tid, self.tasks[tid]["target"], tid)
            self.chains[tid] = chain
            self.ready.append(chain)

    def op_write(self, chain, path, contents):
        pick = self.ask("latency:store", LABELS)

        def land():
            self.store[path] = contents
            self.resume(chain, None)

        self.schedule(round((STORE_BASE * MENU[pick]) * 1e9), COMPLETE, land)
        return PARK

    def op_cancel(self, chain, handle):
        tid = handle["id"]
        status = self.tasks[tid]
        if status["state"] != "running":
            return None
        task_chain = self.chains.pop(tid, None)
        if task_chain is not None:
            if task_chain in self.ready:
                self.ready.remove(task_chain)
            self.running -= 1
        elif "cancel-forgets-queued" not in BUGS:
            self.admit_queue.remove(tid)
        self.ended(tid, "cancelled", False, "task_cancelled")
        self.admit()
        return None

    def finish(self, chain, value):
        if chain.task is None:
            self.outcome, self.result = "ok", "done" if value is None else str(value)
            return
        self.chains.pop(chain.task, None)
        self.running -= 1
        self.ended(chain.task, "done", True, "task_succeeded", str(value))
        self.admit()

    def ended(self, tid, state, ok, kind, result=None):
        status = self.tasks[tid]
        if kind == "task_cancelled" and status["state"] == "cancelled":
            return
        status.update(state=state, ok=ok)
        status["result"] = result
        self.ended_order.append(tid)
        self.event(kind, status["target"], tid, task=tid)
        self.wake()

    def members(self, handles):
        return [handles[i]["id"] for i in range(1, len(handles) + 1)]

    def op_join(self, chain, handles, opts):
        return self.wait(chain, "join", self.members(handles), opts)

    def op_join_any(self, chain, handles, opts):
        return self.wait(chain, "join_any", self.members(handles), opts)

    def wait(self, chain, call, members, opts):
        answer = self.answer(call, members)
        if answer is not None:
            return answer
        timer = None
        if opts is not None and opts["timeout"] is not None:
            def expire():
                if chain.waiting is not None and chain.waiting[2] == timer:
                    chain.waiting = None
                    self.resume(chain, self.lua.table_from({}))
            priority = -1 if "tie-to-timeout" in BUGS else TIMER
            timer = self.schedule(round(float(opts["timeout"]) * 1e9), priority, expire)
        chain.waiting = (call, members, timer)
        return PARK

    def answer(self, call, members):
        done = [m for m in members if self.tasks[m]["state"] != "running"]
        if call == "join":
            return self.lua.table_from({1: True}) if len(done) == len(members) else None
        if not done:
            return None
        if "join-any-latest" in BUGS:
            first = max(done, key=self.ended_order.index)
        else:
            first = done[0]
        status = self.tasks[first]
        return self.lua.table_from({1: self.lua.table_from({"id": first}), 2: status["ok"],
                                    3: status.get("result")})

    def wake(self):
        for chain in [c for c in self.waiting_chains() if c.waiting is not None]:
            call, members, timer = chain.waiting
            answer = self.answer(call, members)
            if answer is not None:
                chain.waiting = None
                if timer is not None:
                    self.cancelled_timers.add(timer)
                self.resume(chain, answer)

    def waiting_chains(self):
        return [self.root_chain()] + list(self.chains.values())

    def root_chain(self):
        return self._root

    def observation(self):
        tasks = {}
        for tid, status in self.tasks.items():
            tasks[tid] = {k: v for k, v in status.items() if k != "result"}
        return {"outcome": self.outcome, "result": self.result if self.outcome == "ok" else None,
                "error": None, "logs": self.logs, "events": self.events, "tasks": tasks,
                "messages": {}, "store": self.store, "virtual_time": self.now / 1e9}


PARK = object()


def main():
    args = sys.argv[1:]
    while args[:1] == ["--bug"]:
        BUGS.add(args[1])
        args = args[2:]
    out = sys.stdout

    def say(message):
        out.write(json.dumps(message) + "\n")
        out.flush()

    lines = iter(sys.stdin)
    for line in lines:
        message = json.loads(line)
        if message["type"] == "hello":
            say({"type": "hello", "name": "sketch", "features": ["language", "tasks"],
                 "level": 2})
        elif message["type"] == "run":
            run_id = message["id"]

            def ask(kind, options, run_id=run_id):
                say({"type": "choose", "id": run_id, "kind": kind, "options": options})
                return json.loads(next(lines))["pick"]

            run = Run("run-1", message["prompt"], message.get("harness") or {}, ask)
            run.go()
            say({"type": "observation", "id": run_id, "observation": run.observation()})
        else:
            break


if __name__ == "__main__":
    main()
