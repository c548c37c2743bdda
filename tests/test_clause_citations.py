"""Every engine and prompt test cites what it checks.

A test function in tests/engine or tests/prompt must cite, in its own
docstring or in its module's docstring, at least one clause id from the
catalogue (spec/*.toml) or a `kit:` tag for a behaviour no clause states.
A citation is a parenthesised group whose items, separated by commas or
semicolons, are all clause ids or `kit: name` tags, as in
`(tasks.ids.one-child-counter, kit: determinism)`.  Every cited id must
exist in the catalogue, so a typo fails here.  A Hypothesis state machine
bound as `test_x = Machine.TestCase` cites in the machine class's docstring.
"""

from __future__ import annotations

import ast
import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
TEST_DIRS = (ROOT / "tests" / "engine", ROOT / "tests" / "prompt")

ID = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+")
KIT = re.compile(r"kit:\s*[a-z0-9][a-z0-9._-]*")
GROUP = re.compile(r"\(([^()]*)\)")


def catalogue() -> set[str]:
    ids: set[str] = set()
    for path in sorted(SPEC.glob("*.toml")):
        with path.open("rb") as f:
            data = tomllib.load(f)
        ids.update(c["id"] for c in data.get("clause", []))
    return ids


CLAUSES = catalogue()
ROOTS = {i.split(".", 1)[0] for i in CLAUSES}


def citations(doc: str | None) -> tuple[list[str], list[str]]:
    """Clause ids and kit tags cited in `doc`, from its citation groups.

    A group counts when every item is an id or a kit tag and at least one id
    starts with a catalogue root (tasks., walk., ...) or one item is a kit tag;
    so `(forge.engine.kernel)` or `(e.g. 0.0)` are prose, not citations."""
    ids: list[str] = []
    kits: list[str] = []
    for group in GROUP.findall(doc or ""):
        items = [i.strip() for i in re.split(r"[,;]", group) if i.strip()]
        if not items or not all(ID.fullmatch(i) or KIT.fullmatch(i) for i in items):
            continue
        g_ids = [i for i in items if ID.fullmatch(i)]
        g_kits = [i for i in items if KIT.fullmatch(i)]
        if g_kits or any(i.split(".", 1)[0] in ROOTS for i in g_ids):
            ids += g_ids
            kits += g_kits
    return ids, kits


def collect_tests(tree: ast.Module):
    """(name, docstring) of every test the module defines, state machines included."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield node.name, ast.get_docstring(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    yield f"{node.name}.{sub.name}", ast.get_docstring(sub)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Name) and target.id.startswith("test")
                        and isinstance(node.value, ast.Attribute)
                        and isinstance(node.value.value, ast.Name)
                        and node.value.value.id in classes):
                    yield target.id, ast.get_docstring(classes[node.value.value.id])


def problems_in(path: pathlib.Path) -> tuple[int, list[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    mod_ids, mod_kits = citations(ast.get_docstring(tree))
    found: list[str] = [f"{path.name}: module docstring cites unknown clause id {i!r}"
                        for i in mod_ids if i not in CLAUSES]
    count = 0
    for name, doc in collect_tests(tree):
        count += 1
        ids, kits = citations(doc)
        found += [f"{path.name}::{name} cites unknown clause id {i!r}" for i in ids if i not in CLAUSES]
        if not (ids or kits or mod_ids or mod_kits):
            found.append(f"{path.name}::{name} cites no clause id and no kit: tag")
    return count, found


FILES = sorted(p for d in TEST_DIRS for p in d.glob("*.py") if p.name.startswith("test_"))


def test_the_catalogue_is_not_empty():
    """The catalogue loads, so an empty spec/ cannot make every citation fail
    or pass vacuously (kit: citations.catalogue)."""
    assert len(CLAUSES) > 100
    assert {"tasks", "lifecycle"} <= ROOTS


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_test_cites_known_clauses_or_a_kit_tag(path):
    """Each test cites a real clause id or a kit: tag (kit: citations.every-test)."""
    _, found = problems_in(path)
    assert found == [], "\n".join(found)


def test_the_checker_catches_uncited_tests_and_typos(tmp_path):
    """An uncited test and a misspelt id are both reported; prose in parentheses
    is not mistaken for a citation (kit: citations.checker)."""
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        '"""Module (see forge.engine.kernel)."""\n'
        "def test_bare():\n    pass\n"
        "def test_typo():\n    \"\"\"Counts (tasks.ids.one-child-countr).\"\"\"\n"
        "def test_good():\n    \"\"\"Counts (tasks.ids.one-child-counter, kit: x).\"\"\"\n"
        "def test_kit():\n    \"\"\"Budget (kit: budget.instructions).\"\"\"\n"
        "def test_prose():\n    \"\"\"Calls tasks.join_any (e.g. 0.0) (tasks.spawn).\"\"\"\n")
    count, found = problems_in(sample)
    assert count == 5
    assert found == [
        "test_sample.py::test_bare cites no clause id and no kit: tag",
        "test_sample.py::test_typo cites unknown clause id 'tasks.ids.one-child-countr'",
        "test_sample.py::test_prose cites unknown clause id 'tasks.spawn'",
    ]


def test_every_directory_has_tests():
    """The walk over tests/engine and tests/prompt finds their tests (kit: citations.coverage)."""
    counts = {d.name: sum(problems_in(p)[0] for p in FILES if p.parent == d) for d in TEST_DIRS}
    assert all(n > 10 for n in counts.values()), counts
