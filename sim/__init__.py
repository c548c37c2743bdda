"""The virtual-clock discrete-event simulator.

`sim` knows nothing about prompts: it offers a clock with an event queue
(`kernel`), the one funnel through which every open decision is drawn
(`chooser`), completion orders, where durations give way to which
completion fires next (`orders`), the trace that records every step
(`trace`), the strategies a schedule is drawn by, one module each
(`strategies/`, with PCT's provider in `pct` and Hypothesis's in
`hypothesis`), the replay file's generic format (`replayfile`) and the
kit's one size-limited file read (`readlimited`), and the tools built on
choice sequences: `explore` (many seeds under a strategy), `exhaustive`
(the choice tree, with the equivalences in `reduction`) and `shrink` (a
failing sequence down to a proven local minimum).  The latency model that
turns harness operations into virtual durations is the harness's
(`forge.harness`).  Nothing here imports the rest of `forge`.
"""
