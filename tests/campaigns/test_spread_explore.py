"""`forge explore --workers N`, `--shard I/N` and `forge explore merge`: the
report (and the replay file) of a spread campaign is the one-process one,
byte for byte (kit: campaigns).

The campaign is `examples/explore/store-race.md --args 2` with a user check
that fails on a rare trace (its sha256 starts `00`; under pct, which runs
in orders mode and meets fewer traces, `90`): random seed 247, pct seed
302 and the portfolio's seed 143 (its PCT member of depth 3, in orders
mode with the horizon learned before it) are the first to fail, so the
failure lands inside a later chunk and shard, and everything before it must be counted as one process
counts it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES

PROMPT = str(EXAMPLES / "explore" / "store-race.md")
CHECK = '''def rare(obs):
    return ["a rare trace"] if obs["trace_sha256"].startswith("00") else []


def rare_pct(obs):
    return ["a rare trace"] if obs["trace_sha256"].startswith("90") else []


def often(obs):
    return ["a trace starting 0"] if obs["trace_sha256"].startswith("0") else []
'''


@pytest.fixture
def forge(tmp_path):
    (tmp_path / "rarecheck.py").write_text(CHECK, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(tmp_path)) if p)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "forge", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)

    return run


def campaign(*extra: str, check: str = "rare") -> list[str]:
    return ["explore", PROMPT, "--args", "2", "--runs", "400", "--check", f"rarecheck:{check}",
            "--json", *extra]


@pytest.mark.parametrize("strategy", ["random", "pct", "portfolio", "coverage"])
def test_workers_give_the_serial_report_and_replay_file(forge, tmp_path, strategy):
    # coverage's failure is in its second lane of 200 seeds, which a worker grows afresh.
    check = "rare_pct" if strategy == "pct" else "rare"
    serial = forge(*campaign("--strategy", strategy, "--replay-out", "serial.json", check=check))
    serial_replay = (tmp_path / "serial.json").read_bytes()
    spread = forge(*campaign("--strategy", strategy, "--workers", "2", "--replay-out",
                             "serial.json", check=check))
    assert serial.returncode == spread.returncode == 1, spread.stderr
    assert spread.stdout == serial.stdout
    assert (tmp_path / "serial.json").read_bytes() == serial_replay
    report = json.loads(serial.stdout)
    assert report["failures"][0]["seed"] == {"random": 247, "pct": 302, "portfolio": 143,
                                           "coverage": 212}[strategy]


@pytest.mark.parametrize("runs, reduce", [("3000", ()), ("60", ()), ("3000", ("--no-reduce",))])
def test_workers_walk_the_exhaustive_tree_as_one_process_does(forge, tmp_path, runs, reduce):
    """Subtrees walked by two workers, the whole tree and a budget that cuts
    it, reduced or not: the report and the replay file of the first failure
    are the serial walk's, byte for byte."""
    walk = ["explore", PROMPT, "--args", "3" if not reduce else "2", "--runs", runs,
            "--check", "rarecheck:often", "--json", "--strategy", "exhaustive", *reduce]
    serial = forge(*walk, "--replay-out", "serial.json")
    serial_replay = (tmp_path / "serial.json").read_bytes()
    spread = forge(*walk, "--workers", "2", "--replay-out", "serial.json")
    assert serial.returncode == spread.returncode == 1, spread.stderr
    assert spread.stdout == serial.stdout
    assert (tmp_path / "serial.json").read_bytes() == serial_replay
    report = json.loads(serial.stdout)
    assert len(report["failures"]) > 1 and report["complete"] is (runs == "3000")
    assert (report["pruned"] > 0) is not reduce


