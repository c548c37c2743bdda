"""The lifecycle replay file: a scenario's shrunk failing schedule, with the scenario.

Format ``lifecycle/1`` (docs/lifecycle.md) holds everything that defines the
run, so ``forge replay FILE`` needs nothing else: the scenario's path, text
and sha256, whether every host call was a step (``reduced``, false after
``--no-reduce``), the kit that wrote it, the seed the failure was drawn at,
what failed, and every choice as ``[kind, n, value]``. Given a scenario file
beside it, the file's text must hash to the recorded sha256. The older shape
(``{"prompt": PATH, "args", "seed", "choices"}``: the scenario's path, not
the scenario) is still read, with the scenario given beside it.

Lives here: ``write`` (the file's text), ``is_lifecycle_replay``, ``read``
(checked; a bad file is refused as an ``InputError`` naming the file, the
place and the rule), ``Recorded`` and ``scenario_of`` (which scenario a
replay runs). Does not live here: running the schedule (``campaign``), the
bytes and JSON of a replay file and the rule for one choice
(``forge.sim.replayfile``: ``load_json``, ``read_choices``), printing (``command``).

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from forge.deferred import deferred
from forge.errors import InputError
from forge.limits import data_problem, is_int, render_path
from forge.lifecycle.explore import Scenario
from forge.lifecycle.scenario import ScenarioError, from_text, is_scenario, load, read_text
from forge.sim.replayfile import ReplayFileError, load_json, read_choices

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.run import record, spec as run_spec
else:
    record = deferred("forge.run.record")
    run_spec = deferred("forge.run.spec")

#: The format written and read (a prompt's replay file is format 1).
FORMAT = "lifecycle/1"
#: The older shape's ``args`` when every host call was a step.
_LEGACY_FULL_STEPS = "--no-reduce"
_KEYS = ("choices", "failure", "format", "kit", "reduced", "scenario", "seed")
_LEGACY_KEYS = ("args", "choices", "prompt", "seed")


@attrs.frozen
class Recorded:
    """A checked lifecycle replay file."""

    #: The scenario's path when it was explored.
    path: str
    #: The scenario's text and its sha256; None in the older shape.
    text: str | None
    sha256: str | None
    #: False: every host call was a step (``--no-reduce``).
    reduced: bool
    seed: int | None
    #: The kit that wrote the file (None in the older shape).
    kit: str | None
    problems: tuple[str, ...]
    choices: tuple[tuple[str, int, int], ...]


def write(path: str, text: str, outcome: Any) -> str:
    """The replay file of ``outcome``'s failure (a ``campaign.Outcome``) on the
    scenario whose file at ``path`` holds ``text``: sorted keys, one choice a line."""
    f = outcome.failure
    assert f is not None  # only a failure is recorded
    body = {"format": FORMAT, "kit": record.kit_version(), "reduced": outcome.reduced,
            "scenario": {"path": path, "sha256": run_spec.text_sha256(text), "text": text},
            "seed": f.seed, "failure": {"problems": list(f.problems),
                                        "deviations": f.deviations,
                                        "proven_minimal": f.proven}}
    head = json.dumps(body, sort_keys=True, indent=1, ensure_ascii=False)
    choices = ",\n".join("  " + json.dumps(list(c), ensure_ascii=False) for c in f.record)
    return head[:-2] + ',\n "choices": [\n' + choices + "\n ]\n}\n"


def is_lifecycle_replay(path: str) -> bool:
    """Whether ``path`` is a lifecycle replay file (this format or the older
    shape naming a scenario). Never raises: anything else, unreadable or not,
    is for the prompt's reader to answer. A pipe is not looked into (it can be
    read once): a lifecycle replay through a pipe is given with its scenario."""
    if not os.path.isfile(path):
        return False

    try:
        data = load_json(path)
    except ReplayFileError:
        return False
    if not isinstance(data, dict):
        return False
    if "format" in data:
        return isinstance(data["format"], str) and data["format"].startswith("lifecycle/")
    return isinstance(data.get("prompt"), str) and is_scenario(data["prompt"])


def _bad(path: str, where: str, rule: str, line: int | None = None) -> NoReturn:
    raise InputError(f"{where}: {rule}" if where else rule, file=path, line=line,
                     kind="replay")


def read(path: str) -> Recorded:
    """The checked lifecycle replay file at ``path``.

    Raises:
        InputError: unreadable, too large, not JSON, or not a lifecycle replay file.
    """
    try:
        data = load_json(path)
    except ReplayFileError as e:
        _bad(path, e.where, e.rule, e.line)
    problem = data_problem(data)
    if problem is not None:
        _bad(path, render_path(("$", *problem[0])), problem[1])
    if not isinstance(data, dict):
        _bad(path, "$", f"a lifecycle replay file is an object (format {FORMAT})")
    if "format" not in data:
        return _read_legacy(path, data)
    if is_int(data["format"]) and data["format"] == 1:
        _bad(path, "$.format", "a prompt's replay file (format 1), not a lifecycle "
             "scenario's: replay it without a scenario")
    if data["format"] != FORMAT:
        _bad(path, "$.format", f"this kit reads lifecycle replay format {FORMAT}, the file is "
             f"format {json.dumps(data['format'])[:40]}")
    _keys(path, data, "$", _KEYS)
    scenario = data["scenario"]
    _keys(path, scenario, "$.scenario", ("path", "sha256", "text"))
    _check(path, isinstance(scenario["path"], str), "$.scenario.path",
           "the scenario's path is a string")
    _check(path, isinstance(scenario["text"], str), "$.scenario.text",
           "the scenario's text is a string")
    sha = scenario["sha256"]
    _check(path, isinstance(sha, str) and len(sha) == 64
           and all(c in "0123456789abcdef" for c in sha), "$.scenario.sha256",
           "64 lowercase hex digits")
    _check(path, isinstance(data["kit"], str), "$.kit", "the kit version is a string")
    _check(path, isinstance(data["reduced"], bool), "$.reduced", "true or false")
    failure = data["failure"]
    _keys(path, failure, "$.failure", ("deviations", "problems", "proven_minimal"))
    _check(path, isinstance(failure["problems"], list)
           and all(isinstance(p, str) for p in failure["problems"]), "$.failure.problems",
           "a list of strings")
    _check(path, is_int(failure["deviations"]) and failure["deviations"] >= 0,
           "$.failure.deviations", "a whole number from 0")
    _check(path, isinstance(failure["proven_minimal"], bool), "$.failure.proven_minimal",
           "true or false")
    return Recorded(scenario["path"], scenario["text"], sha, data["reduced"],
                    _seed(path, data["seed"]), data["kit"], tuple(failure["problems"]),
                    _choices(path, data["choices"]))


def _read_legacy(path: str, data: dict) -> Recorded:
    """The older shape: the scenario's path, ``args``, ``seed`` and the choices."""
    _keys(path, data, "$", (), optional=_LEGACY_KEYS)
    prompt = data.get("prompt")
    if not (isinstance(prompt, str) and is_scenario(prompt)):
        _bad(path, "$.prompt", "a lifecycle replay file of the older shape names its scenario "
             "(a path ending in .scenario.toml or .scenario.json)")
    args = data.get("args", "")
    _check(path, args in ("", _LEGACY_FULL_STEPS), "$.args",
           f'"" or "{_LEGACY_FULL_STEPS}" (every host call a step)')
    return Recorded(prompt, None, None, args != _LEGACY_FULL_STEPS,
                    _seed(path, data.get("seed")), None, (),
                    _choices(path, data.get("choices")))


