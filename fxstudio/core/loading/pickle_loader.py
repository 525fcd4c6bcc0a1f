"""Reading a pickled ``nn.Module`` or ``GraphModule`` from a ``.pt``/``.pth`` file, safely first.

``torch.load(weights_only=True)`` runs no code from the file, but it also cannot rebuild a module
object; a full unpickle (which can run any code the file contains) happens only with ``trust``.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from fxstudio.core.errors import LoadError

_UNTRUSTED_HINT = (
    "Unpickling it fully can run any code the file contains; if you trust the file, open it again "
    "with --trust (in the app: confirm the trust dialog)."
)


def load_pickled_module(path: Path, *, trust: bool) -> tuple[nn.Module, list[str]]:
    """The module held by ``path`` and notes on how it was read; ``LoadError`` otherwise."""
    _check_readable_container(path)
    notes: list[str] = []
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if not trust:
            raise LoadError(
                f"{path}: this file holds Python objects that the safe loader (weights_only=True) will not "
                f"rebuild{_unsupported_global(exc)}. {_UNTRUSTED_HINT}"
            ) from None
        obj = _full_unpickle(path)
        notes.append("loaded with a full unpickle (--trust): the file's code was allowed to run")
    except Exception as exc:  # noqa: BLE001 - torch raises many types for corrupt files
        raise LoadError(f"{path}: not a readable PyTorch file ({type(exc).__name__}: {_first_line(exc)}).") from None
    return _as_module(obj, path), notes


def _full_unpickle(path: Path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 - arbitrary code ran; report what it raised
        raise LoadError(
            f"{path}: unpickling the file (with --trust) raised {type(exc).__name__}: {_first_line(exc)}. "
            "If the model's classes live in a Python file, make it importable (e.g. run from its folder)."
        ) from None


def _check_readable_container(path: Path) -> None:
    """Reject files that are neither torch zip archives nor legacy pickles, before torch sees them."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise LoadError(f"{path}: cannot read the file ({exc.strerror}).") from None
    if zipfile.is_zipfile(path):
        return
    # Legacy (non-zip) torch.save files start with a pickle protocol marker.
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return
    raise LoadError(
        f"{path}: not a PyTorch file (neither a torch.save zip archive nor a pickle). "
        "Expected a module saved with torch.save(model, path)."
    )


def _as_module(obj, path: Path) -> nn.Module:
    if isinstance(obj, nn.Module):
        return obj
    if isinstance(obj, Mapping):
        values = list(obj.values())
        if values and all(isinstance(v, torch.Tensor) or isinstance(v, Mapping) for v in values):
            raise LoadError(
                f"{path}: this file holds weights, not a model (a state dict of {len(values)} entries, e.g. "
                f"'{next(iter(obj))}'). Open the Python file that defines the model instead, or save the "
                "whole module with torch.save(model, path)."
            )
        keys = ", ".join(map(str, list(obj)[:5]))
        raise LoadError(f"{path}: this file holds a dict ({keys}), not a model.")
    raise LoadError(f"{path}: this file holds a {type(obj).__name__}, not an nn.Module.")


def _unsupported_global(exc: BaseException) -> str:
    """`` (it needs torch.nn.modules.linear.Linear)`` from torch's long weights-only message, or ``""``."""
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(exc))
    if found:
        return f" (it needs {found.group(1)})"
    found = re.search(r"Unsupported operand (\d+)", str(exc))
    return f" (unsupported pickle operand {found.group(1)})" if found else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
