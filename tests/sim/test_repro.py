"""Self-contained repros: a replay file written by `forge explore` holds the
whole run, and `forge replay FILE` alone reproduces it byte for byte in
another process, whatever PYTHONHASHSEED; drift and a changed prompt are
refused; faults are choices; seed N of explore is `forge run --seed N`
(kit: explore.replay-file, kit: explore.faults)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.commands.explore_report import NO_RERUN
from forge.repro import explore_prompt, replay_file
from forge.runspec import Expectation, Runner, spec_from_flags
from forge.sim.chooser import Chooser, RandomProvider
from tests.conftest import EXAMPLES, ROOT, prompt_text, section


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


def forge_process(*args: str, cwd, hash_seed: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    return subprocess.run([sys.executable, "-m", "forge", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


# A planted bug: a refused write is caught, and the code then assumes the file
# holds what it meant to write.
LEDGER = prompt_text(section("Main", """
local ok = pcall(store.write, 'ledger', 'new')
if not ok then
  store.write('note', 'the write was refused')
end
return store.read('ledger')
"""))

# Two workers append to their own files, and Main reads what they left.
WORKERS = prompt_text(section("Main", """
local a = tasks.spawn('## A')
local b = tasks.spawn('## B')
tasks.join({ a, b })
return store.read('a') .. '+' .. store.read('b')
"""), section("A", "store.write('a', 'x') return 'a'"),
    section("B", "store.write('b', 'y') return 'b'"))

ASKING = prompt_text(section("Main", "return input.ask()"))

DICE = prompt_text(section("Main", "return tostring(math.random(1000000))"))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ledger.md").write_text(LEDGER)
    (tmp_path / "workers.md").write_text(WORKERS)
    (tmp_path / "asking.md").write_text(ASKING)
    (tmp_path / "dice.md").write_text(DICE)
    (tmp_path / "operator.json").write_text(json.dumps(["yes"]))
    seeded = tmp_path / "seeded"
    seeded.mkdir()
    (seeded / "ledger").write_text("old")
    return tmp_path


CAMPAIGNS = {
    "race, a model script, concurrency 2, model and cancel faults": (
        str(EXAMPLES / "race.md"), "--model-script", str(EXAMPLES / "race.model.json"),
        "--concurrency", "2", "--faults", "model,cancel", "--expect-result", "Quick: 4"),
    "freeform, random schedules": (
        str(EXAMPLES / "freeform.md"), "--expect-result", "not the result"),
    "a seeded store with store faults": (
        "ledger.md", "--store", "seeded", "--faults", "store", "--expect-result", "new"),
    "store faults, budget 2, pct": (
        "workers.md", "--faults", "store", "--fault-budget", "2", "--strategy", "pct",
        "--expect-result", "x+y"),
    "an operator who never answers": (
        "asking.md", "--operator-script", "operator.json", "--faults", "operator",
        "--expect-result", "yes"),
    "exhaustive with a store write per task": (
        str(EXAMPLES / "explore" / "store-race.md"), "--strategy", "exhaustive",
        "--concurrency", "2", "--expect-result", "alpha beta gamma"),
}


@pytest.mark.parametrize("flags", CAMPAIGNS.values(), ids=list(CAMPAIGNS))
def test_every_replay_file_reproduces_byte_for_byte_in_a_new_process(files, flags):
    """explore writes the file in one process; `forge replay FILE` - nothing
    else, from another folder, under another PYTHONHASHSEED - exits 1 with
    the recorded failure and the recorded trace, twice the same."""
    out = files / "found.replay.json"
    found = forge_process("explore", *flags, "--runs", "60", "--replay-out", str(out), "--json",
                          cwd=files, hash_seed="1")
    assert found.returncode == 1, found.stdout + found.stderr
    report = json.loads(found.stdout)
    assert report["replay_command"] == f"forge replay {out}"
    recorded = json.loads(out.read_text())
    assert recorded["format"] == 1
    elsewhere = files / "elsewhere"
    elsewhere.mkdir()
    runs = [forge_process("replay", str(out), "--json", cwd=elsewhere, hash_seed=seed)
            for seed in ("2", "31337")]
    for done in runs:
        assert done.returncode == 1, done.stderr
        assert "the recorded failure, reproduced byte for byte" in done.stderr
        line = done.stdout.splitlines()[0]
        assert json.loads(line)["trace_sha256"] == recorded["trace_sha256"]
        assert hashlib.sha256(line.encode()).hexdigest() == recorded["observation_sha256"]
    assert runs[0].stdout == runs[1].stdout


def test_fault_exploration_finds_the_planted_bug_with_one_fault(files):
    """The ledger's bug needs one refused write: explore finds it, shrinks it
    to that single fault, and the story names it; without --faults every
    schedule passes."""
    spec = spec_from_flags(str(files / "ledger.md"), store=str(files / "seeded"),
                           faults="store")
    outcome = explore_prompt(spec, expect=Expectation(result="new"), runs=50)
    assert outcome.failure is not None
    assert outcome.report.findings[0].deviations == 1
    assert outcome.failure.fired == (("store", "refuse write ledger"),)
    assert any("fault:store: refuse write ledger (canonical: none)" in line
               for line in outcome.failure.story)
    assert "'old' != 'new'" in outcome.failure.problems[0]
    clean = spec_from_flags(str(files / "ledger.md"), store=str(files / "seeded"))
    assert explore_prompt(clean, expect=Expectation(result="new"), runs=50).failure is None


def test_a_fault_budget_of_zero_draws_no_fault_decisions(files):
    spec = spec_from_flags(str(files / "workers.md"), faults="store", fault_budget=0)
    chooser = Chooser(RandomProvider(5), seed=5)
    Runner(spec).run(chooser)
    assert not any(c.kind.startswith("fault:") for c in chooser.choices)
    budget = spec_from_flags(str(files / "workers.md"), faults="store", fault_budget=1)
    chooser = Chooser(RandomProvider(5), seed=5)
    run = Runner(budget).run(chooser)
    kinds = [c.kind for c in chooser.choices if c.kind.startswith("fault:")]
    assert kinds and len(run.harness.injector.fired) <= 1


def test_the_operator_fault_leaves_the_ask_pending(files):
    spec = spec_from_flags(str(files / "asking.md"), operator_script=str(files / "operator.json"),
                           faults="operator")
    outcome = explore_prompt(spec, expect=Expectation(result="yes"), runs=20)
    assert outcome.failure is not None
    assert outcome.failure.fired == (("operator", "never answer"),)
    assert outcome.failure.record["failure"]["outcome"] == "failed"


def test_explore_seed_n_is_forge_run_seed_n(files):
    """The run seed follows the schedule's seed, so math.random varies across
    explored schedules, and the failing seed's run is `forge run --seed N`."""
    dice = str(files / "dice.md")
    canonical = forge("run", dice, "--seed", "0").output.strip()
    outcome = explore_prompt(spec_from_flags(dice), expect=Expectation(result=canonical), runs=5)
    assert outcome.failure is not None and outcome.failure.seed == 1
    again = forge("run", dice, "--seed", "1", "--json")
    obs = json.loads(again.output)
    assert [p.splitlines()[0] for p in outcome.failure.problems] == [
        f"result {obs['result']!r} != {canonical!r}"]
    race = spec_from_flags(str(EXAMPLES / "freeform.md"))
    explored, _ = Runner(race).subject(Chooser(RandomProvider(9), seed=9))
    ran = json.loads(forge("run", str(EXAMPLES / "freeform.md"), "--seed", "9", "--json").output)
    assert explored["trace_sha256"] == ran["trace_sha256"]


