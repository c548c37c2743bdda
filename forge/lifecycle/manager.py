"""The Manager: spawn, run endings, continuations, stop, retry, restart sweep,
task_status's bounded wait, ModelHasResult and resuming an approval.

Lives here: the policy that sequences store CASes and calls the injected host
functions (resolver, launcher, stopper, continue hook, report hooks,
OnTaskUpdate). Racing parties are ordinary calls: a test orders them, e.g. by
calling back into the Manager from inside a launcher or stopper, or by
scheduling them on the clock a wait runs on.
Does not live here: the model's tools (``tools``) and their texts (``cards``),
notification delivery (the Manager REPORTS endings), deleting anything
(lifecycle.delete.manager-deletes-nothing; the cascade is the session
repository's).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import attrs

from forge.deferred import deferred
from forge.lifecycle.records import (
    Continuation,
    Info,
    LaunchRequest,
    RunOutcome,
    SpawnRequest,
    Spec,
    StopOutcome,
    Task,
    TaskStatus,
)
from forge.lifecycle.clock import Clock, VirtualClock
from forge.lifecycle.errors import LookupFailed, Refused, TaskError
from forge.lifecycle.history import Recorder
from forge.lifecycle.sessions import MemorySessions, Session, SessionRepo
from forge.lifecycle.store import KEEP, CapReached, NotFound, Store
from forge.variation import declare

# Loaded on first use, not with this module (CONTRIBUTING.md, "Where imports go").
if TYPE_CHECKING:
    from forge.lifecycle import tools as lifecycle_tools
else:
    lifecycle_tools = deferred("forge.lifecycle.tools")

# Variation sites of the manager's race rules (forge.variation).
STOP_DOES_NOT_CHASE = declare("lifecycle.stop-does-not-chase", "lifecycle",
                              "a stop that loses its claim to a retry does not chase the "
                              "retried attempt")
LAUNCH_NEVER_LOOKS_BACK = declare("lifecycle.launch-never-looks-back", "lifecycle",
                                  "a launch does not stop a run whose task was ended in the "
                                  "claim-to-launch window")
SWEEP_REPORTS_NOTHING = declare("lifecycle.sweep-reports-nothing", "lifecycle",
                                "the restart sweep fails interrupted tasks without reporting them")
STATUS_DELIVERS_WORKING = declare("lifecycle.status-delivers-working", "lifecycle",
                                  "a status read counts as delivered even when the task is "
                                  "still working")
# ... and of its liveness rules: each leaves a hot state the liveness monitors
# (forge.lifecycle.liveness) see never left.
STOP_NEVER_CHASES_RUN = declare("lifecycle.stop-never-chases-run", "lifecycle",
                                "a stop the host answers 'already finished' never chases the "
                                "run: it neither waits for the outcome nor records it as lost, "
                                "and returns with the task still working")
STOP_REPORTS_NOTHING = declare("lifecycle.stop-reports-nothing", "lifecycle",
                               "a stop that wins its claim never reports the cancellation to "
                               "the host")
FAILED_LAUNCH_KEEPS_CLAIM = declare("lifecycle.failed-launch-keeps-claim", "lifecycle",
                                    "a retry whose run fails to start keeps its claim: the task "
                                    "stays working on a run that never started")
GRACEFUL_IGNORED_ON_FAILURE = declare("lifecycle.graceful-ignored-on-failure", "lifecycle",
                                      "a graceful stop followed by a failed last turn still "
                                      "asks the Continue hook")

#: Store failures the original logs and moves past (component=tasks in its slog).
LOG = logging.getLogger("forge.lifecycle")

SUMMARY_LIMIT = 300
DEFAULT_CAP = 6
STOPPED = "stopped"
STOPPED_AWAITING = "stopped while awaiting approval"
STOPPED_AFTER_TURN = "stopped after the current turn"


LABEL_LIMIT = 60
NO_REASON = "no reason was recorded"
ADVANCE_LOST = "the task was moved before the next run could start"


def default_label(text: str) -> str:
    """A spawn without a label is labelled by the first 60 characters (runes)
    of its input (notes 2.10), not by the agent's name."""
    return text[:LABEL_LIMIT]


