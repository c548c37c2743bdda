"""The lifecycle races' reachability probes: which race outcome a schedule reached.

A green exploration of a race that never had a stop lose its claim to a
retry, never had a retry claim lost, or never had the restart sweep fail a
task looks the same as one that did; these probes say which outcomes it
reached, as the Tasks probes (``forge.probes``) do for prompts. Each is a
``forge.probes.Probe`` naming one outcome of a race of the notes' section 7
and the clause that outcome exercises; a schedule's hits are read once,
after it, off its world (``hits``): the store's write log with each row
before and after, what each actor's action answered, the host's launches,
stops and their answers, and the reports. The subject lists them under the
observation key the searches tally (``forge.sim.explore.PROBES``), so every
strategy counts them, and ``forge explore SCENARIO`` lists each probe's count
and those never reached (text and ``--json``); ``--require PROBE`` fails an
exploration that never reached it.

What does not live here: the Tasks probes and the users' probes
(``forge.probes``), the safety oracles (``explore.check_world``), the
liveness monitors (``liveness``), printing (``command``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from forge.errors import InputError
from forge.lifecycle.errors import TaskError
from forge.lifecycle.records import StopOutcome, Task, TaskStatus
from forge.probes import Probe

#: Every lifecycle probe, in the order reports list them.
CATALOGUE: tuple[Probe, ...] = (
    Probe("finalize-cas-lost", "lifecycle.finalize.single-winner",
          "a finalize lost its compare-and-set to another ending of the same attempt "
          "(lifecycle.race.concurrent-finalizers)"),
    Probe("finalize-stale-run-lost", "lifecycle.finalize.run-bound",
          "a finalize naming a run the task had moved off lost "
          "(lifecycle.race.stale-outcome-after-retry, lifecycle.race.stop-vs-retry)"),
    Probe("stop-won-over-run-ending", "lifecycle.report.cancel-is-delivered",
          "a stop and the run's own ending raced for one attempt and the stop's "
          "cancellation won (lifecycle.race.stop-vs-completion)"),
    Probe("run-ending-won-over-stop", "lifecycle.finalize.single-winner",
          "a stop and the run's own ending raced for one attempt and the run's ending won "
          "(lifecycle.race.stop-vs-completion)"),
    Probe("stop-chased-retry", "lifecycle.stop.chases-current-run",
          "a stop lost its claim to a retry and ended the retried attempt "
          "(lifecycle.race.stop-vs-retry)"),
    Probe("stop-in-launch-window", "lifecycle.stop.unknown-run",
          "a stop asked the host to stop a run before its launch registered "
          "(lifecycle.race.stop-in-launch-window)"),
    Probe("stop-outcome-landed-late", "lifecycle.stop.already-finished-waits",
          "a stop heard the run already finished and the run's own ending stood "
          "(lifecycle.race.stop-already-finished-outcome-late-or-lost)"),
    Probe("stop-recorded-lost-outcome", "lifecycle.stop.lost-outcome-recorded",
          "a stop heard the run already finished, no outcome came, and the stop recorded "
          "the cancellation itself (lifecycle.race.stop-already-finished-outcome-late-or-lost)"),
    Probe("graceful-stop-then-run-ending", "lifecycle.stop.after-turn-finishes-call",
          "a graceful stop was answered StopAfterTurn and the run then recorded its own "
          "ending (lifecycle.race.graceful-stop-vs-run-ending)"),
    Probe("fast-finish-in-launch-window", "lifecycle.spawn.returns-immediately",
          "a new run reported its own ending before its spawn or retry returned "
          "(lifecycle.race.fast-finish-in-launch-window)"),
    Probe("retry-claim-lost", "lifecycle.retry.cas",
          "a retry claim lost to another writer (lifecycle.race.concurrent-retries)"),
    Probe("retry-launch-failed", "lifecycle.retry.launch-failure-reverts",
          "a retry won its claim, its run failed to start, and the claim was put back "
          "(lifecycle.race.retry-launch-failure)"),
    Probe("cap-refused", "lifecycle.spawn.concurrency-slot",
          "a spawn or retry was refused at the per-parent cap (lifecycle.race.retry-vs-cap)"),
    Probe("advance-lost", "lifecycle.continuation.advance-lost-fails",
          "a continuation's advance lost to a stop, a sweep, a retry or a pause "
          "(lifecycle.race.advance-vs-stop-sweep-retry, lifecycle.race.pause-during-continue)"),
    Probe("resume-lost-to-stop", "lifecycle.state.input-required-not-terminal",
          "an approval came back after a stop had claimed the paused task "
          "(lifecycle.race.stop-vs-approval)"),
    Probe("sweep-failed-orphan", "lifecycle.restart.fails-working",
          "the restart sweep failed a task its run did not survive "
          "(lifecycle.race.restart-during-attempt)"),
    Probe("sweep-kept-paused", "lifecycle.restart.keeps-paused",
          "the restart sweep ran while a task was paused on an approval and left it "
          "(lifecycle.race.restart-during-attempt)"),
    Probe("restart-adopting-orphan", "lifecycle.restart.before-retry",
          "the restart sweep took a retry's fresh run for an orphan and failed it: the retry "
          "was admitted before the sweep (lifecycle.race.retry-before-recover)"),
)
NAMES: tuple[str, ...] = tuple(p.name for p in CATALOGUE)
_BY_NAME = {p.name: p for p in CATALOGUE}
_CAP = "tasks: this conversation already has "
_ENDINGS = ("run_completes", "run_fails", "run_cancelled")


def hits(world: Any) -> set[str]:
    """The probes one schedule reached, read off its ``World`` after it."""
    found: set[str] = set()
    retried: set[str] = set()       # rows a retry claimed in this process
    for name, args, before, after, _live in world.writes:
        if name == "retry_claim" and isinstance(after, Task):
            retried.add(after.id)
        if name == "finalize" and after is None and isinstance(before, Task):
            found.add("finalize-cas-lost" if args[1] == before.run_id
                      else "finalize-stale-run-lost")
        elif name == "retry_claim" and after is None:
            found.add("retry-claim-lost")
        elif name == "release_retry_claim" and isinstance(after, Task):
            found.add("retry-launch-failed")
        elif name == "advance" and after is None:
            found.add("advance-lost")
        elif name == "reclaim_working" and after is None:
            found.add("resume-lost-to-stop")
        elif name == "fail_orphans":
            if after:
                found.add("sweep-failed-orphan")
            if any(row.id in retried for row in after or ()):
                found.add("restart-adopting-orphan")
            if any(row.status is TaskStatus.INPUT_REQUIRED for row in before.values()):
                found.add("sweep-kept-paused")
    launched: set[str] = set()
    for what, run in world.events:
        if what == "launch":
            launched.add(run)
        elif run not in launched and any(e == ("launch", run) for e in world.events):
            found.add("stop-in-launch-window")
    found.update(_stops(world))
    for _actor, did, _before, result in world.actions:
        if isinstance(result, TaskError) and str(result).startswith(_CAP):
            found.add("cap-refused")
        if (did in ("spawn", "retry") and isinstance(result, Task)
                and result.status in (TaskStatus.COMPLETED, TaskStatus.FAILED)
                and result.run_id in world.reported_runs):
            # the call's own run ended itself before the call returned
            found.add("fast-finish-in-launch-window")
    return found


def _stops(world: Any) -> set[str]:
    """The probes of how a stop met the run's ending, a retry or a finished run."""
    found: set[str] = set()
    rows = {row.id: row for row in world.inner.list_all()}
    ran_out = {(before.id, before.run_id) for _a, did, before, result in world.actions
               if did in _ENDINGS and isinstance(before, Task)}
    for _actor, did, before, result in world.actions:
        if not isinstance(before, Task):
            continue
        answer = world.stop_answers.get(before.run_id)
        if did == "graceful_stop":
            row = rows.get(before.id)
            if (answer is StopOutcome.AFTER_TURN and row is not None
                    and row.run_id == before.run_id and row.status.terminal
                    and (before.id, before.run_id) in ran_out):
                found.add("graceful-stop-then-run-ending")
            continue
        if did != "stop":
            continue
        won = isinstance(result, Task) and result.status is TaskStatus.CANCELLED
        if won and result.attempt > before.attempt:
            found.add("stop-chased-retry")
        if (before.id, before.run_id) in ran_out and not before.status.terminal:
            found.add("stop-won-over-run-ending" if won and result.run_id == before.run_id
                      else "run-ending-won-over-stop")
        if answer is StopOutcome.ALREADY_FINISHED:
            if won and result.run_id == before.run_id and (
                    before.id, before.run_id) not in ran_out:
                found.add("stop-recorded-lost-outcome")
            elif not won:
                found.add("stop-outcome-landed-late")
    return found