def test_a_replay_that_passes_exits_0_and_a_changed_prompt_is_refused(files, tmp_path):
    out = str(tmp_path / "run.replay.json")
    ran = forge("run", str(EXAMPLES / "two-tasks.md"), "--seed", "3", "--replay-out", out)
    assert ran.exit_code == 0
    again = forge("replay", out)
    assert again.exit_code == 0 and "the recorded run, reproduced byte for byte" in again.output
    other = forge("replay", str(EXAMPLES / "freeform.md"), out)
    assert other.exit_code == 2
    assert other.output.startswith(f"forge: {out}: replay: $.prompt.sha256: the prompt ")
    assert len(other.output.splitlines()) == 1


def test_an_observation_another_kit_recorded_is_refused_naming_that_kit(tmp_path):
    """A file from another kit version whose observation no longer matches is
    bad input naming the version, not a request to report a kit bug."""
    out = tmp_path / "run.replay.json"
    forge("run", str(EXAMPLES / "two-tasks.md"), "--seed", "3", "--replay-out", str(out))
    data = json.loads(out.read_text())
    data["kit"], data["observation_sha256"] = "0.0.1", "0" * 64
    out.write_text(json.dumps(data))
    result = forge("replay", str(out))
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0] == f"note: {out} was written by 0.0.1"
    assert lines[1].startswith(f"forge: {out}: replay: the run took the recorded choices but "
                               "its observation differs from the one kit 0.0.1 recorded")
    assert lines[1].endswith("replay it with kit 0.0.1") and "please report" not in lines[1]


