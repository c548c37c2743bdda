"""Lifecycle scenario files: a race declared as data (TOML or JSON).

A scenario names the Manager's settings, how the fake host answers, the
actions run before the race (unscheduled), the racing actors (each a
sequence of actions from ``actors.ACTIONS``) and what must hold at the end
beside the oracles every schedule is checked by. The format is documented
in docs/lifecycle.md; ``load`` checks it and refuses a bad file with one
line naming the file, the place and the rule (``ScenarioError``), after a
dry run of the setup so a setup the Manager refuses is bad input too, as is
an actor naming a task the setup did not spawn.

Lives here: the schema, ``load`` (file -> ``explore.Scenario``, which keeps
the file's text) and ``from_text`` (the same from text already read, such as
a replay file's), the shipped races (``races()``:
``examples/lifecycle/*.scenario.toml``). Does not live here: the actions
(``actors``), running schedules (``explore``, ``sim``), the replay file
(``replayfile``), the command (``command``).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import json
import pathlib
import tomllib
from typing import Any

import attrs

from forge import shipped
from forge.errors import InputError
from forge.limits import data_problem, render_path
from forge.sim.readlimited import NotUTF8, TooLarge
from forge.sim.readlimited import read_text as read_limited_text
from forge.lifecycle.actors import ACTIONS, CHOICES, COMMON, TASKLESS, perform
from forge.lifecycle.errors import TaskError
from forge.lifecycle.explore import HostFailure, Host, Scenario, World, store_of
from forge.lifecycle.records import Continuation, Task, TaskStatus
from forge.lifecycle.vocabulary import modern

#: The suffixes a scenario file has (``forge explore`` dispatches on them).
SUFFIXES = (".scenario.toml", ".scenario.json")
MAX_BYTES = 1 << 20
MAX_ACTORS = 8
MAX_ACTIONS = 64
SHIPPED = (shipped.examples_dir() or pathlib.Path(__file__).resolve().parents[2] / "examples") \
    / "lifecycle"

_TOP = {"name": str, "description": str, "store": str, "setup": list, "config": dict,
        "host": dict, "actor": list, "expect": dict}
_STORES = ("memory", "sqlite")
_CONFIG = {"max_attempts_per_task": int, "max_concurrent_per_parent": int,
           "max_continuations": int, "max_depth": int, "stop_settle_wait": (int, float),
           "continue_hook": bool}
_HOST = {"continuations": list, "stopper": str, "launch_fails": list}
_STOPPERS = ("honest", "already_finished", "failing", "none")
_LAUNCHES = ("spawn", "retry", "continuation")
_EXPECT = {"final_status": list, "attempt": int, "launches": int, "wins": dict}
_STATUSES = tuple(s.value for s in TaskStatus)


class ScenarioError(InputError):
    """A scenario file that cannot be run: ``path: where: rule``."""

    def __init__(self, path: str, where: str, rule: str) -> None:
        self.where, self.rule = where, rule
        super().__init__(f"{where}: {rule}" if where else rule, file=path)


def is_scenario(path: str) -> bool:
    return str(path).endswith(SUFFIXES)


def _type_name(t: Any) -> str:
    names = {str: "a string", int: "a whole number", bool: "true or false", list: "a list",
             dict: "a table", (int, float): "a number"}
    return names[t]


def _is(value: Any, t: Any) -> bool:
    if isinstance(value, bool):
        return t is bool
    if t is bool:
        return False
    return isinstance(value, t)


class _Checker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.renamed: dict[str, str] = {}  # "old -> new" -> the first place it was met

    def modern(self, name: str, params: dict, where: str) -> tuple[str, dict]:
        """An earlier spelling of a run's report, read as the current one
        (``vocabulary``); each rename is noted once, with where it was met."""
        name, params, renamed = modern(name, params)
        for rename in renamed:
            self.renamed.setdefault(rename, where)
        return name, params

    def notes(self) -> tuple[str, ...]:
        if not self.renamed:
            return ()
        return (f"{self.path}: old action names read as the current ones: "
                + ", ".join(f"{r} ({w})" for r, w in self.renamed.items())
                + "; rename them (docs/lifecycle.md, the scenario format)",)

    def bad(self, where: str, rule: str):
        raise ScenarioError(self.path, where, rule)

    def table(self, value: Any, where: str, keys: dict[str, Any]) -> dict:
        if not isinstance(value, dict):
            self.bad(where, "must be a table")
        for key, item in value.items():
            if key not in keys:
                self.bad(f"{where}.{key}" if where else key,
                         "unknown key; expected one of " + ", ".join(sorted(keys)))
            if not _is(item, keys[key]):
                self.bad(f"{where}.{key}" if where else key, f"must be {_type_name(keys[key])}")
        return value

    def action(self, value: Any, where: str, extra: dict | None = None) -> tuple[str, dict]:
        """One action: a name, or a table with ``do`` and the action's parameters."""
        if isinstance(value, str):
            value = {"do": value}
        if not isinstance(value, dict):
            self.bad(where, "an action is a name or a table with `do`")
        name = value.get("do")
        if not isinstance(name, str):
            self.bad(f"{where}.do", "names the action, a string")
        name, value = self.modern(name, value, f"{where}.do")
        if name not in ACTIONS:
            self.bad(f"{where}.do", f"unknown action {name!r}; expected one of "
                     + ", ".join(sorted(ACTIONS)))
        allowed = {**COMMON, **ACTIONS[name], **(extra or {})}
        params = {}
        for key, item in value.items():
            if key == "do" or (extra and key in extra):
                continue
            if key not in allowed:
                own = sorted({**COMMON, **ACTIONS[name]})
                self.bad(f"{where}.{key}", f"{name} takes no parameter {key!r}; it takes "
                         + ", ".join(own))
            default = allowed[key]
            if not _is(item, type(default)):
                self.bad(f"{where}.{key}", f"must be {_type_name(type(default))}")
            if key in CHOICES and item not in CHOICES[key]:
                self.bad(f"{where}.{key}", "must be one of " + ", ".join(CHOICES[key]))
            if key == "task" and item < 1:
                self.bad(f"{where}.{key}", "tasks are numbered from 1, in spawn order")
            if key == "wait" and item < 0:
                self.bad(f"{where}.{key}", "a wait is a whole number of seconds from 0")
            params[key] = item
        return name, params

    def actions(self, value: Any, where: str, least: int = 1) -> list[tuple[str, dict]]:
        if not isinstance(value, list):
            value = [value]
        if not least <= len(value) <= MAX_ACTIONS:
            self.bad(where, f"from {least} to {MAX_ACTIONS} actions")
        return [self.action(v, f"{where}[{i}]") for i, v in enumerate(value)]


