"""The reference engine behind the subprocess protocol (`forge impl-serve`).

Reads protocol messages (docs/protocol.md) from one stream, one JSON object a
line, and answers on another.  It is the protocol's worked example and the
suite's check on the protocol itself: `forge conformance --impl 'forge
impl-serve'` must agree with the in-process run.

A message it cannot serve gets an `error` answer and the loop goes on; it
never dies on bad input.  While it serves, Python's `sys.stdout` points at
stderr, so nothing the engine might print can corrupt the protocol stream.

What does not live here: the kit's side of the pipe (`adapters`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import IO, Any

from forge.conformance.adapters import (
    PROTOCOL_VERSION,
    REFERENCE_FEATURES,
    AdapterError,
    reference_lifecycle_observation,
    reference_observation,
)
from forge.conformance.case import HarnessSpec
from forge.errors import InputError
from forge.limits import MAX_DEPTH, data_problem, render_path

NAME = "forge-reference"


def serve(infile: IO[bytes], outfile: IO[bytes]) -> int:
    """Answer messages until `bye` or end of input; returns the exit code (0)."""

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
                answer({"type": "hello", "protocol": PROTOCOL_VERSION, "name": NAME,
                        "features": list(REFERENCE_FEATURES)})
            elif kind == "run":
                answer(_run(message))
            else:
                answer(_error(message.get("id"), f"unknown message type {kind!r}"))
    return 0


def _run(message: dict) -> dict:
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
    try:
        observation = reference_observation(prompt, spec, seed, case_id)
    except AdapterError as e:
        return _error(case_id, e.render())
    except Exception as e:  # noqa: BLE001 - e.g. a malformed harness: say so, keep serving
        return _error(case_id, f"{type(e).__name__}: {e}")
    return {"type": "observation", "id": case_id, "observation": observation}


def _error(case_id: Any, message: str) -> dict:
    return {"type": "error", "id": case_id, "message": message}