def test_drift_is_reported_at_its_index(files, tmp_path):
    """A record whose choice no longer matches what the run asks (here: a
    kind changed by hand) is refused naming the index, not clamped."""
    out = tmp_path / "run.replay.json"
    forge("run", str(EXAMPLES / "freeform.md"), "--seed", "3", "--replay-out", str(out))
    data = json.loads(out.read_text())
    data["choices"][2][0] = "latency:elsewhere"
    out.write_text(json.dumps(data))
    result = forge("replay", str(out))
    assert result.exit_code == 2
    assert "drifted from the record at choice 2: recorded latency:elsewhere" in result.output


def test_a_replay_file_that_lost_its_tail_drifts_at_the_end(tmp_path):
    out = tmp_path / "run.replay.json"
    forge("run", str(EXAMPLES / "freeform.md"), "--seed", "3", "--replay-out", str(out))
    data = json.loads(out.read_text())
    data["choices"] = data["choices"][:4]
    out.write_text(json.dumps(data))
    outcome = replay_file(str(out))
    assert outcome.drift is not None and outcome.drift.index == 4
    assert outcome.drift.recorded is None


def test_explore_takes_every_harness_flag_run_takes():
    def options(name):
        import click

        return {o for p in main.commands[name].params if isinstance(p, click.Option)
                for o in p.opts}

    run_only = {"--seed", "--strategy", "--trace", "--replay-out", "--json"}
    harness = options("run") - run_only
    assert {"--store", "--cancel-at", "--max-instructions", "--faults"} <= harness
    assert harness <= options("explore") and harness <= options("replay")


def test_an_unknown_fault_is_one_line_exit_2_and_tool_faults_are_offered():
    tool = forge("explore", str(EXAMPLES / "two-tasks.md"), "--faults", "store,tool")
    assert tool.exit_code == 0, tool.output
    nope = forge("run", str(EXAMPLES / "two-tasks.md"), "--faults", "disk")
    assert nope.exit_code == 2 and "unknown fault kind 'disk'" in nope.output


def test_a_crash_found_by_exploring_is_a_failure_with_a_repro(tmp_path):
    """A schedule on which the engine raises is kept as a finding (outcome
    `crashed`), shrunk and recorded, so `forge replay` shows the kit bug."""
    from forge import runspec

    spec = spec_from_flags(str(EXAMPLES / "two-tasks.md"))
    real = runspec.Runner.attempt

    def broken(self, chooser):
        run, crash = real(self, chooser)
        if any(c.value for c in chooser.choices):
            return run, RuntimeError("planted")
        return run, crash

    runspec.Runner.attempt = broken
    try:
        outcome = explore_prompt(spec, runs=20)
    finally:
        runspec.Runner.attempt = real
    assert outcome.failure is not None
    assert outcome.failure.problems[0] == "the engine crashed (a kit bug): RuntimeError: planted"
    assert outcome.report.findings[0].deviations == 1


