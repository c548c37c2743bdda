"""The reference engine: running a parsed prompt on the simulator.

Modules: `run` (a run and its walk), `kernel` (the run loop and the chain
states), `requests` (what a chain parks on), `state` (chains, walk levels,
tasks), `rules/` (ids, admission, timeouts, endings: each rule written
once), `tasks` (the tasks namespace, waits and delivery), `fanout`, `host`
(the globals a section VM sees), `models`, `modeltasks`, `tools`, `roles`,
`conversation` (the model side), `claims` (the store's sharing rule), `failures`
(error values and run error kinds), `substitution`, `envelope`.
"""

from forge.engine.run import Run, RunConfig, run_prompt

__all__ = ["Run", "RunConfig", "run_prompt"]
