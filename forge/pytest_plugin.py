"""The forge pytest plugin: explore a prompt's schedules inside your own tests.

Registered by the `pytest11` entry point `forge` (disable it with
`-p no:forge`).  It gives a test two fixtures and a marker:

- `forge_explore(prompt, *, checks=(), expect_result=None, ...)` runs
  `forge.explore` under the session's settings and fails the test on the
  first failing schedule with a report: the problems, the shrunk schedule
  told in virtual time and where it leaves the canonical run, the replay
  file (written in the test's `tmp_path`, or `--forge-replay-dir`) with the
  shrunk run's timeline page beside it (`forge trace`), and the command
  `forge replay FILE` that reproduces it in a shell (the file holds the
  whole run: prompt text, scripts, harness, faults, seed).
  It returns the `ExploreReport` when every schedule passes.
- `forge_explore("race.scenario.toml")` explores a lifecycle scenario
  (docs/lifecycle.md) instead, as `forge explore` does, and fails the test
  the same way: the shrunk schedule step by step, the replay file beside
  the test's output, and `forge replay SCENARIO FILE`.  It returns the
  campaign's outcome (`forge.lifecycle.campaign.Outcome`).
- `forge_run(prompt, **kw)` runs one schedule (`forge.run_prompt`; the seed
  is `--forge-seed` unless given).
- `@pytest.mark.forge_explore(prompt=..., runs=..., strategy=..., ...)` sets
  the settings of the test's `forge_explore` calls; with `prompt=` (or
  `source=`) it is the exploration itself: the test fails when a schedule
  does, before its body runs.
- `require=["timeout-tie"]` fails an exploration that never reached a probe
  (`forge.probes`), and the session's summary lists how many schedules
  reached each probe over every exploration, and those none reached.

Settings come from, weakest first: the profile (`default`, `dev`, `ci`,
or your own `register_profile(...)`, picked by `--forge-profile` or
`FORGE_PROFILE`; or the Hypothesis profile in force, loaded by
`settings.load_profile` or `--hypothesis-profile`, reused through its
`max_examples` and `derandomize`), the marker, the call's keywords, then the command line
(`--forge-runs`, `--forge-seed`, `--forge-strategy`).  A bad option or an
unknown profile stops the session with one usage error naming it, before
any test runs.  A setting follows the rule the same value has everywhere
(`forge.run.options.RULES`, which `forge explore`'s flags and `forge.explore`
apply too), and every other keyword the rule of `forge.explore`'s
argument; a marker or a call that breaks one fails its test in one line
naming the marker (or the call) and the keyword, with no traceback.

With no seed set, a session draws a fresh first seed (`FORGE_START_SEED`
pins it); failing schedules are kept in the failure database (`.forge` in
the rootdir, `--forge-database`) and run first next session
(`forge.failuredb`, through `forge.explore(database=...)`).

What does not live here: exploring, shrinking and telling a run
(`forge.api` over `forge.repro`, `sim`).
Nothing of the kit is loaded until a test uses the plugin (the modules it
uses are deferred, in one block at the top: `forge.deferred`, the one
helper it imports), so installing it costs other test suites nothing but
an autouse fixture that reads one marker.  See docs/pytest.md.

PYTEST_DONT_REWRITE: pytest leaves this module's asserts as written, so what
they say reads the same under pytest as anywhere (no object addresses).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from forge.deferred import deferred

if TYPE_CHECKING:
    from forge.api import ExploreReport, Failure, Observation
    from forge.lifecycle.campaign import Outcome as ScenarioOutcome

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import api, errors, failuredb, timeline as timelines, verdict
    from forge.lifecycle import campaign, probes, scenario
    from forge.run import options, values
    from forge.sim import strategies
else:
    api = deferred("forge.api")
    errors = deferred("forge.errors")
    failuredb = deferred("forge.failuredb")
    timelines = deferred("forge.timeline")
    verdict = deferred("forge.verdict")
    campaign = deferred("forge.lifecycle.campaign")
    probes = deferred("forge.lifecycle.probes")
    scenario = deferred("forge.lifecycle.scenario")
    options = deferred("forge.run.options")
    values = deferred("forge.run.values")
    strategies = deferred("forge.sim.strategies")

__all__ = ["Settings", "get_profile", "register_profile"]

PROFILE_ENV = "FORGE_PROFILE"
_MARKER = "forge_explore"
_PENDING = pytest.StashKey[Callable[[], None]]()
#: The probe counts of every exploration of the session, summed (the summary's).
_PROBES = pytest.StashKey[dict[str, int]]()
#: The session's drawn first seed, and whether it was drawn (not pinned).
_SEED = pytest.StashKey[tuple[int, bool]]()


@attrs.frozen
class Settings:
    """How many schedules a test explores, and how they are drawn."""

    runs: int = 100
    #: A strategy `forge.explore` offers, by name; None: the default every
    #: front end draws with (the registry's `forge.sim.strategies.DEFAULT`,
    #: not imported here so that loading the plugin stays cheap).
    strategy: str | None = None
    #: The first seed; schedules use seeds `seed`, `seed + 1`, ...  None:
    #: one drawn fresh for the session (`forge.failuredb.fresh_start_seed`,
    #: which `FORGE_START_SEED` pins), printed with any failure.
    seed: int | None = None
    pct_depth: int = 3

    def merged(self, **changes: Any) -> Settings:
        """These settings with every change that is not None applied."""
        return attrs.evolve(self, **{k: v for k, v in changes.items() if v is not None})


_PROFILES: dict[str, Settings] = {
    "default": Settings(),
    # A quick loop at the desk: few schedules, the same ones every run.
    "dev": Settings(runs=20, seed=0),
    # CI has the time: ten times the default (a fresh first seed each run;
    # pin it with seed= in a profile of your own, or FORGE_START_SEED).
    "ci": Settings(runs=1000),
}


def register_profile(name: str, parent: str = "default", **settings: Any) -> Settings:
    """Register (or replace) a settings profile, as Hypothesis's profiles are.

    `settings` are `Settings` fields (`runs`, `strategy`, `seed`,
    `pct_depth`) over those of `parent`.  Call it in a `conftest.py`.

    Raises:
        pytest.UsageError: naming the profile and the setting, for a setting
            that is not one or a value its rule (`forge.run.options.RULES`) refuses.
    """
    problem = _settings_problem(settings, f"profile {name!r}")
    if problem is not None:
        raise pytest.UsageError(f"forge: {problem}")
    profile = get_profile(parent).merged(**settings)
    _PROFILES[name] = profile
    return profile


def get_profile(name: str) -> Settings:
    """A registered profile's settings.

    Raises:
        pytest.UsageError: no profile has that name.
    """
    try:
        return _PROFILES[name]
    except KeyError:
        raise pytest.UsageError(f"forge: no settings profile {name!r}; the profiles are "
                                f"{', '.join(sorted(_PROFILES))}") from None


#: Each setting and the value of `forge.run.options.RULES` (`forge.explore`'s
#: keyword, `forge explore`'s flag) whose rule it follows.
_SETTING_RULES = {"runs": "runs", "strategy": "strategy", "seed": "start_seed",
                  "pct_depth": "pct_depth"}


def _setting_problem(name: str, value: Any, where: str | None, label: str | None = None
                     ) -> str | None:
    """What the setting's rule says of `value` (one line naming `where` and
    the setting, or `label` for it), else None."""
    try:
        values.check_value(options.RULES[_SETTING_RULES[name]], value, label or name, where)
    except errors.InputError as e:
        return str(e)
    return None


def _settings_problem(settings: Mapping[str, Any], where: str) -> str | None:
    """The first setting of `settings` that is not one or breaks its rule
    (None values stand for "not set"), in one line naming `where`."""
    for name, value in settings.items():
        if name not in _SETTING_RULES:
            return (f"{where}: {name!r} is not a setting; the settings are "
                    f"{', '.join(_SETTING_RULES)}")
        if value is not None:
            problem = _setting_problem(name, value, where)
            if problem is not None:
                return problem
    return None


# -- hooks -----------------------------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("forge", "forge kit: exploring a prompt's schedules")
    group.addoption("--forge-seed", type=int, default=None, metavar="N",
                    help="The first seed of every exploration (and forge_run's seed).")
    group.addoption("--forge-runs", type=int, default=None, metavar="N",
                    help="Schedules per exploration (beats the profile and the marker).")
    group.addoption("--forge-strategy", default=None, metavar="NAME",
                    help="How schedules are drawn: a strategy forge explore --strategy offers "
                         "(beats the profile and the marker).")
    group.addoption("--forge-profile", default=None, metavar="NAME",
                    help=f"Settings profile: default, dev, ci or your own (env {PROFILE_ENV}).")
    group.addoption("--forge-replay-dir", default=None, metavar="DIR",
                    help="Write failing schedules' replay files here (default: the test's "
                         "tmp_path).")
    group.addoption("--forge-pct-horizon", type=int, default=None, metavar="H",
                    help="Start PCT's horizon at H instead of learning it (a failure's line "
                         "with no file gives it).")
    group.addoption("--forge-database", default=None, metavar="DIR",
                    help="The failure database: failing schedules kept and run first next "
                         "time (default .forge in the rootdir, or FORGE_DATABASE; none keeps "
                         "none).")


def pytest_configure(config: pytest.Config) -> None:
    _check_options(config)
    config.addinivalue_line(
        "markers", f"{_MARKER}(prompt=None, *, source=None, runs=None, strategy=None, "
                   "seed=None, pct_depth=None, checks=(), expect_result=None, **explore): "
                   "explore a prompt's schedules (forge kit; see docs/pytest.md)")


def _check_options(config: pytest.Config) -> None:
    """Refuse bad `--forge-*` values once, at session start, naming the option
    (not in every test that uses the plugin).

    Raises:
        pytest.UsageError: naming the option.
    """
    for setting, option in (("runs", "--forge-runs"), ("seed", "--forge-seed"),
                            ("strategy", "--forge-strategy")):
        value = config.getoption(option.lstrip("-").replace("-", "_"))
        problem = None if value is None else _setting_problem(setting, value, None, option)
        if problem is not None:
            raise pytest.UsageError(f"forge: {problem}")
    horizon = config.getoption("forge_pct_horizon")
    try:
        if horizon is not None:
            values.check_value(options.RULES["pct_horizon"], horizon, "--forge-pct-horizon", None)
    except errors.InputError as e:
        raise pytest.UsageError(f"forge: {e}") from None


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """The profile is checked once every conftest (where profiles are
    registered) has been read, before any test runs."""
    name = _profile_name(session.config)
    if name not in _PROFILES and name != _hypothesis_name(session.config):
        option = "--forge-profile" if session.config.getoption("forge_profile") else PROFILE_ENV
        raise pytest.UsageError(f"forge: {option}: no settings profile {name!r}; the profiles "
                                f"are {', '.join(sorted(_PROFILES))}")


def pytest_report_header(config: pytest.Config) -> str | None:
    name = _profile_name(config)
    if name == "default" and not any(config.getoption(o) is not None for o in
                                     ("forge_runs", "forge_seed", "forge_strategy")):
        return None         # say nothing to suites that do not use the plugin
    try:
        s = _settings(config, {})
    except pytest.UsageError:
        return None         # reported where a test uses it
    first = "a fresh first seed" if s.seed is None else f"first seed {s.seed}"
    if name not in _PROFILES:
        name += ", Hypothesis's"
    return f"forge: profile {name} ({s.runs} runs, {_strategy(s)} strategy, {first})"


def _strategy(settings: Settings) -> str:
    """The strategy the settings explore under, by name."""
    return settings.strategy if settings.strategy is not None else strategies.DEFAULT


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The probes the session's explorations reached, summed over them, and
    those none reached (said only when a test explored)."""
    counts = config.stash.get(_PROBES, None)
    if not counts:
        return
    reached = ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "none"
    missed = [name for name, n in counts.items() if not n]
    terminalreporter.write_sep("-", "forge probes")
    terminalreporter.write_line(f"probes reached: {reached}")
    if missed:
        terminalreporter.write_line(f"never reached: {', '.join(missed)}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    pending = item.stash.get(_PENDING, None)
    if pending is not None:
        pending()           # a marker's exploration fails the test, before its body
    return (yield)


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _forge_marker_exploration(request: pytest.FixtureRequest) -> None:
    """A `forge_explore` marker that names a prompt: its exploration runs as the test."""
    marker = request.node.get_closest_marker(_MARKER)
    if marker is None or not (marker.args or "prompt" in marker.kwargs
                              or "source" in marker.kwargs):
        return
    explore = _Explorer(request)
    request.node.stash[_PENDING] = explore.marked_exploration


@pytest.fixture
def forge_explore(
        request: pytest.FixtureRequest) -> Callable[..., ExploreReport | ScenarioOutcome]:
    """`forge_explore(prompt, *, checks=(), expect_result=None, **explore_keywords)`.

    Runs `forge.explore` under the session's settings; fails the test with
    a report (the shrunk schedule, the replay file, the `forge replay`
    command) when a schedule fails; returns the `ExploreReport` otherwise.
    """
    return _Explorer(request)


@pytest.fixture
def forge_run(request: pytest.FixtureRequest) -> Callable[..., Observation]:
    """`forge_run(prompt, **run_prompt_keywords)`: one schedule, `--forge-seed`'s by default."""
    seed = request.config.getoption("forge_seed")

    def run(prompt: Any = None, **kwargs: Any) -> Observation:
        if seed is not None:
            kwargs.setdefault("seed", seed)
        if prompt is not None:
            prompt = _resolve(request, prompt)
        return api.run_prompt(prompt, **kwargs)

    return run


# -- the exploration -------------------------------------------------------------------------

class _Explorer:
    """The `forge_explore` callable of one test."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.marker = request.node.get_closest_marker(_MARKER)
        self.calls = 0

    def marked_exploration(self) -> None:
        """The marker's own exploration (it names a prompt): the test itself."""
        self._explore(None, {})

    def __call__(self, prompt: Any = None, **kwargs: Any) -> ExploreReport | ScenarioOutcome:
        return self._explore(prompt, kwargs)

    def _explore(self, prompt: Any, called: dict[str, Any]) -> ExploreReport | ScenarioOutcome:
        """Explore under the settings; any bad keyword or input fails the test
        in one line naming where it came from (the marker or the call)."""
        request = self.request
        marked = self._marked()
        keywords = {**{k: v for k, v in marked.items() if k != "prompt"}, **called}
        tuning = {k: keywords.pop(k, None) for k in _SETTING_RULES}
        given = {**called, **({"prompt": prompt} if prompt is not None else {})}
        if prompt is None and "source" not in called:
            prompt = marked.get("prompt")
        for where, keys in ((_MARKED, marked), (_CALLED, given)):
            _check_keywords(where, keys)
        settings = _settings(request.config, tuning)
        if prompt is not None:
            prompt = _resolve(request, prompt)
        self.calls += 1
        replay_out = self._replay_path(prompt)
        if prompt is not None and _is_scenario(prompt):
            return self._scenario(prompt, settings, replay_out, keywords)
        refused: str | None = None
        try:
            seed, drawn = _first_seed(request.config, settings)
            report = api.explore(prompt, strategy=_strategy(settings),
                                 runs=settings.runs, start_seed=seed,
                                 pct_depth=settings.pct_depth, replay_out=replay_out,
                                 database=_database(request.config),
                                 pct_horizon=request.config.getoption("forge_pct_horizon"),
                                 **keywords)
        except errors.InputError as e:
            refused = str(e)
        if refused is not None:     # failed outside the handler: no chained traceback
            pytest.fail(f"forge: {refused}", pytrace=False)
        totals = request.config.stash.setdefault(_PROBES, {})
        for name, count in report.probes.items():
            totals[name] = totals.get(name, 0) + count
        if report.required_unreached and not report.failures:
            pytest.fail(f"forge: {report.runs} schedules never reached the required "
                        f"probe(s) {', '.join(report.required_unreached)}", pytrace=False)
        if report.failures:
            failure = report.failures[0]
            timeline = _write_timeline(failure, replay_out)
            pytest.fail(_failure_text(report, failure, prompt,
                                      attrs.evolve(settings, seed=seed),
                                      _profile_name(request.config), timeline,
                                      keywords.get("checks", ()),
                                      _rerun(request.node.nodeid, failure,
                                             _strategy(settings), seed), drawn),
                        pytrace=False)
        return report

    def _marked(self) -> dict[str, Any]:
        """The marker's keywords, its positional prompt as `prompt`."""
        if self.marker is None:
            return {}
        marked = dict(self.marker.kwargs)
        if len(self.marker.args) > 1 or (self.marker.args and "prompt" in marked):
            pytest.fail(f"forge: {_MARKED}: takes one positional argument, the prompt, and "
                        "every other setting by keyword", pytrace=False)
        if self.marker.args:
            marked["prompt"] = self.marker.args[0]
        return marked

    def _scenario(self, path: str, settings: Settings, replay_out: Path,
                  keywords: Mapping[str, Any]) -> ScenarioOutcome:
        """Explore a lifecycle scenario file; fail the test as `forge explore` would."""
        unknown = sorted(set(keywords) - {"reduce", "max_deviations", "require"})
        if unknown:
            pytest.fail(f"forge: a lifecycle scenario takes no {unknown[0]!r} (only runs, "
                        "strategy, seed, pct_depth, reduce, max_deviations, require)",
                        pytrace=False)
        required = tuple(keywords.get("require", ()))
        try:
            probes.check_required(required, "require")
        except errors.InputError as e:
            pytest.fail(f"forge: {e}", pytrace=False)
        seed, _ = _first_seed(self.request.config, settings)
        settings = attrs.evolve(settings, seed=seed)
        out = campaign.run(scenario.load(path), _strategy(settings), settings.runs, seed,
                           settings.pct_depth, keywords.get("reduce", True),
                           keywords.get("max_deviations"))
        totals = self.request.config.stash.setdefault(_PROBES, {})
        for name, count in out.probes.items():     # the race outcomes it reached
            totals[name] = totals.get(name, 0) + count
        if out.failure is not None:
            replay_out.write_text(campaign.replay_body(path, out), encoding="utf-8")
            pytest.fail(_scenario_failure_text(out, path, replay_out, settings,
                                               _profile_name(self.request.config)),
                        pytrace=False)
        unreached = [name for name in required if not out.probes.get(name)]
        if unreached:
            pytest.fail(f"forge: {out.runs} schedules never reached the required "
                        f"probe(s) {', '.join(unreached)}", pytrace=False)
        return out

    def _replay_path(self, prompt: Any) -> Path:
        suffix = f"-{self.calls}" if self.calls > 1 else ""
        chosen = self.request.config.getoption("forge_replay_dir")
        if chosen:
            folder = Path(chosen)
            folder.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.request.node.nodeid).strip("_")[-120:]
            return (folder / f"{name}{suffix}.replay.json").resolve()
        folder = Path(self.request.getfixturevalue("tmp_path"))
        return (folder / f"forge-failure{suffix}.replay.json").resolve()