def test_schedule_independent_fails_a_schedule_dependent_result():
    """The store race's result is the order tasks ended in, so
    --schedule-independent fails it; two-tasks gives one observation on
    every schedule and passes (kit: explore.schedule-independent)."""
    race = forge("explore", str(EXAMPLES / "explore" / "store-race.md"), "--runs", "30",
                 "--schedule-independent", "--replay-out", os.devnull, "--json")
    assert race.exit_code == 1
    assert json.loads(race.output)["failures"][0]["problems"][0].startswith(
        "schedule-dependent result: ")
    steady = forge("explore", str(EXAMPLES / "two-tasks.md"), "--runs", "30",
                   "--schedule-independent", "--replay-out", os.devnull)
    assert steady.exit_code == 0, steady.output


def test_a_user_check_runs_on_every_schedule_and_is_recorded(tmp_path, monkeypatch):
    """--check module:function: a violation exits 1 and the replay file names
    the check, so `forge replay FILE` re-runs it (kit: explore.user-checks)."""
    (tmp_path / "race_checks.py").write_text(
        "def alpha_first(obs):\n"
        "    return [] if obs['result'].startswith('alpha') else ['alpha did not end first']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = str(tmp_path / "c.json")
    found = forge("explore", str(EXAMPLES / "explore" / "store-race.md"), "--runs", "30",
                  "--check", "race_checks:alpha_first", "--replay-out", out)
    assert found.exit_code == 1
    assert "check race_checks:alpha_first: alpha did not end first" in found.output
    assert json.loads(open(out).read())["expect"]["checks"] == ["race_checks:alpha_first"]
    again = forge("replay", out)
    assert again.exit_code == 1 and "FAILED: check race_checks:alpha_first" in again.output
    missing = forge("explore", str(EXAMPLES / "two-tasks.md"), "--check", "no_such_module:f")
    assert missing.exit_code == 2
    assert missing.output.startswith("forge: --check: cannot import no_such_module")


def test_a_fault_bug_found_at_random_shrinks_to_its_one_fault():
    """refused-write breaks only when Beta's second write is refused; a
    random find carries other deviations, and the shrinker moves the fault
    to where the canonical run asks for it, leaving that one deviation."""
    spec = spec_from_flags(str(EXAMPLES / "explore" / "refused-write.md"), faults="store")
    outcome = explore_prompt(spec, expect=Expectation(result="2 2 2"), runs=100)
    found = outcome.report.findings[0]
    assert sum(1 for v in found.choices if v) > 1     # the find itself deviates more
    assert found.deviations == 1 and found.proven
    assert outcome.failure.fired == (("store", "refuse write beta"),)


def test_a_hypothesis_example_saved_as_a_replay_file_replays(tmp_path):
    """A schedule Hypothesis drew (`forge.sim.hypothesis.schedules()`) is saved with
    `replay_text`, and `forge replay` re-checks its expectation on it."""
    from hypothesis import given, settings

    from forge.repro import replay_text
    from forge.sim.hypothesis import schedules

    spec = spec_from_flags(str(EXAMPLES / "explore" / "store-race.md"))
    runner = Runner(spec)
    expect = Expectation(result="alpha beta gamma")
    saved = []

    @settings(max_examples=30, database=None, derandomize=True)
    @given(schedules())
    def prop(chooser):
        obs = runner.run(chooser).observation()
        problems = [p for check in expect.checks(obs) for p in check(obs)]
        if problems and not saved:
            saved.append(replay_text(spec, chooser, obs, expect=expect, problems=problems))

    prop()
    assert saved, "no schedule of the race ended out of order"
    path = tmp_path / "hypothesis.replay.json"
    path.write_text(saved[0])
    outcome = replay_file(str(path))
    assert outcome.identical and outcome.drift is None
    assert outcome.problems and outcome.problems[0].startswith("result ")


def _edited(record: dict, path: tuple, value) -> dict:
    data = json.loads(json.dumps(record))
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


BAD_RECORDS = {
    "another format": (("format",), 2, "$.format: this kit reads replay format 1"),
    "no trace": (("trace_sha256",), KeyError, "$.trace_sha256: missing"),
    "concurrency 0": (("run", "concurrency"), 0, "$.run.concurrency: a whole number"),
    "a huge latency": (("run", "latency", "base", "store"), 1e300, "$.run.latency.base:"),
    "an empty menu": (("run", "latency", "menu"), [], "$.run.latency.menu: from 1"),
    "an unknown fault": (("faults", "kinds"), ["disk"], "$.faults.kinds: unknown fault kind"),
    "a stray key": (("extra",), 1, "$.extra: unknown key"),
    "a bad check name": (("expect", "checks"), ["not a name"], "a check is named module:function"),
    "an edited prompt": (("prompt", "text"), "# changed\n", "$.prompt.sha256: the prompt text"),
}


@pytest.mark.parametrize("edit", BAD_RECORDS.values(), ids=list(BAD_RECORDS))
def test_a_broken_replay_file_is_one_line_naming_the_place(tmp_path, edit):
    path, value, message = edit
    good = tmp_path / "good.json"
    forge("run", str(EXAMPLES / "two-tasks.md"), "--replay-out", str(good))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edited(json.loads(good.read_text()), path, value)))
    result = forge("replay", str(bad))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"forge: {bad}") and message in result.output
    assert len(result.output.splitlines()) == 1


