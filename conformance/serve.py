"""The reference engine behind the subprocess protocol (`forge impl-serve`).

Reads protocol messages (docs/protocol.md) from one stream, one JSON object a
line, and answers on another.  It is the protocol's worked example and the
suite's check on the protocol itself: `forge conformance --impl 'forge
impl-serve'` must agree with the in-process run.

A message it cannot serve gets an `error` answer and the loop goes on; it
never dies on bad input.  While it serves, Python's `sys.stdout` points at
stderr, so nothing the engine might print can corrupt the protocol stream.

With `level=2` (`forge impl-serve --level 2`) and a kit whose hello offers
level 2, the engine has no schedule of its own: every open decision is asked
of the kit over the pipe (`level2.PipeProvider`, docs/protocol.md "Level
2").  `FORGE_MUTANT=ID` in the environment serves a mutant instead
(`forge.conformance.mutants`), so a wrong engine can be driven over the pipe.

What does not live here: the kit's side of the pipe (`adapters`, `level2`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from forge.conformance.adapters import (
    PROTOCOL_VERSION,
    REFERENCE_FEATURES,
    AdapterError,
    reference_lifecycle_observation,
    reference_observation,
)
from forge.conformance.case import HarnessSpec
from forge.conformance.level2 import LEVEL, PipeProvider
from forge.conformance.steps import ASK, OPTIONAL
from forge.deferred import deferred
from forge.errors import InputError
from forge.limits import MAX_DEPTH, data_problem, render_path
from forge.sim.chooser import Chooser

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import mutants
else:
    mutants = deferred("forge.conformance.mutants")

NAME = "forge-reference"


def serve(infile: IO[bytes], outfile: IO[bytes], level: int = 1) -> int:
    """Answer messages until `bye` or end of input; returns the exit code (0).

    At `level` 2 the hello announces level 2 when the kit's hello offers it,
    and then every run asks the kit for its decisions."""
    asking = False

    def answer(message: dict) -> None:
        outfile.write((json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
                      .encode("utf-8"))
        outfile.flush()

    with contextlib.redirect_stdout(sys.stderr):
        for raw in infile:
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except json.JSONDecodeError as e:
                answer(_error(None, f"not JSON: {e.msg}"))
                continue
            except RecursionError:
                answer(_error(None, f"a message is nested deeper than {MAX_DEPTH} levels"))
                continue
            except ValueError as e:  # e.g. an integer of thousands of digits
                answer(_error(None, f"not a message the reference will read: {e}"))
                continue
            problem = data_problem(message)
            if problem is not None:
                answer(_error(None, f"{render_path(problem[0])}: {problem[1]}"))
                continue
            if not isinstance(message, dict):
                answer(_error(None, "a message is a JSON object"))
                continue
            kind = message.get("type")
            if kind == "bye":
                break
            if kind == "hello":
                # It reports every step kind, the optional ones too (docs/protocol.md "Steps").
                hello = {"type": "hello", "protocol": PROTOCOL_VERSION, "name": NAME,
                         "features": list(REFERENCE_FEATURES), ASK: list(OPTIONAL)}
                offered = message.get("levels")
                asking = level >= LEVEL and isinstance(offered, list) and LEVEL in offered
                if asking:
                    hello["level"] = LEVEL
                answer(hello)
            elif kind == "run":
                provider = None
                if asking and isinstance(message.get("id"), str):
                    provider = PipeProvider(message["id"], _asker(infile, answer))
                answer(_run(message, provider))
                if provider is not None and provider.ended:
                    break
            else:
                answer(_error(message.get("id"), f"unknown message type {kind!r}"))
    return 0


@contextlib.contextmanager
def switch_mutant(mutant_id: str | None) -> Iterator[None]:
    """Serve the mutant `mutant_id` (None or empty: the reference itself).

    Raises:
        InputError: naming FORGE_MUTANT, for an id the catalogue lacks.
    """
    if not mutant_id:
        yield
        return

    with mutants.find(mutant_id, "FORGE_MUTANT").applied():
        yield


def _asker(infile: IO[bytes], answer):
    """`PipeProvider`'s `ask`: write one message, read the next (None at EOF)."""

    def ask(message: dict) -> dict | None:
        answer(message)
        while True:
            raw = infile.readline()
            if not raw:
                return None
            text = raw.decode("utf-8", "replace").strip()
            if text:
                break
        try:
            reply = json.loads(text)
        except (ValueError, RecursionError):
            return {"type": "not JSON", "text": text[:200]}
        return reply if data_problem(reply) is None else {"type": "past the limits"}

    return ask


def _run(message: dict, provider: PipeProvider | None = None) -> dict:
    case_id = message.get("id")
    prompt, seed, harness = message.get("prompt"), message.get("seed"), message.get("harness", {})
    if not isinstance(case_id, str):
        return _error(None, "a run needs a string `id`")
    if "operations" in message:
        try:
            observation = reference_lifecycle_observation(message["operations"], harness, case_id)
        except AdapterError as e:
            return _error(case_id, e.render())
        except Exception as e:  # noqa: BLE001 - malformed operations: say so, keep serving
            return _error(case_id, f"{type(e).__name__}: {e}")
        return {"type": "observation", "id": case_id, "observation": observation}
    if not isinstance(prompt, str):
        return _error(case_id, "a run needs a string `prompt`")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        return _error(case_id, "`seed` is an integer or null")
    if not isinstance(harness, dict):
        return _error(case_id, "`harness` is a JSON object")
    try:
        spec = HarnessSpec.from_message(harness)
    except InputError as e:
        return _error(case_id, e.message)
    chooser = None if provider is None else Chooser(provider, seed=seed or 0)
    try:
        observation = reference_observation(prompt, spec, seed, case_id, chooser,
                                            steps=message.get("steps") is True)
    except AdapterError as e:
        return _error(case_id, e.render())
    except Exception as e:  # noqa: BLE001 - e.g. a malformed harness: say so, keep serving
        return _error(case_id, f"{type(e).__name__}: {e}")
    if provider is not None and provider.broken is not None:
        return _error(case_id, f"level 2: {provider.broken}")
    return {"type": "observation", "id": case_id, "observation": observation}


def _error(case_id: Any, message: str) -> dict:
    return {"type": "error", "id": case_id, "message": message}