#: Where a keyword came from, as a failure names it.
_MARKED = f"@pytest.mark.{_MARKER}"
_CALLED = f"{_MARKER}()"
#: Keywords of `forge.explore` the plugin sets itself, and what to use instead.
_OWN = {"start_seed": "seed=", "replay_out": "--forge-replay-dir",
        "database": "--forge-database", "pct_horizon": "--forge-pct-horizon"}


def _check_keywords(where: str, given: Mapping[str, Any]) -> None:
    """Fail the test in one line naming `where` (the marker or the call) and
    the keyword, for a keyword `forge.explore` does not take or a value
    whose rule (a setting's in `forge.run.options.RULES`, else the one
    `forge.explore` checks its argument by) refuses it."""
    for name, instead in _OWN.items():
        if name in given:
            pytest.fail(f"forge: {where}: {name} is the plugin's to set; use {instead}",
                        pytrace=False)
    for name, value in given.items():
        problem = (_setting_problem(name, value, where)
                   if name in _SETTING_RULES and value is not None else None)  # None: not set
        if problem is not None:
            pytest.fail(f"forge: {problem}", pytrace=False)
    rest = {k: v for k, v in given.items() if k not in _SETTING_RULES}
    if "prompt" in rest and (rest["prompt"] is None or _is_path(rest["prompt"])):
        del rest["prompt"]      # found beside the test file first (`_resolve`)
    try:
        api._check_arguments("explore", rest, where)
    except errors.InputError as e:
        refused = str(e)
    else:
        return
    pytest.fail(f"forge: {refused}", pytrace=False)   # outside the handler: no chained traceback


