"""The scan behind `test_entry_points.py`: where the engine's Python touches a prompt's Lua value.

A Lua table or function a prompt made reaches Python through a host call's arguments.  Some
things Python does with it run the prompt's own Lua on the main thread, where no count hook
fires: lupa's `str()`/`format()` run `__tostring`, a subscript or attribute runs `__index` /
`__newindex` (whatever the key), and calling it runs the function or its `__call`.  So does
handing it to one of the engine's own Lua functions (`lua.fn.<name>`, the model side's
`L.<name>`), which may run the prompt's metamethods in turn.  Other things lupa does raw,
running no Lua: `len()`, iteration and `.items()`, `==`/`<`, `in`, `repr()`
(`LUPA_RUNS_LUA` says which; a test holds it to lupa).  This module finds each of them.

**Which values are the prompt's.**  A taint within each function, carried into the
functions it calls to a fixed point over the scanned modules:
- the parameters of every host route (`forge.engine.library.CALLS`) but `self`, the chain
  and the count are Lua values, and a route's `*args` a Python tuple of them (subscripting,
  measuring or iterating the tuple is Python's; what it holds is Lua's), as is what a resume
  of a block's coroutine hands back (`SOURCES`);
- so is what a guarded read returns (`lua.index`, `lua.guarded`), an item of a Lua value
  (`v[k]`, `v.k`, a loop's target), whatever is assigned one, and the fields of the engine's
  objects that hold one (`FIELDS`: `chain.var`, `chain.env`, ...);
- a Lua value passed to a function of the scanned modules taints the parameter it lands in
  (`self.m(...)` is the caller's class's method; any other callee is found by name).
A value tested first is not the prompt's where the test holds it: inside
`if isinstance(v, bytes):` (any class but lupa's `LuaTable`/`LuaFunction`) and after
`if not isinstance(v, ...): return` - a Lua string's metatable is the sandbox's sealed one,
numbers and booleans have none, and a Python object (a model handle) is no Lua value.

**What is allowed.**  The guarded entries themselves (`GUARDED`) take any Lua value; the
engine's Lua functions in `RAW_LUA` read their arguments raw or run them under the budget
(a test calls the raw ones on a table whose every metamethod traps).  Anything else is marked
on its line with `# lua: <why>`, saying why no prompt code can run there.

What does not live here: the tests (`test_entry_points.py`).
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterable, Iterator

import attrs

#: Kinds of touch, and whether lupa runs Lua for each (a test holds this to lupa 2.x).
LUPA_RUNS_LUA = {
    "tostring": True,        # str(v), format(v), f"{v}", "%s" % v: __tostring
    "index": True,           # v[k], v.k, v[k] = x, v.k = x: __index / __newindex
    "call": True,            # v(...): the function, or __call
    "lua-call": True,        # lua.fn.f(v): the engine's Lua on the main thread
    "len": False,            # len(v): lua_rawlen
    "iterate": False,        # for / list() / dict() / .items(): lua_next
    "compare": False,        # ==, !=, <, in: Python's identity and lua_next
    "repr": False,           # repr(v): the address lupa prints
}

#: The runtime's entries that run Lua under the budget (`forge/lua/runtime.py`).
GUARDED = {"guarded", "index", "assign", "tostring"}
#: The engine's Lua functions the engine may hand a prompt's value: each reads it raw
#: (`rawget`, `next`, `rawlen`; a test calls these on a table whose metamethods trap) ...
RAW_LUA = {"append", "truncate", "deep_copy", "json_check", "ordered_keys", "serial",
           "list_serial", "stamp", "stamp_of", "is_host_error", "var_intact", "typename",
           "join_results", "fanout_result", "make_error", "stamped_error", "abort_with",
           # ... or stores it in the section's environment, reading none of it ...
           "section_vm",
           # ... or makes the block's coroutine: its code runs at each resume, under the
           # count hook ...
           "coroutine",
           # ... or is Lua's own `select`, which returns its argument (`LuaRuntime.anchor`) ...
           "select",
           # ... or runs the shared library on a thread of its own under the budget hook.
           "load_library"}
#: Functions whose result is a tuple of Lua values the prompt's code made (a resume's).
SOURCES = {"results"}
#: The fields of the engine's objects that hold a prompt's Lua value.
FIELDS = {"var", "argv", "env", "first_item", "cancelled_value", "resume_value", "msgs",
          "value",      # a Failure's raised value
          "items"}      # a fanout's original members (`FanoutArms.items`)
#: Python functions that only look at a value's type or identity.
INSPECTING = {"isinstance", "type", "id", "hash", "typename", "callable", "lua_type"}
#: lupa's classes of Lua values: any other class a value is an instance of is plain (a
#: number, a string, or a Python object lupa unwrapped, such as a model handle).
LUA_TYPES = {"LuaTable", "LuaFunction", "object", "Any"}
#: lupa's own methods of a table: raw iteration.
TABLE_METHODS = {"items", "keys", "values"}
#: The objects whose attributes call the engine's Lua (`LuaRuntime.fn`, the model side).
LUA_SIDES = {"fn", "L"}
BUILTIN_KINDS = {"str": "tostring", "format": "tostring", "repr": "repr", "len": "len",
                 "list": "iterate", "dict": "iterate", "tuple": "iterate", "set": "iterate",
                 "sorted": "iterate", "iter": "iterate", "enumerate": "iterate",
                 "frozenset": "iterate", "zip": "iterate", "sum": "iterate", "min": "iterate",
                 "max": "iterate", "any": "iterate", "all": "iterate"}
MARK = "# lua: "


@attrs.frozen(order=True)
class Touch:
    path: str
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.text}"


def _plain(test: ast.expr) -> tuple[set[str], set[str]]:
    """Names `test` proves plain when true, and when false."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yes, no = _plain(test.operand)
        return no, yes
    if isinstance(test, ast.BoolOp):
        parts = [_plain(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return set().union(*(p[0] for p in parts)), set()
        return set(), set().union(*(p[1] for p in parts))
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)):
        kinds = test.args[1]
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        if names and all(isinstance(n, ast.Name) and n.id not in LUA_TYPES for n in names):
            return {test.args[0].id}, set()
    return set(), set()


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _lua_function(e: ast.expr) -> str | None:
    """The Lua name of `<...>.fn.name` or `<...>.globals().name` (a Lua function), if `e` is one."""
    if not isinstance(e, ast.Attribute):
        return None
    if _is_lua_side(e):
        return e.attr
    if isinstance(e.value, ast.Call) and _name(e.value.func) == "globals":
        return e.attr
    return _lua_function(e.value) and e.attr     # `fn.run_block.coroutine`


