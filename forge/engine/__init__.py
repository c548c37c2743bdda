"""The reference engine: running a parsed prompt on the simulator.

Modules: `run` (the composition root: a run put together and executed),
`context` (what a part may use of the run), `kernel` (the run loop and the
chain states), `walk` (sections, blocks, chain ends, the run's end),
`effects` (harness operations and store calls), `observation` (events and
the observation), `library` (every host call and the part that answers
it), `requests` (what a chain parks on), `parking` (`PARK`), `state`
(chains, walk levels, tasks), `rules/` (ids, admission, timeouts, endings,
notices, waits: each rule written once), `tasks` (the tasks namespace,
waits and delivery), `fanout`, `host` (the globals a section VM sees),
`models`, `modelside`, `modeltasks`, `tools`, `roles`, `conversation` (the
model side), `claims` (the store's sharing rule), `quotas` (the run-wide
quota on kept values), `failures` (error values and run error kinds),
`substitution`, `envelope`, `collection` (Python's collector during a
run), `letgo` (what a finished run's parts drop).
"""

from forge.engine.run import Run, RunConfig, run_prompt

__all__ = ["Run", "RunConfig", "run_prompt"]
