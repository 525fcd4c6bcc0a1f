"""The passes a pass file imports (``from X import name``), found without running any code.

Importing a module runs it (``from antigravity import x`` opens a browser), so nothing is imported:
``X`` is *located* the way ``import`` would find it, by ``importlib.machinery.PathFinder`` on
``sys.path`` followed by the pass file's folder (the folder is appended when the file runs), one
package level at a time (``find_spec(part, parent.submodule_search_locations)``); a module already in
``sys.modules`` is located by its ``__file__`` / ``__path__``, read from its dictionary. The located
source file is read (a regular file, size-capped) and parsed with ``ast``; ``name`` is then followed
through the module's bindings: a ``def`` / ``class`` there is judged (``Resolver.kind``), a re-export
(``from .sub import name``, ``from pkg import *``, ``name = other``) is followed a few levels.

What counts as a pass: a function of one required argument (or with a parameter ``example_inputs``)
whose first parameter is not annotated ``Tensor``; a class deriving (by name, through the classes it
can resolve) from ``Transformer``, ``PassBase`` or ``Interpreter``; a concrete class defining a
``__call__(self, gm)`` (optimum's ``Transformation`` subclasses), not an ``nn.Module``. Abstract
classes and the base classes themselves are not passes, nor is anything of the standard library.

Where the source says nothing (a compiled module, a name made at run time, a module that cannot be
located), a module already in ``sys.modules`` is inspected through its objects without calling any
of their code (dictionaries and code objects only: ``live_objects.py``); otherwise the name is listed unresolved when it
looks like a pass (``_LOOKS_LIKE_A_PASS``) and dropped when it does not.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path

from fxstudio.core.passes.live_objects import CLASS_KINDS as _CLASS_KINDS
from fxstudio.core.passes.live_objects import NOT_A_PASS, UNRESOLVED, dict_of_module, object_kind, type_name

MAX_HOPS = 6
"""Re-exports and base classes followed from one imported name."""
MAX_MODULES = 128
"""Module sources read (and parsed) for one listing."""
MAX_MODULE_BYTES = 8 * 2**20
"""A module source larger than this is not read (the name is then unresolved)."""
MAX_TOTAL_BYTES = 64 * 2**20
"""Bytes of module sources read for one listing."""
MAX_STEPS = 200_000
"""Bindings followed for one listing (star imports of star imports multiply: the bound on the work)."""
MAX_NAME_STEPS = 2_000
"""Bindings followed for one imported name (one pathological name leaves the others their share)."""

PASS_BASES = frozenset({"Transformer", "PassBase", "Interpreter"})
"""Base classes (by name) that make a class a pass."""
_LOOKS_LIKE_A_PASS = re.compile(
    r"pass|fuse|fusion|fold|transform|rewrite|replace|remove|eliminat|prop|normali[sz]|quanti[sz]|prepare|"
    r"convert|lower|optimi[sz]|canonicali[sz]|decompos|inline|dce|merge|prune|simplif|split", re.IGNORECASE)


def looks_like_a_pass(name: str) -> bool:
    """Whether a name that could not be resolved reads like a pass (``fuse``, ``ShapeProp``, ``my_pass``)."""
    return bool(_LOOKS_LIKE_A_PASS.search(name))


@dataclass(frozen=True)
class ImportedPass:
    """A name a file imports that is (``kind``: "function", "transformer", "pass_class", "interpreter",
    "callable_class", "instance") or may be (``kind`` "unresolved") a pass: its local ``name``, the
    ``module`` the import names and the ``line`` of the import."""

    name: str
    kind: str
    module: str
    line: int


# ------------------------------------------------------------------------------------ bindings


@dataclass(frozen=True)
class _From:
    """``from module import name`` (``level``: the leading dots)."""

    module: str
    level: int
    name: str
    line: int


@dataclass(frozen=True)
class _Module:
    """``import module`` / ``import a.b as module``: the name is a module."""

    module: str


_OPAQUE = object()  # bound by something that cannot be followed (tuple unpacking, a loop, ...)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(body: list[ast.stmt]):
    """The module-level statements of ``body``, into ``if`` / ``try`` blocks (not ``if TYPE_CHECKING:``)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            if not _type_checking(stmt.test):
                yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield from _statements(stmt.body)
            for handler in stmt.handlers:
                yield from _statements(handler.body)
            yield from _statements(stmt.orelse)
            yield from _statements(stmt.finalbody)