def _check(path: str, ok: bool, where: str, rule: str) -> None:
    if not ok:
        _bad(path, where, rule)


def _keys(path: str, value: Any, where: str, keys: tuple[str, ...],
          optional: tuple[str, ...] = ()) -> None:
    if not isinstance(value, dict):
        _bad(path, where, "must be an object with " + ", ".join(keys + optional))
    for key in value:
        if key not in keys and key not in optional:
            _bad(path, f"{where}.{key}", "unknown key; expected one of "
                 + ", ".join(sorted(keys + optional)))
    for key in keys:
        if key not in value:
            _bad(path, f"{where}.{key}", "missing")


def _seed(path: str, seed: Any) -> int | None:
    # data_problem has held every integer to 64 bits
    _check(path, seed is None or is_int(seed), "$.seed",
           "null or the seed, a whole number within 64 bits")
    return seed


def _choices(path: str, choices: Any) -> tuple[tuple[str, int, int], ...]:
    """The choices, by the rule every replay file's choices follow (the
    prompt's reader's, ``forge.sim.replayfile``)."""
    try:
        return tuple(read_choices(path, choices))
    except ReplayFileError as e:
        _bad(path, e.where, e.rule)


def scenario_of(recorded: Recorded, replay: str, given: str | None) -> Scenario:
    """The scenario a replay runs: the one recorded in the file, or the file
    ``given``, which must hold the recorded text (its sha256 must match).

    Raises:
        InputError: naming the replay file, for a scenario that differs from
            the recorded one or a recorded scenario this kit refuses; an older
            file given no scenario; or naming ``given``, for a bad scenario file.
    """
    if recorded.text is None:  # the older shape: only the path was recorded
        if given is None:
            _bad(replay, "$.prompt", f"this replay file (from an older kit) names the scenario "
                 f"{recorded.path} but does not hold it: give the scenario before the file "
                 "(forge replay SCENARIO FILE), or explore it again for a file that needs "
                 "nothing else")
        if not is_scenario(given):
            _bad(replay, "$.prompt", f"this replay file was recorded on the scenario "
                 f"{recorded.path}; {given} is not a scenario file")
        return load(given)
    assert recorded.sha256 is not None  # recorded with the text
    text = recorded.text if given is None else read_text(given)
    sha = run_spec.text_sha256(text)
    if sha != recorded.sha256:
        whose = "the scenario text in the file" if given is None else f"the scenario {given}"
        _bad(replay, "$.scenario.sha256", f"{whose} has sha256 {sha[:12]}..., the replay was "
             f"recorded on {recorded.path}, sha256 {recorded.sha256[:12]}... (the scenario "
             "changed since?)")
    if given is not None:
        return from_text(given, text)
    try:
        return from_text(recorded.path, text)
    except ScenarioError as e:
        _bad(replay, "$.scenario.text", f"the recorded scenario ({recorded.path}) is "
             f"refused: {e.message}")
