"""Example prompts as specs with the scripts beside them and the ceiling of 2 that
`forge mutants`' oracle column explores them under (`forge.conformance.mutants.oracle_specs`)."""

from __future__ import annotations

from tests.conftest import EXAMPLES


def example_spec(name: str):
    from forge.conformance.mutants import oracle_specs

    wanted = (EXAMPLES / name).name
    for found, spec in oracle_specs():
        if found == wanted and spec.prompt_path.endswith(name):
            return spec
    raise KeyError(name)
