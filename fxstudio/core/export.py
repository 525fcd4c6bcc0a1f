"""Exporting a loaded or edited model as one standalone ``.py`` file plus its weights, verified.

``export_python`` writes ``OUT.py`` and ``OUT.weights.pt`` into a hidden staging folder beside the
target, imports the file from there in a fresh Python process and compares its outputs on the
example inputs with the in-memory graph, and only then renames both files into place. A failure
at any step leaves no new file behind (and an existing target untouched).
"""

from __future__ import annotations

import keyword
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

import fxstudio
from fxstudio.core.errors import ExportError, FxStudioError
from fxstudio.core.export_codegen import OriginalEntry, generate_file
from fxstudio.core.export_verify import ExportCancelled, compare, reference_outputs, run_exported

__all__ = ["ExportCancelled", "ExportResult", "ExportTargetError", "export_python", "weights_path_for"]
from fxstudio.core.model import LoadedModel

Progress = Callable[[str, float], None]
"""``progress(message, fraction)``: what the export is doing, ``fraction`` from 0 to 1."""


class ExportTargetError(ExportError):
    """An export target that cannot be used: not a ``.py`` path, unwritable, or the opened model (exit 2)."""

    exit_code = 2


@dataclass
class ExportResult:
    """What ``export_python`` wrote and how the check went."""

    py_path: Path
    weights_path: Path
    class_name: str
    verified: bool
    verdict: str
    max_abs_error: float | None = None
    requirements: list[str] = field(default_factory=list)
    seconds: float = 0.0


def weights_path_for(py_path: str | os.PathLike) -> Path:
    """The weights file that goes with an exported ``.py``: ``OUT.py`` -> ``OUT.weights.pt``."""
    py_path = Path(py_path)
    return py_path.with_name(f"{py_path.stem}.weights.pt")


