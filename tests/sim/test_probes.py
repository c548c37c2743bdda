"""Reachability probes: each built-in probe is reached by a prompt made to reach it and
not by one that cannot; every explore report lists the counts and the probes never
reached (text and --json, serial and spread alike); a user's probe is counted; and
`--require PROBE` fails a campaign that never reached it.

Clauses whose behaviour the probes detect: tasks.timeouts.tie-member-wins,
tasks.timeouts.join-any-nil, tasks.wait.join-any-parks-or-returns,
tasks.concurrency.queued, tasks.stop.unstarted-never-runs,
tasks.cancel.stops-returns-nothing, tasks.cancel.harness-wait-safe,
tasks.cancel.marks-cancelled, tasks.reasons.owner-failed,
tasks.reasons.owner-returned, tasks.reasons.host-cancel.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from forge import probes
from forge.cli import main
from forge.repro import explore_prompt
from forge.runspec import Expectation, spec_from_values
from forge.conformance.catalogue import default_catalogue_dir, load_catalogue
from forge.verdict import Verdict
from tests.conftest import EXAMPLES, prompt_text, section

LAX = Expectation(same_ids=False, ending=Verdict(allow_failed=True))


def reached(text: str, runs: int = 60, **flags) -> dict[str, int]:
    spec = spec_from_values("probe.md", text, **flags)
    return explore_prompt(spec, expect=LAX, runs=runs).report.probes


def test_every_probe_names_a_clause_of_the_catalogue():
    clauses = {c["id"] for c in load_catalogue(default_catalogue_dir())}
    assert [p.name for p in probes.CATALOGUE if p.clause not in clauses] == []
    assert len({p.name for p in probes.CATALOGUE}) == len(probes.CATALOGUE)


def test_a_timeout_tie_and_a_timeout_are_reached_on_watch_tie():
    # tasks.timeouts.tie-member-wins, tasks.timeouts.join-any-nil
    text = (EXAMPLES / "explore" / "watch-tie.md").read_text()
    got = reached(text, runs=100)
    assert got["timeout-tie"] > 0 and got["timeout-fired"] > 0


def test_no_tie_without_a_timed_wait():
    got = reached(prompt_text(section("Main", """
local t = tasks.spawn('## A')
tasks.join({ t })
return 'x'
"""), section("A", "store.write('a', '1') return 'a'")))
    assert "timeout-tie" not in got and "timeout-fired" not in got


def test_two_members_of_a_join_any_ending_at_one_instant():
    # tasks.wait.join-any-parks-or-returns
    got = reached(prompt_text(section("Main", """
local a = tasks.spawn('## A')
local b = tasks.spawn('## B')
local first = tasks.join_any({ a, b })
if first.task == a.task then tasks.join({ b }) else tasks.join({ a }) end
return 'x'
"""), section("A", "store.write('a', '1') return 'a'"),
        section("B", "store.write('b', '1') return 'b'")))
    assert "abandon-owner-failed" not in got
    assert got.get("join-any-same-instant", 0) > 0


def test_a_cancel_of_a_queued_task():
    # tasks.concurrency.queued, tasks.stop.unstarted-never-runs
    got = reached(prompt_text(section("Main", """
tasks.concurrency(1)
local a = tasks.spawn('## A')
local b = tasks.spawn('## A')
tasks.cancel(b)
tasks.join({ a })
return 'x'
"""), section("A", "store.write('a', '1') return 'a'")), runs=10)
    assert got["task-queued"] == 10 and got["cancel-queued"] == 10
    assert "cancel-running" not in got


def test_a_cancel_of_a_running_a_harness_bound_and_a_waiting_task():
    # tasks.cancel.stops-returns-nothing, tasks.cancel.harness-wait-safe,
    # tasks.cancel.marks-cancelled
    got = reached(prompt_text(section("Main", """
