"""Exporting a loaded or edited model as one standalone ``.py`` file plus its weights, verified.

``export_python`` writes ``OUT.py`` and its weights into a hidden staging folder beside the
target, imports the file in a fresh Python process and compares its outputs on the example inputs
with the in-memory graph, and only then moves both files into place, in one atomic step:

- the weights file is named by its content hash (``OUT.weights.<sha256[:16]>.pt``) and the ``.py``
  refers to that name, so the weights move in first under a name no existing file refers to;
- renaming the ``.py`` over the target is the commit point: a reader sees the old pair or the new
  pair, never a new ``.py`` with old weights or the reverse;
- afterwards the weights files of this target that its ``.py`` no longer names are removed.

A failure at any step (a full disk included) leaves no new file behind and the old files as they
were. Staging folders left by a killed export are removed by the next export into that folder.
"""

from __future__ import annotations

import errno
import hashlib
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
from fxstudio.core.export.meta_weights import META_VERDICT, holds_meta
from fxstudio.core.export.codegen import OriginalEntry, generate_file
from fxstudio.core.export.verify import ExportCancelled, compare, reference_outputs, run_exported
from fxstudio.core.fileio import pid_folder_prefix, sweep_stale_folders

__all__ = ["ExportCancelled", "ExportResult", "ExportTargetError", "export_python", "weights_path_for",
           "weights_name_in", "remove_stale_weights", "sweep_stale_staging", "commit_files"]
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


STAGING_PREFIX = ".fxstudio-export-"
_DIGEST_CHARS = 16
_PLACEHOLDER_DIGEST = "0" * _DIGEST_CHARS
_STALE_AFTER_S = 3600.0  # a staging folder that names no process is stale after this long
_WEIGHTS_LINE = re.compile(r"""^WEIGHTS_FILE = (["'])([^"'\\\n]+)\1\s*$""", re.MULTILINE)


def weights_path_for(py_path: str | os.PathLike, digest: str) -> Path:
    """The weights file of an exported ``.py`` whose content hash is ``digest``: ``OUT.weights.<digest>.pt``."""
    py_path = Path(py_path)
    return py_path.with_name(f"{py_path.stem}.weights.{digest[:_DIGEST_CHARS]}.pt")


def weights_name_in(py_path: str | os.PathLike) -> str | None:
    """The weights file name an exported ``.py`` refers to (its ``WEIGHTS_FILE``), or None."""
    try:
        with open(py_path, encoding="utf-8", errors="replace") as fh:
            found = _WEIGHTS_LINE.search(fh.read(1_000_000))
    except OSError:
        return None
    return found.group(2) if found else None