def _is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike)


def _resolve(request: pytest.FixtureRequest, prompt: Any) -> str:
    """A prompt path relative to the test file if it is there, else to the working folder,
    made absolute so that the printed command runs from anywhere."""
    path = Path(os.fspath(prompt))
    if not path.is_absolute():
        beside = Path(str(request.node.path)).parent / path
        path = beside if beside.exists() else path
    return str(path.resolve())


def _is_scenario(path: str) -> bool:
    return bool(scenario.is_scenario(path))


def _profile_name(config: pytest.Config) -> str:
    """The profile in force: `--forge-profile`, else `FORGE_PROFILE`, else the
    Hypothesis profile in force (`_hypothesis_name`), else `default`."""
    chosen = config.getoption("forge_profile") or os.environ.get(PROFILE_ENV)
    if chosen:
        return chosen
    return _hypothesis_name(config) or "default"


def _hypothesis_name(config: pytest.Config) -> str | None:
    """The Hypothesis profile in force: the one Hypothesis has loaded
    (`settings.load_profile` in a conftest, or `--hypothesis-profile`, which
    Hypothesis's own pytest plugin loads), else the one that option names;
    None for Hypothesis's `default`, or without Hypothesis.  Hypothesis is
    asked only when something already imported it."""
    import sys

    loaded = None
    hypothesis = sys.modules.get("hypothesis")
    if hypothesis is not None:
        try:
            loaded = hypothesis.settings.get_current_profile_name()
        except Exception:  # noqa: BLE001 - a Hypothesis too old to say: only the option counts
            loaded = None
    if isinstance(loaded, str) and loaded != "default" and not _automatic_ci(hypothesis, loaded):
        return loaded
    try:
        name = config.getoption("hypothesis_profile", None)
    except ValueError:
        return None
    return name if isinstance(name, str) else None


