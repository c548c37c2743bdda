"""Subjects for the explorer tests: prompts run on the reference engine, and
the independent oracles the tests compare the explorer against.

The explorer must not import forge; its tests may, to build subjects.
"""

from __future__ import annotations

import json

from forge.engine.run import RunConfig, run_prompt
from forge.harness import Harness, LatencyModel
from forge.prompt import load_prompt, parse_prompt
from forge.sim.chooser import Chooser, ReplayProvider
from forge.store import MemoryStore
from tests.conftest import EXAMPLES


def subject_of(prompt, args: str = "", orders: bool = False, store_bytes: int | None = None,
               **config):
    """A subject running `prompt`; `orders`: in orders mode (the chooser
    picks which completion fires next instead of durations), as is every
    run whose chooser asks for it (a PCT run's, as `forge.runspec.Runner`).
    `store_bytes` sets the store's quota, `config` the run's other budgets
    (`RunConfig`'s fields)."""
    def subject(chooser):
        store = MemoryStore() if store_bytes is None else MemoryStore(max_bytes=store_bytes)
        harness = Harness(store=store, latency_model=LatencyModel(orders=orders or chooser.orders))
        obs = run_prompt(prompt, harness, chooser, RunConfig(args=args, **config)).observation()
        return obs, obs["trace_sha256"]

    return subject


def example(name: str, args: str = "", orders: bool = False):
    return subject_of(load_prompt(str(EXAMPLES / name)), args, orders)


def text(body: str, args: str = "", orders: bool = False, **limits):
    return subject_of(parse_prompt(body, "t.md"), args, orders, **limits)


def behaviour(obs: dict) -> str:
    """What a schedule did, up to the order of steps that commute: the
    observation without virtual time, with events grouped per task (each
    task's own order kept)."""
    per_task: dict[str, list[str]] = {}
    for event in obs["events"]:
        task = str(event.get("provenance", {}).get("task"))
        per_task.setdefault(task, []).append(json.dumps(event, sort_keys=True))
    return json.dumps([obs["outcome"], obs["result"], obs["error"], obs["store"], obs["tasks"],
                       obs["logs"], sorted(per_task.items())], sort_keys=True, default=str)


def brute_force(subject, keep=lambda values, record: True):
    """Every leaf of the choice tree, by plain recursion on the record.

    Deliberately shares no code with `forge.sim.exhaustive`: each run's record
    names the option counts, and every alternative of every choice past
    the prefix is tried.  `keep(values, record)` filters the leaves.
    Returns {values: (observation, record)}.
    """
    leaves: dict[tuple[int, ...], tuple] = {}

    def walk(prefix: tuple[int, ...]) -> None:
        chooser = Chooser(ReplayProvider(prefix))
        obs, _ = subject(chooser)
        values = tuple(chooser.values())
        if keep(values, chooser.choices):
            leaves[values] = (obs, tuple(chooser.choices))
        for pos in range(len(prefix), len(values)):
            for alt in range(1, chooser.choices[pos].n):
                walk(values[:pos] + (alt,))

    walk(())
    return leaves


def fewest_deviations(subject, fails, up_to: int):
    """The smallest number of non-zero choices of any failing schedule, found
    by trying every placement of 0, 1, ... `up_to` deviations on the tree
    (positions and option counts read from each run).  None if none fails."""
    for k in range(up_to + 1):
        if _any_failing(subject, fails, (), k):
            return k
    return None


def _any_failing(subject, fails, prefix: tuple[int, ...], budget: int) -> bool:
    chooser = Chooser(ReplayProvider(prefix))
    obs, _ = subject(chooser)
    if fails(obs):
        return True
    if budget == 0:
        return False
    record = chooser.choices
    for pos in range(len(prefix), len(record)):
        for alt in range(1, record[pos].n):
            base = tuple(c.value for c in record[:pos])
            if _any_failing(subject, fails, base + (alt,), budget - 1):
                return True
    return False