def parse(path: str, data: Any) -> Scenario:
    """A checked scenario from its parsed contents."""
    c = _Checker(path)
    c.table(data, "", _TOP)
    if "actor" not in data:
        c.bad("actor", "a scenario declares its racing actors as [[actor]] tables")
    config = dict(c.table(data.get("config", {}), "config", _CONFIG))
    for key in ("max_attempts_per_task", "max_concurrent_per_parent", "max_continuations"):
        if key in config and not 1 <= config[key] <= 1000:
            c.bad(f"config.{key}", "from 1 to 1000")
    if "stop_settle_wait" in config and not 0 <= config["stop_settle_wait"] <= 3600:
        c.bad("config.stop_settle_wait", "from 0 to 3600 seconds")
    host = _host(c, data.get("host", {}))
    store = data.get("store", "memory")
    if store not in _STORES:
        c.bad("store", "must be one of " + ", ".join(_STORES))
    setup = c.actions(data.get("setup", ["spawn"]), "setup", least=0)
    actors_raw = data["actor"]
    if not 1 <= len(actors_raw) <= MAX_ACTORS:
        c.bad("actor", f"from 1 to {MAX_ACTORS} actors")
    actors: list[tuple[str, list[tuple[str, dict]]]] = []
    placed: list[tuple[str, str, dict]] = []  # (where, action, parameters) of each actor step
    for i, raw in enumerate(actors_raw):
        where = f"actor[{i}]"
        if not isinstance(raw, dict):
            c.bad(where, "an actor is a table with `name` and `do`")
        name = raw.get("name")
        if not isinstance(name, str) or not name or not name.replace("-", "").replace(
                "_", "").isalnum():
            c.bad(f"{where}.name", "a name of letters, digits, - and _")
        if name in {n for n, _ in actors}:
            c.bad(f"{where}.name", f"two actors are named {name!r}")
        if "do" not in raw:
            c.bad(f"{where}.do", "an actor says what it does (`do`)")
        if isinstance(raw["do"], list):
            extra = set(raw) - {"name", "do"}
            if extra:
                c.bad(f"{where}.{sorted(extra)[0]}", "with a list of actions, parameters go "
                      "in each action's table")
            steps = c.actions(raw["do"], f"{where}.do")
            placed += [(f"{where}.do[{j}]", a, p) for j, (a, p) in enumerate(steps)]
        else:
            steps = [c.action(raw, where, extra={"name": ""})]
            placed.append((where, *steps[0]))
        actors.append((name, steps))
    expect = _expect(c, data.get("expect", {}))
    name = data.get("name") or pathlib.Path(path).name.split(".")[0]
    scenario = attrs.evolve(_build(name, config, host, setup, actors, expect), store=store,
                            notes=c.notes())
    spawned = _dry_run(c, scenario, setup)
    for where, action, params in placed:
        _check_task(c, where, action, params, spawned)
    return scenario