# -- a conformance case's probes ------------------------------------------------------------

_RUN_ENDINGS = ("run_completes", "run_fails", "run_cancelled")
#: The summary a run's ending records when a continuation's advance lost.
_ADVANCE_LOST = "could not advance to the next run"


def observed(operations: Any, obs: Any) -> set[str]:
    """The probes a lifecycle case's observation shows (docs/cases.md,
    "Lifecycle cases"), read off its operations, their results and the
    host calls reported: what `forge conformance` counts for any
    implementation, in process or over the pipe.  Top-level operations are
    paired with their results; a racing party nested in a host call is read
    off the case (what raced) and the host calls' reports (who won)."""
    found: set[str] = set()
    if not isinstance(obs, dict) or not isinstance(operations, list):
        return found
    results = obs.get("results") if isinstance(obs.get("results"), list) else []
    reports = [r for r in obs.get("reports") or () if isinstance(r, dict)]
    for value in [*results, *(d for r in reports for d in r.get("during") or ())]:
        if isinstance(value, dict) and str(value.get("error", "")).startswith(_CAP):
            found.add("cap-refused")
    for report in reports:
        if report.get("hook") == "launcher" and report.get("retry") and "error" in report:
            found.add("retry-launch-failed")
        elif (report.get("hook") == "on_finished"
              and str(report.get("summary", "")).startswith(_ADVANCE_LOST)):
            found.add("advance-lost")
    known: dict[str, dict] = {}        # alias -> the task's row as last answered
    used: set[int] = set()             # the reports whose `during` a stop read
    retried: set[str] = set()          # aliases a retry relaunched since the last sweep
    for op, res in zip(operations, results):
        if not isinstance(op, dict):
            continue
        name, alias = op.get("op"), op.get("task", op.get("as"))
        row = res if isinstance(res, dict) and "status" in res else None
        before = known.get(alias, {})
        if name == "recover" and isinstance(res, list):
            if res:
                found.add("sweep-failed-orphan")
            if any(a in retried for a in res):
                found.add("restart-adopting-orphan")
            if any(r.get("status") == "input_required" for r in known.values()):
                found.add("sweep-kept-paused")
            retried.clear()
        elif name in _RUN_ENDINGS and res is None and before:
            stale = "run" in op and op["run"] != before.get("run")
            found.add("finalize-stale-run-lost" if stale else "finalize-cas-lost")
        elif name == "store_retry_claim" and res is None:
            found.add("retry-claim-lost")
        elif name == "resume" and res is None and before.get("status") == "cancelled":
            found.add("resume-lost-to-stop")
        elif name in ("spawn", "retry"):
            if name == "retry" and row is not None and row.get("status") == "working":
                retried.add(alias)
            nested = [o for o in op.get("during_launch") or () if isinstance(o, dict)
                      and o.get("task") == alias]
            if any(o.get("op") == "stop" for o in nested):
                found.add("stop-in-launch-window")
            if (row is not None and row.get("status") in ("completed", "failed")
                    and any(o.get("op") in _RUN_ENDINGS for o in nested)):
                found.add("fast-finish-in-launch-window")
        elif name == "stop" and row is not None:
            found.update(_stop_outcome(op, row, before, alias, _heard(reports, alias, used)))
        elif name in _RUN_ENDINGS and row is not None and before.get("graceful_asked") == row.get(
                "run") and row.get("status") in ("completed", "failed", "cancelled"):
            found.add("graceful-stop-then-run-ending")
        if row is not None and alias is not None:
            kept = before.get("graceful_asked")
            known[alias] = dict(row)
            if name == "stop" and op.get("graceful") and op.get("stopper") == "after_turn":
                kept = row.get("run")
            if kept is not None:
                known[alias]["graceful_asked"] = kept
    return found


