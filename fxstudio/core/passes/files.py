"""Pass files: listing the passes a file defines without running it, and running it to get one.

``pass_names`` reads the file's top-level definitions with ``ast`` (nothing runs). ``load_pass``
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

MAX_PASS_FILE_BYTES = 8 * 2**20
_PASS_BASES = frozenset({"Transformer", "PassBase"})
_MODULE_PREFIX = "fxs_pass_"
_modules: dict[tuple[str, str], types.ModuleType] = {}


@dataclass(frozen=True)
class PassInfo:
    """One candidate pass of a file: its ``name``, ``kind`` ("function", "transformer", "pass_class"
    or "assignment": a module-level object, maybe a ``PassBase`` instance, unknowable before running)
    and the ``line`` it is defined on."""

    name: str
    kind: str
    line: int


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


def _one_argument(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    required = len(positional) - len(a.defaults)
    required_kw = sum(1 for d in a.kw_defaults if d is None)
    return not required_kw and (required == 1 or (required == 0 and (positional or a.vararg)))


def pass_names(path: str | Path) -> list[PassInfo]:
    """The passes ``path`` may define, from its top-level definitions, without running it:
    functions taking one argument, classes subclassing ``Transformer`` or ``PassBase`` (by name, also
    through a class of the same file), and module-level assignments of a call (a ``PassBase``
    instance is only known once the file runs). ``EditRefused`` for an unreadable file or bad syntax."""
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
            if not stmt.name.startswith("_") and isinstance(stmt, ast.FunctionDef) and _one_argument(stmt):
                found.append(PassInfo(stmt.name, "function", stmt.lineno))
        elif isinstance(stmt, ast.ClassDef):
            bases = {_base_name(b) for b in stmt.bases}
            if bases & (_PASS_BASES | pass_classes):
                pass_classes.add(stmt.name)
                kind = "transformer" if _is_transformer(stmt, tree) else "pass_class"
                if not stmt.name.startswith("_"):
                    found.append(PassInfo(stmt.name, kind, stmt.lineno))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    found.append(PassInfo(target.id, "assignment", stmt.lineno))
    return found


def _is_transformer(cls: ast.ClassDef, tree: ast.Module) -> bool:
    """Whether a pass class derives (by name, through classes of the file) from ``Transformer``."""
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    seen: set[str] = set()
    stack = [cls]
    while stack:
        c = stack.pop()
        for base in (_base_name(b) for b in c.bases):
            if base == "Transformer":
                return True
            if base in classes and base not in seen:
                seen.add(base)
                stack.append(classes[base])
    return False


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
