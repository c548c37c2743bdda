"""The reduction is sound on generated prompts: over prompts whose tasks
race on the store, set notes and read one another's status, under the
default budgets or a tight one (`tests.strategies.bounded_prompts`), the reduced
exhaustive search sees exactly the behaviours the unreduced one sees
(kit: explore.reduction).

`FORGE_REDUCTION_EXAMPLES=N` runs N prompts (CI runs 40; the figure in
docs/exploring.md is from a run of 2,000, which found no difference)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from forge.sim.exhaustive import exhaustive
from tests.sim.subjects import behaviour, text
from tests.strategies import bounded_prompts, racing_prompts

EXAMPLES = int(os.environ.get("FORGE_REDUCTION_EXAMPLES", "40"))
#: The runs a walk may take.
LIMIT = 100_000
#: A drawn prompt whose unreduced tree is larger than this cannot be compared
#: in reasonable time and is set aside (counted in Hypothesis's statistics):
#: one of a 2,000-example run had 682 reduced runs and over 100,000 unreduced.
UNREDUCED_LIMIT = 20_000


def behaviours(prompt: str, reduce: bool, whole: bool = True, limit: int = LIMIT, **limits):
    """The walk's report and the behaviours it saw; `whole`: it must finish."""
    seen = set()

    def record(obs):
        seen.add(behaviour(obs))
        return []

    report = exhaustive(text(prompt, orders=True, **limits), [record], limit=limit,
                        reduce=reduce)
    assert report.complete or not whole, f"the walk passed {limit:,} runs"
    return report, seen


@settings(max_examples=EXAMPLES, database=None, derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.one_of(racing_prompts().map(lambda prompt: (prompt, {})), bounded_prompts()))
def test_reduced_and_unreduced_searches_see_the_same_behaviours(drawn):
    """Half the prompts run under a tight budget (store bytes, kept bytes,
    section entries, steps): before quotas were footprints, 300 of those
    found 18 prompts whose reduced search missed a behaviour."""
    prompt, limits = drawn
    unreduced, every = behaviours(prompt, False, whole=False, limit=UNREDUCED_LIMIT, **limits)
    event("unreduced walk finished" if unreduced.complete else "set aside: unreduced tree too large")
    assume(unreduced.complete)
    reduced, seen = behaviours(prompt, True, **limits)
    assert seen == every, (prompt, limits)
    assert reduced.runs <= unreduced.runs


NOTE_AND_STATUS = """---
name: note-status
description: Main reads A's note between its own store writes
promptforge: 0
---

# Note status

## Main

```lua
local a = tasks.spawn('## A')
local seen = {}
for i = 1, 3 do
  store.write('m', tostring(i))
  seen[#seen + 1] = tasks.status(a).note or '-'
end
tasks.join({ a })
return table.concat(seen, ',')
```

## A

```lua
store.write('a', '1')
tasks.note('one')
store.write('a', '2')
tasks.note('two')
store.write('a', '3')
return 'a'
```
"""


def test_a_status_read_of_another_task_s_note_is_not_reduced_away():
    """Main reads A's note after each of its writes; A notes between its
    own writes.  The reduced search used to run 6 schedules and never see
    Main read `two`; the status read is now part of Main's footprint."""
    def saw_two(obs):
        return ["Main saw A's note 'two'"] if "two" in (obs["result"] or "") else []

    reduced = exhaustive(text(NOTE_AND_STATUS, orders=True), [saw_two], limit=10_000)
    assert reduced.findings and reduced.findings[0].problems == ("Main saw A's note 'two'",)
    _, seen = behaviours(NOTE_AND_STATUS, True)
    _, every = behaviours(NOTE_AND_STATUS, False)
    assert seen == every and len(every) == 10


def _quota_race(a_after: str) -> str:
    """Two tasks each write 40 MB (two together pass the store's 64 MB
    quota), then a small path; A runs `a_after` between its two writes."""
    return f"""---
name: quota-race
description: Which task's big write crosses the store quota depends on the order
promptforge: 0
---

# Quota race

## Main

```lua
local a, b = tasks.spawn('## A'), tasks.spawn('## B')
tasks.join({{ a, b }})
return 'done'
```

## A

```lua
store.write('a', string.rep('x', 40 * 1024 * 1024))
{a_after}
store.write('a2', '1')
return 'a'
```

## B

```lua
store.write('b', string.rep('y', 40 * 1024 * 1024))
store.write('b2', '1')
return 'b'
```
"""