def test_a_pct_find_is_forge_run_with_its_strategy_spelling(files):
    """A PCT schedule found at seed N is `forge run --strategy pct:N:DEPTH:HORIZON`,
    whose run seed is N too (math.random included)."""
    dice = str(files / "dice.md")
    canonical = forge("run", dice).output.strip()
    outcome = explore_prompt(spec_from_flags(dice), expect=Expectation(result=canonical),
                             strategy="pct", runs=5)
    found = outcome.report.findings[0]
    p = found.provider
    ran = forge("run", dice, "--strategy", f"pct:{p['seed']}:{p['depth']}:{p['horizon']}")
    assert [p.splitlines()[0] for p in found.problems] == [
        f"result {ran.output.strip()!r} != {canonical!r}"]


def test_explore_writes_the_same_replay_file_bytes_in_any_process(files):
    """Two explore processes under different PYTHONHASHSEED values write
    byte-identical replay files (kit: determinism)."""
    texts = []
    for seed in ("0", "4242"):
        out = files / f"same-{seed}.json"
        done = forge_process("explore", str(EXAMPLES / "race.md"), "--model-script",
                             str(EXAMPLES / "race.model.json"), "--faults", "model,store",
                             "--expect-result", "Quick: 4", "--runs", "40",
                             "--replay-out", str(out), cwd=ROOT, hash_seed=seed)
        assert done.returncode == 1, done.stderr
        texts.append(out.read_bytes())
    assert texts[0] == texts[1]


def test_the_story_places_the_fault_and_the_divergence_falls_back_to_events():
    """A refused write leaves the trace as it was (the trace records when an
    operation completes, not its answer): the story shows the fault where it
    fell, and the divergence names the first event that differs."""
    spec = spec_from_flags(str(EXAMPLES / "explore" / "refused-write.md"), faults="store")
    outcome = explore_prompt(spec, expect=Expectation(result="2 2 2"), runs=100)
    story = outcome.failure.story
    fault = story.index("0.020s  FAULT store: refuse write beta")
    assert story[fault + 1] == "0.020s  task chain 0.1 runs"
    assert outcome.failure.divergence[0].startswith("same trace; event ")
    assert "store_write_failed (task 0.1)" in outcome.failure.divergence[1]


def test_a_long_story_keeps_its_faults():
    from forge.repro import STORY_LINES, _abridged

    lines = [f"{i:.3f}s  task chain 0 runs" for i in range(200)]
    lines[100] = "100.000s  FAULT store: refuse write x"
    short = _abridged(lines)
    assert len(short) < STORY_LINES + 6
    assert lines[100] in short and lines[99] in short and lines[101] in short
    assert short[0] == lines[0] and short[-1] == lines[-1]
    assert sum(1 for line in short if line.startswith("... ")) == 2


