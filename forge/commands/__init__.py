"""The `forge` subcommands that live in the forge CLI layer, and what they share.

- `params`: flag types with the kit's limits (64-bit integers, finite
  bounded seconds, regular expressions, writable output paths) and the one
  way to write an output file; the harness flags `run`, `explore` and
  `replay` share (`harness_options`).
- `explore`, `replay`: the click commands over `forge.repro`, which with
  `forge.runspec` (a run's whole definition) is the core they and the
  Python API (`forge.api`) share; only the printing lives here.

The `forge` group itself, its error mechanism and `forge run` are in
`forge.cli`; the suite's commands beside their subsystems (`forge.conformance.cli`,
`forge.conformance.mutants_cli`, `forge.spec.cli`).  Nothing under `sim/` imports this.
"""