def _automatic_ci(hypothesis: Any, loaded: str) -> bool:
    """Whether `loaded` is the `ci` profile Hypothesis loads by itself on a CI
    machine (its own environment check): nobody chose it, so it does not
    pick forge's `ci` profile, which says ten times the runs, nor print a
    header in suites that never explore.  `FORGE_PROFILE=ci` or
    `--hypothesis-profile ci` still choose it."""
    if loaded != "ci":
        return False
    try:
        from hypothesis._settings import is_in_ci
    except ImportError:      # a Hypothesis without the automatic profile
        return False
    return bool(is_in_ci())


def _profile(config: pytest.Config) -> Settings:
    """The profile in force's settings.  A Hypothesis profile is reused, not
    copied: its `max_examples` is the schedules an exploration runs (as the
    examples a Hypothesis test tries), and `derandomize=True` pins the first
    seed to 0, as it fixes Hypothesis's.  A forge profile of the same name
    (`register_profile`), which can say what Hypothesis has no word for
    (`strategy`, `pct_depth`), is used instead when there is one."""
    name = _profile_name(config)
    if name in _PROFILES or name != _hypothesis_name(config):
        return get_profile(name)
    try:
        from hypothesis import settings as hypothesis_settings

        theirs = hypothesis_settings.get_profile(name)
    except Exception:  # noqa: BLE001 - no Hypothesis, or no such profile: refused as unknown
        return get_profile(name)
    return _PROFILES["default"].merged(runs=theirs.max_examples,
                                       seed=0 if theirs.derandomize else None)


