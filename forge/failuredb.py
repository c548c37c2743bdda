"""The failure database: failing schedules a campaign found, kept between
runs as Hypothesis keeps its example database.

`forge explore` saves the replay record of each failure it finds under a
folder (`.forge/` by default; `--database DIR` or `FORGE_DATABASE` moves
it, `none` turns it off), keyed by the campaign's prompt and settings (its
`forge.campaign.fingerprint` without the seed range).  The next campaign of
the same prompt and settings replays the saved failures first: one that
still fails is the campaign's failure at once; one that passes now is
dropped.  The folder holds a `.gitignore` of `*`, so it never lands in a
commit.

`forge conformance` keeps the ids of the cases that failed last under the
same folder (`last_failed`, `record_last_failed`), keyed by the
implementation, for `--lf`.

Also here: the campaign's start seed when the user gave none
(`fresh_start_seed`), the one use of the operating system's randomness,
outside the engine and the simulator; `FORGE_START_SEED` pins it (a CI
profile, and the test suite).

What does not live here: the record's format (`forge.run.record`,
`forge.sim.replayfile`), replaying it (`forge.repro.replay_file`), the
campaign (`forge.repro`, `forge.campaign`).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import TYPE_CHECKING

import attrs

from forge.deferred import deferred
from forge.errors import InputError

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge import repro, runspec
    from forge.run import record
    from forge.sim import chooser as sim_chooser, replayfile
else:
    repro = deferred("forge.repro")
    runspec = deferred("forge.runspec")
    record = deferred("forge.run.record")
    sim_chooser = deferred("forge.sim.chooser")
    replayfile = deferred("forge.sim.replayfile")

#: The folder when neither `--database` nor `FORGE_DATABASE` names one.
DEFAULT = ".forge"
#: The variable naming the folder (or `none`).
DATABASE_ENV = "FORGE_DATABASE"
#: The variable pinning the start seed of campaigns given no `--start-seed`.
START_SEED_ENV = "FORGE_START_SEED"
#: The spelling that turns the database off.
OFF = "none"


@attrs.frozen
class FailureDatabase:
    root: pathlib.Path

    def folder(self, key: str) -> pathlib.Path:
        return self.root / "failures" / key[:32]

    def saved(self, key: str) -> list[pathlib.Path]:
        """The saved failures of the campaign `key`, in a fixed order."""
        folder = self.folder(key)
        return sorted(folder.glob("*.replay.json")) if folder.is_dir() else []

    def save(self, key: str, text: str) -> pathlib.Path:
        """Keep the replay file `text` for the campaign `key` (once)."""
        self._ignored()
        folder = self.folder(key)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".replay.json")
        path.write_text(text, encoding="utf-8")
        return path

    def drop(self, path: pathlib.Path) -> None:
        path.unlink(missing_ok=True)

    def _ignored(self) -> None:
        """The folder carries its own `.gitignore`, as pytest's cache does."""
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# the forge kit's failure database (forge/failuredb.py)\n*\n",
                              encoding="utf-8")


