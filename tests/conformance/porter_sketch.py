"""A porter's quick sketch, for measuring the suite: the reference engine
with the simplifications a porter makes in an afternoon, all at once.

    python3 porter_sketch.py [ID ...]

It serves `forge impl-serve --level 2` with the variation sites of the
mutants `SIMPLIFICATIONS` names switched on together (or only those given),
and a hello that declares the Tasks chapter's features alone (`FEATURES`:
no models, tools, operator or lifecycle), as a sketch of that chapter
would.  Everything else it gets right, so it is the most faithful sketch
with these shortcuts: the share of cases it passes is the share of what a
sketch attempts that none of the shortcuts touches
(`tests/conformance/test_suite_catches_sketches.py` holds it to 80%).

The in-repo `sketch_engine.py` is the other kind of sketch: written apart
from the reference, it covers only the prompts its tests send and errors
on the rest of the chapter, so its pass rate measures its coverage, not the
suite.
"""

import sys

#: Each shortcut, as a mutant id of `forge.conformance.mutants`, with the
#: porter's reasoning that leads to it.
SIMPLIFICATIONS = {
    "call-takes-no-index": "ids per kind: a call is not a task, so it takes no child id",
    "timed-wait-takes-no-index": "ids per kind: a timer is not a task, so it takes no child id",
    "tie-goes-to-timeout": "FIFO everywhere: the timer, set before the member ends, fires first",
    "join-any-last-ended": "join_any scans its ended members and keeps the last one it saw",
    "cancel-not-idempotent": "cancel checks the task is live, as every other call does",
    "pending-includes-ended": "tasks.pending lists the tasks the chain spawned",
    "wait-raises-cancelled": "one error path: a wait raises a member's error, cancelled included",
    "reraise-not-rebuilt": "one error kind: an error value keeps the kind it was made with",
}
#: The features a sketch of the Tasks chapter declares.
FEATURES = ("language", "tasks", "store", "fanout")


def main(ids: list[str]) -> int:
    from forge import variation
    from forge.conformance import serve
    from forge.conformance.mutants import find

    # Several sites at once, which `variation.switched` (one mutant per
    # process) refuses: this process serves the sketch and nothing else.
    for mutant_id in ids or list(SIMPLIFICATIONS):
        variation.find(find(mutant_id, "porter_sketch.py").site).on = True
    serve.REFERENCE_FEATURES = FEATURES
    serve.NAME = "porter-sketch"
    return serve.serve(sys.stdin.buffer, sys.stdout.buffer, level=2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
