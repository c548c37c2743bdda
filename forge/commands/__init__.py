"""The `forge` subcommands that live in the forge CLI layer, and what they share.

- `params`: flag types with the kit's limits (64-bit integers, finite
  bounded seconds, regular expressions, writable output paths) and the one
  way to write an output file; the harness flags `run`, `explore` and
  `replay` share (`harness_options`).
- `runspec`: a run's whole definition (`RunSpec`), the runs it makes
  (`Runner`), what they must satisfy (`Expectation`) and its replay record.
- `repro`: exploring a spec and replaying a record, as plain functions
  returning frozen values (`explore_prompt`, `replay_file`, `replay_text`),
  and the failure's story.
- `explore`, `replay`: the click commands over `repro`.

The `forge` group itself, its error mechanism and `forge run` are in
`forge.cli`; the suite's commands beside their subsystems (`conformance.cli`,
`conformance.mutants_cli`, `spec.cli`).  Nothing under `sim/` imports this.
"""
