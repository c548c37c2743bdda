"""The failure database (`forge.failuredb`): failing schedules are saved
under `.forge/` (or `--database DIR`), replayed first by the next campaign of
the same prompt and settings - on the prompt as it is now - and dropped once
they pass; a campaign given no `--start-seed` draws a fresh one and prints it,
and `FORGE_START_SEED` pins it (kit: failure-database)."""

from __future__ import annotations

import json
import re
import shlex
import shutil

from click.testing import CliRunner

from forge.cli import main
from tests.conftest import EXAMPLES

BROKEN = EXAMPLES / "first" / "headline.md"
FIXED = EXAMPLES / "first" / "headline-fixed.md"


def forge(*args: str, **env: str | None):
    return CliRunner().invoke(main, list(args), env=env)


def test_a_failure_is_saved_replayed_first_and_dropped_once_fixed(tmp_path):
    prompt = tmp_path / "headline.md"
    shutil.copy(BROKEN, prompt)
    db, out = tmp_path / "db", str(tmp_path / "r.json")
    first = forge("explore", str(prompt), "--runs", "100", "--database", str(db),
                  "--replay-out", out)
    assert first.exit_code == 1, first.output
    saved = sorted(db.rglob("*.replay.json"))
    assert len(saved) == 1
    assert (db / ".gitignore").read_text().splitlines()[-1] == "*"
    # The next campaign replays it before any new schedule, even from another start seed.
    again = forge("explore", str(prompt), "--runs", "100", "--database", str(db),
                  "--start-seed", "1000", "--replay-out", out, "--json")
    assert again.exit_code == 1, again.output
    report = json.loads(again.output.splitlines()[-1])
    assert report["runs"] == 0 and report["saved_failure"] == str(saved[0])
    assert "attempt to concatenate a nil value" in report["problems"][0]
    # Shaped as any campaign's report, so what reads one reads this one.
    fresh = json.loads(forge("explore", str(prompt), "--runs", "100", "--database", "none",
                             "--start-seed", "0", "--json").output.splitlines()[-1])
    assert set(fresh) <= set(report)
    assert set(fresh["failures"][0]) == set(report["failures"][0])
    assert report["failures"][0]["problems"] == report["problems"]
    assert report["failures"][0]["shrunk"] == [
        c[-1] for c in json.loads(saved[0].read_text())["choices"]]
    assert forge("replay", out).exit_code == 1
    # In words, a kept failure also prints the line with no file, which
    # draws again the seed it was first found at (issue 29, item 3).
    told = forge("explore", str(prompt), "--runs", "100", "--database", str(db),
                 "--replay-out", out)
    line = next(line for line in told.output.splitlines()
                if line.startswith("or, with no file: ")).removeprefix("or, with no file: ")
    rerun = forge(*shlex.split(line)[1:], "--replay-out", str(tmp_path / "again.json"))
    assert rerun.exit_code == 1 and "1 schedules" in rerun.output
    again_rec = json.loads((tmp_path / "again.json").read_text())
    assert again_rec["choices"] == json.loads(saved[0].read_text())["choices"]
    # Another setting is another campaign: its saved failures are not this one's.
    other = forge("explore", str(prompt), "--runs", "1", "--database", str(db),
                  "--start-seed", "0", "--strategy", "pct")
    assert "FAILED again" not in other.output
    # The fix, in the same file: the saved schedule passes now and is dropped.
    shutil.copy(FIXED, prompt)
    fixed = forge("explore", str(prompt), "--runs", "20", "--database", str(db),
                  "--start-seed", "0")
    assert fixed.exit_code == 0, fixed.output
    assert not [p for p in db.rglob("*.replay.json") if p.parent == saved[0].parent]


def test_database_none_keeps_nothing(tmp_path):
    result = CliRunner().invoke(main, ["explore", str(BROKEN), "--runs", "100", "--database",
                                       "none", "--replay-out", str(tmp_path / "r.json")],
                                env={"FORGE_DATABASE": str(tmp_path / "db")})
    assert result.exit_code == 1
    assert not (tmp_path / "db").exists()


def test_the_database_folder_comes_from_the_environment(tmp_path):
    result = forge("explore", str(BROKEN), "--runs", "100", "--replay-out",
                   str(tmp_path / "r.json"), FORGE_DATABASE=str(tmp_path / "env-db"))
    assert result.exit_code == 1
    assert len(list((tmp_path / "env-db").rglob("*.replay.json"))) == 1


def test_a_campaign_without_a_start_seed_draws_one_and_prints_it():
    two = str(EXAMPLES / "two-tasks.md")
    seeds = []
    for _ in range(2):
        result = forge("explore", two, "--runs", "2", FORGE_START_SEED=None)
        assert result.exit_code == 0, result.output
        seeds.append(int(re.search(r"start seed (\d+) \(drawn; --start-seed \1 runs these "
                                   r"schedules again\)", result.output).group(1)))
    assert seeds[0] != seeds[1]


def test_forge_start_seed_pins_it_and_a_bad_one_is_one_line():
    leaky = str(EXAMPLES / "first" / "headline.md")
    pinned = forge("explore", leaky, "--runs", "100", "--json", FORGE_START_SEED="0")
    assert "drawn" not in pinned.output
    # The portfolio's seed 1 (its PCT member of depth 1) is the first to fail.
    assert json.loads(pinned.output.splitlines()[-1])["failures"][0]["seed"] == 1
    bad = forge("explore", leaky, "--runs", "5", FORGE_START_SEED="soon")
    assert bad.exit_code == 2 and "FORGE_START_SEED" in bad.output


def test_ctrl_c_exits_130_with_what_ran(monkeypatch):
    """An interrupted campaign is not a failed one: exit 130, and how far it got
    (kit: exit-codes)."""
    from forge import repro

    def interrupted(spec, *, progress, **_):
        progress(7)
        raise KeyboardInterrupt

    monkeypatch.setattr(repro, "explore_prompt", interrupted)
    result = forge("explore", str(EXAMPLES / "two-tasks.md"), "--runs", "50")
    assert result.exit_code == 130, result.output
    assert "interrupted after 7 of 50 schedules (from start seed 0); no failure among those " \
        "checked" in result.output
    assert result.output.rstrip().endswith("forge: interrupted")
