"""The reference engine: running a parsed prompt on the simulator.

Modules: `run` (the run and its one scheduler loop), `chain` (a walk over
sections and its block coroutines), `tasks` (the tasks namespace and task
lifetimes), `host` (the globals a section VM sees), `store` (the store's
rules), `ids` (task id paths), `failures` (error values and run error kinds),
`observation` (what a run reports).
"""

from forge.engine.run import Run, RunConfig, run_prompt

__all__ = ["Run", "RunConfig", "run_prompt"]
