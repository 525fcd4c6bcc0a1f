"""Running a model ``.py`` file as a module and resolving its entry point and example inputs.

The file runs as ``python file.py`` would see it: under a module named after its stem, with its own
folder on ``sys.path`` so it can import its siblings. Loading again re-runs the file (and forgets
sibling modules imported from that folder), so an edited file is picked up.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fxstudio.core.errors import LoadError

ENTRY_FACTORIES = ("get_model", "build_model")

# Module names this process has loaded from user files, so a reload may replace them.
_user_module_files: dict[str, Path] = {}
# Sibling modules imported by model files, with their file's mtime when first seen.
_sibling_stamps: dict[str, tuple[int, int]] = {}
# Folders of the model files loaded so far (their modules may be dropped when another folder's
# model imports a same-named sibling).
_model_folders: set[Path] = set()


def run_model_file(path: Path) -> types.ModuleType:
    """Execute ``path`` as a fresh module named after its stem; ``LoadError`` on any failure."""
    name = path.stem
    if not name.isidentifier():
        raise LoadError(
            f"{path.name}: the file name must be a Python identifier to run it as a module "
            f"(it is imported as '{name}'); rename the file, e.g. to '{_identifier(name)}.py'."
        )
    _check_no_shadowing(name, path)
    folder = str(path.parent)
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)  # first, so its siblings win over same-named files of other model folders
    _forget_other_folders_modules(path.parent)
    _model_folders.add(path.parent.resolve())
    _forget_siblings(path.parent)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path}: Python cannot load this file as a module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    _user_module_files[name] = path

    def raised(exc: BaseException, where: traceback.FrameSummary | None) -> LoadError:
        at = f" at line {where.lineno} (`{(where.line or '').strip()}`)" if where else ""
        return LoadError(
            f"{path}: running the file raised {type(exc).__name__}{at}: {exc}. "
            "fxstudio runs the model file as `python file.py` would; fix the error and open it again.")

    # Compiled from source every time: a bytecode cache could hide an edit made within a second.
    run_user_code(path, module, None, lambda exc: LoadError(
        f"{path}: syntax error at line {exc.lineno}: {exc.msg}"
        + (f" — `{exc.text.strip()}`" if exc.text else "")
        + ". Fix the file and open it again."), raised)
    _stamp_siblings(path.parent)
    return module


def run_user_code(path: Path, module: types.ModuleType, source: bytes | None,
                  syntax_error: Callable[[SyntaxError], Exception],
                  raised: Callable[[BaseException, traceback.FrameSummary | None], Exception]) -> None:
    """Compile ``source`` (the bytes of the user's file ``path``; None: read the file now, a read
    failure counting as raised) and run it in ``module``, which the caller put in ``sys.modules``.
    On failure the module leaves ``sys.modules`` again and ``syntax_error(exc)`` or ``raised(exc, where)``
    is raised, ``where`` the innermost frame in ``path`` (:func:`user_frame`, or None); a
    ``KeyboardInterrupt`` propagates as it is."""
    try:
        code = compile(path.read_bytes() if source is None else source, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - running the user's own file is the point
    except SyntaxError as exc:
        sys.modules.pop(module.__name__, None)
        raise syntax_error(exc) from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        sys.modules.pop(module.__name__, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise raised(exc, user_frame(exc.__traceback__, path)) from None


def user_frame(tb, path: Path) -> traceback.FrameSummary | None:
    """The innermost frame of traceback ``tb`` that lies in the file ``path``, or None."""
    target = str(Path(path).resolve())
    found = None
    for frame in traceback.extract_tb(tb):
        try:
            if str(Path(frame.filename).resolve()) == target:
                found = frame
        except OSError:
            continue
    return found


def _identifier(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"model_{cleaned}"


def _check_no_shadowing(name: str, path: Path) -> None:
    """Refuse a file whose stem would replace an already imported library module (e.g. ``math.py``)."""
    existing = sys.modules.get(name)
    if existing is None or name in _user_module_files:
        return
    existing_file = getattr(existing, "__file__", None)
    if existing_file and Path(existing_file).resolve() == path.resolve():
        return
    raise LoadError(
        f"{path.name}: its module name '{name}' is already taken by the installed module "
        f"'{name}' ({existing_file or 'built in'}); loading it would replace that module. "
        "Rename the model file."
    )


def _forget_siblings(folder: Path) -> None:
    """Drop modules imported from ``folder`` whose file changed since we last looked, so the model
    file's next import of them sees the change; unchanged siblings stay (their objects stay the same).
    """
    in_folder = _folder_test(folder)
    for mod_name, mod in list(sys.modules.items()):
        mod_file = getattr(mod, "__file__", None)
        if not mod_file or mod_name in _user_module_files or mod_name.startswith(("fxstudio", "torch")):
            continue
        try:
            path = in_folder(mod_file)
            if path is None:
                continue
            stat = path.stat()
        except (OSError, ValueError):
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        seen = _sibling_stamps.setdefault(mod_name, stamp)
        if seen != stamp:
            del sys.modules[mod_name]
            _sibling_stamps.pop(mod_name, None)
            # Its .pyc records the source mtime in whole seconds: drop it so the edit is compiled.
            Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def _forget_other_folders_modules(folder: Path) -> None:
    """Drop modules named like this folder's files that were imported from another model's folder."""
    folder = folder.resolve()
    try:
        stems = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    except OSError:
        return
    for name in stems:
        mod = sys.modules.get(name)
        mod_file = getattr(mod, "__file__", None) if mod is not None else None
        if not mod_file:
            continue
        try:
            mod_path = Path(mod_file).resolve()
        except (OSError, ValueError):
            continue
        owner = mod_path.parent.parent if mod_path.name == "__init__.py" else mod_path.parent
        if owner != folder and owner in _model_folders:
            del sys.modules[name]
            _sibling_stamps.pop(name, None)


def _stamp_siblings(folder: Path) -> None:
    """Remember the modification times of the sibling modules the model file just imported."""
    in_folder = _folder_test(folder)
    for mod_name, mod in list(sys.modules.items()):
        mod_file = getattr(mod, "__file__", None)
        if not mod_file or mod_name in _user_module_files or mod_name in _sibling_stamps:
            continue
        try:
            path = in_folder(mod_file)
            if path is not None:
                stat = path.stat()
                _sibling_stamps[mod_name] = (stat.st_mtime_ns, stat.st_size)
        except (OSError, ValueError):
            continue


def _folder_test(folder: Path):
    """A function telling whether a module file lies in ``folder``: its path then, else None.

    One ``stat`` per distinct directory (cached) instead of resolving every module's path: with
    thousands of modules imported (transformers) resolving them took 0.1-0.4 s per load. A
    linked file is resolved, as ``Path.resolve`` would, to the folder of its target.
    """
    folder = folder.resolve()
    target = os.stat(folder)
    key = (target.st_dev, target.st_ino)
    dir_ids: dict[str, tuple[int, int] | None] = {}

    def in_folder(mod_file: str) -> Path | None:
        if os.path.islink(mod_file):
            path = Path(mod_file).resolve()
            return path if path.parent == folder else None
        directory = os.path.dirname(mod_file) or "."
        if directory not in dir_ids:
            try:
                st = os.stat(directory)
                dir_ids[directory] = (st.st_dev, st.st_ino)
            except OSError:
                dir_ids[directory] = None
        return Path(mod_file) if dir_ids[directory] == key else None

    return in_folder


def _needs_arguments(cls: type) -> list[str]:
    """Names of the constructor parameters of ``cls`` that have no default."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def _module_classes(module: types.ModuleType) -> list[type]:
    """The ``nn.Module`` subclasses defined in ``module`` itself (not imported into it)."""
    return [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, nn.Module) and v.__module__ == module.__name__
    ]


