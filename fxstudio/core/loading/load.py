"""``load_model``: a model file (``.py``, ``.pt2``, ``.pt``/``.pth``) to a traced ``LoadedModel``.

See the README ("Open a model") and docs/notes/foundation.md for the file kinds and the entry
resolution order, and docs/CONTRACTS.md for the
node metadata written here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from fxstudio.core.errors import LoadError
from fxstudio.core.metadata import annotate
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.loading.meta_device import build_on_meta, check_entry_fits, finish_meta_build, pt2_structure_only
from fxstudio.core.model import LoadedModel
from fxstudio.core.loading.pickle_loader import load_pickled_module
from fxstudio.core.loading.pt2_loader import EditableProgram, load_exported_program, program_example_inputs
from fxstudio.core.module_state import share_graph_module
from fxstudio.core.loading.py_loader import file_example_inputs, resolve_entry, run_model_file
from fxstudio.core.loading.tracing import resolve_functions, trace_export, trace_fx

SUFFIXES = {".py": "py", ".pt2": "pt2", ".pt": "pickle", ".pth": "pickle", ".fxcap": "capture"}


def split_spec(spec: str | Path) -> tuple[Path, str | None]:
    """``"dir/file.py::Name"`` → ``(Path("dir/file.py"), "Name")``; no ``::`` gives ``None``."""
    text = str(spec)
    if "::" in text:
        file_part, _, name = text.rpartition("::")
        return Path(file_part).expanduser(), (name or None)
    return Path(text).expanduser(), None


def load_model(
    spec: str | Path,
    *,
    tracer: str | None = None,
    input_shapes: list[tuple[int, ...]] | None = None,
    trust: bool = False,
    concrete_args: dict | None = None,
    leaf_modules: Sequence[str] = (),
    autowrap_functions: Sequence = (),
    on_structure: Callable[[LoadedModel], None] | None = None,
    device: str | None = None,
    weights: str | Path | None = None,
    check_memory: bool = False,
) -> LoadedModel:
    """Open a model file, trace it with ``tracer`` and annotate every node; ``LoadError``/``TraceError`` otherwise.

    ``on_structure`` (``.pt2`` without ``trust`` only): called, on the loading thread, with a view-only
    ``LoadedModel`` of the program's graph as soon as the archive's JSON is checked (same node names
    as the result; weights are ``meta`` tensors), while the weights and the program are still read.

    ``device="meta"`` builds a ``.py`` file's model without weights (``meta_device``); with ``weights``
    (a ``.safetensors`` file or a folder of shards) they are then mapped from that checkpoint. A
    ``.pt2`` on ``meta`` opens its structure and shapes without reading its weight records.
    ``check_memory`` (a ``.py`` built on the cpu): before the model is built, its entry is built on
    the meta device to count its parameters; ``TooLargeForMemory`` when they do not fit in memory.
    """
    if tracer not in (None, "fx", "export"):
        raise LoadError(f"unknown tracer '{tracer}': use fx or export.")
    path, name = split_spec(spec)
    if not path.exists():
        raise LoadError(f"{path}: no such file.")
    if path.is_dir():
        raise LoadError(f"{path}: is a folder; give a model file (.py, .pt2, .pt or .pth).")
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise LoadError(
            f"{path}: unknown model file type '{path.suffix or '(none)'}'. fxstudio opens .py files that "
            "define a model, torch.export archives (.pt2), pickled modules (.pt, .pth) and torch.compile "
            "captures (.fxcap)."
        )
    if name and kind not in ("py", "capture"):
        raise LoadError(f"{spec}: '::{name}' selects an entry in a .py file (or a graph of a .fxcap) only.")
    path = path.resolve()
    meta = _check_device(device, weights, kind)
    if kind == "capture":
        from fxstudio.core.loading.capture_loader import load_capture

        return load_capture(path, name, input_shapes)
    options = dict(concrete_args=concrete_args, leaf_modules=leaf_modules, autowrap_functions=autowrap_functions)
    if kind == "py":
        return _load_py(path, name, tracer, input_shapes, meta=meta, weights=weights, check_memory=check_memory,
                        **options)
    if kind == "pt2" and meta:
        return pt2_structure_only(path, trust)
    if kind == "pt2":
        return _load_pt2(path, tracer, input_shapes, concrete_args, leaf_modules, trust, on_structure)
    return _load_pickle(path, tracer, input_shapes, trust, **options)


def _check_device(device: str | None, weights, kind: str) -> bool:
    """True for ``device="meta"``; ``LoadError`` for a device or ``weights`` that do not apply."""
    if device not in (None, "cpu", "meta"):
        raise LoadError(f"--device {device}: a model is built on the cpu, or on meta (no weights); "
                        "runs choose their device with compare --device.")
    if device == "meta" and kind not in ("py", "pt2"):
        raise LoadError("--device meta opens a .py model file (or a .pt2's structure) without weights; "
                        "this file already holds its graph and weights.")
    if weights is not None and (device != "meta" or kind != "py"):
        raise LoadError("--weights maps a checkpoint into a .py model built with --device meta; add --device meta.")
    return device == "meta"


def _load_py(path, name, tracer, input_shapes, *, meta=False, weights=None, check_memory=False,
             **options) -> LoadedModel:
    if meta:
        user_module, module, entry = build_on_meta(path, name, keep_buffers=weights is not None)
    else:
        user_module = run_model_file(path)
        if check_memory:
            check_entry_fits(user_module, path, name)
        module, entry = resolve_entry(user_module, path, name)
    notes: list[str] = []
    if input_shapes:
        inputs = inputs_from_shapes(input_shapes)
        if callable(getattr(user_module, "example_inputs", None)) or hasattr(user_module, "EXAMPLE_INPUTS"):
            notes.append("inputs from --input-shape (random values) replace the file's example inputs")
    else:
        inputs = file_example_inputs(user_module, path)
        if inputs is None and (tracer or "fx") == "export":
            raise _missing_inputs(path, module, "define example_inputs() (returning a tuple) or EXAMPLE_INPUTS in the file, or ")
        if inputs is None:  # issue #15 defect 5: fx traces without inputs; the shapes stay unknown
            notes.append(shapes_unknown_note(module, "define example_inputs() in the file or "))
    if meta:
        inputs = finish_meta_build(module, inputs, weights, notes)
    loaded = _trace(path, "py", module, inputs, tracer or "fx", entry, user_module, notes, **options)
    from fxstudio.core.export import restore_exported_names  # round trip of fxstudio exports

    restored = restore_exported_names(loaded.graph_module, user_module, pair=_pair_items)
    if restored:
        loaded.notes.append(restored.note())
    return loaded


def _pair_items(*args):
    """``compare.pair_items`` (names restored by structure), imported only when a file needs it."""
    from fxstudio.core.compare import pair_items

    return pair_items(*args)


def _load_pickle(path, tracer, input_shapes, trust, **options) -> LoadedModel:
    module, notes = load_pickled_module(path, trust=trust)
    if not input_shapes and tracer == "export":
        raise _missing_inputs(path, module, "")
    if input_shapes:
        inputs = inputs_from_shapes(input_shapes)
    else:  # issue #15 defect 5: fx traces without inputs; the shapes stay unknown
        inputs = None
        notes.append(shapes_unknown_note(module, ""))
    return _trace(path, "pickle", module, inputs, tracer or "fx", type(module).__name__, None, notes, **options)


def merge_concrete_args(module: nn.Module, inputs: tuple, concrete_args: dict | None) -> tuple:
    """``inputs`` extended so that each concrete arg sits in its positional slot of ``forward``.

    The traced graph keeps a placeholder for a concrete arg (fx asserts its value, export guards it),
    so the graph, the original module and shape propagation are all called with the same tuple.
    """
    if not concrete_args:
        return tuple(inputs)
    params = list(inspect.signature(module.forward).parameters.values())
    names = [p.name for p in params]
    unknown = [k for k in concrete_args if k not in names]
    if unknown:
        raise LoadError(
            f"--concrete-arg {unknown[0]}: forward() has no argument of that name (it takes: {', '.join(names) or 'nothing'})."
        )
    last = max(names.index(k) for k in concrete_args)
    merged = list(inputs)
    for i in range(len(merged), last + 1):
        param = params[i]
        if param.name in concrete_args:
            merged.append(concrete_args[param.name])
        elif param.default is not inspect.Parameter.empty:
            merged.append(param.default)
        else:
            raise LoadError(
                f"--concrete-arg {', '.join(concrete_args)}: forward() argument '{param.name}' comes before it "
                "and has no example input or default."
            )
    for k in concrete_args:
        if names.index(k) < len(inputs):
            merged[names.index(k)] = concrete_args[k]
    return tuple(merged)


def _trace(path, kind, module, inputs, tracer, entry, user_module, notes, *, concrete_args, leaf_modules, autowrap_functions):
    display = f"{path.name}::{entry}" if entry and kind == "py" else path.name
    user_file = path if kind == "py" else None
    ep = None
    known = inputs is not None  # else traced without inputs (fx only): shapes unknown, nothing to merge
    inputs = merge_concrete_args(module, inputs, concrete_args) if known else ()
    if concrete_args:
        shown = ", ".join(f"{k}={v!r}" for k, v in concrete_args.items())
        notes.append(f"traced with concrete args {shown}: the graph holds that branch only")
    if tracer == "export":
        if leaf_modules or autowrap_functions:
            notes.append("leaf modules and autowrapped functions apply to the fx tracer only; ignored by export")
        gm, ep = trace_export(module, inputs, display=display, user_file=user_file)
    else:
        functions = resolve_functions(
            [f for f in autowrap_functions if isinstance(f, str)], user_module
        ) + [f for f in autowrap_functions if callable(f)]
        gm = trace_fx(
            module,
            display=display,
            user_file=user_file,
            concrete_args=concrete_args,
            leaf_modules=leaf_modules,
            autowrap_functions=functions,
        )
    # Without example inputs nothing runs: propagation fails at the first placeholder, and its notes
    # ("running the model failed") would mislead; the loader's own note says what to do instead.
    annotate(gm, inputs, user_file=user_file, notes=notes if known else [], exported=tracer == "export",
             prefer_real=kind == "py")
    return LoadedModel(
        path=path,
        kind=kind,
        module=module,
        graph_module=gm,
        example_inputs=tuple(inputs),
        tracer=tracer,
        entry=entry,
        user_module=user_module,
        exported_program=ep,
        notes=notes,
    )


def _load_pt2(path, tracer, input_shapes, concrete_args, leaf_modules, trust=False, on_structure=None) -> LoadedModel:
    notes: list[str] = []
    if tracer == "fx":
        notes.append("a .pt2 file holds an exported (ATen-level) graph; it is shown as exported, not re-traced with fx")
    if concrete_args or leaf_modules:
        notes.append("concrete args and leaf modules do not apply to an already exported program; ignored")
    ep, archive_notes = load_exported_program(path, trust=trust, on_structure=on_structure, editable=True)
    notes.extend(archive_notes)
    if isinstance(ep, EditableProgram):  # issue #28: built from the archive's parts, no torch rebuild
        inputs, source = program_example_inputs(ep.facts, path, input_shapes)
        notes.append(f"example inputs: {source}")
        module, ep = ep.module, None
        gm = share_graph_module(module)
        annotate(gm, inputs, user_file=None, notes=notes, exported=True)
        return LoadedModel(path=path, kind="pt2", module=module, graph_module=gm, example_inputs=inputs,
                           tracer="export", entry="", user_module=None, exported_program=None, notes=notes)
    inputs, source = program_example_inputs(ep, path, input_shapes)
    notes.append(f"example inputs: {source}")
    try:
        # One unlift (issue #15: each ep.module() call costs a full one); the graph is a copy that
        # shares its weights, as two unlifts of the same program did.
        from fxstudio.core.fx_compat_export import unlift

        module = unlift(ep)  # ep.module() without its quadratic weight assignment
        gm = share_graph_module(module)
    except Exception as exc:  # noqa: BLE001 - unlifting may fail on unusual programs
        raise LoadError(f"{path}: the exported program cannot be turned into a module ({type(exc).__name__}: {exc}).") from None
    annotate(gm, inputs, user_file=None, notes=notes, exported=True)
    return LoadedModel(
        path=path, kind="pt2", module=module, graph_module=gm, example_inputs=inputs,
        tracer="export", entry="", user_module=None, exported_program=ep, notes=notes,
    )


SHAPES_UNKNOWN = "shapes unknown"
"""How a note starts when the model opened without example inputs (the CLI and the window look for it)."""


def shapes_unknown(loaded: LoadedModel) -> bool:
    """True when ``loaded`` opened without example inputs although its graph takes some (defect 5 of issue #15)."""
    return not loaded.example_inputs and any(n.op == "placeholder" for n in loaded.graph_module.graph.nodes)


def shapes_unknown_note(module: nn.Module, how: str) -> str:
    """The note of a model traced without example inputs: its shapes are unknown, and how to give inputs."""
    return (
        f"{SHAPES_UNKNOWN}: no example inputs{_takes(module)}; the graph is traced without running it. "
        f"For shapes (and to compare or verify an export), {how}give one --input-shape per input, "
        "e.g. --input-shape 1,3,224,224 (in the window: File > Give Input Shapes…)."
    )


def _takes(module: nn.Module) -> str:
    try:
        params = [p for p in inspect.signature(module.forward).parameters if p not in ("self",)]
    except (TypeError, ValueError):
        params = []
    return f" (forward takes: {', '.join(params)})" if params else ""


def _missing_inputs(path: Path, module: nn.Module, how: str) -> LoadError:
    takes = _takes(module)
    return LoadError(
        f"{path.name}: no example inputs to run the model on{takes}. torch.export runs the model: "
        f"{how}give one --input-shape per input, e.g. --input-shape 1,3,224,224 (the fx tracer opens it "
        "without inputs, shapes unknown)."
    )