def _check_task(c: _Checker, where: str, action: str, params: dict, spawned: int) -> None:
    """An actor names a task the setup spawned: a task spawned during the race
    has a number that depends on the schedule."""
    task = params.get("task", COMMON["task"])
    if action in TASKLESS or task <= spawned:
        return
    default = "" if "task" in params else " (the default)"
    tasks = {0: "no task", 1: "1 task"}.get(spawned, f"{spawned} tasks")
    c.bad(f"{where}.task", f"{action} names task {task}{default}, but the setup spawns "
          f"{tasks}; an actor names a task the setup spawned (a task spawned during the "
          "race has no fixed number)")


def _host(c: _Checker, raw: Any) -> Host:
    c.table(raw, "host", _HOST)
    conts = []
    for i, item in enumerate(raw.get("continuations", [])):
        where = f"host.continuations[{i}]"
        c.table(item, where, {"input": str, "state": dict, "err": str})
        conts.append(Continuation(input=item.get("input", ""), state=item.get("state"),
                                  err=item.get("err", "")))
    stopper = raw.get("stopper", "honest")
    if stopper not in _STOPPERS:
        c.bad("host.stopper", "must be one of " + ", ".join(_STOPPERS))
    fails = raw.get("launch_fails", [])
    for i, item in enumerate(fails):
        if item not in _LAUNCHES:
            c.bad(f"host.launch_fails[{i}]", "must be one of " + ", ".join(_LAUNCHES))
    return Host(tuple(conts), stopper, frozenset(fails))


def _expect(c: _Checker, raw: Any) -> dict:
    c.table(raw, "expect", _EXPECT)
    for i, status in enumerate(raw.get("final_status", [])):
        if status not in _STATUSES:
            c.bad(f"expect.final_status[{i}]", "must be one of " + ", ".join(_STATUSES))
    wins = {}
    for action, n in raw.get("wins", {}).items():
        action = c.modern(action, {}, f"expect.wins.{action}")[0]
        wins[action] = n
        if action not in ACTIONS:
            c.bad(f"expect.wins.{action}", "unknown action; expected one of "
                  + ", ".join(sorted(ACTIONS)))
        if not _is(n, int) or n < 0:
            c.bad(f"expect.wins.{action}", "must be a whole number from 0")
    return {**raw, "wins": wins} if wins else raw


