"""What the Python API keeps between calls, and that keeping it changes nothing.

`forge.api` keeps recent run set-ups (the spec and its `Runner`) keyed by
the prompt's text and the options, the text of recent prompt files while
their status says they did not change, and recent campaigns' set-ups
(`forge.repro.Shelf`), and freezes an observation's values when they are
first read.  These tests hold that an edited prompt file is run as edited
(however it was edited, however soon after a read),
that options naming files are read afresh, that a campaign taking a kept
set-up reports what a fresh one does, and that a lazily frozen
observation is the eagerly frozen one: equal, read-only, pickling.
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import time

import pytest

import forge.api as api
from forge.engine.run import run_prompt
from forge.prompt import load_prompt

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

PROMPT = """---
name: reuse
description: returns a word
promptforge: 0
---

# Reuse

## Main

```lua
return '{word}'
```
"""


def test_an_edited_prompt_file_runs_as_edited(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="one"))
    assert api.run_prompt(path).result == "one"
    assert api.run_prompt(path).result == "one"
    path.write_text(PROMPT.format(word="two"))
    assert api.run_prompt(path).result == "two"


class _Later:
    """The clock `forge.api` reads when it decides whether a file's status
    vouches for its text (`_prompt_text`), an hour on: every file written
    in the test lies well before it."""

    @staticmethod
    def time_ns() -> int:
        return time.time_ns() + 3600 * 10**9


def test_a_prompt_file_changed_just_before_its_read_is_read_again(tmp_path, calls_of):
    """A text read within a timestamp tick or two of the file's last change
    is not kept: a write in the same tick would leave the same status."""
    from forge import runspec

    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="one"))
    old = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(old, old))       # an old modification time; the change time is now's
    reads = calls_of(runspec, "read_prompt_text")
    assert api.run_prompt(path).result == api.run_prompt(path).result == "one"
    assert len(reads) == 2


def test_an_unchanged_prompt_file_is_not_read_again_and_a_change_is_seen(tmp_path, monkeypatch,
                                                                        calls_of):
    """The file's status (times, size, inode) vouches for the text read
    before: a write of another size, a file renamed onto the path, or a
    write of the same size whose modification time is set back are each
    read again."""
    from forge import runspec

    monkeypatch.setattr(api, "_time", _Later)
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="one"))
    reads = calls_of(runspec, "read_prompt_text")
    assert api.run_prompt(path).result == api.run_prompt(path).result == "one"
    assert len(reads) == 1
    path.write_text(PROMPT.format(word="three"))
    assert api.run_prompt(path).result == "three"
    other = tmp_path / "q.md"
    other.write_text(PROMPT.format(word="seven"))
    other.replace(path)                 # the same size; another inode
    assert api.run_prompt(path).result == "seven"
    before = os.stat(path)
    for word in ("eight", "fifty", "sixty"):        # until the change time moves on a tick
        path.write_text(PROMPT.format(word=word))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        if os.stat(path).st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.05)
    assert os.stat(path).st_size == before.st_size
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert api.run_prompt(path).result == word
    assert len(reads) == 4


def test_a_prompt_file_that_goes_away_is_refused_though_its_text_was_kept(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(api, "_time", _Later)
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="one"))
    assert api.run_prompt(path).result == "one"
    path.unlink()
    with pytest.raises(api.InputError, match="cannot read prompt file"):
        api.run_prompt(path)


def test_a_store_folder_is_read_on_every_call(tmp_path):
    prompt = tmp_path / "p.md"
    prompt.write_text(PROMPT.replace("return '{word}'", "return store.read('a.md')"))
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "a.md").write_text("first")
    assert api.run_prompt(prompt, store=folder).result == "first"
    (folder / "a.md").write_text("second")
    assert api.run_prompt(prompt, store=folder).result == "second"


def test_a_reused_set_up_gives_the_same_observation(tmp_path):
    path = tmp_path / "p.md"
    path.write_text(PROMPT.format(word="same"))
    first = api.run_prompt(path, seed=3)
    again = api.run_prompt(path, seed=3)
    assert first.to_json() == again.to_json()
    assert first.trace == again.trace


def _eager(value):
    if isinstance(value, dict):
        return {k: _eager(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_eager(v) for v in value)
    return value


def test_calls_in_threads_share_the_kept_set_ups_safely():
    """Threads adding and evicting kept run set-ups at once (more prompts
    than are kept) each get their own prompt's run."""
    import sys
    import threading

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)         # threads switch often: the races show
    try:
        failures: list[str] = []

        def calls(worker: int) -> None:
            for n in range(12):
                word = f"w{worker}x{n % (api._SETUPS_KEPT // 2 + 3)}"
                try:
                    got = api.run_prompt(source=PROMPT.format(word=word)).result
                except Exception as e:  # noqa: BLE001 - any failure is the test's finding
                    got = f"{type(e).__name__}: {e}"
                if got != word:
                    failures.append(f"{word}: {got}")

        threads = [threading.Thread(target=calls, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures and len(api._SETUPS) <= api._SETUPS_KEPT


def test_a_lazily_frozen_observation_reads_as_an_eagerly_frozen_one():
    obs = api.run_prompt("examples/two-tasks.md")
    data = json.loads(obs.to_json())
    assert obs.to_dict() == data
    event = obs.events[0]
    with pytest.raises(TypeError):
        event["kind"] = "other"         # type: ignore[index]
    assert dict(event) == _eager(data["events"][0])
    assert isinstance(event["provenance"], api._FrozenMap)
    copy = pickle.loads(pickle.dumps(obs))
    assert copy.to_json() == obs.to_json() and copy == obs
    engine = run_prompt(load_prompt("examples/two-tasks.md")).observation()
    assert repr(obs.tasks) == repr(_eager(engine["tasks"]))


def test_the_events_read_as_a_tuple_of_frozen_maps_however_they_are_read():
    """The events are kept as the engine's dicts and frozen per entry when
    read (`api._LaterEntries`): every way of reading them gives frozen maps
    equal to the eagerly frozen ones, and none hands out a dict."""
    obs = api.run_prompt("examples/two-tasks.md")
    data = json.loads(obs.to_json())
    eager = tuple(_eager(e) for e in data["events"])
    events = obs.events
    assert isinstance(events, tuple) and len(events) == len(eager)
    assert events == eager and eager == events and not events != eager
    engine = run_prompt(load_prompt("examples/two-tasks.md")).observation()
    assert repr(events) == repr(tuple(_eager(e) for e in engine["events"]))
    read = [events[0], events[-1], *events[1:3], *events, *reversed(events),
            *(events + ()), *(() + events), *(events * 2), *pickle.loads(pickle.dumps(events))]
    assert all(isinstance(e, api._FrozenMap) for e in read)
    assert events[1:3] == eager[1:3] and list(reversed(events)) == list(reversed(eager))
    assert eager[4] in events and events.index(eager[4]) == 4 and events.count(eager[4]) == 1
    with pytest.raises(TypeError):
        events[0]["kind"] = "other"     # type: ignore[index]
    with pytest.raises(IndexError):
        events[len(eager)]
    events[2]["provenance"]          # reading one entry freezes that copy alone
    assert obs.to_dict() == data and pickle.loads(pickle.dumps(obs)) == obs


def test_from_dict_keeps_no_reference_to_the_callers_data():
    data = json.loads(api.run_prompt("examples/two-tasks.md").to_json())
    obs = api.Observation.from_dict(data)
    data["events"][0]["kind"] = "changed"
    data["tasks"]["0.0"]["state"] = "changed"
    assert obs.events[0]["kind"] != "changed"
    assert obs.tasks["0.0"]["state"] != "changed"


def test_explore_again_takes_the_campaign_set_up_and_reports_the_same(tmp_path, monkeypatch,
                                                                     calls_of):
    """A second campaign of the same prompt text and settings takes the first's
    set-up (runner, watched runs, canonical run, kit checks) and reports what
    a fresh one reports; an edited file or other settings make their own
    (kit: explore-report)."""
    from forge import repro

    path = tmp_path / "p.md"
    path.write_text((EXAMPLES / "two-tasks.md").read_text(encoding="utf-8"), encoding="utf-8")
    made = calls_of(repro, "set_up")  # the campaign set-ups made
    shelf = repro.Shelf(4)
    monkeypatch.setattr(api, "_campaigns", lambda: shelf)
    reports = [api.explore(path, runs=30, strategy=s) for s in ("random", "random", "pct", "pct")]
    assert len(made) == 2                       # one per mode: random's and PCT's orders mode
    assert reports[0] == reports[1] and reports[2] == reports[3]
    monkeypatch.setattr(api, "_campaigns", lambda: repro.Shelf(0))   # keeps nothing
    assert api.explore(path, runs=30, strategy="random") == reports[0]
    monkeypatch.setattr(api, "_campaigns", lambda: shelf)
    assert api.explore(path, runs=30, strategy="random", same_ids=False) == reports[0]
    assert len(made) == 4                       # the shelf that keeps nothing; other checks
    path.write_text(PROMPT.format(word="edited"))
    assert api.explore(path, runs=3, strategy="random").runs == 3
    assert len(made) == 5


def test_a_failing_campaign_again_finds_the_same_failure(monkeypatch, calls_of):
    from forge import repro

    shelf = repro.Shelf(4)
    monkeypatch.setattr(api, "_campaigns", lambda: shelf)
    made = calls_of(repro, "set_up")  # the campaign set-ups made
    path = EXAMPLES / "race.md"
    first = api.explore(path, runs=40, strategy="random", schedule_independent=True)
    again = api.explore(path, runs=40, strategy="random", schedule_independent=True)
    assert not first.ok and first == again and len(made) == 1


def test_a_mutants_campaign_does_not_take_the_references_set_up(monkeypatch, calls_of):
    from forge import repro, variation

    shelf = repro.Shelf(4)
    monkeypatch.setattr(api, "_campaigns", lambda: shelf)
    made = calls_of(repro, "set_up")  # the campaign set-ups made
    path = EXAMPLES / "explore" / "watch-delivery.md"
    assert api.explore(path, runs=10, strategy="random").ok
    with variation.switched("delivery.double-delivery"):
        assert not api.explore(path, runs=10, strategy="random").ok
    assert api.explore(path, runs=10, strategy="random").ok
    assert len(made) == 2


def test_a_shelf_lends_a_set_up_to_one_campaign_at_a_time_and_keeps_small_ones():
    from forge import repro
    from forge.runspec import Expectation, spec_from_flags

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    made = repro.set_up(spec, Expectation())
    shelf = repro.Shelf(2)
    shelf.give("a", made)
    assert shelf.take("a") is made and shelf.take("a") is None   # lent out: the next makes its own
    for key in "abc":
        shelf.give(key, made)
    assert shelf.take("a") is None and shelf.take("c") is made    # two kept, the oldest gone
    made[0]._watched.nodes = repro.Shelf.SMALL_NODES + 1
    shelf.give("d", made)
    assert shelf.take("d") is None
