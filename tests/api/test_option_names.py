"""A run option's name lives in the options table and the one place the engine uses it
(kit: options.table; CONTRIBUTING.md, "Adding a run option").

For every row of `forge.run.options.OPTIONS` the test counts the `.py`
source files (forge/, sim/, spec/, conformance/) that name it in code - an
identifier, an attribute, a keyword or parameter, or a string literal equal
to its Python name or its flag; docstrings and comments are prose and are
not counted - and holds it to two: the table and the engine's use.  The
docs are the third place the must-hold allows; they are not `.py` files.

Rows older than the table whose names are also words of other formats keep
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
#: Rows over the limit, their ceiling and why.
CEILINGS = {
    "args": (36, "Python's own word (`*args`, a command's arguments) and the case format's field"),
    "store": (35, "the kit's store (forge/store.py, the lifecycle stores) shares the word"),
    "faults": (17, "the fault injector's vocabulary (kinds fired, faults of a record)"),
    "latency": (11, "the harness's and the case format's latency menus"),
    "refuse": (11, "the harness's refusals and the case format's `refuse` field"),
    "model_script": (8, "a field of the conformance case format and its features"),
    "operator_script": (8, "a field of the conformance case format and its features"),
    "cancel_at": (7, "the harness's cancel instant and the case format's field"),
    "concurrency": (7, "the harness's ceiling, read by the case format, the adapters and the --impl watchers"),
    "tool_script": (6, "a field of the conformance case format and its features"),
    "fault_budget": (4, "built into the chooser's fault budget by the run definition"),
}


def _names(tree: ast.AST) -> set[str]:
    """The names a module uses in code: identifiers, attributes, keywords,
    parameters and string literals that are not docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, (ast.keyword, ast.arg)) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            out.add(node.value)
    return out


_INDEX = {path.relative_to(ROOT).as_posix(): _names(ast.parse(path.read_text(encoding="utf-8")))
          for top in SOURCES for path in sorted((ROOT / top).rglob("*.py"))}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_a_run_options_name_is_in_the_table_and_the_engines_use(option):
    """kit: options.table - at most two `.py` files name a run option."""
    files = sorted(f for f, names in _INDEX.items() if option.name in names or option.flag in names)
    ceiling, why = CEILINGS.get(option.name, (LIMIT, "the table and the engine's use"))
    assert "forge/run/options.py" in files
    assert len(files) <= ceiling, f"{option.flag} is named in {len(files)} files ({why}): {files}"


def test_the_ceilings_are_rows_and_tight():
    """A ceiling names a row, and falls when its row's count does (a ratchet)."""
    rows = {o.name: o for o in OPTIONS}
    for name, (ceiling, _) in CEILINGS.items():
        assert name in rows
        count = sum(1 for names in _INDEX.values()
                    if name in names or rows[name].flag in names)
        assert count == ceiling, f"{name}: {count} files now; lower its ceiling to {count}"