def _build(name: str, config: dict, host: Host, setup: list, actors: list,
           expect: dict) -> Scenario:
    def run_setup(world: World) -> None:
        world.mgr.recover()
        for action, params in setup:
            perform(world, action, params)

    def make_actors(world: World) -> list:
        def actor(name: str, steps: list) -> Any:
            def run() -> Any:
                return [perform(world, action, params, name) for action, params in steps]
            return run
        return [(n, actor(n, steps)) for n, steps in actors]

    def check(world: World, results: list) -> None:
        if "final_status" in expect and world.tasks:
            row = world.row(1)
            assert row.status.value in expect["final_status"], (
                f"task 1 ended {row.status.value}, not one of "
                + ", ".join(expect["final_status"]))
        if "attempt" in expect and world.tasks:
            got = world.row(1).attempt
            assert got == expect["attempt"], f"task 1 ended on attempt {got}, not {expect['attempt']}"
        if "launches" in expect:
            assert len(world.launches) == expect["launches"], (
                f"{len(world.launches)} runs were launched, not {expect['launches']}")
        for action, n in expect.get("wins", {}).items():
            won = sum(1 for a, did, _b, r in world.actions
                      if a != "setup" and did == action and isinstance(r, (Task, list)))
            assert won == n, f"{won} {action} actions won, not {n}"

    return Scenario(name, run_setup, make_actors, check, config, host)


def _dry_run(c: _Checker, scenario: Scenario, setup: list) -> int:
    """Run the setup once, unscheduled: a refused step is the file's fault.
    Answers how many tasks the setup spawned."""
    world = World(lambda _label: None, True, scenario.config, scenario.host,
                  store_of(scenario))
    world.mgr.recover()
    for i, (action, params) in enumerate(setup):
        try:
            out = perform(world, action, params)
        except IndexError:
            c.bad(f"setup[{i}]", f"{action} names task {params.get('task', 1)}, which "
                  "the setup has not spawned")
        if isinstance(out, (TaskError, HostFailure)):
            c.bad(f"setup[{i}]", f"the Manager refused {action}: {out}")
    return len(world.tasks)


def load(path: str) -> Scenario:
    """Read and check a scenario file (TOML, or JSON for ``.json``)."""
    return from_text(path, read_text(path))


def read_text(path: str) -> str:
    """A scenario file's text, held to the size limit and UTF-8."""
    try:
        return read_limited_text(path, MAX_BYTES)
    except OSError as e:
        raise ScenarioError(path, "", f"cannot read the scenario: {e.strerror or e}") from None
    except TooLarge:
        raise _too_large(path) from None
    except NotUTF8 as e:
        raise ScenarioError(path, "", str(e)) from None


def _too_large(path: str) -> ScenarioError:
    return ScenarioError(path, "", f"a scenario file is at most {MAX_BYTES} bytes")


def from_text(path: str, text: str) -> Scenario:
    """The checked scenario whose file at ``path`` holds ``text`` (the path
    names the file in a refusal, gives the format by its suffix and the
    default name); the scenario keeps ``text``, what a replay file records."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise _too_large(path)
    try:
        data = json.loads(text) if str(path).endswith(".json") else tomllib.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError(path, f"line {e.lineno}", f"not JSON: {e.msg}") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(path, "", f"not TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(path, "", "nested too deeply") from None
    except ValueError as e:     # Python's limit on the digits of an integer it converts
        raise ScenarioError(path, "", f"an integer past 64 bits ({e})") from None
    # The limits every input file is held to (docs/limits.md), before the schema.
    problem = data_problem(data)
    if problem is not None:
        where, rule = problem
        raise ScenarioError(path, render_path(where), rule)
    return attrs.evolve(parse(path, data), text=text)


def races() -> dict[str, Scenario]:
    """The shipped races (``examples/lifecycle``), by name."""
    out = {}
    for path in sorted(SHIPPED.glob("*.scenario.toml")):
        scenario = load(str(path))
        out[scenario.name] = scenario
    return out
