"""The run package: what a prompt run is made of, below the front ends that build one.

- `options`: the options table, one row per run option (its rule and
  bounds, flag and help, keyword, default, where it goes, whether the
  replay record holds it), from which the flags, the API's keywords and
  checks, the run's definition and its record are built;
- `values`: the rule of a value a front end takes (its type, its bounds,
  the words of a refusal);
- `spec`: a run's definition as a frozen value (`RunSpec`);
- `record`: a run's replay record, the run domain's part of a replay file.

What does not live here: building a run from flags or data and running it
(`forge.runspec`), exploring and replaying (`forge.repro`), the replay
file's generic format (`forge.sim.replayfile`).
"""