# A level-2 engine (docs/protocol.md) that asks for one choice and answers an
# observation without the optional `trace_sha256`.
NO_TRACE_ENGINE = r'''
import json, sys
OBS = {"outcome": "ok", "result": "alpha text + beta text", "error": None, "logs": [],
       "events": [], "tasks": {}, "messages": {}, "store": {}, "virtual_time": 0}
pending = None
for line in sys.stdin:
    m = json.loads(line)
    send = lambda o: print(json.dumps(o), flush=True)
    if m["type"] == "hello":
        send({"type": "hello", "name": "no-trace", "features": ["language", "tasks"],
              "level": 2})
    elif m["type"] == "bye":
        break
    elif m["type"] == "run":
        pending = m["id"]
        send({"type": "choose", "id": pending, "kind": "chain", "options": ["root:0"]})
    elif m["type"] == "chosen":
        send({"type": "observation", "id": pending, "observation": OBS})
'''


def test_an_engine_without_a_trace_writes_a_replay_file_its_command_replays(tmp_path):
    """`forge explore --impl` of an engine that leaves out the optional
    `trace_sha256` records it as null, and the printed `forge explore --impl
    CMD FILE` (and `forge replay FILE`) read the file instead of refusing
    `$.trace_sha256` (kit: explore.replay-file)."""
    engine = tmp_path / "engine.py"
    engine.write_text(NO_TRACE_ENGINE, encoding="utf-8")
    impl = f"{sys.executable} {engine}"
    out = tmp_path / "impl.replay.json"
    found = forge("explore", "--impl", impl, str(EXAMPLES / "two-tasks.md"), "--runs", "3",
                  "--expect-result", "nope", "--replay-out", str(out))
    assert found.exit_code == 1, found.output
    assert json.loads(out.read_text())["trace_sha256"] is None
    # The toy engine differs from the reference on the canonical schedule,
    # which no seed draws: the file is the way back, and the line says so.
    (command,) = [line.removeprefix("reproduce with: ") for line in found.output.splitlines()
                  if line.startswith("reproduce with: ")]
    assert found.output.splitlines()[-1] == NO_RERUN
    assert command == f"forge explore --impl {shlex.quote(impl)} {shlex.quote(str(out))}"
    again = forge(*shlex.split(command)[1:])
    assert again.exit_code == 1 and "replayed the recorded schedule" in again.output
    assert "trace_sha256" not in forge("replay", str(out)).output


def test_a_record_without_a_trace_is_not_compared_byte_for_byte(tmp_path):
    """A record whose `trace_sha256` is null holds an engine under test's
    observation: `forge replay` re-checks its expectation on the reference
    and says it has nothing to compare, never `please report` (kit: explore.replay-file)."""
    out = tmp_path / "run.replay.json"
    forge("run", str(EXAMPLES / "two-tasks.md"), "--seed", "3", "--replay-out", str(out))
    data = json.loads(out.read_text())
    data["trace_sha256"], data["observation_sha256"] = None, "0" * 64
    out.write_text(json.dumps(data))
    assert replay_file(str(out)).identical is None
    result = forge("replay", str(out))
    assert result.exit_code == 0, result.output
    assert "please report" not in result.output
    assert "no observation of this engine" in result.output


def test_recorded_choices_the_run_never_took_are_drift(tmp_path):
    """A record with choices left over when the run ends does not describe the
    run: `forge replay` refuses it as drift at the first unused choice, exit
    2, instead of `reproduced byte for byte` (kit: explore.replay-file)."""
    out = tmp_path / "run.replay.json"
    forge("run", str(EXAMPLES / "freeform.md"), "--seed", "3", "--replay-out", str(out))
    data = json.loads(out.read_text())
    taken = len(data["choices"])
    data["choices"] += [["chain", 2, 1], ["chain", 2, 0]]
    out.write_text(json.dumps(data))
    outcome = replay_file(str(out))
    assert outcome.drift is not None and outcome.drift.index == taken
    assert outcome.drift.asked is None and outcome.drift.unused == 2
    result = forge("replay", str(out))
    assert result.exit_code == 2 and "reproduced" not in result.output
    assert (f"drifted from the record at choice {taken}: the run ended there, leaving 2 "
            "recorded choices unused (the next: chain with 2 options)") in result.output