def _settings(config: pytest.Config, tuning: Mapping[str, Any]) -> Settings:
    # Each source was checked on its own (the profile when registered, the
    # options at session start, the marker and the call by `_check_keywords`).
    return _profile(config).merged(**tuning).merged(
        runs=config.getoption("forge_runs"), strategy=config.getoption("forge_strategy"),
        seed=config.getoption("forge_seed"))


def _first_seed(config: pytest.Config, settings: Settings) -> tuple[int, bool]:
    """The exploration's first seed, and whether it was drawn: the
    settings' (a profile's, the marker's, the call's, `--forge-seed`), else
    one drawn once for the session.

    Raises:
        InputError: a `FORGE_START_SEED` that is not a seed.
    """
    if settings.seed is not None:
        return settings.seed, False
    if _SEED not in config.stash:
        config.stash[_SEED] = failuredb.fresh_start_seed()
    return config.stash[_SEED]


def _database(config: pytest.Config) -> str:
    """The failure database folder: `--forge-database`, else `FORGE_DATABASE`,
    else `.forge` in the rootdir (`none`: none is kept)."""
    chosen = config.getoption("forge_database") or os.environ.get(failuredb.DATABASE_ENV)
    return chosen if chosen is not None else str(config.rootpath / failuredb.DEFAULT)