@pytest.mark.parametrize("a_after", ["", "store.delete('a')"])
def test_a_store_quota_crossed_in_either_order_is_seen_under_reduction(a_after):
    """Here the write that crosses the store quota is A's in one order and
    B's in the other, and with A's delete the quota is crossed only when B's
    write lands before it: the reduced walk sees every behaviour of the
    unreduced one (each 40 MB write leaves the store past half its quota, so
    its step is global)."""
    prompt = _quota_race(a_after)
    reduced, seen = behaviours(prompt, True)
    unreduced, every = behaviours(prompt, False)
    assert seen == every and reduced.runs < unreduced.runs
    errors = [json.dumps(json.loads(b)[2]) for b in every]
    assert any("(writing a)" in e for e in errors) and any("(writing b)" in e for e in errors)
    assert ("null" in errors) == bool(a_after)


#: A writes 60 bytes, B 30 and then 60 over the same path, under a store
#: quota of 100 bytes: whichever 60-byte write lands second is refused.
NEAR_QUOTA = """---
name: near-quota
description: Two tasks write near the store quota, and the order decides whose write is refused
promptforge: 0
---

# Near quota

## Main

```lua
local a, b = tasks.spawn('## A'), tasks.spawn('## B')
tasks.join({ a, b })
return 'done'
```

## A

```lua
store.write('a', string.rep('x', 60))
store.write('a2', '1')
return 'a'
```

## B

```lua
store.write('b', string.rep('y', 30))
store.write('b', string.rep('y', 60))
store.write('b2', '1')
return 'b'
```
"""


def test_two_writes_that_share_the_store_quota_do_not_commute_near_it():
    """A's write and B's second write touch different paths, so their
    footprints once said they commute; but each leaves the store past half
    its quota, and the one that lands second is refused.  The reduced
    search used to put A's write to sleep under B's and never saw A refused
    right after B's second write (the store holding only `b`): a quota
    consumption past half the quota is now global."""
    def endings(behaviours):
        """(whose write was refused, what the store held) of each behaviour."""
        return {(json.loads(b)[2]["message"][-11:], json.dumps(json.loads(b)[3]))
                for b in behaviours}

    reduced, seen = behaviours(NEAR_QUOTA, True, store_bytes=100)
    unreduced, every = behaviours(NEAR_QUOTA, False, store_bytes=100)
    assert len(every) == 4
    assert ("(writing a)", json.dumps({"b": "y" * 60})) in endings(seen)
    assert seen == every
    assert reduced.runs < unreduced.runs


#: Each task notes 600 bytes between two writes, under a quota of 1,000 kept
#: bytes: whichever note comes second ends the run.
NEAR_KEPT = """---
name: near-kept
description: Two tasks note near the run's quota of kept bytes, and the order decides whose note ends it
promptforge: 0
---

# Near kept

## Main

```lua
local a, b = tasks.spawn('## A'), tasks.spawn('## B')
store.write('m', '1')
tasks.join({ a, b })
return 'done'
```

## A

```lua
store.write('a', '0')
tasks.note(string.rep('a', 600))
store.write('a', '1')
return 'a'
```

## B

```lua
store.write('b', '0')
tasks.note(string.rep('b', 600))
store.write('b2', '1')
return 'b'
```
"""


def test_two_notes_that_share_the_kept_quota_do_not_commute_near_it():
    """A note is keyed by its task, so A's and B's notes once commuted; but
    the kept quota counts both.  The reduced search used to see 7 of the
    unreduced walk's 8 behaviours (one of the two where the note that ends
    the run comes right after the other, before main's write)."""
    reduced, seen = behaviours(NEAR_KEPT, True, max_kept_bytes=1000)
    unreduced, every = behaviours(NEAR_KEPT, False, max_kept_bytes=1000)
    assert len(every) == 8 and seen == every
    assert reduced.runs < unreduced.runs