local a = tasks.spawn('## A')
tasks.cancel(a)
local b = tasks.spawn('## A')
store.read('x')
tasks.cancel(b)
local c = tasks.spawn('## W')
store.read('x')
store.read('x')
tasks.cancel(c)
return 'x'
"""), section("A", "store.write('a', '1') return 'a'"),
        section("W", "local t = tasks.spawn('## A') tasks.join({ t }) return 'w'")),
        store_files={"x": "1"})
    assert got["cancel-running"] > 0
    assert got["cancel-in-harness"] > 0
    assert got["cancel-waiting"] > 0


def test_abandon_reasons_and_faults():
    # tasks.reasons.owner-failed (watch-abandon), tasks.reasons.host-cancel
    text = (EXAMPLES / "explore" / "watch-abandon.md").read_text()
    assert reached(text, runs=5)["abandon-owner-failed"] == 5
    got = reached(prompt_text(section("Main", """
local a = tasks.spawn('## A')
store.write('m', '1')
tasks.join({ a })
return 'x'
"""), section("A", "store.write('a', '1') return 'a'")), runs=80, faults="store,cancel")
    assert got.get("fault-store", 0) > 0 and got.get("fault-cancel", 0) > 0


def test_a_leaked_task_is_abandoned_as_owner_returned():
    # tasks.reasons.owner-returned, tasks.leak.tasks-live
    got = reached(prompt_text(section("Main", """
tasks.spawn('## A')
return 'x'
"""), section("A", "store.write('a', '1') return 'a'")), runs=3)
    assert got["abandon-owner-returned"] == 3


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


TIE = str(EXAMPLES / "explore" / "watch-tie.md")


def test_the_report_lists_counts_and_the_probes_never_reached():
    out = forge("explore", TIE, "--runs", "60", "--start-seed", "0", "--json")
    data = json.loads(out.output.splitlines()[-1])
    assert sorted(data["probes"]) == sorted(probes.names())
    assert data["probes"]["timeout-tie"] > 0
    assert "cancel-queued" in data["probes_missed"] and "timeout-tie" not in data["probes_missed"]
    assert data["required_unreached"] == []
    text = forge("explore", TIE, "--runs", "60", "--start-seed", "0").output
    assert "probes reached: timeout-tie " in text
    assert "never reached: join-any-same-instant, task-queued" in text


def test_require_fails_a_campaign_that_never_reached_the_probe():
    out = forge("explore", TIE, "--runs", "20", "--start-seed", "0", "--require", "cancel-queued")
    assert out.exit_code == 1
    assert "REQUIRED and never reached: cancel-queued" in out.output
    ok = forge("explore", TIE, "--runs", "60", "--start-seed", "0", "--require", "timeout-tie")
    assert ok.exit_code == 0, ok.output


def test_require_of_an_unknown_probe_is_one_line_of_bad_input():
    out = forge("explore", TIE, "--runs", "2", "--require", "no-such-probe")
    assert out.exit_code == 2
    assert "--require: no probe is called 'no-such-probe'; the probes are timeout-tie" \
        in out.output


def test_a_user_probe_is_counted_and_can_be_required(tmp_path, monkeypatch):
    (tmp_path / "myprobes.py").write_text(
        "def timed_out(obs):\n    return obs['result'] == 'timeout'\n"
        "def never(obs):\n    return False\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = forge("explore", TIE, "--runs", "60", "--start-seed", "0", "--json",
                "--probe", "myprobes:timed_out", "--probe", "myprobes:never",
                "--require", "myprobes:never")
    data = json.loads(out.output.splitlines()[-1])
    assert data["probes"]["myprobes:timed_out"] > 0
    assert data["required_unreached"] == ["myprobes:never"]
    assert out.exit_code == 1


@pytest.mark.parametrize("flag", [("--workers", "2"), ("--shard", "1/1")])
def test_spread_campaigns_count_probes_as_one_process_does(flag):
    base = ("explore", TIE, "--runs", "60", "--start-seed", "0", "--json", "--strategy", "random")
    serial = forge(*base)
    spread = forge(*base, *flag)
    one, two = (json.loads(r.output.splitlines()[-1]) for r in (serial, spread))
    assert one["probes"] == two["probes"] and one["probes_missed"] == two["probes_missed"]
