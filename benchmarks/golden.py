"""Digest of every observation the reference engine gives, to prove a change
changed nothing: every conformance case on its canonical schedule and three
random ones, and every example prompt, each observation's JSON (its trace
hash included) hashed into one line per case.

    python3 benchmarks/golden.py > before.txt
    ...change the engine...
    python3 benchmarks/golden.py | diff before.txt -

`tests/engine/test_golden.py` holds the engine to the digests committed in
`tests/engine/golden_digests.txt`; a change meant to change an observation
writes that file again with this script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from collections.abc import Iterator

from forge.conformance.adapters import InProcessAdapter
from forge.conformance.case import DEFAULT_CASES_DIR, load_cases
from forge.engine.run import observation_json, run_prompt
from forge.prompt import load_prompt

ROOT = pathlib.Path(__file__).resolve().parents[1]


def digests() -> Iterator[str]:
    """One line per case and seed, then per example: its name and digest."""
    adapter = InProcessAdapter()
    for case in load_cases(DEFAULT_CASES_DIR):
        for seed in (None, 1, 2, 3):
            try:
                obs = adapter.run(case, seed)
                text = json.dumps(obs, sort_keys=True, ensure_ascii=False)
            except Exception as e:  # noqa: BLE001 - a difference is what we look for
                text = f"error {type(e).__name__}: {e}"
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
            yield f"{case.id} seed={seed} {digest}"
    for path in sorted((ROOT / "examples").glob("*.md")):
        obs = run_prompt(load_prompt(str(path))).observation()
        yield f"example {path.name} {hashlib.sha256(observation_json(obs).encode()).hexdigest()[:16]}"


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog=__doc__.split("\n", 1)[1]).parse_args()
    for line in digests():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
