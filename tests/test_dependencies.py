"""Dependencies point one way: the layering the README's layout describes.

Walks every module of the four packages, reads its imports from the source
(import statements, and the modules it defers, `deferred("forge.x")`:
forge/deferred.py, the kit's one way to load a module on first use), and
checks:

- the layer rules below: a module imports nothing from a layer above it,
  and no core module imports the top layer (`TOP`: the commands, the API);
  a deferred module counts as imported, so a deferral cannot hide a
  reversed dependency; `if TYPE_CHECKING:` imports are left out here, since
  they never run;
- no import cycles between modules, deferred imports counted too, so a
  lazy import cannot hide a cycle;
- no cycles either when the imports made only for type checking count;
- imports sit at a module's top: no import of the project inside a
  function (CONTRIBUTING.md, "Where imports go");
- no module deferred where importing its module already loads it (a
  deferral that saves nothing), start-up counting only what runs at import;
- no package binding a deferred submodule under the submodule's own name
  (the stand-in would shadow the real import).
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

from forge import _roots

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("forge",)
ROOT_FOLDERS = _roots.ROOT_FOLDERS


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in ROOT_FOLDERS:  # the design card's root folders are `forge.<folder>`
        parts.insert(0, "forge")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for package in (*PACKAGES, *ROOT_FOLDERS):
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(name: str) -> str | None:
    """The project module an imported name lives in (longest known prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The project modules one import statement of `module` names."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    if isinstance(node, ast.Import):
        return {t for t in (_resolve(a.name) for a in node.names) if t}
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return {t for t in (_resolve(f"{base}.{a.name}") or _resolve(base) for a in node.names) if t}


def _deferred_target(node: ast.AST) -> str | None:
    """The project module a `deferred("forge.x")` call names (forge/deferred.py)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    func = node.func
    name = (func.id if isinstance(func, ast.Name)
            else func.attr if isinstance(func, ast.Attribute) else "")
    return _resolve(node.args[0].value) if name.lstrip("_") == "deferred" else None


def _imports(module: str, type_only: bool = False) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(_targets(module, node))
        else:
            target = _deferred_target(node)
            if target:  # loaded on first use, but an import all the same
                out.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(module)
    return out


GRAPH = {module: _imports(module) for module in MODULES}
#: The same, counting imports made only for type checking too: a type-level
#: cycle is as much a knot in the design as a runtime one.
TYPE_GRAPH = {module: _imports(module, type_only=True) for module in MODULES}


def _under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


# (who, what it must not import, why)
RULES = [
    (("forge.variation", "forge.errors"), ("forge",),
     "leaf modules import nothing of the project"),
    (("forge.sim",), ("forge",),
     "the simulator never imports the engine"),
    (("forge.prompt", "forge.lua"), ("forge.engine", "forge.harness", "forge.scripts",
                                     "forge.lifecycle", "forge.cli", "forge.conformance", "forge.spec"),
     "parsing and the Lua runtime sit below the engine"),
    (("forge.harness", "forge.scripts"), ("forge.engine", "forge.cli", "forge.conformance", "forge.spec"),
     "the harness does not import the engine"),
    (("forge.engine.rules",), ("forge.engine.run", "forge.engine.host", "forge.engine.tasks",
                               "forge.engine.fanout", "forge.engine.models",
                               "forge.engine.modeltasks", "forge.engine.tools",
                               "forge.engine.walk", "forge.engine.effects",
                               "forge.engine.observation", "forge.engine.library",
                               "forge.engine.context", "forge.engine.modelside",
                               "forge.harness", "forge.cli",
                               "forge.conformance", "forge.spec"),
     "rule modules import only other rules and the narrow pieces below them"),
    (("forge.engine", "forge.lifecycle"), ("forge.cli", "forge.conformance", "forge.spec"),
     "the engine and the lifecycle manager never import the layers that drive them"),
    (("forge.lifecycle",), ("forge.engine",),
     "the lifecycle manager is independent of the prompt engine"),
    (("forge.api", "forge.pytest_plugin"), ("forge.cli", "forge.commands"),
     "the Python API sits beside the command line, on the same core"),
]

#: The top layer: the command line (and the commands that live beside their
#: subsystems: the suite's, and `forge.lifecycle.command`, which prints
#: `forge explore`/`forge replay` on a scenario file), the Python API and its
#: pytest plugin, and the `forge` package, which re-exports the API.  Every
#: other module is core.
TOP = ("forge.cli", "forge.commands", "forge.__main__", "forge.api", "forge.pytest_plugin",
       "forge.conformance.cli", "forge.conformance.limit_flags", "forge.conformance.mutants_cli",
       "forge.spec.cli", "forge.lifecycle.command")


def _is_top(module: str) -> bool:
    return module == "forge" or _under(module, *TOP)


#: State and request values import nothing of the engine but other values.
VALUE_MODULES = {"forge.engine.requests", "forge.engine.failures", "forge.engine.rules.endings",
                 "forge.engine.state", "forge.prompt.model", "forge.variation", "forge.errors"}
ONLY_VALUES = ("forge.engine.requests", "forge.engine.state")


def _violations() -> list[str]:
    found = []
    for module in ONLY_VALUES:
        for target in sorted(GRAPH[module] - VALUE_MODULES):
            found.append(f"{module} imports {target}: state and request values import only "
                         "other values")
    for who, banned, why in RULES:
        for module, targets in GRAPH.items():
            if not _under(module, *who):
                continue
            for target in sorted(targets):
                if _under(target, *banned) and not _under(target, *who):
                    found.append(f"{module} imports {target}: {why}")
    for module, targets in GRAPH.items():
        if _is_top(module):
            continue
        for target in sorted(targets):
            if _is_top(target):
                found.append(f"{module} imports {target}: commands and the API sit on top; "
                             "core modules do not import them")
    return found


def test_imports_follow_the_layers():
    assert _violations() == []


def _cycles(graph: dict[str, set[str]] = GRAPH) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return components


def test_no_import_cycles_even_through_lazy_imports():
    assert _cycles() == []


def test_no_import_cycles_even_through_type_only_imports():
    """Imports under `if TYPE_CHECKING:` count here: a part that names the
    run (or a module that names its user) only for its annotations still ties
    the two together."""
    assert _cycles(TYPE_GRAPH) == []


def test_the_type_graph_sees_type_only_imports():
    """Not vacuous: the engine's parts import their context for types only."""
    assert "forge.engine.context" in TYPE_GRAPH["forge.engine.tasks"]
    assert "forge.engine.context" not in GRAPH["forge.engine.tasks"]


@pytest.mark.parametrize("module", ["forge.engine.rules.ids", "forge.sim.explore"])
def test_the_walker_sees_imports(module):
    """The walker is not vacuous: modules known to import others are seen to."""
    assert GRAPH[module], f"{module} should import something of the project"


def test_the_api_and_the_commands_sit_on_one_core():
    """`forge.api` and the commands both drive `forge.runspec`/`forge.repro`; the core
    imports neither, and the API no command (the rule above is not vacuous here)."""
    assert {"forge.repro", "forge.runspec"} <= GRAPH["forge.api"]
    assert {"forge.repro", "forge.runspec"} <= GRAPH["forge.commands.explore"]
    assert _is_top("forge.api") and _is_top("forge.commands.explore") and _is_top("forge")
    assert not _is_top("forge.repro") and not _is_top("forge.runspec")
    assert not [t for t in GRAPH["forge.api"] if _under(t, "forge.commands", "forge.cli")]


def _top_imports(module: str) -> set[str]:
    """The project modules importing `module` runs: its statements outside
    any function (a class body runs too), but not `if TYPE_CHECKING:`."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(_targets(module, node))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(module)
    return out


def _with_packages(module: str) -> set[str]:
    """A module and the packages Python imports before it."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(MODULES)


TOP_GRAPH = {module: _top_imports(module) for module in MODULES}


def _loaded(module: str) -> set[str]:
    """The project modules `import module` loads, as far as its import
    statements say (a module imported by name at run time is not seen)."""
    seen: set[str] = set()
    todo = sorted(_with_packages(module))
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for target in TOP_GRAPH[m]:
            todo.extend(_with_packages(target) - seen)
    return seen


def _deferrals(module: str) -> list[tuple[int, str]]:
    """The modules `module` defers: (line, module) of each `deferred("...")`."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    return sorted((node.lineno, target) for node in ast.walk(tree)
                  if (target := _deferred_target(node)) is not None)


def _free_deferrals() -> list[str]:
    """Deferred modules that importing their module already loads."""
    found = []
    for module in MODULES:
        deferrals = _deferrals(module)
        loaded = _loaded(module) if deferrals else set()
        for line, target in deferrals:
            if target in loaded:
                found.append(f"{module}:{line} defers {target}, but importing {module} "
                             "already loads it")
    return found


def test_an_import_is_deferred_only_where_that_saves_loading_a_module():
    """A module is deferred (forge/deferred.py) only where that saves loading
    it: the command line's start-up, the pytest plugin's promise to cost
    other suites nothing, an optional dependency.  A deferral that saves
    nothing is a hidden dependency and a line of noise; this finds every one."""
    assert _free_deferrals() == []


def _function_imports() -> list[str]:
    """Imports of the project inside a function body, anywhere."""
    found = []
    for module, path in MODULES.items():
        if module == "forge.deferred":  # the helper itself (it imports by name)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        seen = set()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in seen:
                    seen.add(node.lineno)
                    for target in sorted(_targets(module, node)):
                        found.append(f"{module}:{node.lineno} imports {target} in a function")
    return found


def test_no_import_of_the_project_sits_in_a_function():
    """Issue 27: imports at the module's top.  One that must not load with
    its module is declared there, in the module's one deferred block
    (`x = deferred("forge.x")`, CONTRIBUTING.md "Where imports go"), never
    written into a function body, where it hides from a reader."""
    assert _function_imports() == []


def test_the_function_import_check_sees_one(tmp_path, monkeypatch):
    """Not vacuous: a module with an import in a function is found."""
    path = tmp_path / "lazy.py"
    path.write_text("def f():\n    from forge.runspec import read_prompt\n    return read_prompt\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {**MODULES, "forge.lazy_example": path})
    assert _function_imports() == ["forge.lazy_example:2 imports forge.runspec in a function"]


def test_a_deferred_module_is_an_import_for_the_layers_but_not_loaded():
    """The layer graph sees `deferred("forge.x")` as an import (a deferral
    cannot reverse a dependency unseen); start-up does not load it."""
    assert "forge.conformance.cli" in GRAPH["forge.commands.explore"]
    assert "forge.conformance.cli" in TYPE_GRAPH["forge.commands.explore"]
    assert "forge.conformance.cli" not in TOP_GRAPH["forge.commands.explore"]
    assert "forge.conformance.runner" not in _loaded("forge.cli")
    assert "forge.engine.substitution" in {t for _, t in _deferrals("forge.engine.host")}


def test_the_deferral_check_sees_a_deferral_that_saves_nothing(tmp_path, monkeypatch):
    """Not vacuous: deferring a module its module imports anyway is found."""
    path = tmp_path / "free.py"
    path.write_text("from forge import repro\nfrom forge.deferred import deferred\n\n"
                    "runspec = deferred(\"forge.runspec\")\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {**MODULES, "forge.free": path})
    monkeypatch.setitem(TOP_GRAPH, "forge.free", {"forge.repro", "forge.deferred"})
    assert [f for f in _free_deferrals() if f.startswith("forge.free")] == [
        "forge.free:4 defers forge.runspec, but importing forge.free already loads it"]


def test_the_deferral_check_sees_a_free_deferral():
    """Not vacuous: `forge.repro` imports `forge.runspec` at its top, so an
    import of it inside one of its functions would be free."""
    assert "forge.runspec" in _loaded("forge.repro")
    assert "forge.sim" in _loaded("forge.sim.explore")


def _shadowing_deferrals() -> list[str]:
    """A package's own submodule deferred under its own name in the package
    (`api = deferred("forge.api")` in forge/__init__.py): the package's
    attribute is then the stand-in, and `from forge import api` hands that
    out instead of importing the module (CONTRIBUTING.md, "Where imports go")."""
    found = []
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and (target := _deferred_target(node.value)):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                if target.rpartition(".")[0] == module and target.rpartition(".")[2] in names:
                    found.append(f"{module}:{node.lineno} binds its submodule {target} "
                                 "to a deferred stand-in under the submodule's own name")
    return found


def test_a_package_never_defers_a_submodule_under_its_own_name():
    """forge/deferred.py's one trap: a package `__init__` that names a deferred
    submodule as the submodule itself shadows the real import."""
    assert _shadowing_deferrals() == []


def test_the_shadowing_check_sees_one(tmp_path, monkeypatch):
    """Not vacuous: a package binding `api = deferred("pkg.api")` is found,
    and the private spelling `_api` forge/__init__.py uses is not."""
    path = tmp_path / "__init__.py"
    path.write_text("from forge.deferred import deferred\n\n_api = deferred(\"forge.api\")\n"
                    "api = deferred(\"forge.api\")\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {**MODULES, "forge": path})
    assert _shadowing_deferrals() == [
        "forge:4 binds its submodule forge.api to a deferred stand-in under the "
        "submodule's own name"]