def last_failed(db: FailureDatabase | None, key: str) -> list[str] | None:
    """The ids `forge conformance` last saw fail or error for the suite
    `key` (`forge conformance --lf`); None when nothing is recorded."""
    import json

    if db is None:
        return None
    try:
        ids = json.loads((db.root / "conformance" / f"{key[:32]}.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else None


def record_last_failed(db: FailureDatabase | None, key: str, ran, failed) -> None:
    """After a suite run: the cases that failed now are kept, those that ran
    and passed are dropped, the others' last result is kept (as pytest's
    `lastfailed`)."""
    import json

    if db is None:
        return
    ran, failed = set(ran), set(failed)
    kept = (set(last_failed(db, key) or ()) - ran) | failed
    db._ignored()
    folder = db.root / "conformance"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{key[:32]}.json").write_text(json.dumps(sorted(kept)) + "\n", encoding="utf-8")


def database(flag: str | None) -> FailureDatabase | None:
    """The database `--database` (else `FORGE_DATABASE`, else `.forge`) names; None: off."""
    where = flag if flag is not None else os.environ.get(DATABASE_ENV, DEFAULT)
    if where.strip().lower() == OFF:
        return None
    if not where.strip():
        raise InputError("a database folder, or none to keep no failures", file="--database")
    return FailureDatabase(pathlib.Path(where))




def fresh_start_seed() -> tuple[int, bool]:
    """The start seed of a campaign given none, and whether it was drawn
    (False: `FORGE_START_SEED` pinned it).

    Raises:
        InputError: naming `FORGE_START_SEED`, for a value that is not a
            whole number from 0 to 2**32 - 1.
    """
    pinned = os.environ.get(START_SEED_ENV)
    if pinned is not None:
        if not pinned.strip().isdigit() or int(pinned) >= 2 ** 32:
            raise InputError(f"a start seed is a whole number from 0 to {2 ** 32 - 1}, got "
                             f"{pinned[:40]!r}", file=START_SEED_ENV)
        return int(pinned), False
    import secrets

    return secrets.randbits(32), True


def start_seed(given: int | None, spread_over_shards: bool) -> int:
    """The campaign's start seed: the one given, else 0 for shards (every
    job of a matrix must agree), else a fresh one, printed on standard
    error with the flag that runs the same schedules again."""
    if given is not None:
        return given
    if spread_over_shards:
        return 0
    seed, drawn = fresh_start_seed()
    if drawn:
        import click

        click.echo(f"start seed {seed} (drawn; --start-seed {seed} runs these schedules again)",
                   err=True)
    return seed


def campaign_key(spec, expect, strategy: str, pct_depth: int) -> str:
    """The campaign's key: its prompt's path (not its text: the fix of a
    failure is an edit, and the failure must be replayed on it), the run's
    options, scripts and store, the expectation and the strategy."""
    import json

    base = record.record(spec, expect, 0, (), {"trace_sha256": ""})
    for name in ("kit", "trace_sha256", "observation_sha256", "choices"):
        base.pop(name, None)
    base["run"].pop("seed", None)
    prompt = base.pop("prompt")
    base["prompt_path"] = (str(pathlib.Path(prompt["path"]).resolve()) if prompt.get("path")
                           else prompt.get("sha256"))
    base["campaign"] = {"strategy": strategy, "pct_depth": pct_depth}
    return hashlib.sha256(json.dumps(base, sort_keys=True).encode("utf-8")).hexdigest()


@attrs.frozen
class StillFailing:
    """A saved failure that fails again on the prompt as it is now: its
    file, the problems, the replay file of this run, and the run itself
    (its seed, choice values, observation and trace), for the API's report."""

    path: pathlib.Path
    problems: tuple[str, ...]
    text: str
    seed: int = 0
    choices: tuple[int, ...] = ()
    observation: dict = attrs.field(factory=dict, eq=False, repr=False)
    trace: str = attrs.field(default="", eq=False, repr=False)
    #: How the saved schedule was first drawn (its record's `strategy`:
    #: seed, and a PCT run's horizon), for the line with no file; empty
    #: when the record does not say.
    strategy: dict = attrs.field(factory=dict, eq=False)


def replay_saved(db: FailureDatabase, key: str, spec, expect) -> StillFailing | None:
    """Run each saved schedule of the campaign again, in order, on `spec`
    as it is now (the prompt may have been edited since): the first that
    still fails, or None.  Each that passes now, or no longer reads, is dropped."""
    import json

    saved = db.saved(key)
    if not saved:
        return None
    runner, _, checks = repro.prepare(spec, expect)
    for path in saved:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            values = [int(c[2]) for c in data["choices"]]
            seed = int(data["run"]["seed"])
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            db.drop(path)
            continue
        chooser = sim_chooser.Chooser(sim_chooser.ReplayProvider(values), seed=seed)
        run, crash = runner.attempt(chooser)
        obs = runspec.crashed(run, crash) if crash is not None else run.observation()
        problems = tuple(p for check in checks for p in check(runspec.with_violations(obs, run)))
        if not problems:
            db.drop(path)
            continue
        failure = record.failure_section(problems, obs["outcome"],
                                         sum(1 for c in chooser.choices if c.value))
        text = replayfile.write_record(record.record(spec, expect, seed, chooser.choices, obs,
                                                     failure=failure))
        drawn = data.get("strategy")
        return StillFailing(path, problems, text, seed, tuple(values), obs,
                            run.trace.lines() if crash is None else "",
                            drawn if isinstance(drawn, dict) else {})
    return None
