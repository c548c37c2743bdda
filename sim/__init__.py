"""The virtual-clock discrete-event simulator.

`sim` knows nothing about prompts: it offers a clock with an event queue
(`kernel`), the one funnel through which every open decision is drawn
(`chooser`), the latency model that turns harness operations into virtual
durations (`latency`), the trace that records every step (`trace`), and the
tools built on choice sequences: `explore` (many seeds, random or `pct`),
`exhaustive` (the choice tree, with the equivalences in `reduction`) and
`shrink` (a failing sequence down to a proven local minimum).
"""
