"""Pass files: listing the passes a file defines without running it, and running it to get one.

``pass_names`` reads the file's top-level definitions with ``ast`` and resolves the passes it imports
(``from X import name``) by locating and reading ``X``'s source (``imported.py``); nothing runs and
nothing is imported. ``load_pass``
runs the file (only after the trust check of the caller) in a fresh module namespace and returns
the named object with the file's sha256; the module is kept per (file, sha256), so replaying a
script or redoing runs the file once.
"""

from __future__ import annotations

import ast
import hashlib
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxstudio.core.errors import EditRefused
from fxstudio.core.fileio import read_capped
from fxstudio.core.loading import run_user_code
from fxstudio.core.passes.imported import PASS_BASES, import_bound, imported_passes, takes_a_module

MAX_PASS_FILE_BYTES = 8 * 2**20
_PASS_BASES = PASS_BASES
_MODULE_PREFIX = "fxs_pass_"
_modules: dict[tuple[str, str], types.ModuleType] = {}


@dataclass(frozen=True)
class PassInfo:
    """One candidate pass of a file: its ``name``, ``kind`` ("function", "transformer", "pass_class",
    "interpreter", "callable_class", "instance", or "assignment": a module-level object, maybe a
    ``PassBase`` instance, unknowable before running; "unresolved": an imported name that looks like a
    pass but whose definition could not be read) and the ``line`` it is defined (or imported) on.
    ``origin``: the module it is imported from ("" for a definition of the file itself)."""

    name: str
    kind: str
    line: int
    origin: str = ""

    @property
    def where(self) -> str:
        """``line 3``, ``line 3, imported from X`` or ``line 3, imported from X (not resolved)``."""
        if not self.origin:
            return f"line {self.line}"
        return f"line {self.line}, imported from {self.origin}" + (" (not resolved)" if self.kind == "unresolved"
                                                                   else "")


@dataclass(frozen=True)
class LoadedPass:
    """A pass object taken from a file that ran: the object, the file and its sha256."""

    obj: Any
    path: Path
    sha256: str
    module: types.ModuleType


def _read(path: Path) -> bytes:
    return read_capped(
        path, MAX_PASS_FILE_BYTES,
        lambda exc: EditRefused(f"Cannot read the pass file {path}: {exc.strerror or exc}."),
        lambda: EditRefused(f"{path} is larger than {MAX_PASS_FILE_BYTES // 2**20} MiB; that is not a pass file."))


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of a pass file's bytes."""
    return hashlib.sha256(_read(Path(path))).hexdigest()


def _base_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):  # Generic[...]-style bases
        return _base_name(expr.value)
    return None


def pass_names(path: str | Path, *, imported: bool = True) -> list[PassInfo]:
    """The passes ``path`` may define, from its top-level definitions, without running it:
    functions taking one argument (or a parameter ``example_inputs``), classes subclassing
    ``Transformer``, ``PassBase`` or ``Interpreter`` (by name, also through a class of the same file),
    and module-level assignments of a call (a ``PassBase`` instance is only known once the file runs);
    then (``imported``) the passes it imports by ``from X import name``, found by reading ``X``'s source
    without importing it (``imported.py``), each with its ``origin``. ``EditRefused`` for an unreadable
    file or bad syntax."""
    path = Path(path)
    data = _read(path)
    try:
        tree = ast.parse(data, filename=str(path))
    except SyntaxError as exc:
        raise EditRefused(f"{path}: syntax error at line {exc.lineno}: {exc.msg}.") from None
    except ValueError as exc:  # NUL bytes
        raise EditRefused(f"{path} is not Python source: {exc}.") from None
    found: list[PassInfo] = []
    pass_classes: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not stmt.name.startswith("_") and isinstance(stmt, ast.FunctionDef) and takes_a_module(stmt.args):
                found.append(PassInfo(stmt.name, "function", stmt.lineno))
        elif isinstance(stmt, ast.ClassDef):
            bases = {_base_name(b) for b in stmt.bases}
            if bases & (_PASS_BASES | pass_classes):
                pass_classes.add(stmt.name)
                kind = _class_kind(stmt, tree)
                if not stmt.name.startswith("_") and stmt.name not in _PASS_BASES:
                    found.append(PassInfo(stmt.name, kind, stmt.lineno))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    found.append(PassInfo(target.id, "assignment", stmt.lineno))
    if not imported:
        return found
    rebound = import_bound(tree)  # a name imported after its definition is the import's
    found = [info for info in found if info.name not in rebound]
    found += [PassInfo(p.name, p.kind, p.line, p.module) for p in imported_passes(tree, path.parent)]
    return found


def _class_kind(cls: ast.ClassDef, tree: ast.Module) -> str:
    """"transformer", "pass_class" or "interpreter": what a pass class derives from (by name, through
    classes of the file); a ``Transformer`` is also an ``Interpreter``, so it is looked for first."""
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    seen: set[str] = set()
    bases: set[str | None] = set()
    stack = [cls]
    while stack:
        c = stack.pop()
        for base in (_base_name(b) for b in c.bases):
            bases.add(base)
            if base in classes and base not in seen:
                seen.add(base)
                stack.append(classes[base])
    if "Transformer" in bases:
        return "transformer"
    return "pass_class" if "PassBase" in bases else "interpreter"


def _module_name(path: Path, sha: str) -> str:
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem)
    return f"{_MODULE_PREFIX}{stem}"  # fx names the file's functions in generated code after it


def run_pass_file(path: Path, data: bytes, sha: str) -> types.ModuleType:
    """Run the file's ``data`` (the bytes that were hashed) as a fresh module, once per (file, sha256)."""
    key = (str(path), sha)
    module = _modules.get(key)
    if module is not None:
        return module
    name = _module_name(path, sha)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # its siblings import as they would for `python file.py`, after everything else
    sys.modules[name] = module  # dataclasses, pickling and fx's code generation look modules up here

    def raised(exc: BaseException, where: traceback.FrameSummary | None) -> EditRefused:
        at = f" at {path.name}:{where.lineno} (`{(where.line or '').strip()}`)" if where else ""
        return EditRefused(f"Running the pass file {path} raised {type(exc).__name__}{at}: {exc}")

    # the caller checked that the file is trusted: running it is the point
    run_user_code(path, module, data,
                  lambda exc: EditRefused(f"{path}: syntax error at line {exc.lineno}: {exc.msg}."), raised)
    _modules[key] = module
    return module


def load_pass(path: str | Path, name: str, sha256: str | None = None, allow_changed: bool = False) -> LoadedPass:
    """Run the pass file ``path`` (the caller checked that it is trusted) and take its attribute
    ``name``. A file whose sha256 differs from ``sha256`` (when given) is refused unless
    ``allow_changed``; the returned ``sha256`` is that of the bytes that ran."""
    path = Path(path)
    data = _read(path)
    sha = hashlib.sha256(data).hexdigest()
    if sha256 is not None and sha256 != sha and not allow_changed:
        raise EditRefused(f"The pass file {path} changed since this edit was recorded (sha256 {sha256[:12]}… "
                          f"then, {sha[:12]}… now); check it and replay with --allow-changed-passes to run it anyway.")
    module = run_pass_file(path, data, sha)
    if not name.isidentifier() or name not in vars(module):
        candidates = ", ".join(p.name for p in pass_names(path)) or "none"
        raise EditRefused(f"{path.name} defines no pass {name!r} (candidates: {candidates}).")
    return LoadedPass(vars(module)[name], path, sha, module)
