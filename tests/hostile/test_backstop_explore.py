"""A schedule the CPU-time backstop ends is neither judged nor recorded by
`forge explore`: where the backstop stops a run depends on the machine, so
the campaign stops with one line that says so and writes no replay file."""

from __future__ import annotations

import subprocess
import sys

PROMPT = """---
name: spin
description: two tasks, then a loop of long concatenations no count can stop
promptforge: 0
---

# Spin

## Main

```lua
local a = tasks.spawn('## A')
local b = tasks.spawn('## B')
tasks.join({a, b})
local s = string.rep("x", 50000000)
local t = s
while true do
  t = s .. "y"
end
```

## A

```lua
store.write('a', 'y')
return 'a'
```

## B

```lua
store.write('b', 'y')
return 'b'
```
"""


def test_a_backstopped_schedule_is_refused_in_one_line_and_never_recorded(tmp_path):
    """The campaign names the seed and the way to see the run, and leaves no
    replay file behind (kit: budget.cpu-backstop)."""
    (tmp_path / "spin.md").write_text(PROMPT, encoding="utf-8")
    ran = subprocess.run([sys.executable, "-m", "forge", "explore", "spin.md", "--runs", "2",
                          "--start-seed", "5", "--max-cpu-seconds", "0.5", "--database", "none"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.count("\n") == 1
    assert ran.stderr.startswith("forge: spin.md: the schedule at seed 5 ran past the CPU-time "
                                 "backstop")
    assert "forge run spin.md --seed 5" in ran.stderr
    assert not list(tmp_path.glob("*.json"))