def _target_names(target: ast.expr):
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def bindings(tree: ast.Module) -> tuple[dict[str, object], list[_From]]:
    """The last binding of each module-level name of ``tree`` (a ``def`` / ``class`` node, an assigned
    value expression, a ``_From``, a ``_Module`` or ``_OPAQUE``) and its ``from X import *`` imports."""
    bound: dict[str, object] = {}
    stars: list[_From] = []
    for stmt in _statements(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[stmt.name] = stmt
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    bound[alias.asname] = _Module(alias.name)
                else:
                    top = alias.name.partition(".")[0]
                    bound[top] = _Module(top)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                entry = _From(stmt.module or "", stmt.level, alias.name, stmt.lineno)
                if alias.name == "*":
                    stars.append(entry)
                else:
                    bound[alias.asname or alias.name] = entry
        elif isinstance(stmt, ast.Assign):
            single = len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            for target in stmt.targets:
                for name in _target_names(target):
                    bound[name] = stmt.value if single else _OPAQUE
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
            bound[stmt.target.id] = stmt.value
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign)):
            targets = [stmt.target] if isinstance(stmt, (ast.For, ast.AsyncFor, ast.AugAssign)) else \
                [item.optional_vars for item in stmt.items if item.optional_vars is not None]
            for target in targets:
                for name in _target_names(target):
                    bound[name] = _OPAQUE
    return bound, stars


# ------------------------------------------------------------------------------------ signatures


def _decorator_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _annotated_tensor(arg: ast.arg) -> bool:
    ann = arg.annotation
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.rpartition(".")[2] == "Tensor"
    return _decorator_name(ann) == "Tensor" if ann is not None else False


def takes_a_module(args: ast.arguments, *, method: bool = False) -> bool:
    """Whether a signature takes one module: one required positional argument (besides ``self`` for a
    ``method``), or none required but room for one, or a parameter ``example_inputs``; never a
    function whose first parameter is annotated ``Tensor``."""
    positional = [*args.posonlyargs, *args.args]
    defaults = len(args.defaults)
    if method:
        if not positional:
            return False
        positional = positional[1:]
        defaults = min(defaults, len(positional))
    if positional and _annotated_tensor(positional[0]):
        return False
    if any(a.arg == "example_inputs" for a in [*positional, *args.kwonlyargs]):
        return True
    required = len(positional) - defaults
    required_kw = sum(1 for d in args.kw_defaults if d is None)
    return not required_kw and (required == 1 or (required == 0 and bool(positional or args.vararg)))


# ------------------------------------------------------------------------------------ resolver


@dataclass
class _Source:
    """A located, parsed module."""

    name: str
    path: Path
    package: bool
    bound: dict[str, object]
    stars: list[_From]


@dataclass
class _Location:
    """Where a module is: its source file (None: none to read), whether it is a package and where its
    submodules are."""

    origin: str | None
    package: bool
    locations: list[str]