def _heard(reports: list, alias: Any, used: set[int]):
    """The results of the operations raced inside a stop's host calls (the
    `during` of the stopper's and the outcome wait's reports for the task),
    from the first report no earlier stop read."""
    for report in reports:
        if (report.get("hook") in ("stopper", "await_outcome") and report.get("task") == alias
                and isinstance(report.get("during"), list) and id(report) not in used):
            used.add(id(report))
            yield from report["during"]


def _stop_outcome(op: dict, row: dict, before: dict, alias: Any, heard: Any) -> set[str]:
    """The probes of how one stop met the run's ending, a retry or a finished run.
    `heard` yields the results of the operations raced inside this stop's host
    calls, in order (the reports' `during`)."""
    found: set[str] = set()
    won = row.get("status") == "cancelled"
    raced = [o for key in ("during_stop", "during_wait") for o in op.get(key) or ()
             if isinstance(o, dict)]
    for nested in raced:
        value = next(heard, None)
        if nested.get("op") in _RUN_ENDINGS and nested.get("task") == alias:
            # the run's ending landed (its row came back) or lost to the stop
            found.add("run-ending-won-over-stop" if isinstance(value, dict)
                      else "stop-won-over-run-ending")
    raced = [o.get("op") for o in raced]
    if won and isinstance(before.get("attempt"), int) and row.get("attempt", 0) > before["attempt"]:
        found.add("stop-chased-retry")
    if op.get("stopper") == "already_finished":
        found.add("stop-recorded-lost-outcome" if won and not raced
                  else "stop-outcome-landed-late")
    return found


#: The probes a conformance report counts for lifecycle cases (`observed`).
OBSERVED: tuple[str, ...] = NAMES


def check_required(required: Sequence[str], where: str = "--require") -> None:
    """Refuse a ``--require`` that names no lifecycle probe.

    Raises:
        InputError: naming ``where``, listing the probes there are.
    """
    for name in required:
        if name not in _BY_NAME:
            raise InputError(f"no lifecycle probe is called {name[:60]!r}; the probes are "
                             f"{', '.join(NAMES)}", file=where)


def coverage(counts: dict[str, int]) -> dict[str, int]:
    """Each lifecycle probe's count of schedules that reached it (0: never)."""
    return {name: counts.get(name, 0) for name in NAMES}