def export_python(
    source: Any,
    out_path: str | os.PathLike,
    *,
    script_path: str | os.PathLike | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> ExportResult:
    """Export ``source`` (a ``Document`` or a ``LoadedModel``) to ``out_path`` and its weights file.

    Raises ``ExportTargetError`` (exit 2) for an unusable target and ``ExportError`` (exit 1) when
    the code cannot be generated or does not verify; nothing is written then. ``progress(message,
    fraction)`` reports the steps; ``cancel()``, polled during verification, stops the export
    (``ExportCancelled``, nothing written).
    """
    started = time.perf_counter()
    report = progress or (lambda message, fraction: None)
    loaded, module, edit_labels = _unpack(source)
    out_path = Path(os.path.abspath(out_path))  # the check runs in another working folder
    weights_path = weights_path_for(out_path)
    _check_target(out_path, weights_path, loaded, script_path)

    report("Generating code", 0.05)
    user_import = None
    if loaded.kind == "py" and loaded.user_module is not None and loaded.path is not None:
        user_import = loaded.path.stem
    try:
        generated = generate_file(
            module,
            class_name=class_name_for(loaded),
            weights_name=weights_path.name,
            header=_header(loaded, script_path, edit_labels, weights_path.name),
            example_inputs=tuple(loaded.example_inputs),
            user_module=loaded.user_module,
            user_import=user_import,
            record_names=bool(edit_labels),
            original=_original_entry(loaded) if user_import else None,
        )
    except FxStudioError:
        raise
    except Exception as exc:  # noqa: BLE001 - an unforeseen graph: a message, not a traceback
        raise ExportError(
            f"cannot write this graph as Python ({type(exc).__name__}: {exc}). This is a gap in "
            "fxstudio's export; the graph itself is unchanged."
        ) from exc
    if user_import and out_path.stem == user_import and generated.requirements:
        raise ExportTargetError(
            f"{out_path.name}: the exported file imports the model file as `{user_import}`, so it cannot "
            "have the same name; choose another file name."
        )

    expected = None
    if verify:
        has_inputs = any(n.op == "placeholder" for n in module.graph.nodes)
        if has_inputs and not loaded.example_inputs:
            raise ExportError(
                "cannot verify the export: the model has no example inputs. Give input shapes "
                "(--input-shape) or export without verification."
            )
        report("Running the graph in memory", 0.15)
        expected = reference_outputs(module, tuple(loaded.example_inputs))

    report("Writing files", 0.25)
    staging = _staging_dir(out_path)
    try:
        staged_py = staging / out_path.name
        staged_weights = staging / weights_path.name
        _write(staged_weights, lambda fh: torch.save(generated.weights, fh))
        _write(staged_py, lambda fh: fh.write(generated.source.encode("utf-8")))
        verdict, exact, err = "not verified (verification was turned off)", False, None
        if verify:
            report("Verifying in a fresh Python process", 0.35)
            search = [staging] + ([loaded.path.parent.resolve()] if user_import else [])
            got = run_exported(staged_py, tuple(loaded.example_inputs), search_paths=search, cancel=cancel)
            exact, err = compare(expected, got)
            verdict = (
                "verified: outputs identical to the graph in memory"
                if exact
                else f"verified: outputs match the graph in memory within rtol=1e-5, atol=1e-6 (max abs error {err:.3g})"
            )
        report("Moving files into place", 0.95)
        os.replace(staged_weights, weights_path)
        os.replace(staged_py, out_path)
    except FxStudioError:
        raise
    except OSError as exc:
        raise ExportTargetError(f"cannot write {out_path}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - e.g. a tensor that torch.save cannot store
        raise ExportError(f"cannot write the export ({type(exc).__name__}: {exc}); nothing was written.") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report("Done", 1.0)
    return ExportResult(
        py_path=out_path,
        weights_path=weights_path,
        class_name=generated.class_name,
        verified=verify,
        verdict=verdict,
        max_abs_error=err,
        requirements=generated.requirements,
        seconds=time.perf_counter() - started,
    )


def _original_entry(loaded: LoadedModel) -> OriginalEntry | None:
    """The model file's entry as the exported file can import it, if it builds a model by itself."""
    name = loaded.entry
    obj = getattr(loaded.user_module, name, None) if name and name.isidentifier() else None
    if obj is None:
        return None
    if isinstance(obj, torch.nn.Module):
        return OriginalEntry(name, False, loaded.module)
    if isinstance(obj, type) or callable(obj):
        return OriginalEntry(name, True, loaded.module)
    return None


def _unpack(source: Any) -> tuple[LoadedModel, torch.fx.GraphModule, list[str]]:
    """(loaded model, module to export, labels of the applied edits) of a Document or LoadedModel."""
    if isinstance(source, LoadedModel):
        return source, source.graph_module, []
    if hasattr(source, "loaded") and hasattr(source, "module"):
        labels = list(getattr(source, "history", []))[: getattr(source, "history_index", 0)]
        return source.loaded, source.module(), labels
    raise TypeError(f"export_python takes a Document or a LoadedModel, not {type(source).__name__}")


def _same_file(a: Path, b: Path | str | os.PathLike | None) -> bool:
    if b is None:
        return False
    try:
        return a.resolve() == Path(b).resolve()
    except OSError:
        return False


def _check_target(out_path: Path, weights_path: Path, loaded: LoadedModel, script_path) -> None:
    if out_path.suffix != ".py" or not out_path.stem:
        raise ExportTargetError(f"{out_path}: the export target must be a .py file (e.g. model_edited.py).")
    stem = out_path.stem
    if not stem.isidentifier() or keyword.iskeyword(stem):
        raise ExportTargetError(
            f"{out_path.name}: the name must be a Python identifier so the file can be imported (and opened "
            f"in fxstudio); e.g. {re.sub(r'[^0-9A-Za-z_]', '_', stem).lstrip('0123456789') or 'model'}_edited.py."
        )
    if stem in sys.stdlib_module_names or stem in ("torch", "fxstudio", "numpy", "nn"):
        raise ExportTargetError(f"{out_path.name}: that name would shadow the module `{stem}`; choose another name.")
    for target in (out_path, weights_path):
        if _same_file(target, loaded.path):
            raise ExportTargetError(
                f"{target}: refusing to overwrite the model file that is open; choose another file name."
            )
        if _same_file(target, script_path):
            raise ExportTargetError(f"{target}: refusing to overwrite the edit script; choose another file name.")
        if target.is_dir():
            raise ExportTargetError(f"{target}: is a folder; give the path of the .py file to write.")
    parent = out_path.parent
    if not parent.is_dir():
        raise ExportTargetError(f"{out_path}: the folder {parent} does not exist.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ExportTargetError(f"{out_path}: the folder {parent} is not writable.")


def _staging_dir(out_path: Path) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=".fxstudio-export-", dir=out_path.parent))
    except OSError as exc:
        raise ExportTargetError(f"cannot write in {out_path.parent}: {exc.strerror or exc}") from None


def _write(path: Path, fill: Callable) -> None:
    with open(path, "wb") as fh:
        fill(fh)
        fh.flush()
        os.fsync(fh.fileno())


def class_name_for(loaded: LoadedModel) -> str:
    """A readable class name for the export, from the original class: ``ResidualCNN`` -> ``ResidualCNNEdited``."""
    name = type(loaded.module).__name__
    if "GraphModule" in name or not name.isidentifier() or name.startswith("_"):
        stem = loaded.entry or (loaded.path.stem if loaded.path else "Model")
        name = "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", stem) if p) or "Model"
        if name[0].isdigit():
            name = f"Model{name}"
    name = re.sub(r"(Edited)+$", "", name) or "Model"
    return f"{name}Edited"


def _header(loaded: LoadedModel, script_path, edit_labels: list[str], weights_name: str) -> list[str]:
    tracer = "torch.export (aten ops)" if loaded.tracer == "export" or loaded.kind == "pt2" else "torch.fx symbolic_trace"
    lines = [
        f"Generated by fxstudio {fxstudio.__version__}.",
        f"Source model: {loaded.display_name} (graph from {tracer}).",
    ]
    if script_path is not None:
        lines.append(f"Edit script: {Path(script_path).name} ({len(edit_labels)} edits applied).")
    elif edit_labels:
        lines.append(f"Edits: {len(edit_labels)} made in fxstudio (no edit script saved).")
    else:
        lines.append("Edits: none (the graph as traced).")
    lines.extend(f"  {i}. {label}" for i, label in enumerate(edit_labels, 1))
    lines.append(f"Weights: {weights_name} beside this file (torch.load with weights_only=True).")
    lines.append("Use: `model = get_model()`, then `model(*example_inputs())`.")
    return lines