def read_source(path: str | os.PathLike, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes (default ``MAX_MODULE_BYTES``), or None (a
    FIFO or a device is never read from: it is opened without blocking and checked first)."""
    limit = MAX_MODULE_BYTES if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


class Resolver:
    """Locates and reads modules for one listing; ``search_path`` is where top-level modules are
    looked for (``sys.path`` then the pass file's folder)."""

    def __init__(self, search_path: list[str]):
        self.search_path = search_path
        self._located: dict[str, _Location | None] = {}
        self._sources: dict[str, _Source | None] = {}
        self.read = 0
        self.bytes = 0
        self.steps = 0
        self._name_start = 0

    def _spent(self, hops: int) -> bool:
        """Count one step; whether this name went too deep or used its ``MAX_NAME_STEPS``, or the
        listing's ``MAX_STEPS`` are spent."""
        self.steps += 1
        return hops > MAX_HOPS or self.steps > MAX_STEPS or self.steps - self._name_start > MAX_NAME_STEPS

    def locate(self, dotted: str) -> _Location | None:
        """Where module ``dotted`` is, without importing it (or its parents); None when not found."""
        if dotted in self._located:
            return self._located[dotted]
        self._located[dotted] = None  # a cycle ends here
        found = self._from_sys_modules(dotted)
        if found is None:
            found = self._find(dotted)
        self._located[dotted] = found
        return found

    @staticmethod
    def _from_sys_modules(dotted: str) -> _Location | None:
        d = dict_of_module(sys.modules.get(dotted))
        if d is None:
            return None
        origin = d.get("__file__")
        path = d.get("__path__")
        if path is not None and type(path) is not list and type_name(type(path)) == "_NamespacePath":
            path = object.__getattribute__(path, "_path")  # importlib's: its last computed entries
        locations = [p for p in path if type(p) is str] if type(path) is list else []
        origin = origin if type(origin) is str and origin.endswith(".py") else None
        return _Location(origin, path is not None, locations)

    def _find(self, dotted: str) -> _Location | None:
        parent, _, _ = dotted.rpartition(".")
        if parent:
            above = self.locate(parent)
            if above is None or not above.package or not above.locations:
                return None
            where = above.locations
        else:
            if dotted in sys.builtin_module_names:
                return None
            where = self.search_path
        try:
            spec = PathFinder.find_spec(dotted, list(where))
        except (ImportError, ValueError, OSError, TypeError):
            return None
        if spec is None:
            return None
        origin = spec.origin if isinstance(spec.origin, str) and spec.origin.endswith(".py") else None
        locations = list(spec.submodule_search_locations or [])
        return _Location(origin, spec.submodule_search_locations is not None, locations)

    def source(self, dotted: str) -> _Source | None:
        """The parsed source of module ``dotted``, or None (not found, no source, too large, bad syntax,
        or the listing's budget of ``MAX_MODULES`` sources spent)."""
        if dotted in self._sources:
            return self._sources[dotted]
        self._sources[dotted] = None
        where = self.locate(dotted)
        if where is None or where.origin is None or self.read >= MAX_MODULES:
            return None
        self.read += 1
        data = read_source(where.origin, min(MAX_MODULE_BYTES, MAX_TOTAL_BYTES - self.bytes))
        if data is None:
            return None
        self.bytes += len(data)
        try:
            tree = ast.parse(data, filename=where.origin)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        bound, stars = bindings(tree)
        found = self._sources[dotted] = _Source(dotted, Path(where.origin), where.package, bound, stars)
        return found

    # -------------------------------------------------------------------- following names

    def absolute(self, src: _Source | None, entry: _From) -> str | None:
        """The absolute module an import of ``src`` names (None: a relative import outside a package)."""
        if not entry.level:
            return entry.module
        if src is None:
            return None
        package = src.name if src.package else src.name.rpartition(".")[0]
        for _ in range(entry.level - 1):
            package = package.rpartition(".")[0]
        if not package:
            return None
        return f"{package}.{entry.module}" if entry.module else package

    def lookup(self, module: str, name: str, hops: int) -> tuple[_Source | None, object] | None:
        """What ``module.name`` is bound to, aliases and re-exports followed: (the source defining it,
        a ``def`` / ``class`` node, a value expression, a ``_Module`` or ``_OPAQUE``); None when the
        sources say nothing (not found, not readable, made at run time, too many hops)."""
        if self._spent(hops) or module.partition(".")[0] in sys.stdlib_module_names:
            return None
        src = self.source(module)
        if src is not None:
            entry = src.bound.get(name)
            if entry is not None:
                return self.follow(src, entry, hops)
            for star in reversed(src.stars):
                target = self.absolute(src, star)
                found = self.lookup(target, name, hops + 1) if target else None
                if found is not None:
                    return found
        where = self.locate(module)
        if where is not None and where.package and self.locate(f"{module}.{name}") is not None:
            return None, _Module(f"{module}.{name}")
        return None

    def follow(self, src: _Source, entry: object, hops: int) -> tuple[_Source | None, object] | None:
        """``entry`` (bound in ``src``) with imports, ``x = y`` and ``x = mod.y`` aliases followed."""
        if self._spent(hops):
            return None
        if isinstance(entry, _From):
            target = self.absolute(src, entry)
            return self.lookup(target, entry.name, hops + 1) if target else None
        if isinstance(entry, ast.Name):
            bound = src.bound.get(entry.id)
            return self.follow(src, bound, hops + 1) if bound is not None else None
        if isinstance(entry, ast.Attribute):
            base = self.follow(src, entry.value, hops + 1)
            if base is None or not isinstance(base[1], _Module):
                return None
            return self.lookup(base[1].module, entry.attr, hops + 1)
        return src, entry

    def name_in(self, module: str, name: str, hops: int = 0) -> str:
        """The kind of ``module.name``, or ``NOT_A_PASS``, or ``UNRESOLVED`` (nothing says)."""
        if module.partition(".")[0] in sys.stdlib_module_names:
            return NOT_A_PASS
        if not hops:
            self._name_start = self.steps
        found = self.lookup(module, name, hops)
        verdict = UNRESOLVED if found is None else self.kind(found[0], found[1], hops)
        return object_kind(module, name) if verdict == UNRESOLVED else verdict

    def kind(self, src: _Source | None, entry: object, hops: int) -> str:
        """The kind of a followed binding (see ``lookup``)."""
        if entry is _OPAQUE:
            return UNRESOLVED
        if isinstance(entry, (_Module, ast.AsyncFunctionDef)):
            return NOT_A_PASS
        if isinstance(entry, ast.FunctionDef):
            return "function" if takes_a_module(entry.args) else NOT_A_PASS
        if isinstance(entry, ast.ClassDef):
            return self.class_kind(src, entry, hops)
        if isinstance(entry, ast.Call) and src is not None:
            found = self.follow(src, entry.func, hops + 1)
            if found is None:
                return UNRESOLVED
            if isinstance(found[1], ast.ClassDef):
                kind = self.class_kind(found[0], found[1], hops + 1)
                return "instance" if kind in ("pass_class", "callable_class") else NOT_A_PASS
        return NOT_A_PASS  # a literal, a lambda, another expression

    def class_kind(self, src: _Source | None, cls: ast.ClassDef, hops: int) -> str:
        """The kind of a class definition: "transformer", "pass_class", "interpreter", "callable_class"
        or ``NOT_A_PASS`` (an abstract class, a base class itself, an ``nn.Module``, anything else)."""
        if cls.name in PASS_BASES:
            return NOT_A_PASS
        known: set[str] = set()
        first: dict[str, bool] = {}  # method name -> abstract, from the nearest class defining it
        call: ast.FunctionDef | None = None
        seen: set[int] = set()
        stack = [(src, cls, hops)]
        while stack:
            where, c, depth = stack.pop(0)
            if id(c) in seen:
                continue
            seen.add(id(c))
            for stmt in c.body:
                names = [stmt.name] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                    [n for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]) if t is not None
                     for n in _target_names(t)] if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else []
                for name in names:
                    if name in first:
                        continue
                    abstract = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                        _decorator_name(d) == "abstractmethod" for d in stmt.decorator_list)
                    first[name] = abstract
                    if name == "__call__" and isinstance(stmt, ast.FunctionDef):
                        call = stmt
                    elif name == "__call__":
                        known.add("not-callable")
            for base in c.bases:
                base_name = _base_name(base)
                if base_name in PASS_BASES or base_name == "Module":
                    known.add(base_name)
                    continue
                if depth >= MAX_HOPS or where is None:
                    continue
                found = self.follow(where, base, depth + 1)
                if found is not None and isinstance(found[1], ast.ClassDef):
                    stack.append((found[0], found[1], depth + 1))
        if any(first.values()) or "Module" in known:
            return NOT_A_PASS
        for base in ("Transformer", "PassBase", "Interpreter"):
            if base in known:
                return _CLASS_KINDS[base]
        if call is not None and "not-callable" not in known and takes_a_module(call.args, method=True):
            return "callable_class"
        return NOT_A_PASS