def test_run_with_a_replay_file_refuses_a_run_the_file_does_not_record(tmp_path):
    """`forge run P --strategy replay:FILE` takes the file's seed and runs the
    recorded run (its observation is `forge replay FILE`'s); another prompt,
    another flag or seed, or an orders-mode file is refused in one line naming
    the file and the field, exit 2 (kit: explore.replay-file)."""
    race, out = str(EXAMPLES / "explore" / "store-race.md"), str(tmp_path / "r.json")
    # Random's runs draw durations (PCT's, like exhaustive's, are in orders mode).
    found = forge("explore", race, "--runs", "30", "--expect-result", "alpha beta gamma",
                  "--replay-out", out, "--strategy", "random")
    assert found.exit_code == 1
    seed = json.loads(open(out).read())["run"]["seed"]
    assert seed != 0                  # so taking the file's seed matters
    ran = forge("run", race, "--strategy", f"replay:{out}", "--json")
    assert ran.exit_code == 0
    assert ran.output == forge("replay", out, "--json").output.splitlines(keepends=True)[0]
    for args, where in (((str(EXAMPLES / "two-tasks.md"),), "$.prompt.sha256"),
                        ((race, "--concurrency", "2"), "$.run.concurrency"),
                        ((race, "--seed", str(seed + 1)), "$.run.seed"),
                        ((race, "--latency", "store=0.5"), "$.run.latency.base.store")):
        refused = forge("run", *args, "--strategy", f"replay:{out}")
        assert refused.exit_code == 2 and refused.output.count("\n") == 1, refused.output
        assert refused.output.startswith(f"forge: {out}: replay: {where}: ")
    orders = str(tmp_path / "o.json")
    assert forge("explore", race, "--strategy", "exhaustive", "--expect-result",
                 "alpha beta gamma", "--replay-out", orders).exit_code == 1
    refused = forge("run", race, "--strategy", f"replay:{orders}")
    assert refused.exit_code == 2
    assert refused.output.startswith(f"forge: {orders}: replay: $.run.latency.orders: ")


PIPELINE = prompt_text(section("Main", """
local a = tasks.spawn('## Fetch', { item = { name = 'a', n = 2 } })
local b = tasks.spawn('## Fetch', { item = { name = 'b', n = 4 } })
local got = {}
while true do
  local t, ok, r = tasks.join_any(tasks.pending(), { timeout = 0.1 })
  if t == nil then break end
  got[#got + 1] = r
  if #got == 2 then break end
end
for _, t in ipairs(tasks.pending()) do tasks.cancel(t) end
return 'a=' .. store.read('out/a') .. ' b=' .. store.read('out/b')
"""), section("Fetch", """
for k = 1, item.n do
  store.write('tmp/' .. item.name, tostring(k))
end
store.write('out/' .. item.name, item.name .. '-done')
return item.name
"""))


def test_the_story_says_how_each_operation_ended_in_orders_mode(tmp_path):
    """In orders mode the timeout may be picked before the writes complete, and
    the tasks are cancelled: the story says their answers were dropped, not
    `done at` their canonical instant; an answered operation is done when it
    really completed (kit: explore.exhaustive-story)."""
    prompt = tmp_path / "pipeline.md"
    prompt.write_text(PIPELINE)
    outcome = explore_prompt(spec_from_flags(str(prompt)), strategy="exhaustive", runs=200,
                             expect=Expectation(schedule_independent=True))
    story = outcome.failure.story
    writes = [line for line in story if "starts store" in line and "store=write" in line]
    assert writes and all(line.endswith("its answer dropped (nobody waited for it any more)")
                          for line in writes), story
    assert any(line.startswith("0.100s") and "path=out/a store=read, done at 0.110s" in line
               for line in story), story
    assert not any("done at 0.010s" in line for line in story), story