def test_merged_shards_give_the_serial_report(forge, tmp_path):
    # Shards with no --strategy draw random seeds (the portfolio cannot be sharded).
    serial = forge(*campaign("--strategy", "random", "--replay-out", "out.json"))
    serial_replay = (tmp_path / "out.json").read_bytes()
    (tmp_path / "out.json").unlink()
    for i in (1, 2, 3):
        shard = forge(*campaign("--shard", f"{i}/3", "--replay-out", f"s{i}.json"))
        assert shard.returncode in (0, 1), shard.stderr
        (tmp_path / f"s{i}.report.json").write_text(shard.stdout, encoding="utf-8")
        assert json.loads(shard.stdout)["shard"]["seeds"] == [(i - 1) * 400 // 3, i * 400 // 3]
    merged = forge("explore", "merge", "s3.report.json", "s1.report.json", "s2.report.json",
                   "--replay-out", "out.json", "--json")
    assert merged.returncode == 1, merged.stderr
    assert merged.stdout == serial.stdout
    assert (tmp_path / "out.json").read_bytes() == serial_replay
    # and the merged replay file reproduces the failure on its own
    replay = forge("replay", "out.json")
    assert replay.returncode == 1 and "a rare trace" in replay.stdout


def test_the_faults_fired_add_up_alike_serial_spread_and_sharded(forge, tmp_path):
    """A campaign with --faults counts the faults it fired, by kind, over every
    schedule: workers and merged shards count exactly what one process counts."""
    base = ("explore", PROMPT, "--args", "2", "--runs", "120", "--faults", "store", "--json",
            "--strategy", "random")
    serial = forge(*base)
    assert serial.returncode == 0, serial.stderr
    report = json.loads(serial.stdout)
    assert report["faults"]["store"] > 0
    assert forge(*base, "--workers", "2").stdout == serial.stdout
    for i in (1, 2):
        shard = forge(*base, "--shard", f"{i}/2")
        (tmp_path / f"f{i}.json").write_text(shard.stdout, encoding="utf-8")
    merged = forge("explore", "merge", "f1.json", "f2.json", "--json")
    assert merged.stdout == serial.stdout
    words = forge("explore", "merge", "f1.json", "f2.json")
    assert f"faults fired: {report['faults']['store']} store" in words.stdout


def test_merge_refuses_overlapping_missing_and_foreign_shards(forge, tmp_path):
    for name, extra in (("a", ("--shard", "1/2")), ("b", ("--shard", "2/2")),
                        ("other", ("--shard", "2/2", "--start-seed", "5")), ("whole", ())):
        out = forge(*campaign(*extra, "--replay-out", f"{name}.replay.json"))
        (tmp_path / f"{name}.json").write_text(out.stdout, encoding="utf-8")
    cases = {("a.json", "a.json"): "a.json: shard 1/2 overlaps a.json",
             ("a.json",): "shard 2/2 is missing",
             ("a.json", "other.json"): "other.json: a shard of another campaign than a.json",
             ("whole.json",): "whole.json: not a shard report"}
    # a shard report edited into shapes merging cannot read
    shard = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    for field, value in (("faults", 5), ("outcomes", {"ok": "many"}), ("runs", "x")):
        (tmp_path / f"bad-{field}.json").write_text(json.dumps({**shard, field: value}),
                                                     encoding="utf-8")
        cases[(f"bad-{field}.json", "b.json")] = (
            f"bad-{field}.json: not a shard report as forge explore --shard writes one: "
            f"`{field}` is {json.dumps(value)}")
    shard["shard"] = {**shard["shard"], "traces": 3}
    (tmp_path / "bad-traces.json").write_text(json.dumps(shard), encoding="utf-8")
    cases[("bad-traces.json", "b.json")] = "bad-traces.json: not a shard report as forge " \
        "explore --shard writes one: `shard.traces` is 3"
    for files, message in cases.items():
        out = forge("explore", "merge", *files)
        assert out.returncode == 2, out
        assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


@pytest.mark.parametrize("args, message", [
    (("--strategy", "exhaustive", "--shard", "1/2"),
     "--shard: exhaustive walks one choice tree in one order"),
    (("--strategy", "pct", "--shard", "1/2"), "--shard: pct learns its horizon"),
    (("--shard", "3/2"), "--shard: a shard I/N needs 1 <= I <= N"),
    (("--shard", "two"), "--shard: a shard is I/N such as 2/4"),
    (("--address", "tcp://127.0.0.1:1"), "--address: an address names a dask scheduler"),
])
def test_what_cannot_be_spread_is_refused_in_one_line(forge, args, message):
    out = forge("explore", PROMPT, *args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