def _is_guarded(func: ast.expr) -> bool:
    """`<...>.lua.index(...)` and the like: a call of the runtime's guarded entries."""
    return (isinstance(func, ast.Attribute) and func.attr in GUARDED and (
        isinstance(func.value, ast.Attribute) and func.value.attr == "lua"
        or isinstance(func.value, ast.Name) and func.value.id == "lua"))


def _is_lua_side(func: ast.expr) -> bool:
    """`<...>.fn.name(...)` or `<...>.L.name(...)`: a call of the engine's Lua."""
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
            and func.value.attr in LUA_SIDES) or (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        and func.value.id in LUA_SIDES)


class Program:
    """The scanned modules, their functions by name, and the taint's fixed point."""

    def __init__(self, paths: Iterable[pathlib.Path], routes: Iterable[str]) -> None:
        self.modules = {p: ast.parse(p.read_text()) for p in paths}
        self.lines = {p: p.read_text().splitlines() for p in self.modules}
        #: name -> [(path, FunctionDef or ClassDef)]
        self.defs: dict[str, list] = {}
        #: Names the engine keeps a Lua function under (`self._section_vm = lua.fn.section_vm`).
        self.aliases: dict[str | None, str] = {}
        #: function node -> its class's methods by name (for `self.m(...)`).
        self.methods: dict[ast.AST, dict[str, ast.AST]] = {}
        for path, tree in self.modules.items():
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.defs.setdefault(node.name, []).append((path, node))
                if isinstance(node, ast.Assign) and _lua_function(node.value):
                    for t in node.targets:
                        if isinstance(t, (ast.Name, ast.Attribute)):
                            self.aliases[_name(t)] = _lua_function(node.value)
                if isinstance(node, ast.ClassDef):
                    own = {f.name: f for f in node.body
                           if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
                    for f in own.values():
                        self.methods[f] = own
        #: Tainted parameters by function node, functions returning a Lua value, fields.
        self.params: dict[ast.AST, set[str]] = {}
        #: Parameters holding a Python tuple of Lua values (a route's `*args`).
        self.tuples: dict[ast.AST, set[str]] = {}
        self.fields: set[str] = set(FIELDS)
        #: Routes with no definition in the scanned modules (a test keeps this empty).
        self.unresolved: list[str] = []
        for qualname in routes:
            cls, _, name = qualname.rpartition(".")
            found = [n for _, n in self.defs.get(name, []) if not isinstance(n, ast.ClassDef)
                     and any(c.name == cls and n in c.body for _, c in self.defs.get(cls, []))]
            if not found:
                self.unresolved.append(qualname)
            for _, node in self.defs.get(name, []):
                if isinstance(node, ast.ClassDef) or not any(
                        c.name == cls and node in c.body for _, c in self.defs.get(cls, [])):
                    continue
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                skip = {"self", "chain", "count", "op", "direct"}
                self.params.setdefault(node, set()).update(p for p in params if p not in skip)
                if node.args.vararg is not None:
                    self.tuples.setdefault(node, set()).add(node.args.vararg.arg)
        self.touches: list[Touch] = []
        while self._round():
            pass

    def functions(self) -> Iterator[tuple[pathlib.Path, ast.AST]]:
        for path, tree in self.modules.items():
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield path, node

    def _round(self) -> bool:
        before = (sum(map(len, self.params.values())), sum(map(len, self.tuples.values())))
        self.touches = []
        for path, func in self.functions():
            _Function(self, path, func).scan()
        return before != (sum(map(len, self.params.values())), sum(map(len, self.tuples.values())))

    def taint_call(self, caller: ast.AST, call: ast.Call, tainted: list[bool],
                   kw_tainted: dict[str, bool], tuples: list[bool]) -> None:
        """A call passes Lua values: taint the parameters or fields they land in (`self.m`
        is the caller's class's method; any other callee is found by name)."""
        name = _name(call.func)
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value,
                                                          (ast.Constant, ast.JoinedStr)):
            return          # a method of a Python string
        targets = self.defs.get(name or "", [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and name in self.methods.get(caller, {}):
            targets = [(None, self.methods[caller][name])]
        for _, node in targets:
            if isinstance(node, ast.ClassDef):
                slots = [s.target.id for s in node.body
                         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                continue        # a stored Lua value is read by its field's name (`FIELDS`)
            params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            if params and params[0] in ("self", "cls"):
                params = params[1:]
            got = self.params.setdefault(node, set())
            got_tuples = self.tuples.setdefault(node, set())
            vararg = node.args.vararg.arg if node.args.vararg is not None else None
            for i, (t, star) in enumerate(zip(tainted, tuples)):
                if star:        # `*args` of Lua values: the rest land in the callee's `*rest`
                    got.update(params[i:])
                    if vararg:
                        got_tuples.add(vararg)
                    break
                if not t:
                    continue
                if i < len(params):
                    (got_tuples if t == "tuple" else got).add(params[i])
                elif vararg:
                    got_tuples.add(vararg)
            for k, t in kw_tainted.items():
                if t and k in params:
                    got.add(k)


class _Function:
    def __init__(self, program: Program, path: pathlib.Path, func) -> None:
        self.p = program
        self.path = path
        self.func = func
        self.names: set[str] = set(program.params.get(func, set()))
        self.tuples: set[str] = set(program.tuples.get(func, set()))

    def scan(self) -> None:
        # Names assigned from Lua values, to a fixed point within the function.
        while True:
            n = len(self.names) + len(self.tuples)
            for node in ast.walk(self.func):
                if isinstance(node, ast.Assign) and self.tup(node.value):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            self.tuples.add(t.id)
                        else:
                            self._bind(t)
                elif isinstance(node, ast.Assign) and self.lua(node.value, set()):
                    for t in node.targets:
                        self._bind(t)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and \
                        node.value is not None and self.lua(node.value, set()):
                    self._bind(node.target)
                elif isinstance(node, (ast.For, ast.comprehension)) and (
                        self.lua(node.iter, set()) or self.tup(node.iter)):
                    self._bind(node.target)
            if len(self.names) + len(self.tuples) == n:
                break
        self.block(self.func.body, set())

    def _bind(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._bind(t.value if isinstance(t, ast.Starred) else t)

    # -- is an expression a Lua value? ---------------------------------------------------
    def tup(self, e: ast.expr | None) -> bool:
        """A Python tuple of Lua values: a route's `*args`, what a resume returned."""
        if isinstance(e, ast.Name):
            return e.id in self.tuples
        if isinstance(e, ast.Subscript):
            return isinstance(e.slice, ast.Slice) and self.tup(e.value)
        if isinstance(e, ast.BinOp):
            return self.tup(e.left) or self.tup(e.right)
        if isinstance(e, ast.Call):
            return _name(e.func) in SOURCES
        return False

    def lua(self, e: ast.expr | None, plain: set[str]) -> bool:
        if e is None:
            return False
        if isinstance(e, ast.Name):
            return e.id in self.names and e.id not in plain
        if isinstance(e, ast.Attribute):
            return e.attr in self.p.fields or (
                self.lua(e.value, plain) and e.attr not in TABLE_METHODS)
        if isinstance(e, ast.Subscript):
            return self.lua(e.value, plain) or (
                self.tup(e.value) and not isinstance(e.slice, ast.Slice))
        if isinstance(e, ast.Starred):
            return self.lua(e.value, plain)
        if isinstance(e, (ast.Tuple, ast.List)):
            return any(self.lua(x, plain) for x in e.elts)
        if isinstance(e, ast.IfExp):
            yes, no = _plain(e.test)
            return self.lua(e.body, plain | yes) or self.lua(e.orelse, plain | no)
        if isinstance(e, ast.BoolOp):
            return any(self.lua(x, plain) for x in e.values)
        if isinstance(e, ast.NamedExpr):
            return self.lua(e.value, plain)
        if isinstance(e, ast.Call):
            name = _name(e.func)
            if _is_guarded(e.func):
                return name != "tostring"       # which gives Python text
            if isinstance(e.func, ast.Attribute) and e.func.attr in TABLE_METHODS:
                return self.lua(e.func.value, plain)
        return False

    # -- the statements, with what each branch proves plain -------------------------------
    def block(self, body: list[ast.stmt], plain: set[str]) -> None:
        plain = set(plain)
        for stmt in body:
            if isinstance(stmt, ast.If):
                yes, no = _plain(stmt.test)
                self.expr(stmt.test, plain)
                self.block(stmt.body, plain | yes)
                self.block(stmt.orelse, plain | no)
                if _exits(stmt.body):
                    plain |= no
                if stmt.orelse and _exits(stmt.orelse):
                    plain |= yes
                continue
            if isinstance(stmt, ast.Assert):
                self.expr(stmt.test, plain)
                plain |= _plain(stmt.test)[0]
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue        # scanned on its own
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                self.expr(stmt.iter, plain)
                if self.lua(stmt.iter, plain):
                    self.touch(stmt, "iterate")
                self.expr(stmt.target, plain, store=True)
                self.block(stmt.body, plain)
                self.block(stmt.orelse, plain)
                continue
            if isinstance(stmt, (ast.While,)):
                self.expr(stmt.test, plain)
                self.block(stmt.body, plain)
                self.block(stmt.orelse, plain)
                continue
            if isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    self.expr(item.context_expr, plain)
                self.block(stmt.body, plain)
                continue
            if isinstance(stmt, ast.Try):
                self.block(stmt.body, plain)
                for h in stmt.handlers:
                    self.block(h.body, plain)
                self.block(stmt.orelse, plain)
                self.block(stmt.finalbody, plain)
                continue
            if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    self.expr(t, plain, store=True)
                if stmt.value is not None:
                    self.expr(stmt.value, plain)
                continue
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child, plain)

    def expr(self, e: ast.expr, plain: set[str], store: bool = False) -> None:
        """Record every touch of a Lua value inside `e`."""
        if isinstance(e, ast.IfExp):
            yes, no = _plain(e.test)
            self.expr(e.test, plain)
            self.expr(e.body, plain | yes)
            self.expr(e.orelse, plain | no)
            return
        if isinstance(e, ast.BoolOp):
            seen = set(plain)
            for v in e.values:
                self.expr(v, seen)
                yes, no = _plain(v)
                seen |= yes if isinstance(e.op, ast.And) else no
            return
        if isinstance(e, (ast.Subscript, ast.Attribute)) and self.lua(e.value, plain):
            if not (isinstance(e, ast.Attribute) and e.attr in TABLE_METHODS):
                self.touch(e, "index")
        if isinstance(e, ast.FormattedValue) and self.lua(e.value, plain):
            self.touch(e, "repr" if e.conversion == ord("r") else "tostring")
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mod) and self.lua(e.right, plain):
            self.touch(e, "tostring")
        if isinstance(e, ast.Compare):
            operands = [e.left, *e.comparators]
            for op, left, right in zip(e.ops, operands, operands[1:]):
                if isinstance(op, (ast.Is, ast.IsNot)):
                    continue
                if self.lua(left, plain) or self.lua(right, plain):
                    self.touch(e, "compare")
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for gen in e.generators:
                if self.lua(gen.iter, plain):
                    self.touch(e, "iterate")
        if isinstance(e, ast.Call):
            self.call(e, plain)
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self.expr(child, plain)
            elif isinstance(child, ast.comprehension):
                self.expr(child.iter, plain)
                for cond in child.ifs:
                    self.expr(cond, plain)
            elif isinstance(child, ast.keyword):
                self.expr(child.value, plain)

    def call(self, e: ast.Call, plain: set[str]) -> None:
        name = _name(e.func)
        args = ["tuple" if self.tup(a) else self.lua(a, plain) for a in e.args]
        stars = [isinstance(a, ast.Starred) and self.tup(a.value) for a in e.args]
        kws = {k.arg: self.lua(k.value, plain) for k in e.keywords if k.arg}
        if isinstance(e.func, (ast.Name, ast.Subscript, ast.Call)) and self.lua(e.func, plain):
            self.touch(e, "call")
        if isinstance(e.func, ast.Attribute) and self.lua(e.func.value, plain) \
                and e.func.attr not in TABLE_METHODS:
            self.touch(e, "call")
        if not (any(args) or any(kws.values())):
            return
        if all(a in (False, "tuple") for a in args) and not any(kws.values()) \
                and isinstance(e.func, ast.Name) and e.func.id in BUILTIN_KINDS:
            return      # len(), list(), ... of a Python tuple
        if _is_guarded(e.func) or (isinstance(e.func, ast.Name) and name in INSPECTING):
            return
        lua_name = name if _is_lua_side(e.func) else self.p.aliases.get(name)
        if lua_name is not None:
            if lua_name not in RAW_LUA:
                self.touch(e, "lua-call")
            return
        if isinstance(e.func, ast.Name) and e.func.id in BUILTIN_KINDS \
                and e.func.id not in self.p.defs:
            self.touch(e, BUILTIN_KINDS[e.func.id])
            return
        self.p.taint_call(self.func, e, args, kws, stars)

    def touch(self, node: ast.AST, kind: str) -> None:
        line = self.p.lines[self.path][node.lineno - 1]
        if MARK in line:
            return
        touch = Touch(self.path.name, node.lineno, kind, line.strip())
        if touch not in self.p.touches:
            self.p.touches.append(touch)


def scan(paths: Iterable[pathlib.Path], routes: Iterable[str]) -> list[Touch]:
    """Every touch of a prompt's Lua value in `paths`, given the host routes' qualified names
    (`Class.method`)."""
    program = Program(paths, routes)
    if program.unresolved:
        raise ValueError(f"routes not found in the scanned modules: {program.unresolved}")
    return sorted(program.touches)


def runs_lua(touches: Iterable[Touch]) -> list[str]:
    """The touches lupa runs Lua for (`LUPA_RUNS_LUA`): each an unguarded entry."""
    return [str(t) for t in touches if LUPA_RUNS_LUA[t.kind]]