def _rerun(nodeid: str, failure: Failure, strategy: str, first: int) -> str | None:
    """The failure's one-line reproduction that needs no file: this test
    alone, exploring one schedule, the failing seed's, with the horizon PCT
    had learned by then when a PCT run failed; under a strategy whose
    campaign grows afresh every `chunk` seeds (coverage's lanes), the
    failing seed's chunk again from its start (`first`, the session's first
    seed, is where the chunks begin) up to it.  None for an exhaustive
    walk's failure, which has no seed: its replay file is the way back."""
    import shlex

    if failure.seed is None:
        return None
    start, runs = failure.seed, 1
    chunk = strategies.lookup(strategy).chunk
    if chunk is not None:
        if failure.seed < first:
            return None
        start = first + (failure.seed - first) // chunk * chunk
        runs = failure.seed - start + 1
    horizon = failure.strategy.get("horizon")
    learned = f" --forge-pct-horizon {horizon}" if isinstance(horizon, int) else ""
    # The strategy, where a profile, marker or --forge-strategy chose another.
    named = f" --forge-strategy {strategy}" if strategy != strategies.DEFAULT else ""
    return (f"pytest {shlex.quote(nodeid)} --forge-seed {start} --forge-runs {runs}"
            f"{named}{learned} --forge-database none")


