"""Lifecycle scenario files: the schema refuses a bad file in one line naming
the file, the place and the rule; `forge explore SCENARIO` runs every
strategy, writes a replay file for a shrunk failure, and `forge replay`
runs it again (kit: lifecycle-scenarios; lifecycle.race.stop-vs-completion,
lifecycle.race.stop-vs-retry, lifecycle.stop.chases-current-run)."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner

from forge import variation
from forge.cli import main
from forge.lifecycle import campaign
from forge.lifecycle.scenario import SHIPPED, ScenarioError, load

CHASE = str(SHIPPED / "stop-chases-retry.scenario.toml")
COMPLETION = str(SHIPPED / "completion-vs-stop.scenario.toml")


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


def _write(tmp_path: pathlib.Path, text: str, name: str = "bad.scenario.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


BAD = {
    "no actors": ('setup = ["spawn"]\n', "actor: a scenario declares its racing actors"),
    "unknown top key": ('actors = 1\n[[actor]]\nname = "a"\ndo = "stop"\n',
                        "actors: unknown key"),
    "unknown action": ('[[actor]]\nname = "a"\ndo = "stp"\n',
                       "actor[0].do: unknown action 'stp'"),
    "wrong parameter": ('[[actor]]\nname = "a"\ndo = "stop"\nvia = "tool"\n',
                        "actor[0].via: stop takes no parameter 'via'"),
    "parameter type": ('[[actor]]\nname = "a"\ndo = "stop"\ngraceful = "yes"\n',
                       "actor[0].graceful: must be true or false"),
    "choice value": ('[[actor]]\nname = "a"\ndo = "retry"\nvia = "phone"\n',
                     "actor[0].via: must be one of host, tool"),
    "two names": ('[[actor]]\nname = "a"\ndo = "stop"\n[[actor]]\nname = "a"\ndo = "stop"\n',
                  "actor[1].name: two actors are named 'a'"),
    "list step": ('[[actor]]\nname = "a"\ndo = ["run_fails", { do = "retry", via = 3 }]\n',
                  "actor[0].do[1].via: must be a string"),
    "config range": ('[config]\nmax_attempts_per_task = 0\n[[actor]]\nname = "a"\ndo = "stop"\n',
                     "config.max_attempts_per_task: from 1 to 1000"),
    "stopper": ('[host]\nstopper = "rude"\n[[actor]]\nname = "a"\ndo = "stop"\n',
                "host.stopper: must be one of"),
    "expect status": ('[[actor]]\nname = "a"\ndo = "stop"\n[expect]\nfinal_status = ["done"]\n',
                      "expect.final_status[0]: must be one of"),
    "setup refused": ('setup = ["spawn", "retry"]\n[[actor]]\nname = "a"\ndo = "stop"\n',
                      "setup[1]: the Manager refused retry: tasks: cannot retry a task that "
                      "is working"),
    "setup no task": ('setup = ["run_fails"]\n[[actor]]\nname = "a"\ndo = "stop"\n',
                      "setup[0]: run_fails names task 1, which the setup has not spawned"),
    "not toml": ('[[actor]\n', "not TOML"),
}


#: Found by review: these ran, and failed every schedule with an IndexError
#: (a task the setup never spawned) or passed a negative wait to the Manager.
BAD_AT_LOAD = {
    "task past the setup": ('setup = ["spawn"]\n[[actor]]\nname = "s"\ndo = "stop"\ntask = 2\n',
                            "actor[0].task: stop names task 2, but the setup spawns 1 task; "
                            "an actor names a task the setup spawned"),
    "default task, no setup": ('setup = []\n[[actor]]\nname = "s"\ndo = "stop"\n',
                               "actor[0].task: stop names task 1 (the default), but the setup "
                               "spawns no task"),
    "task in a list": ('setup = ["spawn", "spawn"]\n[[actor]]\nname = "s"\n'
                       'do = ["spawn", { do = "retry", task = 3 }]\n',
                       "actor[0].do[1].task: retry names task 3, but the setup spawns 2 tasks"),
    "negative wait": ('[[actor]]\nname = "s"\ndo = "status"\nwait = -5\n',
                      "actor[0].wait: a wait is a whole number of seconds from 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_AT_LOAD))
def test_an_unspawned_task_or_a_negative_wait_is_refused_at_load(case, tmp_path, monkeypatch):
    """Found by review: an actor naming a task the setup did not spawn (the
    race's own spawns have no fixed number) and a negative `wait` are refused
    in one line, exit 2, with no replay file written (kit: lifecycle-scenarios)."""
    monkeypatch.chdir(tmp_path)
    text, words = BAD_AT_LOAD[case]
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(e.value).startswith(path + ": ") and words in str(e.value), str(e.value)
    result = forge("explore", path, "--runs", "5")
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    assert words in result.output
    assert not (tmp_path / "forge-failure.replay.json").exists()


def test_an_actor_may_spawn_and_name_the_tasks_the_setup_spawned(tmp_path):
    """The rule's other side: tasks 1..N of an N-spawn setup, and task-less
    actions after an empty setup, load and run (kit: lifecycle-scenarios)."""
    path = _write(tmp_path, 'setup = ["spawn", "spawn"]\n[[actor]]\nname = "s"\n'
                            'do = ["spawn", { do = "stop", task = 2 }]\n'
                            '[[actor]]\nname = "w"\ndo = "status"\nwait = 3\n', "ok.scenario.toml")
    assert campaign.run(load(path), "exhaustive", 10_000).failure is None
    empty = _write(tmp_path, 'setup = []\n[[actor]]\nname = "s"\ndo = "spawn"\n'
                             '[[actor]]\nname = "r"\ndo = "recover"\n', "empty.scenario.toml")
    assert campaign.run(load(empty), "exhaustive", 10_000).failure is None


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_scenario_is_refused_in_one_line_naming_the_place(case, tmp_path):
    text, words = BAD[case]
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(e.value).startswith(path + ": ") and words in str(e.value), str(e.value)
    result = forge("explore", path)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and words in result.output, result.output


def test_a_json_scenario_is_the_same_race(tmp_path):
    path = _write(tmp_path, json.dumps({"setup": ["spawn"], "actor": [
        {"name": "run", "do": "run_completes"}, {"name": "stop", "do": "stop"}]}),
        "race.scenario.json")
    toml = campaign.run(load(COMPLETION), "exhaustive", 10_000)
    same = campaign.run(load(path), "exhaustive", 10_000)
    assert (same.runs, same.complete, same.failure) == (toml.runs, True, None)


@pytest.mark.parametrize("strategy", ["random", "pct", "exhaustive"])
def test_every_strategy_passes_on_the_reference(strategy):
    result = forge("explore", COMPLETION, "--strategy", strategy, "--runs", "60")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("completion-vs-stop: ")


def test_an_exhaustive_search_cut_short_exits_3():
    result = forge("explore", CHASE, "--strategy", "exhaustive", "--runs", "5")
    assert result.exit_code == 3 and "STOPPED at --runs" in result.output


@pytest.mark.parametrize("strategy", ["random", "pct", "exhaustive"])
def test_a_failure_is_shrunk_written_and_replayed(strategy, tmp_path):
    """The mutant that does not chase the retried attempt: every strategy finds it,
    the shrunk schedule fails again under `forge replay`, and only under the mutant."""
    out = str(tmp_path / "chase.replay.json")
    with variation.switched("lifecycle.stop-does-not-chase"):
        result = forge("explore", CHASE, "--strategy", strategy, "--runs", "400",
                       "--replay-out", out, "--json")
        assert result.exit_code == 1, result.output
        report = json.loads(result.output)
        (failure,) = report["failures"]
        assert "still working" in failure["problems"][0]
        assert failure["proven_minimal"] and failure["deviations"] <= 2
        again = forge("replay", CHASE, out, "--json")
        assert again.exit_code == 1, again.output
        assert json.loads(again.output)["steps"] == failure["steps"]
    # the reference chases the retry: it takes steps the record does not hold
    fixed = forge("replay", CHASE, out)
    assert fixed.exit_code == 2 and fixed.output.count("\n") == 1, fixed.output
    assert f"{out}: replay: the run drifted from the record at choice " in fixed.output


def test_the_full_step_granularity_is_recorded_in_the_replay(tmp_path):
    out = str(tmp_path / "full.replay.json")
    with variation.switched("lifecycle.finalize-overwrites-terminal"):
        result = forge("explore", COMPLETION, "--strategy", "exhaustive", "--no-reduce",
                       "--replay-out", out)
        assert result.exit_code == 1, result.output
        assert json.loads(pathlib.Path(out).read_text())["reduced"] is False
        assert forge("replay", COMPLETION, out).exit_code == 1


def test_a_schedule_is_the_same_bytes_every_time():
    scenario = load(CHASE)
    first = campaign.run(scenario, "random", 30, start_seed=5)
    second = campaign.run(scenario, "random", 30, start_seed=5)
    assert (first.runs, first.distinct) == (second.runs, second.distinct)
    assert first.distinct > 5


OLD_SPELLING = """setup = ["spawn"]

[[actor]]
name = "host"
do = ["fail", "retry"]

[[actor]]
name = "stop"
do = "stop"

[expect]
wins = { complete = 0 }
"""


def test_an_old_spelling_is_read_as_the_current_one_with_a_note(tmp_path):
    """Issue 27 item 7, one action vocabulary: a scenario written with the old
    names (complete, fail, pause; text, err) runs the same race as the current
    names (run_completes, run_fails, run_pauses; result, error), and the
    command says once, on stderr, what it read them as."""
    old = _write(tmp_path, OLD_SPELLING, "old.scenario.toml")
    scenario = load(old)
    assert scenario.notes == (
        f"{old}: old action names read as the current ones: fail -> run_fails "
        "(actor[0].do[0].do), complete -> run_completes (expect.wins.complete); rename them "
        "(docs/lifecycle.md, the scenario format)",)
    assert load(CHASE).notes == ()
    same = campaign.run(scenario, "exhaustive", 10_000)
    new = campaign.run(load(CHASE), "exhaustive", 10_000)
    assert (same.runs, same.distinct, same.failure) == (new.runs, new.distinct, None)
    result = forge("explore", old, "--strategy", "exhaustive")
    assert result.exit_code == 0
    assert result.stderr.startswith(f"note: {old}: old action names read as the current")
    params = load(_write(tmp_path, 'setup = ["spawn", { do = "fail", err = "e", text = "t" }]\n'
                         '[[actor]]\nname = "a"\ndo = "stop"\n', "params.scenario.toml"))
    assert "fail -> run_fails (setup[1].do), err -> error (setup[1].do), text -> result" in (
        params.notes[0])


def test_a_replay_recorded_with_the_old_spelling_still_replays(tmp_path):
    """A replay file holds its scenario's text: one recorded before the rename
    replays alone, with the note."""
    old = _write(tmp_path, OLD_SPELLING, "old.scenario.toml")
    out = str(tmp_path / "old.replay.json")
    with variation.switched("lifecycle.stop-does-not-chase"):
        assert forge("explore", old, "--runs", "400", "--replay-out", out).exit_code == 1
        again = forge("replay", out)
    assert again.exit_code == 1 and "note: " in again.stderr and "fail -> run_fails" in (
        again.stderr)
