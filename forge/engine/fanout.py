"""fanout: one task per collection member, results in member order.

The Tasks chapter leans on fanout (each arm is a task), so the kit carries
the part of the fanout chapter that concerns tasks: member order, arms as
tasks with their ids and seeds, admission under the concurrency limit, the
depth cap, and fail-fast.  What does not live here: store claims between
arms (the store's rule, `claims` and `effects`) and the generic wait machinery (`rules.waits`).

Fail-fast: the first arm to fail (other than a tool-loop exhaustion)
cancels every live sibling, started or not - an arm that had not started
never runs its section's code - and the fanout raises that arm's own error.

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any


from forge.engine.letgo import let_go
from forge.engine.requests import FanoutArms
from forge.engine.rules import ids, waits
from forge.lua.runtime import LuaTable, NotJSON, from_lua_json, typename

if TYPE_CHECKING:
    from forge.engine.context import Context
    from forge.engine.host import Host
    from forge.engine.state import Chain, Task
    from forge.engine.tasks import TasksAPI


class Fanout:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lua = ctx.lua
        #: Collaborators the composition root hands over once they exist.
        self.tasks: TasksAPI = None      # type: ignore[assignment]
        self.host: Host = None      # type: ignore[assignment]

    def let_go(self) -> None:
        """The run has ended: let go of the context and the collaborators."""
        let_go(self, "ctx", "tasks", "host")

    def members(self, collection: Any) -> tuple[list | None, Any]:
        """(member values, original items) in the chapter's member order."""
        err = self.tasks.err
        if not isinstance(collection, LuaTable):
            return None, err("fanout's second parameter is a collection; "
                             "for a list section use list_from_section(heading)")
        keys = self.lua.fn.ordered_keys(collection)
        keys = _tuple(keys)
        ordered = keys[0]
        n = keys[1] if len(keys) > 1 else 0
        border = len(collection)
        out: list[Any] = []
        for i in range(1, (n or 0) + 1):
            key = ordered[i]
            value = collection[key]  # lua: one of its own keys (read raw): no __index runs
            kind = typename(value)
            if kind in ("function", "userdata", "thread"):
                return None, err(f"fanout collection member at index {len(out) + 1} is a {kind}; "
                                 "members must be data")
            if isinstance(key, int) and not isinstance(key, bool) and 1 <= key <= border:
                out.append((value, value))
                continue
            ktype = typename(key)
            if ktype not in ("string", "integer", "number", "boolean"):
                return None, err(f"fanout collection key must be a string, number, or boolean, got {ktype}")
            if isinstance(key, float) and (math.isnan(key) or math.isinf(key)):
                return None, err("fanout collection key is not a finite number")
            pair = self.lua.lua.table()
            pair[b"key"] = key  # lua: own table
            pair[b"value"] = value  # lua: own table
            out.append((pair, value))
        if not out:
            return None, err("fanout over an empty collection: no work is likely a bug")
        return out, None

    def start(self, chain: Chain, target: Any = None, collection: Any = None, *rest):
        ctx = self.ctx
        index, error = self.host.check_worker(chain, target)
        if error:
            return error
        members, error = self.members(collection)
        if error:
            return error
        for _, value in members:
            try:
                from_lua_json(value)
            except NotJSON:
                return self.tasks.err("item must be a JSON-representable value")
        refusal = ids.depth_refusal(chain, "fanout")
        if refusal:
            return self.tasks.err(refusal)
        arms: list[Task] = []
        for position, (item, original) in enumerate(members, 1):
            seeds = {"item": self.lua.fn.deep_copy(item), "item_data": from_lua_json(item),
                     "index": position}
            task = self.tasks.start_task(chain, index, "author", seeds)
            if isinstance(task, tuple):
                for arm in arms:
                    self.tasks.cancel(arm)
                return task
            arms.append(task)
        # No arm has run yet (admission only makes them ready), so none can
        # have ended before the chain waits on them.
        request = FanoutArms(tuple(arms), tuple(original for _, original in members))
        # Its arms took their indexes when they started: the wait takes none.
        return waits.park(ctx.scheduler, ctx.admission, chain, request, arms, counted=False)

    def arm_ended(self, chain: Chain, request: FanoutArms, task: Task) -> None:
        ctx = self.ctx
        assert chain.live and chain.parked_on is request
        failure = task.failure if task.state == "done" and task.ok is False else None
        if failure is not None and failure.kind != "tool_loop_exhausted":
            self._unregister(chain, request)
            for arm in request.arms:
                if arm.live:
                    self.tasks.cancel(arm)
            ctx.admission.wake(chain, (False, ctx.errors.as_error_value(failure, chain)))
            return
        # Every arm is live when the chain parks and tells it of its end once:
        # a count, not a walk over the arms at each end.
        chain.join_left -= 1
        if chain.join_left > 0:
            return
        self._unregister(chain, request)
        size = sum(len(arm.result or "") for arm in request.arms)
        if not ctx.budget.room_for(size, "delivering the fanout's results"):
            return
        results = self.lua.lua.table()
        for position, (arm, original) in enumerate(zip(request.arms, request.items), 1):
            exhausted = arm.failure is not None and arm.failure.kind == "tool_loop_exhausted"
            text = arm.result if arm.ok else ""
            entry = self.lua.fn.fanout_result(
                (text or "").encode("utf-8"), bool(arm.ok), original, exhausted)
            results[position] = entry
        ctx.admission.wake(chain, (True, results))

    def _unregister(self, chain: Chain, request: FanoutArms) -> None:
        # The fanout's return joins every arm, whatever became of it.
        for arm in request.arms:
            self.tasks.joined(arm)
        self.tasks.unregister(chain)


def _tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)