def _build(obj: Any, label: str, path: Path) -> nn.Module:
    """Turn an entry object (class, factory or instance) into a module, with user-facing errors."""
    if isinstance(obj, nn.Module):
        return obj
    if isinstance(obj, type) and issubclass(obj, nn.Module):
        missing = _needs_arguments(obj)
        if missing:
            raise LoadError(
                f"{path.name}::{label}: the constructor needs arguments ({', '.join(missing)}), and "
                "fxstudio can only build a module that takes none. Add a `get_model()` factory to the "
                f"file (or a module-level `model = {label}(...)`) and open the file again."
            )
    elif not callable(obj):
        raise LoadError(
            f"{path.name}::{label} is a {type(obj).__name__}, not an nn.Module class, factory or instance."
        )
    try:
        made = obj()
    except Exception as exc:  # noqa: BLE001 - user code
        where = user_frame(exc.__traceback__, path)
        at = f" (line {where.lineno}: `{(where.line or '').strip()}`)" if where else ""
        raise LoadError(
            f"{path.name}::{label}: building the model raised {type(exc).__name__}{at}: {exc}{_memory_remedy(exc)}"
        ) from None
    if not isinstance(made, nn.Module):
        raise LoadError(f"{path.name}::{label}() returned a {type(made).__name__}, not an nn.Module.")
    return made


