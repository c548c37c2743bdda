"""A run: the composition root that puts one run of one prompt together.

A run owns the prompt, the harness, the chooser, the virtual clock, the
trace and a Lua runtime; it builds the narrow context its parts share
(`context`), the parts themselves - the walk (`walk`), harness operations
(`effects`), events and the observation (`observation`), the tasks
namespace, fanout, the host globals and the model side - and hands them to
each other; then it executes: the walk starts the root chain and the kernel
(`kernel`) runs the loop.  When the run ends, its parts let go of it, and
the run answers for what it observed (`observation()`).

What lives here: `RunConfig`, putting a run together, executing it once,
letting go, the nonce and seed independence.  What does not: anything a part
does (each part's module), the loop (`kernel`), the rules (`rules/`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs

from forge.engine import collection, fanout, footprint, host, library, models, observation, tasks
from forge.engine.claims import Claims
from forge.engine.context import Context
from forge.engine.letgo import let_go
from forge.engine.effects import Effects
from forge.engine.failures import RunError
from forge.engine.kernel import Scheduler
from forge.engine.observation import Observer, observation_json
from forge.engine.quotas import DEFAULT_MAX_KEPT_BYTES, KeptQuota
from forge.engine.roles import RolesAPI
from forge.engine.rules.admission import Admission
from forge.engine.state import Chain, Task
from forge.engine.tools import ToolsAPI
from forge.engine.walk import Walk
from forge.errors import ForgeInternalError
from forge.harness import Harness
from forge.lua import runtime as lua_runtime
from forge.lua.backstop import DEFAULT_MAX_CPU_SECONDS
from forge.lua.runtime import DEFAULT_MAX_INSTRUCTIONS, LuaError
from forge.prompt.model import Prompt
from forge.sim.chooser import Chooser
from forge.sim.kernel import Kernel
from forge.sim.orders import CompletionOrder
from forge.sim.trace import Trace

#: Scheduling steps after which a run is declared runaway (a prompt that
#: spawns or waits forever without ever ending).
DEFAULT_MAX_STEPS = 200_000
#: Tasks one run may start; breadth is otherwise unbounded (depth is capped at 8).
DEFAULT_MAX_TASKS = 10_000
#: Section entries one run may make (an endless jump loop runs no Lua loop).
DEFAULT_MAX_ENTRIES = 50_000
#: `log` checkpoints, and their UTF-8 bytes, one run may record in all.  The
#: spec's quotas are per section VM; with up to `DEFAULT_MAX_TASKS` VMs they
#: would allow gigabytes, so the kit bounds the run as a whole too.
DEFAULT_MAX_LOGS = 100_000
DEFAULT_MAX_LOG_BYTES = 16 * 1024 * 1024




@attrs.frozen
class RunConfig:
    args: str = ""
    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    #: CPU seconds before the backstop ends the run (`forge.lua.backstop`).
    max_cpu_seconds: float = DEFAULT_MAX_CPU_SECONDS
    max_steps: int = DEFAULT_MAX_STEPS
    max_tasks: int = DEFAULT_MAX_TASKS
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_logs: int = DEFAULT_MAX_LOGS
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    max_kept_bytes: int = DEFAULT_MAX_KEPT_BYTES
    execution: str = "run-1"
    seed: int = 0


_DEFAULT_CONFIG = RunConfig()     # frozen: one serves every run given none



class Run:
    """Everything one run of one prompt owns."""

    def __init__(
        self,
        prompt: Prompt,
        harness: Harness | None = None,
        chooser: Chooser | None = None,
        config: RunConfig | None = None,
    ) -> None:
        self.prompt = prompt
        self.harness = harness or Harness()
        self.chooser = chooser or Chooser()
        self.config = config or _DEFAULT_CONFIG
        self.execution = self.config.execution
        self.clock = Kernel()
        self.trace = Trace()
        # A runtime reused across runs unless the prompt names weak tables
        # (`forge.lua.runtime` says why).
        reuse = lua_runtime.WEAK_MODE not in prompt.words
        self.lua = lua_runtime.acquire(self.config.max_instructions, self.config.seed, reuse,
                                       self.config.max_cpu_seconds)
        self._random_untouched: bool | None = None
        self._executed = False
        self.claims = Claims()
        #: Events and `log` checkpoints (`observation`).
        self.observer = Observer(self.execution, self.config.max_logs, self.config.max_log_bytes,
                                 abort=None)      # type: ignore[arg-type]  # the walk's, below
        #: The raw events, as the completion order and the oracles read them.
        self._events = self.observer.raw
        self.tasks: dict[str, Any] = {}          # id -> Task, every task of the run
        self._nonce: str | None = None
        #: The parts by type, as the library's routes and the kernel find them.
        self.parts: library.Parts = {}
        self.scheduler = Scheduler(None, self.clock,  # type: ignore[arg-type]  # the walk, below
                                   self.chooser, self.trace,
                                   library.SUSPENDING, self.parts, self.config.max_steps)
        self.scheduler.cancel_step = self.harness.cancel_step
        self.admission = Admission(self.scheduler, self.harness.ceiling)
        self.main_task = Task.main(prompt.title)
        # What the parts may use: the walk serves errors, the budget and
        # chain ends; the observer events; `Effects` the harness operations.
        self.ctx = Context(prompt=prompt, config=self.config, harness=self.harness, lua=self.lua,
                           clock=self.clock, trace=self.trace, claims=self.claims,
                           scheduler=self.scheduler, admission=self.admission, tasks=self.tasks,
                           main_task=self.main_task,
                           # The walk and the effects, once built below.
                           errors=None, budget=None, chains=None, effects=None,  # type: ignore[arg-type]
                           events=self.observer, nonce=lambda: self.nonce)
        self.walk = Walk(self.ctx, KeptQuota(self.config.max_kept_bytes))
        self.ctx.errors = self.ctx.budget = self.ctx.chains = self.walk
        self.scheduler.walk = self.walk
        self.observer.abort = self.walk.abort
        #: Harness operations and store calls (`effects`).
        self.harness_ops = self.ctx.effects = Effects(self.ctx, self.chooser)
        self.tasks_api = tasks.TasksAPI(self.ctx)
        self.models = models.ModelsAPI(self.ctx)
        self.fanout = fanout.Fanout(self.ctx)
        self.parts.update({tasks.TasksAPI: self.tasks_api, fanout.Fanout: self.fanout,
                           models.ModelsAPI: self.models})
        if self.models.needed():
            self.parts[ToolsAPI] = self.models.tools
            self.parts[RolesAPI] = self.models.roles
        self.host = host.Host(self.ctx, library.LIBRARY_WITH_MODELS if self.models.needed()
                              else library.LIBRARY, self.parts)
        self.parts[host.Host] = self.host
        # The parts that call one another, handed to each other.
        self.tasks_api.host = self.fanout.host = self.models.host = self.host
        self.tasks_api.fanout = self.fanout
        self.fanout.tasks = self.models.tasks_api = self.tasks_api
        self.host.models = self.models
        walk = self.walk
        walk.host, walk.models, walk.tasks_api, walk.effects = (
            self.host, self.models, self.tasks_api, self.harness_ops)
        #: The quotas orders mode's footprints read (None outside it).
        self.quotas: footprint.Quotas | None = None
        if self.harness.latency_model.orders:
            self.quotas = footprint.Quotas(self.harness.store, walk, self.scheduler, self.lua,
                                           self.config.max_instructions)
            self.clock.orders = CompletionOrder(self.chooser, self.trace.records, self._events,
                                                self.quotas.touched,
                                                lambda: not self.seed_independent(),
                                                self.trace.reads, self.quotas.reading)

    # ------------------------------------------------------------------ API
    def execute(self) -> Run:
        """Run to the end and return self (read `observation()`).  A run
        executes once: its runtime has gone back and its parts have let go."""
        if self._executed:
            raise RuntimeError("Run.execute: this run has already executed; build a new Run "
                               "(run_prompt) to run the prompt again")
        self._executed = True
        ended = False
        try:
            with collection.deferred():
                self.walk.start()
                if self.outcome is None:
                    self.scheduler.loop()
            ended = True
        except ForgeInternalError:
            raise
        except LuaError as e:  # pragma: no cover - a bug in the bridge
            raise ForgeInternalError(f"internal error in the engine: {e}") from e
        finally:
            self._release(ended)
        if ended:
            self._let_go()
        return self

    def _release(self, ended: bool) -> None:
        """The runtime's slots let go of the run, and a reused runtime goes
        back for the next run (given up if the run did not end normally):
        what this run still asks of Lua afterwards (`seed_independent`) is
        read first."""
        if self.lua.reusable and ended and self.lua.internal_error is None:
            self._random_untouched = bool(self.lua.fn.random_untouched())
        if self.quotas is not None:
            self.quotas.settle(ended and self.lua.internal_error is None)
        lua_runtime.release(self.lua, keep=ended)

    def _let_go(self) -> None:
        """The run has ended: its parts let go of it, so that once its
        caller drops it, reference counting frees it at once instead of
        leaving the whole graph to Python's cyclic collector (about a tenth
        of a small run's cost).  What a finished run is read for - its
        observation, tasks, trace, effects and the parts' own records - is
        data the parts hold, not reached through these back-references; a
        test holds every example and conformance case to this."""
        self.models.let_go()
        self.tasks_api.let_go()
        self.fanout.let_go()
        let_go(self.host, "ctx", "models")
        self.ctx.let_go()
        let_go(self.observer, "abort")
        let_go(self.walk, "host", "models", "tasks_api", "effects")
        let_go(self.scheduler, "walk")
        self.parts.clear()
        # What never fires now: timers and answers still pending, whose
        # events hold the chains and the run.
        self.clock.drop_pending()
        self.clock.orders = None
        # Tasks keep their chains (an ended task's status reads nothing
        # else); chains let go of the run, of the tasks they belong to, own
        # or wait on, and of their section's model state.  A call's chain is
        # reached as the owner, parent or callee of one of these.
        chains = [self.root]
        for task in (self.main_task, *self.tasks.values()):
            task.model_owner = None
            chains += (task.chain, task.owner)
        while chains:
            chain = chains.pop()
            if chain is None or chain.task is None:     # none, or let go already
                continue
            chains += (chain.parent, chain.callee)
            chain.on_end = chain.task = chain.section_state = None    # type: ignore[assignment]
            chain.parked_on = None
            chain.owned = []

    # ------------------------------------------------------------ the walk's state
    @property
    def outcome(self) -> str | None:
        return self.walk.outcome

    @property
    def result(self) -> str | None:
        return self.walk.result

    @property
    def error(self) -> RunError | None:
        return self.walk.error

    @property
    def root(self) -> Chain | None:
        return self.walk.root

    @property
    def entries(self) -> int:
        """Section entries the run made."""
        return self.walk.entries

    @property
    def logs(self) -> list[str]:
        return self.observer.logs

    @property
    def current(self) -> Chain | None:
        """The chain being stepped, if any."""
        return self.scheduler.current

    @property
    def nonce(self) -> str:
        """The run's nonce, derived from its seed (built when first read, so
        `seed_independent` can tell whether anything read it)."""
        if self._nonce is None:
            self._nonce = hashlib.sha256(f"forge-nonce:{self.config.seed}".encode()).hexdigest()[:32]
        return self._nonce

    def seed_independent(self) -> bool:
        """Whether the seed reached nothing this run did: it never read the
        nonce, and Lua's generator is where the seed put it (nothing drew
        from it or reseeded it).  Then the same prompt, harness and choices
        under another seed give this very run - what lets a runner skip
        repeating it.  Call it once, after the run: it moves the generator."""
        if self._random_untouched is None:
            self._random_untouched = bool(self.lua.fn.random_untouched())
        return self._nonce is None and self._random_untouched

    # --------------------------------------------------------- observation
    @property
    def events(self) -> list[dict]:
        """Every event so far, as the observation shows it."""
        return self.observer.events

    def observation(self) -> dict:
        return observation.observation(
            outcome=self.outcome, result=self.result, error=self.error, observer=self.observer,
            tasks=self.tasks, models=self.models, effects=self.harness_ops.records,
            store=self.harness.store, now_ns=self.clock.now, trace=self.trace)


def run_prompt(prompt: Prompt, harness: Harness | None = None, chooser: Chooser | None = None,
               config: RunConfig | None = None) -> Run:
    return Run(prompt, harness, chooser, config).execute()


__all__ = ["Run", "RunConfig", "observation_json", "run_prompt"]