def remove_stale_weights(py_path: str | os.PathLike) -> list[Path]:
    """Remove this export's weights files that its ``.py`` no longer refers to; the paths removed.

    Only ``OUT.weights.<16 hex digits>.pt`` files, and a legacy ``OUT.weights.pt``, are candidates;
    nothing is removed when the ``.py`` cannot be read.
    """
    py_path = Path(py_path)
    keep = weights_name_in(py_path)
    if keep is None:
        return []
    pattern = re.compile(rf"{re.escape(py_path.stem)}\.weights(\.[0-9a-f]{{{_DIGEST_CHARS}}})?\.pt\Z")
    removed: list[Path] = []
    try:
        entries = list(py_path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if entry.name != keep and pattern.match(entry.name) and entry.is_file():
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass  # read-only or gone already: stale, but harmless
    return removed


def sweep_stale_staging(folder: str | os.PathLike) -> list[Path]:
    """Remove the staging folders of killed exports in ``folder`` (see ``fileio.sweep_stale_folders``)."""
    return sweep_stale_folders(folder, STAGING_PREFIX, max_age_s=_STALE_AFTER_S)


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
    _check_target(out_path, loaded, script_path)
    sweep_stale_staging(out_path.parent)
    placeholder = weights_path_for(out_path, _PLACEHOLDER_DIGEST).name

    report("Generating code", 0.05)
    user_import = None
    if loaded.kind == "py" and loaded.user_module is not None and loaded.path is not None:
        user_import = loaded.path.stem
    try:
        generated = generate_file(
            module,
            class_name=class_name_for(loaded),
            weights_name=placeholder,
            header=_header(loaded, script_path, edit_labels, placeholder),
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
    no_weights = holds_meta(generated.weights)  # built on the meta device: nothing to run in memory
    if no_weights:
        verify = False
    if verify:
        has_inputs = any(n.op == "placeholder" for n in module.graph.nodes)
        if has_inputs and not loaded.example_inputs:
            raise ExportError(
                "cannot verify the export: the model has no example inputs. Give input shapes "
                "(--input-shape) or export without verification."
            )
        report("Running the graph in memory", 0.15)
        expected = reference_outputs(module, tuple(loaded.example_inputs), edited=bool(edit_labels))

    report("Writing files", 0.25)
    staging = _staging_dir(out_path)
    try:
        staged_weights = staging / "weights.pt"
        digest = _write(staged_weights, lambda fh: torch.save(generated.weights, fh))
        weights_path = weights_path_for(out_path, digest)
        if _same_file(weights_path, loaded.path) or _same_file(weights_path, script_path) or weights_path.is_dir():
            raise ExportTargetError(f"{weights_path}: refusing to overwrite that file; choose another export name.")
        staged_weights = staged_weights.rename(staging / weights_path.name)
        source = generated.source.replace(placeholder, weights_path.name)
        staged_py = staging / out_path.name
        _write(staged_py, lambda fh: fh.write(source.encode("utf-8")))
        verdict, exact, err = META_VERDICT if no_weights else "not verified (verification was turned off)", False, None
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
        commit_files(staged_py, staged_weights, out_path, weights_path)
    except FxStudioError:
        raise
    except OSError as exc:
        raise _write_error(out_path, exc) from None
    except Exception as exc:  # noqa: BLE001 - e.g. a tensor that torch.save cannot store
        raise ExportError(f"cannot write the export ({type(exc).__name__}: {exc}); nothing was written.") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    remove_stale_weights(out_path)
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


def commit_files(staged_py: Path, staged_weights: Path, out_path: Path, weights_path: Path) -> None:
    """Move a verified export into place: the weights first (a name nothing refers to yet), then the
    ``.py`` over the target, the commit point. A failure before the commit leaves the old files as
    they were and removes the new weights file (unless an old export already had that very file)."""
    had_weights = weights_path.exists()
    os.replace(staged_weights, weights_path)
    try:
        os.replace(staged_py, out_path)
    except BaseException:
        if not had_weights:
            weights_path.unlink(missing_ok=True)
        raise
    _fsync_folder(out_path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_error(out_path: Path, exc: OSError) -> ExportTargetError:
    """The one-line message for a failed write; a full disk says so."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ExportTargetError(
            f"cannot write {out_path}: disk full (no space left on the device of {out_path.parent}); "
            "nothing was written and existing files are unchanged."
        )
    return ExportTargetError(f"cannot write {out_path}: {exc.strerror or exc}; nothing was written.")


def _check_target(out_path: Path, loaded: LoadedModel, script_path) -> None:
    if out_path.suffix != ".py" or not out_path.stem:
        raise ExportTargetError(f"{out_path}: the export target must be a .py file (e.g. model_edited.py), "
                                "or a .pt2 file for torch.export's format.")
    stem = out_path.stem
    if not stem.isidentifier() or keyword.iskeyword(stem):
        raise ExportTargetError(
            f"{out_path.name}: the name must be a Python identifier so the file can be imported (and opened "
            f"in fxstudio); e.g. {re.sub(r'[^0-9A-Za-z_]', '_', stem).lstrip('0123456789') or 'model'}_edited.py."
        )
    if stem in sys.stdlib_module_names or stem in ("torch", "fxstudio", "numpy", "nn"):
        raise ExportTargetError(f"{out_path.name}: that name would shadow the module `{stem}`; choose another name.")
    for target in (out_path,):
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
        return Path(tempfile.mkdtemp(prefix=pid_folder_prefix(STAGING_PREFIX), dir=out_path.parent))
    except OSError as exc:
        raise _write_error(out_path, exc) from None


class _HashingWriter:
    """A file's ``write``/``flush`` that also hashes what is written and keeps the first ``OSError``
    (torch.save turns a failed write into a vague RuntimeError; the OSError says why)."""

    def __init__(self, fh):
        self.fh = fh
        self.hash = hashlib.sha256()
        self.error: OSError | None = None

    def write(self, data) -> int:
        """Write all of ``data``; the number of bytes."""
        try:
            written = self.fh.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise
        self.hash.update(data)
        return written

    def flush(self) -> None:
        """Flush the file's buffer."""
        try:
            self.fh.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise


def _write(path: Path, fill: Callable) -> str:
    """Create ``path``, ``fill(writer)`` it, flush and fsync; the SHA-256 hex digest of its bytes."""
    with open(path, "wb") as fh:
        writer = _HashingWriter(fh)
        try:
            fill(writer)
            fh.flush()
            os.fsync(fh.fileno())
        except Exception:
            if writer.error is not None:
                raise writer.error from None
            raise
    return writer.hash.hexdigest()


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
    if loaded.kind == "capture":
        tracer = "a torch.compile capture (Dynamo)"
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
