"""A partial engine for the tests: `forge impl-serve --level 2` behind a
filter that makes it look like another implementation.

    python3 partial_engine.py CMD...

It runs CMD (a level-2 engine) and passes every message through, except:
its hello drops the `models` feature (so a kit that honours features sends
it no model program - one that did would get an error back); every
observation loses `effects`, `rounds`, `trace_sha256` and the boundary
events, has its `seq` numbers spread out (gaps) and its `virtual_time`
doubled - all implementation-defined - and, one normative difference a
porter may accept, reports no `depth` in its task status tables.  A run of
a prompt using models is answered with an error.
"""

import json
import subprocess
import sys
import threading

BOUNDARY = ("run_", "section_", "lua_chunk", "lua_teardown", "lua_shared", "store_",
            "tool_call", "tool_scope", "model_turn")

inner = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
runs: dict[str, bool] = {}


def forward() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("type") == "run" and message.get("harness", {}).get("model_script"):
            runs[message["id"]] = True
        inner.stdin.write(line)
        inner.stdin.flush()
    inner.stdin.close()


def say(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


threading.Thread(target=forward, daemon=True).start()
for line in inner.stdout:
    message = json.loads(line)
    kind = message.get("type")
    if kind == "hello":
        message["features"] = [f for f in message["features"] if f != "models"]
    elif kind == "observation" and runs.pop(message["id"], False):
        message = {"type": "error", "id": message["id"], "message": "no models here"}
    elif kind == "observation":
        obs = message["observation"]
        for field in ("effects", "rounds", "trace_sha256"):
            obs.pop(field, None)
        obs["events"] = [e for e in obs["events"] if not e["kind"].startswith(BOUNDARY)]
        for event in obs["events"]:
            event["provenance"]["seq"] = 3 * event["provenance"]["seq"] + 1
        obs["virtual_time"] = 2 * obs["virtual_time"]
        for status in obs["tasks"].values():
            status.pop("depth", None)
    say(message)