def summarize(text: str, limit: int = SUMMARY_LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


class CounterIds:
    """Deterministic id source: ``t1, r2, s3, ...`` from one counter."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}{next(self._n)}"


def _none(*_a: Any) -> None:
    return None


def _or_default(default: Any) -> Callable[[Any], Any]:
    """A limit of 0 or less (or None) means its default, as the original's
    Config reads every limit (notes 2.6: "Default (when <= 0 / nil)")."""
    def convert(value: Any) -> Any:
        return default if value is None or value <= 0 else value
    return convert


@attrs.define
class Config:
    store: Store
    launcher: Callable[[LaunchRequest], None]
    resolver: Callable[[str, str], Spec] = lambda parent, name: Spec(display_name=name)
    stopper: Callable[[str, bool], StopOutcome] | None = None
    on_finished: Callable[[Task], None] = _none
    on_result_delivered: Callable[[Task], None] = _none
    continue_hook: Callable[[Task, RunOutcome], Continuation | None] | None = None
    # Both bounded waits (the stop's look-again, task_status) run on this clock;
    # the default is virtual, so a wait costs no wall time and what arrives
    # "meanwhile" is whatever was scheduled on it.
    clock: Clock = attrs.field(factory=VirtualClock)
    # How long a stop that heard StopAlreadyFinished waits for the outcome
    # before looking again (lifecycle.stop.already-finished-waits).
    stop_settle_wait: float = 2.0
    # Observer called as that wait begins (a test places a racing party here).
    await_outcome: Callable[[Task], None] | None = None
    summary_limit: int = attrs.field(default=SUMMARY_LIMIT, converter=_or_default(SUMMARY_LIMIT))
    # task_status(wait_seconds) never blocks longer (lifecycle.status.wait-bounded).
    max_status_wait: float = attrs.field(default=120.0, converter=_or_default(120.0))
    # A status wait re-reads the store at least this often (notes 2.10: 250 ms),
    # so an ending written by another process or connection is noticed; an
    # ending this Manager claims wakes it at once.
    status_poll: float = attrs.field(default=0.25, converter=_or_default(0.25))
    sessions: SessionRepo | None = None  # None: a repository of the Manager's own
    on_task_update: Callable[[Task], None] = _none
    describe_state: Callable[[str, Any], str] | None = None
    max_continuations: int = attrs.field(default=50, converter=_or_default(50))
    max_attempts_per_task: int = attrs.field(default=3, converter=_or_default(3))
    max_depth: int = attrs.field(default=1, converter=_or_default(1))
    # Live tasks per parent: a number, or a function asked at every spawn and
    # retry (the original's era-E shape); 0 or less means 6 (``Manager.cap``).
    max_concurrent_per_parent: int | Callable[[], int] = DEFAULT_CAP
    # None: the store's own ``next_id`` (ids that never repeat across processes
    # and restarts over one database), or a counter of this Manager's for a
    # store without one.
    new_id: Callable[[str], str] | None = None


class Manager:
    def __init__(self, config: Config) -> None:
        self.c = config
        self.store = config.store
        self.sessions = config.sessions if config.sessions is not None else MemorySessions()
        self.new_id: Callable[[str], str] = (
            config.new_id or getattr(self.store, "next_id", None) or CounterIds())
        self.recovered = False
        # Endings this Manager claimed (finalize, release): a status waiter
        # wakes when it moves, and polls the store for everyone else's.
        self._endings = 0
        # Runs between their claim and the end of their launch: True once the run
        # reported its own ending (a fast finish, never to be stopped).
        self._launching: dict[str, bool] = {}
        # Per-parent locks, reference-counted so the table empties itself.
        self._table = threading.Lock()
        self._parents: dict[str, list] = {}

    @contextmanager
    def _parent_lock(self, parent_session_id: str) -> Iterator[None]:
        """Serialize cap checks per parent (the cap holds under concurrent spawns
        and retries within this Manager)."""
        with self._table:
            entry = self._parents.setdefault(parent_session_id, [threading.RLock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._table:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._parents[parent_session_id]

    def _update(self, snap: Task | None) -> None:
        """lifecycle.update.on-task-update: every public change, as the new row."""
        if snap is not None:
            self.c.on_task_update(snap)

    # -- reports -----------------------------------------------------------
    def _report(self, snap: Task) -> None:
        """lifecycle.report.cancel-is-delivered / lifecycle.report.claimed-snapshot."""
        if snap.status is TaskStatus.CANCELLED:
            self.c.on_result_delivered(snap)
        else:
            self.c.on_finished(snap)

    def _finish(self, task_id: str, run_id: str, status: TaskStatus, summary: str,
                result: str, state: Any = KEEP) -> Task | None:
        """Claim a run's ending and announce it; a store that fails the write
        records nothing (logged, as notes 3.3 step 8)."""
        try:
            snap = self.store.finalize(task_id, run_id, status, summary, result, state)
        except (NotFound, Refused):
            raise
        except Exception as exc:  # noqa: BLE001 - any store failure: log, record nothing
            LOG.warning("tasks: finalizing task %s: %s", task_id, exc)
            return None
        if snap is not None:
            self._announce(snap)
        return snap

    def _wake(self) -> None:
        """This Manager claimed an ending: wake its status waiters now."""
        self._endings += 1
        self.c.clock.notify()

    def _announce(self, snap: Task, report: bool = True) -> None:
        """A won ending: wake waiters, update the card, report it."""
        self._wake()
        self._update(snap)
        if report:
            self._report(snap)

    # -- lookups -----------------------------------------------------------
    def meta_for(self, session_id: str) -> tuple[Task | None, bool]:
        """(row, is_task). Store errors propagate: an error is not "not a task"
        (lifecycle.depth.lookup-error-refuses)."""
        try:
            row = self.store.by_child_session(session_id)
        except NotFound:  # a store that answers "not found" rather than None
            return None, False
        except Exception as exc:  # noqa: BLE001 - any store failure is "could not tell"
            raise LookupFailed(f'tasks: looking up session "{session_id}": {exc}') from exc
        return row, row is not None

    def info(self, task: Task, agent: str = "") -> Info:
        return Info.of(task, agent)

    def progress(self, info: Info) -> str:
        """lifecycle.status.progress: the host's one-line account of where a job
        stands; only for a task with a kind, never read by the Manager itself."""
        if self.c.describe_state is None or not info.kind:
            return ""
        return self.c.describe_state(info.kind, info.state)

    def cap(self) -> int:
        """The per-parent cap now: the configured number, or the configured
        function's answer, asked at every spawn and retry; 0 or less (or no
        answer) means 6 (notes 2.6, MaxConcurrentPerParent)."""
        cap = self.c.max_concurrent_per_parent
        n = cap() if callable(cap) else cap
        return DEFAULT_CAP if n is None or n <= 0 else n

    def _live(self, parent_session_id: str) -> int:
        return len(self.store.list_non_terminal(parent_session_id))

    def _check_slot(self, parent_session_id: str, cap: int,
                    row: Task | None = None) -> None:
        """lifecycle.spawn.concurrency-slot / lifecycle.retry.concurrency-slot. The
        per-parent lock serializes this check within one Manager; the store's
        create and claim check the cap again in their own step, so it also holds
        for Managers of two processes over one store."""
        if self._live(parent_session_id) >= cap:
            raise self._cap_error(cap, row)

    def _cap_error(self, n: int, row: Task | None = None) -> TaskError:
        return TaskError(f"tasks: this conversation already has {n} tasks running; "
                         "wait for one to finish", row)

    # -- spawn -------------------------------------------------------------
    def spawn(self, req: SpawnRequest) -> Task:
        return self.spawn_resolved(req)[0]

    def spawn_resolved(self, req: SpawnRequest) -> tuple[Task, Spec]:
        """Spawn, also answering what the resolver said (the spawn card's agent)."""
        if not req.parent_session_id:
            raise TaskError("tasks: Spawn requires a parent session")
        parent, is_task = self.meta_for(req.parent_session_id)
        depth = parent.depth + 1 if is_task else 1
        if depth > self.c.max_depth:  # lifecycle.depth.spawn-max-depth
            raise TaskError(f"tasks: cannot spawn from a task at depth {depth - 1}")
        with self._parent_lock(req.parent_session_id):
            cap = self.cap()
            try:
                self._check_slot(req.parent_session_id, cap)
            except TaskError:
                raise
            except Exception as exc:  # noqa: BLE001 - a store failure, one text (notes 2.9)
                raise TaskError(f"tasks: counting live tasks: {exc}") from exc
            try:
                spec = self.c.resolver(req.parent_session_id, req.agent_name)
            except Exception as exc:  # noqa: BLE001 - any resolver failure (notes 2.9)
                raise TaskError(f'tasks: resolving agent "{req.agent_name}": {exc}') from exc
            label = req.label or default_label(req.input)
            # Minted before the transaction, each in its own: an id handed out is
            # spent even if the spawn then dies (a gap, never a repeat).
            child, tid, rid = self.new_id("s"), self.new_id("t"), self.new_id("r")
            with self._together():  # no hidden session without its row, even on a crash
                try:
                    self.sessions.create(Session(id=child, title=f"{req.kind or 'task'}: {label}",
                                                 hidden=True, parent_id=req.parent_session_id))
                except Exception as exc:  # noqa: BLE001 - any repository failure, one text
                    raise TaskError(f"tasks: creating task session: {exc}") from exc
                try:
                    row = self.store.create(Task(
                        id=tid, run_id=rid,
                        parent_session_id=req.parent_session_id, child_session_id=child,
                        label=label, kind=req.kind, state=req.state,
                        parent_run_id=req.parent_run_id, tool_call_id=req.tool_call_id,
                        depth=depth, inherit=spec.inherit),
                        max_live=cap)
                except BaseException as exc:
                    self.sessions.delete(child)
                    if isinstance(exc, CapReached):  # another process took the last slot
                        raise self._cap_error(cap) from None
                    if isinstance(exc, Exception):
                        raise TaskError(f"tasks: creating task: {exc}") from exc
                    raise
            self._launching[row.run_id] = False
            try:
                self.c.launcher(LaunchRequest(task_id=row.id, run_id=row.run_id,
                                              session_id=child, input=req.input,
                                              kind=row.kind, state=row.state,
                                              inherit=row.inherit))
            except BaseException as exc:
                # lifecycle.spawn.rollback-detached: whatever ended the launch - its
                # own failure or the caller being cancelled - the half-made task goes,
                # row first, then its session through the session repository.
                self._launching.pop(row.run_id, None)
                with self._together():
                    self.store.delete(row.id)
                    self.sessions.delete(child)
                if isinstance(exc, Exception):  # notes 3.1 step 8: a wrapped error
                    raise TaskError(f"tasks: starting task run: {exc}") from exc
                raise
            settled = self._reconcile(row.id, row.run_id)
        self._update(settled)
        return settled, spec

    def _together(self) -> Any:
        """One transaction over the store and the session repository when they
        share a database (a repository whose ``store`` is this store and has
        ``transaction``), so a crash cannot leave a session without its row;
        otherwise no grouping, and ``recover`` sweeps what a crash left."""
        # A Recorder passes calls straight through, so its store's transaction
        # is the one to join; a scheduling wrapper (the simulator's) is not
        # seen through: holding the database across a scheduled step would
        # block the other actors it schedules.
        under = self.store.store if isinstance(self.store, Recorder) else self.store
        shared = getattr(self.sessions, "store", None)
        joint = shared is not None and shared in (self.store, under)
        begin = getattr(self.store, "transaction", None)
        return begin() if joint and begin is not None else nullcontext()

    def _reconcile(self, task_id: str, run_id: str) -> Task:
        """After a launch: a terminator that landed in the claim->launch window
        (stop, stop-tree, sweep) left the row off this run; stop the run just
        started - unless the run itself reported its ending meanwhile."""
        reported = self._launching.pop(run_id, False)
        row = self.store.get(task_id)
        moved_on = row.run_id != run_id or row.status.terminal
        if LAUNCH_NEVER_LOOKS_BACK.on:
            return row
        if moved_on and not reported and self.c.stopper is not None:
            self._ask_stopper(run_id, False)
        return row

    def _ask_stopper(self, run_id: str, graceful: bool) -> StopOutcome:
        # notes 2.5: no Stopper, or one that fails, is "the host has no such
        # run" - nothing was cancelled, so the stop claims the ending itself
        if self.c.stopper is None:
            return StopOutcome.UNKNOWN_RUN
        try:
            return self.c.stopper(run_id, graceful)
        except Exception:  # noqa: BLE001 - a failing stopper still lets the stop claim
            return StopOutcome.UNKNOWN_RUN

    # -- run endings -------------------------------------------------------
    def on_run_finished(self, session_id: str, out: RunOutcome) -> Task | None:
        """lifecycle.outcome.entry-point: the single entry for run endings.

        As the original (notes 3.3), a store that cannot say whose session
        this is, or cannot write the ending, records nothing: the failure is
        logged and the call returns None (the host's restart sweep, or the
        stop's lost-outcome rule, ends such a task later)."""
        try:
            row = self.store.by_child_session(session_id)
        except NotFound:  # not a task's session (a store that says so rather than None)
            return None
        except Exception as exc:  # noqa: BLE001 - any store failure: log, record nothing
            LOG.warning("tasks: looking up the task of session %r: %s", session_id, exc)
            return None
        if row is None:
            return None
        run_id = out.run_id or row.run_id  # lifecycle.outcome.run-id
        status = TaskStatus(out.status)
        if status is TaskStatus.INPUT_REQUIRED:
            snap = self.store.mark_input_required(row.id, run_id)
            self._update(snap)
            return snap
        if status is TaskStatus.WORKING:
            return None  # not an ending: ignored, as every non-terminal report but a pause
        if run_id in self._launching:
            self._launching[run_id] = True  # it ended on its own: never stop it
        if GRACEFUL_IGNORED_ON_FAILURE.on and status is TaskStatus.FAILED:
            out = attrs.evolve(out, graceful_stop=False)
        if status is TaskStatus.COMPLETED and out.graceful_stop:
            status = TaskStatus.CANCELLED
        summary, result = self._texts(status, out)
        asks = (self.c.continue_hook is not None
                and status in (TaskStatus.COMPLETED, TaskStatus.FAILED)
                and not out.graceful_stop  # lifecycle.stop.ends-task-over-continue
                and bool(out.run_id) and row.status is TaskStatus.WORKING
                and row.run_id == out.run_id)  # lifecycle.continuation.when-asked
        if not asks:
            return self._finish(row.id, run_id, status, summary, result)
        return self._continue(row, out, status, summary, result)

    def _sum(self, text: str) -> str:
        return summarize(text, self.c.summary_limit)

    def _texts(self, status: TaskStatus, out: RunOutcome) -> tuple[str, str]:
        """(summary, result) of a run's ending (notes 3.3 step 3-4): the result is
        the trimmed text, a failure's error when the text is empty; a graceful
        stop's summary says so when the run left no text."""
        full = out.text.strip()
        if status is TaskStatus.FAILED and not full:
            full = out.err
        summary = self._sum(full)
        if status is TaskStatus.CANCELLED and not summary:
            summary = STOPPED_AFTER_TURN
        return summary, full

    def _continue(self, row: Task, out: RunOutcome, status: TaskStatus, summary: str,
                  result: str) -> Task | None:
        fail = TaskStatus.FAILED
        try:
            cont = self.c.continue_hook(row, out)
        except Exception as exc:  # noqa: BLE001 - lifecycle.continuation.error-fails
            return self._finish(row.id, out.run_id, fail, self._sum(str(exc)), str(exc))
        if cont is None:  # lifecycle.continuation.nil-ends
            return self._finish(row.id, out.run_id, status, summary, result)
        if not cont.input:  # lifecycle.continuation.no-input-ends
            if cont.err:
                return self._finish(row.id, out.run_id, fail, self._sum(cont.err), cont.err,
                                    cont.state)
            return self._finish(row.id, out.run_id, status, summary, result, cont.state)
        if row.continuations >= self.c.max_continuations:  # .ceiling / .ceiling-keeps-state
            msg = (f"stopped after {row.continuations + 1} runs: the task's continuation "
                   f"ceiling ({self.c.max_continuations}) was reached")
            return self._finish(row.id, out.run_id, fail, msg, msg)
        next_run = self.new_id("r")
        state = KEEP if cont.state is None else cont.state
        try:
            moved = self.store.advance(row.id, out.run_id, next_run, state)
        except Exception as exc:  # noqa: BLE001 - a store failure ends the task failed
            msg = f"could not advance to the next run: {exc}"
            return self._finish(row.id, out.run_id, fail, msg, msg)
        if moved is None:  # lifecycle.continuation.advance-lost-fails
            msg = f"could not advance to the next run: {ADVANCE_LOST}"
            return self._finish(row.id, out.run_id, fail, self._sum(msg), msg)
        self._launching[next_run] = False
        try:
            self.c.launcher(LaunchRequest(task_id=moved.id, run_id=next_run,
                                          session_id=moved.child_session_id, input=cont.input,
                                          kind=moved.kind, state=moved.state,
                                          inherit=moved.inherit))
        except Exception as exc:  # noqa: BLE001 - lifecycle.continuation.launch-failure-fails
            self._launching.pop(next_run, None)
            msg = f"could not start the next run: {exc}"
            return self._finish(moved.id, next_run, fail, msg, msg)
        settled = self._reconcile(moved.id, next_run)
        self._update(settled)
        return settled

    # -- stop --------------------------------------------------------------
    def stop(self, task_id: str, graceful: bool = False) -> Task:
        """Chase the current run (lifecycle.stop.chases-current-run), in at most
        two passes, as the original (notes 3.5): each pass reads the row and
        tries to end the attempt it names; a pass that lost its claim to a
        retry, or heard "already finished" and waited, leaves the second pass
        to look again. A finished task on the first pass is refused; on the
        second, someone else's ending stands."""
        passes = 1 if STOP_DOES_NOT_CHASE.on else 2
        row = None
        for n in range(passes):
            row = self.store.get(task_id)
            if row.status.terminal:
                if n == 0:
                    raise TaskError(f"tasks: task already {row.status.value}", row)
                return row
            done = self._stop_attempt(row, graceful, last=n == passes - 1)
            if done is not None:
                return done
        return self.store.get(task_id)  # two lost passes: the row as it stands

    def _stop_attempt(self, row: Task, graceful: bool, last: bool) -> Task | None:
        """One pass at the attempt ``row`` names: the row the call ends with, or
        None to go round again."""
        if row.status is TaskStatus.INPUT_REQUIRED:
            # claim first, then tell the host, won or not (lifecycle.race.stop-vs-approval)
            snap = self.store.finalize(row.id, row.run_id, TaskStatus.CANCELLED,
                                       STOPPED_AWAITING, STOPPED_AWAITING)
            self._ask_stopper(row.run_id, graceful)
            if snap is not None:
                self._announce(snap, report=not STOP_REPORTS_NOTHING.on)
            return snap
        answer = self._ask_stopper(row.run_id, graceful)
        if answer is StopOutcome.AFTER_TURN and graceful:
            return self.store.get(row.id)  # lifecycle.stop.after-turn-finishes-call
        if answer is StopOutcome.ALREADY_FINISHED and STOP_NEVER_CHASES_RUN.on:
            return self.store.get(row.id)
        if answer is StopOutcome.ALREADY_FINISHED and not last:
            # lifecycle.stop.already-finished-waits: the outcome may be on its
            # way; give it its moment and look again on the last pass (which,
            # hearing the same, records the ending itself: it was lost)
            self._settle(row)
            return None
        snap = self.store.finalize(row.id, row.run_id, TaskStatus.CANCELLED, STOPPED, STOPPED)
        if snap is None:
            return None  # a retry moved the row: the next pass chases the new attempt
        # The first ask may have missed a run still being launched
        # (lifecycle.stop.unknown-run); it is reachable now, so ask again,
        # whatever the first answer was (notes 3.5: the Stopper must tolerate
        # it) - with the launch's own check after it starts a run, this closes
        # the window from both sides.
        self._ask_stopper(row.run_id, False)
        self._announce(snap, report=not STOP_REPORTS_NOTHING.on)
        return snap

    def _settle(self, row: Task) -> None:
        """Give a run that "already finished" its moment: wait until the row leaves
        this attempt (an ending, a retry) or the settle wait passes."""
        if self.c.await_outcome is not None:
            self.c.await_outcome(row)

        def moved() -> bool:
            now = self.store.get(row.id)
            return now.run_id != row.run_id or now.status is not TaskStatus.WORKING

        self.c.clock.wait_for(moved, self.c.stop_settle_wait)

    def stop_tree(self, session_id: str) -> list[Task]:
        """Stop every live task of a session, oldest first; deletes nothing
        (notes 2.8). A task that finished meanwhile is skipped; every other
        refusal is gathered into one error, one line each."""
        try:
            live = self.store.list_non_terminal(session_id)
        except Exception as exc:  # noqa: BLE001 - a store failure, one text
            raise TaskError(f"tasks: listing live tasks: {exc}") from exc
        stopped, errors = [], []
        for task in live:
            try:
                stopped.append(self.stop(task.id))
            except TaskError as exc:
                if not str(exc).startswith("tasks: task already "):
                    errors.append(str(exc))
            except NotFound as exc:
                errors.append(str(exc))
        if errors:
            raise TaskError("\n".join(errors))
        return stopped

    # -- retry -------------------------------------------------------------
    def retry(self, task_id: str) -> Task:
        """failed -> working on the same session with a new run (lifecycle.retry.*).

        A refusal is a TaskError carrying the row as it stands. A launch that
        fails puts the claim back (the task is failed again, its attempt
        rolled back), reports the ending through OnFinished - the store wrote
        its debt in the same step - and raises ``tasks: restarting task run:
        <err>`` with the row (notes 3.2 step 7). On the model's path the tool
        then settles that debt through ModelHasResult (``tools.retry_in_hand``):
        the model reads the failure in the tool's result."""
        if not self.recovered:  # lifecycle.restart.before-retry
            raise TaskError("tasks: recovery has not run; retries are not accepted yet")
        row = self.store.get(task_id)
        with self._parent_lock(row.parent_session_id):
            row = self.store.get(task_id)
            self._retryable(row)
            cap = self.cap()
            self._check_slot(row.parent_session_id, cap, row)
            prompt = self.retry_prompt(row)  # before the claim clears the failure
            new_run = self.new_id("r")
            claimed = self.store.retry_claim(task_id, new_run, self.c.max_attempts_per_task,
                                             max_live=cap)
            if claimed is None:
                now = self.store.get(task_id)
                self._retryable(now)
                self._check_slot(now.parent_session_id, cap, now)
                raise TaskError("tasks: another writer claimed this task first; try again", now)
            self._launching[new_run] = False
            try:
                self.c.launcher(LaunchRequest(task_id=claimed.id, run_id=new_run,
                                              session_id=claimed.child_session_id,
                                              input=prompt, kind=row.kind, state=row.state,
                                              inherit=row.inherit, retry=True))
            except Exception as exc:  # noqa: BLE001 - lifecycle.retry.launch-failure-reverts
                self._launching.pop(new_run, None)
                if FAILED_LAUNCH_KEEPS_CLAIM.on:
                    raise TaskError(f"tasks: restarting task run: {exc}",
                                    self.store.get(task_id)) from exc
                now = self._release(task_id, new_run, f"retry could not start: {exc}")
                raise TaskError(f"tasks: restarting task run: {exc}", now) from exc
            settled = self._reconcile(task_id, new_run)
        self._update(settled)
        return settled

    def _retryable(self, row: Task) -> None:
        """lifecycle.retry.only-failed / lifecycle.retry.attempt-limit."""
        if row.status is not TaskStatus.FAILED:
            raise TaskError(f"tasks: cannot retry a task that is {row.status.value}; "
                            "only a failed task can be retried", row)
        cap = self.c.max_attempts_per_task
        if row.attempt >= cap:
            raise TaskError(f"tasks: this task has already used its {cap} attempts; "
                            "start a new task instead", row)

    def retry_prompt(self, row: Task) -> str:
        """The retry run's input: why the last attempt failed, and to resume."""
        reason = self._sum(row.result.strip() or row.summary.strip()) or NO_REASON
        return (f"A previous attempt at this task failed: {reason}. The conversation above is "
                "the progress made so far. Review it and continue the task to completion; "
                "avoid repeating work that already succeeded.")

    def _release(self, task_id: str, run_id: str, msg: str) -> Task | None:
        """Put back a won claim whose run never started; report the ending it
        owes (lifecycle.retry.launch-failure-host-api: OnFinished, whoever
        asked). The row as it stands after, or None if it is gone."""
        snap = self.store.release_retry_claim(task_id, run_id, self._sum(msg), msg)
        if snap is None:
            try:
                return self.store.get(task_id)
            except NotFound:
                return None
        self._wake()
        self._update(snap)
        self.c.on_finished(snap)
        return snap

    # -- reading -------------------------------------------------------------
    def list(self, parent_session_id: str) -> list[Task]:
        """The conversation's tasks, newest first; settles no debt
        (lifecycle.status.listing-no-debt)."""
        return self.store.list_by_parent(parent_session_id)

    def status(self, task_id: str, wait: float = 0.0) -> Task:
        """Read one task, waiting up to ``wait`` seconds (capped by max_status_wait)
        for it to finish. A finished task read here is the model's: delivered.

        The wait is the original's loop (notes 3.6): read the row; finished, or
        the deadline passed, ends it; else wait on the clock for an ending this
        Manager claims, or ``status_poll`` seconds, whichever comes first, and
        read again - so an ending another process or connection wrote is seen
        at the next poll, under the virtual clock as under real time."""
        wait = max(0.0, min(float(wait), self.c.max_status_wait))
        clock = self.c.clock
        deadline = clock.now() + wait
        while True:
            row = self.store.get(task_id)
            left = deadline - clock.now()
            if row.status.terminal or left <= 1e-9:  # (what float sums leave over)
                break
            seen = self._endings
            clock.wait_for(lambda: self._endings != seen, min(self.c.status_poll, left))
        if row.status.terminal or STATUS_DELIVERS_WORKING.on:
            self.c.on_result_delivered(row)
        return row

    def model_has_result(self, info: Info) -> None:
        """The model was handed ``info``: if that is this attempt's ending, the debt
        is settled (lifecycle.tools.model-has-result). A working view, or the
        view of an attempt a retry has since replaced, settles nothing."""
        if not info.status.terminal:
            return
        try:
            row = self.store.get(info.task_id)
        except NotFound:
            return
        if row.status.terminal and max(row.attempt, 1) == info.attempt:
            self.c.on_result_delivered(row)

    # -- approvals -----------------------------------------------------------
    def resume_after_approval(self, task_id: str, run_id: str = "") -> Task | None:
        """The approval a paused task waited on came back: the same run goes on
        (input_required -> working), unless a stop claimed the row first."""
        row = self.store.get(task_id)
        snap = self.store.reclaim_working(task_id, run_id or row.run_id)
        self._update(snap)
        return snap

    # -- the model's tools -------------------------------------------------------
    def tools(self) -> list:
        """spawn_task, then task_status, task_retry, task_stop (lifecycle.tools.order)."""
        return lifecycle_tools.tools(self)

    def spawn_tool(self) -> Any:
        return lifecycle_tools.spawn_tool(self)

    def task_tools(self) -> list:
        return lifecycle_tools.task_tools(self)

    # -- restart -----------------------------------------------------------
    def recover(self) -> list[Task]:
        """lifecycle.restart.recover-at-startup: fail every working row, report each."""
        try:
            failed = self.store.fail_orphans()
        except Exception as exc:  # noqa: BLE001 - a store failure, one text (notes 2.8)
            raise TaskError(f"tasks: failing orphaned tasks: {exc}") from exc
        for snap in failed:
            self._update(snap)
            if not SWEEP_REPORTS_NOTHING.on:
                self.c.on_finished(snap)
        self.sweep_sessions()
        self.recovered = True
        return failed

    def sweep_sessions(self) -> list[str]:
        """Delete every hidden child session no task row owns: what a spawn killed
        between its session and its row, or between a failed launch's two
        deletes, left behind (a repository without a shared transaction). Runs
        in ``recover``, before this host spawns anything; the ids deleted."""
        gone = []
        for session in self.sessions.list(include_hidden=True):
            if (session.hidden and session.parent_id
                    and self.store.by_child_session(session.id) is None):
                gone.extend(self.sessions.delete(session.id))
        return gone
