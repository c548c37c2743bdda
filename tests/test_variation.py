"""Variation sites: switching one, and noting which a run read (forge.variation).

The engine reads `SITE.on` as a plain attribute on its hot paths; only while
`reads()` collects does a read note the site.  These hold the mechanism to
what the mutants runner and the adapters rely on: a read inside `reads()` is
noted (nested collections included), a read outside notes nothing and costs
nothing more, and `switched_on()` follows every way a site is switched.
"""

from __future__ import annotations

import pytest

import forge.engine  # noqa: F401 - importing the engine declares every site
from forge import variation
from forge.engine.run import run_prompt
from forge.prompt import parse_prompt

SPAWNING = """---
name: sites
description: a spawn and a join
promptforge: 0
---

# Sites

## Main

```lua
local t = tasks.spawn('### W')
return tasks.join({ t })[1].result
```

### W

```lua
return 'w'
```
"""


def _site() -> variation.Site:
    return variation.declared()[0]


def test_a_read_inside_reads_is_noted_and_one_outside_is_not():
    site = _site()
    assert site.on is False
    with variation.reads() as names:
        assert site.on is False
    assert names == {site.name}
    # Outside a collection the class reads the plain value again.
    assert type(variation.Site.__dict__["on"]) is variation._Switch
    with variation.reads() as names:
        pass
    assert names == set()


def test_nested_collections_pass_what_they_noted_outward():
    first, second = variation.declared()[:2]
    with variation.reads() as outer:
        first.on
        with variation.reads() as inner:
            second.on
        assert type(variation.Site.__dict__["on"]) is variation._Tracked
    assert inner == {second.name}
    assert outer == {first.name, second.name}


def test_a_run_notes_the_sites_it_reads():
    prompt = parse_prompt(SPAWNING, "sites.md")
    with variation.reads() as names:
        run_prompt(prompt)
    assert names, "a spawn and a join read no variation site"
    assert names <= {s.name for s in variation.declared()}


@pytest.mark.parametrize("how", ["switched", "assigned"])
def test_switched_on_follows_every_switch(how):
    site = _site()
    assert variation.switched_on() == ()
    if how == "switched":
        with variation.switched(site.name):
            assert site.on is True and variation.switched_on() == (site.name,)
    else:
        site.on = True
        try:
            assert variation.switched_on() == (site.name,)
            with variation.all_off():
                assert site.on is False and variation.switched_on() == ()
            assert site.on is True
        finally:
            site.on = False
    assert site.on is False and variation.switched_on() == ()
