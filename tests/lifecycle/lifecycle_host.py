"""A scripted fake host for the lifecycle tests: records launches, stops and reports.

Each injected function can run a one-shot ``interject`` callable first, which is
how a test places a racing party (a stop, an outcome) inside another call.
"""

from __future__ import annotations

from forge.lifecycle.manager import Config, Manager
from forge.lifecycle.records import StopOutcome
from forge.lifecycle.store import MemoryStore


class FakeHost:
    def __init__(self, store=None, **config):
        self.launches = []
        self.stops = []
        self.finished = []
        self.delivered = []
        self.stop_answer = StopOutcome.CANCELLED
        self.launch_error = None
        self.on_launch = None  # one-shot callable(req), runs inside the launcher
        self.on_stop = None  # one-shot callable(run_id), runs inside the stopper
        self.on_await = None  # one-shot callable(task), the stop's brief wait
        self.store = MemoryStore() if store is None else store
        self.mgr = Manager(Config(store=self.store, launcher=self._launch, stopper=self._stop,
                                  on_finished=self.finished.append,
                                  on_result_delivered=self.delivered.append,
                                  await_outcome=self._await, **config))

    def _launch(self, req):
        self.launches.append(req)
        hook, self.on_launch = self.on_launch, None
        if hook:
            hook(req)
        if self.launch_error:
            err, self.launch_error = self.launch_error, None
            raise RuntimeError(err)

    def _stop(self, run_id, graceful):
        self.stops.append((run_id, graceful))
        hook, self.on_stop = self.on_stop, None
        if hook:
            hook(run_id)
        return self.stop_answer

    def _await(self, task):
        hook, self.on_await = self.on_await, None
        if hook:
            hook(task)
