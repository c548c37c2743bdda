"""A run option's name lives in the options table and the one place the engine uses it
(kit: options.table; CONTRIBUTING.md, "Adding a run option").

For every row of `forge.run.options.OPTIONS` the test counts the places in
the `.py` sources (forge/, sim/, spec/, conformance/) that name it, and
holds the count to two: the table and the engine's use.  The docs are the
third place the must-hold allows; they are not `.py` files.

What "naming the run option" is, each rule defended in one line:

- The flag (`"--faults"`) in a string, anywhere: only the option has it.
- The name (`faults`) where a value can cross into or out of a module: an
  attribute, a keyword, a parameter, an imported name, a name a module or
  a class body defines (importable, or an attribute), and a string used as
  a key (a subscript's, a dict's, `getattr`'s or `.get`'s, an `in` test's).
- Not a local name: a function's variable binds nothing outside it; the
  value reaches it only through one of the forms above, which are counted.
- Not another string: prose, a message, or a word of another vocabulary
  (a feature's name, a fault kind, a mutant group) is not a key.
- Not `*args` or `**kwargs`: Python's variadic parameters, not the option.
- The engine (`forge/engine/`) and the harness it runs against
  (`forge/harness.py`) are one place, "the engine's use": the two parts a
  row's `into` hands its value to.
- The lifecycle manager (`forge/lifecycle/`, `conformance/lifecycle_adapter.py`)
  runs no prompt and so takes no run option: its `store` is its task store,
  its operations' `args` theirs (a test holds that it imports nothing of the
  run's options).

Rows older than the table whose names are still words of other formats keep
a ceiling (their count today) so that they cannot spread further; each says why.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from forge.run.options import OPTIONS

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ("forge", "sim", "spec", "conformance")
#: The table and the engine's use.
LIMIT = 2
#: One place, the engine's use: the engine and the harness it runs against,
#: the two parts a row's `into` hands a value to.
ENGINE = "forge/engine/"
HARNESS = "forge/harness.py"
#: The lifecycle manager: it runs no prompt, so no run option reaches it.
LIFECYCLE = ("forge/lifecycle/", "conformance/lifecycle_adapter.py")
#: The modules that hold a run option's row or value (the table, the run
#: definition, the API, the engine, the harness) and the run's frozen
#: definition; the lifecycle imports none of them.
RUN_LAYER = ("forge.run.options", "forge.runspec", "forge.api", "forge.assembly",
             "forge.engine", "forge.harness", "forge.run.spec.RunSpec")
#: Rows over the limit, their ceiling and why.
CEILINGS = {
    "args": (9, "its libraries' word, kept where they call or define it (click's "
                "`main(args=)` and the `parse_args(ctx, args)`/`make_context` overrides in cli, "
                "explore and jsonflag; pytest's `marker.args`; ParamSpec's `.args` in api), "
                "the prompt language's (the front matter's `args:` key) and the trace's "
                "(`run_start`'s `args`, which the timeline prints)"),
    "store": (8, "the observation's `store` (the store's files after a run: the public "
                 "`Observation.store`, the equivalence's fields, a fuzzed case's expected store, "
                 "a crashed and a refused prompt's observation) and the features' name; runspec "
                 "reads the folder"),
    "faults": (6, "the faults fired: the public `Failure.faults` and `ExploreReport.faults`, "
                  "the JSON report's and a shard's `faults` (api, campaign, explore_report) and "
                  "a replay record's `failure.faults` (record); runspec builds the fault plan"),
}


def spelled(source: str) -> set[str]:
    """The words a module's code spells where a value can cross its border
    (the module docstring's rules): attributes, keywords, parameters but
    `*args` and `**kwargs`, imported names, names a module or a class body
    defines, and strings that are keys."""
    tree = ast.parse(source)
    variadic = {id(a) for node in ast.walk(tree) if isinstance(node, ast.arguments)
                for a in (node.vararg, node.kwarg) if a is not None}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.arg) and id(node) not in variadic:
            out.add(node.arg)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.rpartition(".")[2])
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            out.update(_defined(node.body))
        out.update(_keys(node))
    return out


def _defined(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds: importable, or attributes."""
    out: set[str] = set()
    for stmt in body:
        targets = (stmt.targets if isinstance(stmt, ast.Assign)
                   else [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
        for target in targets:
            out.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(stmt.name)
    return out


#: The calls whose string argument names an attribute or a key.
_LOOKUPS = {"getattr", "setattr", "hasattr", "get", "pop", "setdefault"}


def _keys(node: ast.AST) -> list[str]:
    """The strings `node` uses as keys: a subscript's, a dict's, a lookup's,
    a membership test's.  Every string that is a flag (`--x`) counts too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and node.value.startswith("--"):
        return [node.value]
    found: list[ast.AST] = []
    if isinstance(node, ast.Subscript):
        found = [node.slice]
    elif isinstance(node, ast.Dict):
        found = [k for k in node.keys if k is not None]
    elif isinstance(node, ast.Call):
        callee = node.func.attr if isinstance(node.func, ast.Attribute) \
            else getattr(node.func, "id", "")
        found = list(node.args[:2]) if callee in _LOOKUPS else []
    elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn))
                                               for o in node.ops):
        found = [node.left]
    return [k.value for k in found if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def place(path: str) -> str | None:
    """The place a source file counts as: the engine is one; the lifecycle manager none."""
    if path.startswith(LIFECYCLE):
        return None
    return ENGINE if path.startswith((ENGINE, HARNESS)) else path


def _index() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            where = place(path.relative_to(ROOT).as_posix())
            if where is not None:
                out.setdefault(where, set()).update(spelled(path.read_text(encoding="utf-8")))
    return out


_INDEX = _index()


def places(option, index=None) -> list[str]:
    """The places that name `option` (by its name or its flag)."""
    return sorted(f for f, names in (index or _INDEX).items()
                  if option.name in names or option.flag in names)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_a_run_options_name_is_in_the_table_and_the_engines_use(option):
    """kit: options.table - at most two places name a run option."""
    files = places(option)
    ceiling, why = CEILINGS.get(option.name, (LIMIT, "the table and the engine's use"))
    assert "forge/run/options.py" in files
    assert len(files) <= ceiling, f"{option.flag} is named in {len(files)} places ({why}): {files}"


def test_the_ceilings_are_rows_and_tight():
    """A ceiling names a row, and falls when its row's count does (a ratchet)."""
    rows = {o.name: o for o in OPTIONS}
    for name, (ceiling, _) in CEILINGS.items():
        assert name in rows
        count = len(places(rows[name]))
        assert count == ceiling, f"{name}: {count} places now; lower its ceiling to {count}"
        assert ceiling > LIMIT, f"{name} is at the limit: delete its ceiling"


def test_the_lifecycle_manager_imports_nothing_of_the_runs_options():
    """The lifecycle's exclusion holds: no run option can reach it by import."""
    for prefix in LIFECYCLE:
        for path in sorted(ROOT.glob(prefix + ("*.py" if prefix.endswith("/") else ""))):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    imported = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    imported = [f"{node.module}.{a.name}" for a in node.names]
                else:
                    continue
                for name in imported:
                    assert not name.startswith(RUN_LAYER), f"{path}: imports {name}"


HAND_SPELLED = {
    "the flag": 'click.option("--faults", default="")\n',
    "an attribute": "def kinds(spec):\n    return spec.faults.kinds\n",
    "a keyword": "def go(api):\n    return api.explore('p.md', faults='store')\n",
    "a parameter": "def run(prompt, faults=''):\n    return prompt\n",
    "a format's key": "def read(data):\n    return data['faults']\n",
    "an import": "from forge.runspec import faults\n",
    "a global": "faults = ''\n",
    "a class field": "class Spec:\n    faults: str = ''\n",
    "a lookup": "def read(data):\n    return data.get('faults')\n",
    "a dict's key": "def write(kinds):\n    return {'faults': kinds}\n",
    "a membership test": "def given(data):\n    return 'faults' in data\n",
    "getattr": "def read(spec):\n    return getattr(spec, 'faults')\n",
}


@pytest.mark.parametrize("how", HAND_SPELLED)
def test_a_new_file_that_spells_a_run_option_by_hand_is_counted(how):
    """Not vacuous: a new module re-spelling a row in any form adds a place."""
    faults = next(o for o in OPTIONS if o.name == "faults")
    index = {**_INDEX, "forge/newmodule.py": spelled(HAND_SPELLED[how])}
    assert places(faults, index) == sorted([*places(faults), "forge/newmodule.py"])


def test_what_the_rules_leave_out_is_not_the_option():
    """The rules leave out only what the module docstring names."""
    assert "args" not in spelled("def f(*args, **kwargs):\n    return args, kwargs\n")
    assert "store" not in spelled("def f(x):\n    store = x\n    return store\n")
    assert "faults" not in spelled('def f():\n    """faults"""\n    # faults\n')
    assert "store" not in spelled('FEATURES = ("store", "models")\nprint("store")\n')
    assert place("forge/engine/walk.py") == place("forge/harness.py") == ENGINE
    assert place("forge/lifecycle/store.py") is None