def _memory_remedy(exc: BaseException) -> str:
    """The way out of a build that ran out of memory: the meta device (issue #28); else nothing."""
    text = str(exc).lower()
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text:
        return (" The model's weights do not fit in memory: open it with --device meta (the graph and its "
                "shapes without weights).")
    return ""


def resolve_entry(module: types.ModuleType, path: Path, name: str | None) -> tuple[nn.Module, str]:
    """The model of a loaded file and the entry's name, in the README's order ("Open a model")."""
    if name:
        if not hasattr(module, name):
            raise LoadError(
                f"{path.name} defines no '{name}'. Candidates: {_candidates_text(module, path)}."
            )
        return _build(getattr(module, name), name, path), name
    model = getattr(module, "model", None)
    if isinstance(model, nn.Module):
        return model, "model"
    for factory in ENTRY_FACTORIES:
        fn = getattr(module, factory, None)
        if callable(fn):
            return _build(fn, factory, path), factory
    classes = _module_classes(module)
    no_arg = [c for c in classes if not _needs_arguments(c)]
    if len(no_arg) == 1:
        return _build(no_arg[0], no_arg[0].__name__, path), no_arg[0].__name__
    if not classes:
        raise LoadError(
            f"{path.name} defines no nn.Module: fxstudio looks for `::Name`, a module-level `model`, "
            "a `get_model()`/`build_model()` factory, or one nn.Module subclass taking no arguments."
        )
    if not no_arg:
        needs = "; ".join(f"{c.__name__}({', '.join(_needs_arguments(c))})" for c in classes)
        raise LoadError(
            f"{path.name}: every nn.Module in the file needs constructor arguments ({needs}). "
            "Add a `get_model()` factory or a module-level `model = ...` instance."
        )
    raise LoadError(
        f"{path.name} defines several nn.Module classes that take no arguments; say which one to open "
        f"with FILE::Name. Candidates: {_candidates_text(module, path)}."
    )


def _candidates_text(module: types.ModuleType, path: Path) -> str:
    items = []
    for c in _module_classes(module):
        missing = _needs_arguments(c)
        items.append(f"{path.name}::{c.__name__}" + (f" (needs {', '.join(missing)})" if missing else ""))
    for factory in ENTRY_FACTORIES:
        if callable(getattr(module, factory, None)):
            items.append(f"{path.name}::{factory}")
    return ", ".join(items) or "none"


def file_example_inputs(module: types.ModuleType, path: Path) -> tuple | None:
    """Example inputs declared by the file (``example_inputs()`` or ``EXAMPLE_INPUTS``), or None."""
    if callable(getattr(module, "example_inputs", None)):
        try:
            value = module.example_inputs()
        except Exception as exc:  # noqa: BLE001 - user code
            raise LoadError(f"{path.name}: example_inputs() raised {type(exc).__name__}: {exc}") from None
        source = "example_inputs()"
    elif hasattr(module, "EXAMPLE_INPUTS"):
        value, source = module.EXAMPLE_INPUTS, "EXAMPLE_INPUTS"
    else:
        return None
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(value)
    raise LoadError(f"{path.name}: {source} must be a tuple of inputs, got a {type(value).__name__}.")
