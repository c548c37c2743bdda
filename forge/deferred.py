"""Deferred imports: a module of the kit loaded when one of its names is first read.

The kit's one mechanism for an import that importing its own module should
not pay for (CONTRIBUTING.md, "Where imports go"): `forge --help` loads the
engine but not the suite's runner, the mutants or the simulator's search,
and `import forge.api` and the pytest plugin load no engine until a run.  A
module declares such imports once, in one block after its other imports:

    if TYPE_CHECKING:
        from forge import runspec
    else:
        runspec = deferred("forge.runspec")

and its functions use `runspec.read_prompt(...)`.  The first attribute read
imports the module the ordinary way (`importlib.import_module`: the import
lock, the parent package's attribute, `sys.modules`) and puts that module
object in place of the stand-in in the declaring module's globals, so every
later `runspec.x` is a plain global lookup of the real module: no cost per
access, and no second module object (`runspec is sys.modules["forge.runspec"]`
from then on).  A reference to the stand-in kept elsewhere still works; it
forwards to the same module.

Why a stand-in and not `importlib.util.LazyLoader`: a lazy module sits in
`sys.modules` before it is loaded, and the kit asks `sys.modules` whether a
module is loaded (`forge.engine.substitution`, the in-process adapter, the
pytest plugin's look for Hypothesis), so a lazy entry would answer "loaded"
for a module nobody has used; finding its spec at declaration also imports
the parent package and searches the path (65-110 us of CPU a module,
parent packages included, against about 1 us for a stand-in: 16 of the
kit's deferred modules, three runs), and before Python 3.12.3 its loading
is not thread-safe (CPython gh-114763).  The stand-in touches nothing until
used.
Thread-safe: two threads that both use it first get the same module from
the import lock, and each rebinding is one dict store.

Not here: the rule of where imports go and the test that holds function
bodies free of imports (tests/test_dependencies.py), which also reads these
declarations as imports of the layer they name.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any


class _Deferred:
    """Stands for a module until one of its attributes is read.

    Reads, writes, deletions and `dir()` go to the module; what every object
    has (`__doc__`, `__class__`) is the stand-in's own until the first use.
    """

    __slots__ = ("_deferred_name", "_deferred_host", "_deferred_module")
    _deferred_name: str
    _deferred_host: dict[str, Any]
    _deferred_module: ModuleType | None

    def __init__(self, name: str, host: dict[str, Any]) -> None:
        object.__setattr__(self, "_deferred_name", name)
        object.__setattr__(self, "_deferred_host", host)
        object.__setattr__(self, "_deferred_module", None)

    def __getattr__(self, attr: str) -> Any:
        return getattr(_load(self), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(_load(self), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(_load(self), attr)

    def __dir__(self) -> list[str]:
        return dir(_load(self))

    def __repr__(self) -> str:
        return f"<deferred module {self._deferred_name!r}>"


def _load(stand_in: _Deferred) -> ModuleType:
    """The module, imported on the first call; the host's names for the
    stand-in become the module itself."""
    module = stand_in._deferred_module
    if module is None:
        module = importlib.import_module(stand_in._deferred_name)
        object.__setattr__(stand_in, "_deferred_module", module)  # its own __setattr__ forwards
        host = stand_in._deferred_host
        for key in [key for key, value in host.items() if value is stand_in]:
            host[key] = module
    return module


def deferred(name: str) -> Any:
    """The module `name` (absolute), imported when an attribute is first read.

    Bind it to a global of the calling module at its top; the first use
    rebinds that global to the module itself.
    """
    return _Deferred(name, sys._getframe(1).f_globals)


def loaded(module: Any) -> ModuleType:
    """The module itself, imported now if it was deferred: for a caller that
    must meet an ImportError (an optional dependency missing) at a place of
    its choosing rather than at the first use."""
    return _load(module) if isinstance(module, _Deferred) else module
