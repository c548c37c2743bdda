"""The API checks every argument before anything runs, by the rule of the `forge` flag
that sets the same thing (one rule in one place), and refuses in one `InputError` line
naming the function, the argument and the rule; what it returns pickles."""

from __future__ import annotations

import concurrent.futures
import copy
import inspect
import math
import multiprocessing
import pathlib
import pickle
import subprocess
import sys

import pytest

import forge
import forge.api as api

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TWO = EXAMPLES / "two-tasks.md"
RACE = EXAMPLES / "explore" / "store-race.md"

run_prompt = ("run_prompt", lambda **kw: forge.run_prompt(TWO, **kw))
explore = ("explore", lambda **kw: forge.explore(TWO, **{"runs": 2, **kw}))
replay = ("replay", lambda **kw: forge.replay(RACE, **kw))      # checked before it is read
conformance = ("run_conformance", lambda **kw: forge.run_conformance(**kw))

#: (function, keywords, the start of the refusal after "FUNCTION: ").
BAD = [
    # seeds: 64-bit integers, as --seed / --start-seed
    (run_prompt, {"seed": "x"}, "seed must be a whole number (an int), got str 'x'"),
    (run_prompt, {"seed": 1.0}, "seed must be a whole number (an int), got float 1.0"),
    (run_prompt, {"seed": 2**63}, "seed must be at most 9223372036854775807, got "),
    (run_prompt, {"seed": True}, "seed must be a whole number (an int), got bool True"),
    (explore, {"start_seed": 2**64}, "start_seed must be at most 9223372036854775807"),
    (explore, {"start_seed": None}, "start_seed must be a whole number (an int), got None"),
    (explore, {"start_seed": "x"}, "start_seed must be a whole number"),
    (explore, {"start_seed": 2**63 - 1}, "start_seed: the last seed, "),
    # the harness, as --args, --concurrency, --cancel-at, --max-instructions, ...
    (run_prompt, {"args": None}, "args must be a string, got None"),
    (run_prompt, {"args": 5}, "args must be a string, got int 5"),
    (run_prompt, {"args": ["a"]}, "args must be a string, got list"),
    (run_prompt, {"strategy": 5}, "strategy must be a string, got int 5"),
    (run_prompt, {"concurrency": None}, "concurrency must be a whole number"),
    (run_prompt, {"concurrency": "2"}, "concurrency must be a whole number (an int), got str"),
    (run_prompt, {"concurrency": 0}, "concurrency must be at least 1, got 0"),
    (run_prompt, {"concurrency": -1}, "concurrency must be at least 1, got -1"),
    (run_prompt, {"concurrency": 1.5}, "concurrency must be a whole number"),
    (run_prompt, {"concurrency": True}, "concurrency must be a whole number"),
    (run_prompt, {"concurrency": 10**30}, "concurrency must be at most 1000000, got "),
    (run_prompt, {"cancel_at": -1}, "cancel_at must be a non-negative number of seconds"),
    (run_prompt, {"cancel_at": math.nan}, "cancel_at must be a finite number of seconds"),
    (run_prompt, {"cancel_at": math.inf}, "cancel_at must be a finite number of seconds"),
    (run_prompt, {"cancel_at": 1e300}, "cancel_at must be at most 1e+09 seconds, got 1e+300"),
    (run_prompt, {"cancel_at": "1"}, "cancel_at must be a number of seconds (an int or a "
                                     "float), got str '1'"),
    (explore, {"cancel_at": math.nan}, "cancel_at must be a finite number of seconds"),
    (replay, {"cancel_at": -1}, "cancel_at must be a non-negative number of seconds"),
    (replay, {"cancel_at": "1"}, "cancel_at must be a number of seconds"),
    (run_prompt, {"max_instructions": 2**80}, "max_instructions must be at most "),
    (run_prompt, {"max_instructions": "5"}, "max_instructions must be a whole number"),
    (run_prompt, {"max_instructions": 0}, "max_instructions must be at least 1000, got 0"),
    (run_prompt, {"max_instructions": -5}, "max_instructions must be at least 1000"),
    (run_prompt, {"max_instructions": 1.5}, "max_instructions must be a whole number"),
    (run_prompt, {"faults": None}, "faults must be fault kinds"),
    (run_prompt, {"faults": 5}, "faults must be fault kinds"),
    (run_prompt, {"faults": [1]}, "faults[0] must be a string, got int 1"),
    (run_prompt, {"faults": "disk"}, "faults: unknown fault kind 'disk'"),
    (run_prompt, {"fault_budget": -1}, "fault_budget must be at least 0, got -1"),
    (run_prompt, {"fault_budget": None}, "fault_budget must be a whole number"),
    (run_prompt, {"fault_budget": 2**70}, "fault_budget must be at most 1000000"),
    (run_prompt, {"latency": 5}, "latency must be {operation: seconds}, got int 5"),
    (run_prompt, {"latency_menu": 5}, "latency_menu must be a list of multipliers"),
    (run_prompt, {"refuse": 5}, "refuse must be OP[:PATH] strings"),
    (run_prompt, {"refuse": {"write": 5}}, "refuse['write'] must be a path or a list of paths"),
    (run_prompt, {"refuse": ["write", 5]}, "refuse[1] must be a string, got int 5"),
    (run_prompt, {"replay_out": 5}, "replay_out must be a path (a str or an os.PathLike)"),
    (run_prompt, {"model_script": 5}, "model_script must be a file's path"),
    (run_prompt, {"model_script": {"rounds": [2**64]}}, "model_script.rounds[0]: an integer "
                                                         "past 64 bits"),
    # the store: a folder that exists, as --store, or {path: text} by the store's rules
    (run_prompt, {"store": 5}, "store must be a folder's path (a str or an os.PathLike) or "
                               "{path: text}, got int 5"),
    (run_prompt, {"store": []}, "store must be a folder's path"),
    (run_prompt, {"store": {1: 2}}, "store[1]: a store path is a string"),
    (run_prompt, {"store": {"a": b"x"}}, "store['a']: a file's text is a string, got bytes"),
    (run_prompt, {"store": "nodir"}, "store: Directory 'nodir' does not exist."),
    (run_prompt, {"store": {"../x": ""}}, "store['../x']: path contains a traversal segment"),
    (run_prompt, {"store": {"/abs": ""}}, "store['/abs']: path is absolute"),
    (run_prompt, {"store": {"": ""}}, "store['']: path is empty"),
    (run_prompt, {"store": {"a\x00b": ""}}, "store['a\\x00b']: path contains a control"),
    (run_prompt, {"store": {"a": "", "a/b": ""}}, "store['a/b']: a is a file"),
    (run_prompt, {"store": {f"f{i}": "" for i in range(20_000)}},
     "store: a store holds at most 10,000 files, got 20,000"),
    (run_prompt, {"store": {"big": "x" * (70 << 20)}}, "store: a store holds at most "),
    (run_prompt, {"source": "text"}, "give exactly one of prompt"),
    # explore's own, as forge explore's flags
    (explore, {"runs": None}, "runs must be a whole number (an int), got None"),
    (explore, {"runs": "5"}, "runs must be a whole number (an int), got str '5'"),
    (explore, {"runs": 1.5}, "runs must be a whole number"),
    (explore, {"runs": 0}, "runs must be at least 1, got 0"),
    (explore, {"strategy": "sideways"}, "strategy must be one of portfolio, random, pct, ties, "
                                        "coverage, exhaustive, got "
                                        "'sideways'"),
    (explore, {"pct_depth": "x"}, "pct_depth must be a whole number"),
    (explore, {"pct_depth": 0}, "pct_depth must be at least 1, got 0"),
    (explore, {"pct_depth": -1}, "pct_depth must be at least 1, got -1"),
    (explore, {"pct_depth": 10**6}, "pct_depth must be at most 1000, got 1000000"),
    (explore, {"max_deviations": "x", "strategy": "exhaustive"},
     "max_deviations must be a whole number"),
    (explore, {"max_deviations": -1, "strategy": "exhaustive"},
     "max_deviations must be at least 0, got -1"),
    (explore, {"shrink_budget": None}, "shrink_budget must be a whole number"),
    (explore, {"shrink_budget": -1}, "shrink_budget must be at least 0, got -1"),
    (explore, {"progress": 5}, "progress must be None or a callable"),
    (explore, {"backend": None}, "backend must be a string, got None"),
    (explore, {"workers": 10**6}, "workers must be at most 256, got 1000000"),
    (explore, {"workers": 0}, "workers must be at least 1, got 0"),
    (explore, {"expect_result": 5}, "expect_result must be a string, got int 5"),
    (explore, {"same_ids": "no"}, "same_ids must be True or False, got str 'no'"),
    (explore, {"faults": ["store", 7]}, "faults[1] must be a string, got int 7"),
    # replay: the file and the overrides, paths as forge replay's flags take them
    (("replay", lambda **kw: forge.replay(None)), {}, "replay_file must be a path"),
    (("replay", lambda **kw: forge.replay(5)), {}, "replay_file must be a path"),
    (replay, {"store": {"a": "b"}}, "store must be a path (a str or an os.PathLike), got dict"),
    (replay, {"model_script": {"rounds": []}}, "model_script must be a path"),
    (replay, {"tool_script": {}}, "tool_script must be a path"),
    (replay, {"concurrency": 0}, "concurrency must be at least 1, got 0"),
    # the conformance suite, as forge conformance's flags
    (conformance, {"impl": ""}, "impl: the command is empty"),
    (conformance, {"impl": []}, "impl: the command is empty"),
    (conformance, {"impl": "'abc"}, "impl: cannot split the command line"),
    (conformance, {"impl": 5}, "impl must be a command: a shell-style str or a list of str"),
    (conformance, {"impl": "no-such-program-here"}, "impl: no such command"),
    (conformance, {"cases": 5}, "cases must be a path"),
    (conformance, {"expectations": 5}, "expectations must be a file's path or"),
    (conformance, {"expectations": {"id": "bogus"}}, "expectations['id'] must be \"fail\" or "
                                                     "\"skip\""),
    (conformance, {"patterns": [5]}, "patterns[0] must be a regular expression (a str)"),
    (conformance, {"patterns": "("}, "patterns[0] must be a regular expression (missing )"),
    (conformance, {"features": "tasks-nope"}, "features: no case needs tasks-nope;"),
    (conformance, {"features": [3]}, "features[0] must be a string"),
    (conformance, {"workers": None}, "workers must be a whole number"),
    (conformance, {"workers": 1000}, "workers must be at most 256, got 1000"),
    (conformance, {"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
    (conformance, {"timeout": -1}, "timeout must be a positive number of seconds"),
    (conformance, {"timeout": math.nan}, "timeout must be a finite number of seconds"),
]


@pytest.mark.parametrize("function, keywords, message", BAD,
                         ids=[f"{f[0]}-{'-'.join(kw) or 'positional'}-{i}"
                              for i, (f, kw, _) in enumerate(BAD)])
def test_a_bad_argument_is_one_input_error_naming_it(function, keywords, message):
    """Every bad argument is an `InputError` (one line: the function, the
    argument, the rule) raised before anything runs - not a TypeError,
    OverflowError, KeyError or StoreQuota from deep in the kit, and not a
    run that silently ignores it (kit: api.arguments)."""
    name, call = function
    with pytest.raises(forge.InputError) as caught:
        call(**keywords)
    text = str(caught.value)
    assert text.startswith(f"{name}: {message}"), text
    assert "\n" not in text


def test_prompt_must_be_a_path():
    """`prompt=123` names the argument (kit: api.arguments)."""
    with pytest.raises(forge.InputError, match=r"^run_prompt: prompt must be a path \(a str or "
                                               r"an os.PathLike\), got int 123$"):
        forge.run_prompt(123)  # type: ignore[arg-type]
    with pytest.raises(forge.InputError, match="^explore: prompt must be a path"):
        forge.explore(123)  # type: ignore[arg-type]


def _cli_line(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "forge", *args], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 2
    return done.stderr.strip()


@pytest.mark.parametrize("keyword, value, cli", [
    ("seed", 2**63, ["run", "examples/two-tasks.md", "--seed", str(2**63)]),
    ("concurrency", 0, ["run", "examples/two-tasks.md", "--concurrency", "0"]),
    ("cancel_at", math.nan, ["run", "examples/two-tasks.md", "--cancel-at", "nan"]),
    ("max_instructions", 5, ["run", "examples/two-tasks.md", "--max-instructions", "5"]),
    ("fault_budget", 2_000_000, ["run", "examples/two-tasks.md", "--fault-budget", "2000000"]),
    ("store", "nodir", ["run", "examples/two-tasks.md", "--store", "nodir"]),
])
def test_the_refusal_reads_as_the_command_lines(keyword, value, cli):
    """The API's refusal is the CLI's line with the keyword in the flag's
    place (and a colon before a rule that is a sentence of click's): both
    come from the flag's one rule (kit: api.arguments-one-rule)."""
    flag = cli[2]
    with pytest.raises(forge.InputError) as caught:
        forge.run_prompt(TWO, **{keyword: value})
    ours = str(caught.value).removeprefix(f"run_prompt: {keyword}").removeprefix(":")
    assert _cli_line(*cli) == f"forge: {flag}{ours}"


def _commands() -> dict:
    from forge.cli import run
    from forge.commands.explore import explore as explore_command
    from forge.commands.replay import replay as replay_command
    from forge.conformance.cli import conformance as conformance_command

    return {"run_prompt": run, "explore": explore_command, "replay": replay_command,
            "run_conformance": conformance_command}


def _flag_type(command, flag: str):
    for param in command.params:
        if flag in param.opts or (param.name or "").upper() == flag \
                or flag in (param.metavar or "").strip("[]").replace("] ", " ").split():
            return param.type
    raise LookupError(f"{command.name} has no {flag}")


def test_the_api_follows_the_core_rule(monkeypatch):
    """Narrow a value's core rule and the API follows it: api.py holds no copy
    of any bound (kit: api.arguments-one-rule)."""
    from forge.run.options import RULES
    from forge.run.values import Whole

    monkeypatch.setitem(RULES, "concurrency", Whole(1, 4))
    with pytest.raises(forge.InputError, match="^run_prompt: concurrency must be at most 4, "
                                               "got 5$"):
        forge.run_prompt(TWO, concurrency=5)
    monkeypatch.setitem(RULES, "workers", Whole(1, 3))
    with pytest.raises(forge.InputError, match="^explore: workers must be at most 3, got 4$"):
        forge.explore(TWO, workers=4)


def test_a_string_the_api_took_is_judged_again_by_a_narrowed_rule(monkeypatch):
    """The API remembers the strings a rule took (a prompt's path, given
    every call), each with the rule that took it: a rule narrowed since
    refuses it, and a string refused is refused every call
    (kit: api.arguments-one-rule)."""
    from forge.run.options import RULES
    from forge.run.values import Choice

    assert forge.explore(TWO, strategy="pct", runs=1).runs == 1
    assert forge.explore(TWO, strategy="pct", runs=1).runs == 1
    monkeypatch.setitem(RULES, "strategy", Choice(("random",)))
    with pytest.raises(forge.InputError, match="^explore: strategy must be one of random, "):
        forge.explore(TWO, strategy="pct", runs=1)
    for _ in range(2):
        with pytest.raises(forge.InputError, match="^run_prompt: prompt cannot read"):
            forge.run_prompt("bad\0path")


@pytest.mark.parametrize("function, flag, rule", [
    ("run_prompt", "--seed", "seed"), ("run_prompt", "--concurrency", "concurrency"),
    ("run_prompt", "--cancel-at", "cancel_at"),
    ("run_prompt", "--max-instructions", "max_instructions"),
    ("run_prompt", "--fault-budget", "fault_budget"), ("replay", "--concurrency", "concurrency"),
    ("explore", "--runs", "runs"), ("explore", "--start-seed", "start_seed"),
    ("explore", "--pct-depth", "pct_depth"), ("explore", "--max-deviations", "max_deviations"),
    ("explore", "--workers", "workers"), ("explore", "--strategy", "strategy"),
    ("run_conformance", "--workers", "workers"), ("run_conformance", "--timeout", "timeout"),
])
def test_every_flag_applies_its_values_core_rule(function, flag, rule):
    """Each flag that sets a value the API takes too has the core rule's bounds
    (`forge.run.options.RULES`; the harness flags are built from it), so the flag
    and the keyword refuse alike (kit: api.arguments-one-rule)."""
    from forge.run.options import RULES
    from forge.run.values import Choice, Seconds, Whole

    kind, core = _flag_type(_commands()[function], flag), RULES[rule]
    if isinstance(core, Whole):
        assert (kind.low, kind.high) == (core.low, core.high)
    elif isinstance(core, Seconds):
        assert (kind.high, kind.positive) == (core.high, core.positive)
    else:
        assert isinstance(core, Choice) and tuple(kind.choices) == core.choices


def test_every_keyword_has_a_rule_and_every_flag_exists():
    """Each public function's every keyword has its rule in the table, and
    each flag a rule names (which core refusals are renamed from) is a flag of
    the command that does the same, so renaming a flag breaks this test
    rather than the renaming (kit: api.arguments-table)."""
    rules = api._rules()
    for name, command in _commands().items():
        function = getattr(forge, name)
        assert set(inspect.signature(function).parameters) == set(rules[name]), name
        for keyword, rule in rules[name].items():
            if rule.flag is not None and rule.flag != "--check":
                assert _flag_type(command, rule.flag) is not None, (name, keyword)
    assert api._rules()["explore"]["named_checks"].flag == "--check"


def test_lists_may_be_generators_and_strings_are_one_entry():
    """An iterable argument is read once (a generator's entries are not used up
    by its check); a lone string is one pattern, or one comma-separated feature
    list, not its characters (kit: api.arguments)."""
    kw = dict(model_script=EXAMPLES / "race.model.json", concurrency=2, seed=3)
    listed = forge.run_prompt(EXAMPLES / "race.md", faults=["model"], **kw)
    generated = forge.run_prompt(EXAMPLES / "race.md", faults=(k for k in ["model"]), **kw)
    assert generated.to_json() == listed.to_json()
    one = forge.run_conformance(patterns="examples/two-tasks")
    assert one.ok and one.passed == forge.run_conformance(patterns=["examples/two-tasks"]).passed
    with pytest.raises(forge.InputError, match="features: no case needs tasks-nope, "
                                               "fanout-nope;"):
        forge.run_conformance(features="tasks-nope,fanout-nope")


def test_a_store_given_as_data_seeds_the_run():
    """A good `{path: text}` store still seeds the run (kit: api.arguments)."""
    obs = forge.run_prompt(RACE, store={"notes/a.md": "x"})
    assert obs.store["notes/a.md"] == "x"


def test_start_seed_follows_the_flag_and_may_be_negative():
    """`start_seed` is a 64-bit seed as `--start-seed` is: negative seeds are
    seeds (kit: api.arguments-one-rule)."""
    assert forge.explore(TWO, start_seed=-1, runs=2).ok


@pytest.mark.parametrize("data, message", [
    ({}, "obs breaks observation.schema.json at /: missing required field `outcome`"),
    (None, "obs must be an observation, a JSON object (a dict), got None"),
    ([], "obs must be an observation, a JSON object (a dict), got list []"),
    ("x", "obs must be an observation, a JSON object (a dict), got str 'x'"),
    ({"events": 5}, "obs breaks observation.schema.json at /"),
    ({"n": 2**64}, "obs.n: an integer past 64 bits"),
    ({"n": {1, 2}}, "obs.n: a value JSON cannot hold (set)"),
])
def test_from_dict_refuses_what_is_not_an_observation(data, message):
    """`Observation.from_dict` checks the data against the shipped observation
    schema, in one line (kit: api.observation-from-dict)."""
    with pytest.raises(forge.InputError) as caught:
        forge.Observation.from_dict(data)  # type: ignore[arg-type]
    assert str(caught.value).startswith(f"Observation.from_dict: {message}")


@pytest.mark.parametrize("outcome", [5, "weird"])
def test_from_dict_refuses_an_unknown_outcome(outcome):
    """An outcome the schema does not know is refused, naming /outcome
    (kit: api.observation-from-dict)."""
    data = forge.run_prompt(TWO).to_dict()
    data["outcome"] = outcome
    with pytest.raises(forge.InputError, match=r"^Observation.from_dict: obs breaks "
                                               r"observation.schema.json at /outcome: "):
        forge.Observation.from_dict(data)


def test_from_dict_takes_an_observation_back():
    """A real observation's data comes back as the same observation
    (kit: api.observation-from-dict)."""
    obs = forge.run_prompt(TWO, seed=3)
    again = forge.Observation.from_dict(obs.to_dict(), trace=obs.trace, choices=obs.choices)
    assert again == obs and again.to_json() == obs.to_json()
    with pytest.raises(forge.InputError, match="^Observation.from_dict: choices must be"):
        forge.Observation.from_dict(obs.to_dict(), choices=["x"])  # type: ignore[list-item]


def _observation_in_a_worker(seed: int) -> forge.Observation:
    return forge.run_prompt(TWO, seed=seed)


def test_returned_values_pickle_and_deep_copy(tmp_path):
    """Observation, ExploreReport (with its Failure), ReplayReport and
    ConformanceReport pickle and deep-copy to equal values, and come back from
    a worker process (kit: api.pickle)."""
    out = tmp_path / "race.replay.json"
    values = [forge.run_prompt(TWO, seed=2),
              forge.explore(RACE, runs=50, expect_result="alpha beta gamma", replay_out=out),
              forge.run_conformance(patterns=["examples/two-tasks"])]
    values.append(forge.replay(out))
    for value in values:
        for again in (pickle.loads(pickle.dumps(value)), copy.deepcopy(value)):
            assert again == value and again.to_json() == value.to_json()
    failure = values[1].failures[0]
    assert pickle.loads(pickle.dumps(failure)).observation.to_json() == \
        failure.observation.to_json()
    with pytest.raises(TypeError):
        pickle.loads(pickle.dumps(values[0])).tasks["0.0"] = {}  # still read-only
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(_observation_in_a_worker, 2).result() == values[0]


def test_run_options_type_the_table():
    """`forge.RunOptions`, the API's run keywords for type checkers, names the
    rows of the options table in its order, and each function's signature
    spells them out with the table's defaults (None for `replay`: the
    recording's) (kit: api.arguments-table)."""
    from forge.run.options import OPTIONS

    assert list(forge.RunOptions.__annotations__) == [o.name for o in OPTIONS]
    for function, recorded in ((forge.run_prompt, False), (forge.explore, False),
                               (forge.replay, True)):
        parameters = inspect.signature(function).parameters
        for option in OPTIONS:
            assert parameters[option.name].default == (None if recorded else option.default)


def test_a_run_option_is_its_row_on_every_front_end(tmp_path):
    """`max_steps` (`--max-steps`) is one row of the options table and the
    engine's use: the keyword and the flag end the run at the budget, are
    refused alike, and a replay file records it only when it is set and
    replays it (kit: api.arguments-table)."""
    import json

    small = forge.run_prompt(TWO, max_steps=1)
    assert small.outcome == "failed" and "step budget exhausted" in small.error["message"]
    assert forge.run_prompt(TWO).ok
    with pytest.raises(forge.InputError, match="^run_prompt: max_steps must be at least 1, "
                                               "got 0$"):
        forge.run_prompt(TWO, max_steps=0)
    assert _cli_line("run", "examples/two-tasks.md", "--max-steps", "0") == \
        "forge: --max-steps must be at least 1, got 0"
    budget, plain = tmp_path / "budget.json", tmp_path / "plain.json"
    forge.run_prompt(TWO, max_steps=1, replay_out=budget)
    forge.run_prompt(TWO, replay_out=plain)
    assert json.loads(budget.read_text())["run"]["max_steps"] == 1
    assert "max_steps" not in json.loads(plain.read_text())["run"]
    again = forge.replay(budget)
    assert again.identical and again.observation.outcome == "failed"
    assert forge.replay(budget, max_steps=10_000).observation.ok