def _write_timeline(failure: Failure, replay_out: Path) -> Path:
    """The shrunk run drawn as a timeline page (`forge trace`), beside its replay file."""
    import json

    path = replay_out.with_name(replay_out.name.replace(".replay.json", "") + ".timeline.html")
    records = [json.loads(line) for line in failure.observation.trace.splitlines()]
    observed = failure.observation.to_dict()
    hot = timelines.hot_suffixes({"violations": list(failure.problems)})
    path.write_text(timelines.render_html(records, timelines.abandon_reasons(observed),
                                          "Timeline of the shrunk failing schedule", hot),
                    encoding="utf-8")
    return path


def _indented(indent: str, text: str) -> str:
    """`text` at `indent`, every line of it: a problem may span lines (pytest's
    assertion rewriting explains an `assert` over several), and each must
    stay inside the block."""
    return "\n".join(indent + line if i == 0 else f"{indent}    {line}"
                     for i, line in enumerate(text.split("\n")))


def _failure_text(report: ExploreReport, failure: Failure, prompt: str | None,
                  settings: Settings, profile: str, timeline: Path | None = None,
                  checks: Iterable[Any] = (), rerun: str | None = None,
                  drawn: bool = False) -> str:
    if report.runs == 0:    # found in the failure database, before any new schedule
        lines = [f"forge: a schedule of {prompt or 'the prompt'} failed again: a failure an "
                 "earlier run kept in the failure database (it runs before new schedules, "
                 f"and is dropped once it passes; profile {profile})"]
    else:
        lines = [f"forge: a schedule of {prompt or 'the prompt'} failed "
                 f"(after {report.runs} of {settings.runs} {_strategy(settings)} schedules, "
                 f"first seed {settings.seed}"
                 + (f" (drawn; --forge-seed {settings.seed} repeats these schedules)"
                    if drawn else "") + f", profile {profile})"]
    lines += [_indented("  ", f"problem: {p}") for p in failure.problems]
    if any(map(verdict.is_ending_problem, failure.problems)):
        lines.append(_indented("  ", verdict.why(failure.observation.to_dict(), api=True)))
    minimal = "a proven local minimum" if failure.proven else "not proven minimal"
    plural = "" if failure.deviations == 1 else "s"
    where = "on an exhaustive schedule" if failure.seed is None else f"at seed {failure.seed}"
    lines.append(f"  shrunk schedule: {len(failure.shrunk)} choices, {failure.deviations} "
                 f"deviation{plural} from the canonical schedule ({minimal}), shrunk from "
                 f"{len(failure.choices)} drawn {where}; in virtual time:")
    lines += [_indented("    ", line) for line in failure.story]
    if failure.divergence:
        lines.append("  first divergence from the canonical run:")
        lines += [_indented("    ", line) for line in failure.divergence]
    obs = failure.observation
    ended = obs.result if obs.ok else f"{(obs.error or {}).get('kind')}: {(obs.error or {}).get('message')}"
    lines.append(_indented("  ", f"the shrunk run ends {obs.outcome}: {ended}"))
    if failure.replay_file:
        lines.append(f"  replay file: {failure.replay_file}")
    if timeline is not None:
        lines.append(f"  timeline: {timeline.as_uri()}")
    if failure.replay_command:
        lines.append("  reproduce with:")
        lines.append(f"    {failure.replay_command}")
        if rerun is not None and report.runs:
            lines.append("  or, with no file:")
            lines.append(f"    {rerun}")
        code = sorted({name for name in map(api._check_name, checks)
                       if any(_by(name, p) for p in failure.problems)})
        if code:
            alone = all(any(_by(name, p) for name in code) for p in failure.problems)
            lines.append(
                f"  note: {', '.join(code)} {'is a check' if len(code) == 1 else 'are checks'} "
                "in Python, which a replay file cannot hold: forge replay reruns this "
                "schedule byte for byte but does not re-check "
                f"{'it' if len(code) == 1 else 'them'}"
                + (", so it reports the run as passing what the file expects" if alone
                   else "; it re-checks the rest"))
    return "\n".join(lines)