def _base_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):
        return _base_name(expr.value)
    return None


# ------------------------------------------------------------------------------------ the face


def imported_passes(tree: ast.Module, folder: Path) -> list[ImportedPass]:
    """The passes the pass file ``tree`` (in ``folder``) imports by ``from X import name``, where the
    import is the name's last binding: resolved without running or importing anything (module
    docstring); unresolved names only when they look like passes. Relative imports are skipped (a pass
    file runs as a top-level module, where they fail)."""
    bound, _ = bindings(tree)
    search = [*sys.path, str(folder)]
    resolver = Resolver(search)
    found: list[ImportedPass] = []
    for local, entry in bound.items():
        if not isinstance(entry, _From) or entry.level or local.startswith("_") or not entry.module:
            continue
        kind = resolver.name_in(entry.module, entry.name, 0)
        if kind == UNRESOLVED and not looks_like_a_pass(local):
            continue
        if kind != NOT_A_PASS:
            found.append(ImportedPass(local, kind, entry.module, entry.line))
    found.sort(key=lambda p: p.line)
    return found


def import_bound(tree: ast.Module) -> set[str]:
    """The names of ``tree`` whose last module-level binding is a ``from X import name``."""
    bound, _ = bindings(tree)
    return {name for name, entry in bound.items() if isinstance(entry, _From)}
