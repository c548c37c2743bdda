"""forge: the reference engine of the forge kit, and its public Python API.

The names below are the kit's public API (`forge.api`, documented in
docs/api.md): `run_prompt`, `explore`, `replay`, `run_conformance`, the
frozen values they return, and the task lifecycle manager's entry points.
Everything else is internal: subpackages `prompt` (parsing prompt files),
`lua` (the sandboxed Lua 5.5 runtime), `engine` (running a prompt on the
simulator), `lifecycle` (the task lifecycle manager); `harness` is the
engine's only door to the outside world; `runspec` (a run's whole
definition) and `repro` (exploring and replaying it) are the core that
both `cli` (the `forge` command, with `commands`) and `api` sit on.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from forge import _roots
from forge.deferred import deferred as _deferred
from forge.version import __version__

# `forge.sim`, `forge.spec` and `forge.conformance` live at the checkout's root
# (the design card's layout); an installed wheel has them inside this package.
_roots.mount(Path(__file__).resolve().parent)

#: The public API, `forge.api`'s `__all__`; imported on first use, so that
#: `forge` on the command line does not pay for it (PEP 562).
__all__ = [
    "CaseOutcome",
    "Check",
    "ConformanceReport",
    "EngineComparison",
    "EngineDifference",
    "ExploreReport",
    "Failure",
    "InputError",
    "LifecycleConfig",
    "LifecycleManager",
    "MemorySessions",
    "MemoryTaskStore",
    "Observation",
    "PathLike",
    "ReplayReport",
    "RunOptions",
    "RunOutcome",
    "SqliteTaskStore",
    "StopOutcome",
    "TaskError",
    "TaskStatus",
    "ThreadClock",
    "VirtualClock",
    "explore",
    "replay",
    "run_conformance",
    "run_prompt",
    "run_store_contract",
    "__version__",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` does it
    from forge.api import (
        CaseOutcome as CaseOutcome,
        Check as Check,
        ConformanceReport as ConformanceReport,
        EngineComparison as EngineComparison,
        EngineDifference as EngineDifference,
        ExploreReport as ExploreReport,
        Failure as Failure,
        InputError as InputError,
        LifecycleConfig as LifecycleConfig,
        LifecycleManager as LifecycleManager,
        MemorySessions as MemorySessions,
        MemoryTaskStore as MemoryTaskStore,
        Observation as Observation,
        PathLike as PathLike,
        ReplayReport as ReplayReport,
        RunOptions as RunOptions,
        RunOutcome as RunOutcome,
        SqliteTaskStore as SqliteTaskStore,
        StopOutcome as StopOutcome,
        TaskError as TaskError,
        TaskStatus as TaskStatus,
        ThreadClock as ThreadClock,
        VirtualClock as VirtualClock,
        explore as explore,
        replay as replay,
        run_conformance as run_conformance,
        run_prompt as run_prompt,
        run_store_contract as run_store_contract,
    )


# Loaded on first use, not with this package (CONTRIBUTING.md, "Where imports go").
# Not bound as `api`: a package attribute of a submodule's name is what
# `from forge import api` returns, and that must be the module itself.
if TYPE_CHECKING:
    from forge import api as _api
else:
    _api = _deferred("forge.api")


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(_api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'forge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