def _by(check: str, problem: str) -> bool:
    """The problem is the check's (`check NAME: ...`, `check NAME failed`, ...)."""
    return problem.startswith((f"check {check}:", f"check {check} "))


def _scenario_failure_text(out: ScenarioOutcome, path: str, replay_out: Path, settings: Settings,
                           profile: str) -> str:
    import shlex

    f = out.failure
    assert f is not None  # called only for a failed campaign
    lines = [f"forge: a schedule of the lifecycle scenario {path} failed "
             f"(after {out.runs} of {settings.runs} {_strategy(settings)} schedules, "
             f"first seed {settings.seed}, profile {profile})"]
    lines += [_indented("  ", f"problem: {p}") for p in f.problems]
    minimal = "a proven local minimum" if f.proven else "not proven minimal"
    drawn = "on an exhaustive schedule" if f.seed is None else f"at seed {f.seed}"
    lines.append(f"  shrunk schedule: {len(f.shrunk)} choices, {f.deviations} deviations "
                 f"from the canonical schedule ({minimal}), shrunk from {len(f.found)} "
                 f"drawn {drawn}; step by step:")
    lines += [f"  {line}" for line in campaign.story(f.steps, f.hot)]
    lines.append(f"  replay file: {replay_out}")
    lines.append("  reproduce with:")
    lines.append(f"    forge replay {shlex.quote(path)} {shlex.quote(str(replay_out))}")
    return "\n".join(lines)
