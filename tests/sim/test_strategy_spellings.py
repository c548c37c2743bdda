"""A strategy's spelling is written in its own module only (kit: strategies.registry).

Every front end looks a strategy up by name in the registry
(`forge.sim.strategies`) and reads what it declares (`walks`, `campaign`,
...), so no code outside `sim/strategies/` compares a strategy's name with a
literal, defaults to one, passes one, or lists them.  Docstrings and
comments may name strategies (they are prose); the scan reads code only.
A provider's own `name` (`forge.sim.chooser`, `forge.sim.pct`,
`forge.sim.reduction`) is not a use: it is the word a replay file's record
carries for the provider that drew a run, which the strategy modules point at.
"""

from __future__ import annotations

import ast
import pathlib

from forge.sim.strategies import STRATEGIES

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ("forge", "sim", "spec", "conformance")
NAMES = {s.name for s in STRATEGIES}


def _strategy_word(node: ast.AST | None) -> str | None:
    """The strategy a literal spells (`pct`, `pct:1:3`, ...), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        head = node.value.partition(":")[0]
        return head if head in NAMES else None
    if isinstance(node, ast.JoinedStr) and node.values:   # f"pct:{seed}"
        first = node.values[0]
        if isinstance(first, ast.Constant) and ":" in str(first.value):
            return _strategy_word(ast.Constant(str(first.value)))
    return None


def _uses(tree: ast.AST):
    """The literals the module uses as a strategy: compared with, defaulted to, passed as
    `strategy=`, recorded under `"strategy"`, listed in a `Literal`, or chosen by `--strategy`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            yield from (n for n in (node.left, *node.comparators) if _strategy_word(n))
            for n in (node.left, *node.comparators):
                if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
                    yield from (e for e in n.elts if _strategy_word(e))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            yield from (d for a, d in pairs if "strategy" in a.arg and _strategy_word(d))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "strategy" in node.target.id and _strategy_word(node.value):
                yield node.value
        elif isinstance(node, ast.Call):
            yield from (k.value for k in node.keywords
                        if k.arg and "strategy" in k.arg and _strategy_word(k.value))
            flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if "--strategy" in flags:
                yield from (k.value for k in node.keywords if _strategy_word(k.value))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "strategy" \
                        and _strategy_word(value):
                    yield value
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            yield from (e for e in elts if _strategy_word(e))


def test_no_strategy_is_spelled_outside_its_module():
    """kit: strategies.registry - the strategies' spellings live in `sim/strategies/`."""
    found = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("sim/strategies/"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), rel)
            found += [f"{rel}:{n.lineno}: {ast.unparse(n)}" for n in _uses(tree)]
    assert not found, "strategy spelled outside sim/strategies/:\n" + "\n".join(sorted(set(found)))


def test_the_scan_sees_each_way_of_spelling_a_strategy():
    """The scan above would catch each kind of use it claims to."""
    source = '''
if strategy == "exhaustive": pass
if s in ("pct", "random"): pass
def f(strategy="random"): pass
f(strategy="pct")
x = {"strategy": "exhaustive"}
T = Literal["random", "pct"]
class S:
    strategy: str = "random"
click.option("--strategy", default="random")
y = f"pct:{seed}"
if strategy == f"pct:{seed}": pass
'''
    words = [_strategy_word(n) for n in _uses(ast.parse(source))]
    assert sorted(words) == sorted(["exhaustive", "pct", "random", "random", "pct", "exhaustive",
                                    "random", "pct", "random", "random", "pct"])
