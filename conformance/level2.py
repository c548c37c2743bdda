"""Level 2 of the protocol: the kit as the implementation's harness.

At level 1 an implementation decides its own schedule from the `seed`.  At
level 2 (its hello says `"level": 2`) it asks the kit instead: every open
decision of a run - which ready chain runs next, how long a store
operation, a model round, an operator question or a tool call takes, whether
a fault fires - is one `choose` message, and the kit answers with the index
of one option, drawn from its own chooser (`forge.sim.chooser`).  So the kit
decides the order and the virtual times of a foreign engine's events, and
exploring, replaying and shrinking schedules work on it exactly as on the
reference: they are nothing but choosers.

    implementation -> kit   {"type": "choose", "id": CASE, "kind": "chain",
                             "options": ["root:0", "task:0.1"]}
    kit -> implementation   {"type": "chosen", "id": CASE, "pick": 1}

The kinds of decision are a closed set, listed in protocol.schema.json
(`kinds`); a `choose` of any other kind is a fault, as is a malformed one.

What lives here: both ends of that exchange - `drive` (the kit's: answer
`choose` messages until the observation comes) and `PipeProvider` (the
served reference's: a provider whose every draw asks over the pipe).  What
does not: the pipe itself and its faults (`adapters.SubprocessAdapter`,
`impl_process`), and the level-1 messages (`serve`, docs/protocol.md).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from forge.deferred import deferred
from forge.sim.chooser import Chooser, Provider

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.conformance import catalogue, schemas
else:
    catalogue = deferred("forge.conformance.catalogue")
    schemas = deferred("forge.conformance.schemas")

#: The level a hello may announce; a hello without `level` is level 1.
LEVEL = 2
#: The most options one decision may offer (a run with more ready chains is
#: far past any case; the bound keeps a hostile message small).
MAX_OPTIONS = 100_000


def hello_level(hello: dict) -> int:
    """The protocol level an implementation's hello announces (1 when absent)."""
    level = hello.get("level", 1)
    return level if level in (1, LEVEL) else 1


@functools.cache
def kinds() -> tuple[str, ...]:
    """The decisions a `choose` may ask, as protocol.schema.json lists them."""
    return tuple(schemas.schema(schemas.PROTOCOL)["$defs"]["choose"]["properties"]["kind"]["enum"])


def choose_problem(message: dict, case_id: str) -> str | None:
    """Why `message` is not a well-formed `choose` for run `case_id`, or None."""
    if message.get("id") != case_id:
        return f"asked a choice for run {message.get('id')!r} during run {case_id!r}"
    kind, options = message.get("kind"), message.get("options")
    if not isinstance(kind, str) or not kind:
        return "asked a choice without a string `kind`"
    if kind not in kinds():
        return (f"asked a choice of unknown kind {_brief(kind)}"
                f"{catalogue.did_you_mean([kind], kinds())}; "
                f"the kinds are {', '.join(kinds())} (protocol.schema.json)")
    if (not isinstance(options, list) or not options or len(options) > MAX_OPTIONS
            or not all(isinstance(o, str) for o in options)):
        return (f"asked choice {kind[:40]!r} with `options` that are not a list of 1 to "
                f"{MAX_OPTIONS:,} strings")
    return None


#: The observation key a case's `decisions` expectation is read from: the
#: kit adds it (an engine never sends it), one `decision` line a `choose`.
DECISIONS = "decisions"


def decision(kind: str, options: Sequence[str]) -> str:
    """A decision as cases and docs/protocol.md write it: `KIND [LABEL, ...]`."""
    return f"{kind} [{', '.join(options)}]"


class Asked(Provider):
    """The canonical schedule (every answer 0), keeping each decision asked
    as a `decision` line: what a case's `decisions` is compared with."""

    name = "asked"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def draw(self, kind: str, options: Sequence[str]) -> int:
        self.seen.append(decision(kind, options))
        return 0


def drive(receive: Callable[[], dict], send: Callable[[dict], None], case_id: str,
          chooser: Chooser, fail: Callable[[str], Any], max_decisions: int,
          seen: list[str] | None = None) -> dict:
    """The kit's side of one level-2 run, after its `run` message went out:
    answer each `choose` from `chooser`, and return the first other message
    (the observation, or an error).  `fail(reason)` raises; it is called on a
    malformed `choose` or past `max_decisions` (`--max-decisions`).  Each
    decision asked is appended to `seen`, when given, as a `decision` line."""
    asked = 0
    while True:
        message = receive()
        if message.get("type") != "choose":
            return message
        problem = choose_problem(message, case_id)
        if problem is not None:
            fail(problem)
        asked += 1
        if asked > max_decisions:
            fail(f"asked more than {max_decisions:,} choices in one run (--max-decisions)")
        if seen is not None:
            seen.append(decision(message["kind"], message["options"]))
        pick = chooser.choose(message["kind"], message["options"])
        send({"type": "chosen", "id": case_id, "pick": pick})


class PipeProvider(Provider):
    """A provider that asks the kit: each draw writes `choose` and reads `chosen`.

    `ask(message)` writes one message and returns the next one read (None at
    end of input).  Used by `forge impl-serve --level 2`, whose engine thus
    has no schedule of its own.  A missing or malformed answer is kept in
    `broken` rather than raised (the engine would turn an exception in a
    handler into the run's Internal error); every later draw is canonical
    without asking, and the server answers the run with an error.
    """

    name = "kit"

    def __init__(self, case_id: str, ask: Callable[[dict], dict | None]) -> None:
        self.case_id = case_id
        self.ask = ask
        self.broken: str | None = None
        #: True when the input ended: the server stops after this run.
        self.ended = False

    def draw(self, kind: str, options: Sequence[str]) -> int:
        if self.broken is not None:
            return 0
        answer = self.ask({"type": "choose", "id": self.case_id, "kind": kind,
                           "options": list(options)})
        if answer is None:
            self.ended = True
            self.broken = f"the input ended while choice {kind!r} waited for its answer"
            return 0
        pick = answer.get("pick") if isinstance(answer, dict) else None
        asked = f"choice {kind!r} with {len(options)} option{'s' if len(options) > 1 else ''}"
        if (not isinstance(answer, dict) or answer.get("type") != "chosen"
                or isinstance(pick, bool) or not isinstance(pick, int)):
            self.broken = (f"{asked} was answered with {_brief(answer)}; expected "
                           '{"type": "chosen", "id": ..., "pick": INDEX}')
            return 0
        if not 0 <= pick < len(options):
            self.broken = (f"{asked} was answered with pick {pick}, out of range: a pick is "
                           f"an index from 0 to {len(options) - 1}")
            return 0
        return pick


def _brief(value: Any) -> str:
    """`value` as JSON, cut to 200 characters (for messages)."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:199] + "…"
