"""One pool of worker processes for every campaign: local, or on a Dask cluster.

`forge explore --workers N`, `forge conformance --workers N` and `forge
mutants --workers N` all hand their work to a `Pool`: a context manager
that starts the workers, runs a `setup` function once in each (to build
what every task of the campaign shares - a runner, an adapter, the cases),
and takes tasks with `submit`, whose futures answer `.result()` (an error
in the task is raised there).  Order is
the caller's business: it keeps each future beside its item and merges in
item order, so a report never depends on which worker finished first.

Backends:

- `local` (the default): a `concurrent.futures.ProcessPoolExecutor`; `setup`
  runs as the pool's initializer.  With one worker there is no pool: setup
  and tasks run in this process, so `--workers 1` is the serial campaign.
- `dask`: a `distributed.Client` at `address` (a scheduler such as
  `tcp://10.0.0.5:8786`), or, without one, a `LocalCluster` of `workers`
  single-threaded worker processes on this machine.  Dask has no
  initializer, so `setup`'s arguments are scattered to every worker once and
  each task runs `setup` in its worker the first time that worker sees the
  campaign (`_in_worker`).  Dask is an optional extra (`pip install
  'forge-kit[distributed]'`); without it, asking for it is bad input.

What does not live here: what a task does, and merging results (each
campaign: `forge.campaign`, `forge.conformance.runner`,
`forge.conformance.mutants`).
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from forge.errors import InputError

#: The backends `--backend` takes.
BACKENDS = ("local", "dask")
#: What to install for the dask backend (the optional extra).
DASK_EXTRA = "pip install 'forge-kit[distributed]'"


@attrs.frozen
class Backend:
    """Where a campaign's workers run: `local` processes, or `dask` (at
    `address`, or a local cluster when it is None)."""

    kind: str = "local"
    address: str | None = None


LOCAL = Backend()


def backend(kind: str = "local", address: str | None = None) -> Backend:
    """The backend named by `--backend` and `--address`.

    Raises:
        InputError: naming the flag, for an unknown backend, an address
            without dask, or dask when it is not installed.
    """
    if kind not in BACKENDS:
        raise InputError(f"unknown backend {kind[:40]!r}; use one of {', '.join(BACKENDS)}",
                         file="--backend")
    if address is not None and kind != "dask":
        raise InputError("an address names a dask scheduler; give --backend dask too",
                         file="--address")
    if kind == "dask":
        try:
            import distributed  # noqa: F401 - only to learn whether the extra is there
        except ImportError:
            raise InputError(f"the dask backend needs the distributed extra: {DASK_EXTRA}",
                             file="--backend") from None
    return Backend(kind, address)


class Pool:
    """Worker processes that each ran `setup(*setup_args)` once.

    Use as a context manager; `submit(fn, item)` returns a future whose
    `result()` is `fn(item)` computed in a worker.
    """

    def __init__(self, workers: int, setup: Callable[..., None] | None = None,
                 setup_args: Sequence[Any] = (), where: Backend = LOCAL) -> None:
        self.workers, self.where = workers, where
        self.setup, self.setup_args = setup, tuple(setup_args)
        self._executor: cf.ProcessPoolExecutor | None = None
        self._client: Any = None
        self._cluster: Any = None
        self._shared: Any = None
        self._token = f"{os.getpid()}:{next(_CAMPAIGNS)}"

    def __enter__(self) -> Pool:
        if self.where.kind == "local" and self.workers <= 1:
            if self.setup is not None:
                self.setup(*self.setup_args)
        elif self.where.kind == "local":
            self._executor = cf.ProcessPoolExecutor(
                self.workers, initializer=self.setup, initargs=self.setup_args)
        else:
            self._start_dask()
        return self

    def _start_dask(self) -> None:
        from distributed import Client, LocalCluster

        if self.where.address is None:
            # One thread a worker: a run is pure Python holding the GIL, so
            # threads would queue behind one another.
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None,
                                         silence_logs=logging.ERROR)
            self._client = Client(self._cluster)
        else:
            try:
                self._client = Client(self.where.address, timeout=30)
            except (OSError, TimeoutError, ValueError) as e:
                raise InputError(f"cannot reach the dask scheduler: {e}",
                                 file="--address") from None
        self._shared = self._client.scatter(self.setup_args, broadcast=True)

    def submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        if self._executor is not None:
            return self._executor.submit(fn, item)
        if self._client is None:  # inline: one local worker, this process
            return _Deferred(fn, item)
        # pure=False: the same item submitted again (a re-run) is a new task.
        return self._client.submit(_in_worker, self._token, self.setup, self._shared, fn, item,
                                   pure=False)

    def first_done(self, futures: Sequence[Any]) -> Any:
        """Wait until one of `futures` (this pool's) is done, and return it."""
        if self._executor is not None:
            done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
        elif self._client is None:
            done = futures[:1]
        else:
            from distributed import wait

            done, _ = wait(futures, return_when="FIRST_COMPLETED")
        # The first of them in the caller's order, when several are done.
        return next(f for f in futures if f in done)

    def cancel(self, futures: Sequence[Any]) -> None:
        """Drop tasks whose results are no longer wanted."""
        for future in futures:
            future.cancel()

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()


class _Deferred:
    """An inline task: it runs when its result is first asked for, so a
    one-worker campaign interleaves its work and its progress as a serial
    loop does, and a task dropped by `cancel` never runs."""

    def __init__(self, fn: Callable[[Any], Any], item: Any) -> None:
        self.fn, self.item = fn, item
        self.done = False
        self.value: Any = None

    def result(self) -> Any:
        if not self.done:
            self.value, self.done = self.fn(self.item), True
        return self.value

    def cancel(self) -> bool:
        return not self.done


_CAMPAIGNS = itertools.count()

#: The campaign whose setup ran last in this (dask worker) process.
_SET_UP: str | None = None


def _in_worker(token: str, setup: Callable[..., None] | None, setup_args: Sequence[Any],
               fn: Callable[[Any], Any], item: Any) -> Any:
    global _SET_UP
    if _SET_UP != token:
        if setup is not None:
            setup(*setup_args)
        _SET_UP = token
    return fn(item)
