"""Building a ``.py`` model on the meta device (``--device meta``): its parameters hold shapes and
dtypes but no storage, so a model larger than memory opens (graph, shapes, module frames) in the
time and memory its structure takes.

The entry is built under ``torch.device("meta")``, and parameters the model's code makes on another
device (or at module level) are moved to ``meta`` as it registers them (what accelerate's
``init_empty_weights`` does); initialisation then runs on ``meta`` (no work). With a checkpoint
(``--weights``, ``weights_safetensors``) buffers are built for real instead, since the
non-persistent ones (rotary frequencies, masks) are in no checkpoint.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

from fxstudio.core.errors import LoadError
from fxstudio.core.fx_compat_modules import own_buffers, own_parameters

META = "meta"

_PATCH_LOCK = threading.Lock()  # the patch is process-wide: one meta build at a time


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """While active, every parameter a module registers is replaced by a ``meta`` tensor of the
    same shape, dtype and ``requires_grad`` (its subclass kept)."""
    with _PATCH_LOCK:
        original = nn.Module.register_parameter

        def register_parameter(self: nn.Module, name: str, param):
            original(self, name, param)
            param = own_parameters(self).get(name)
            if param is not None and param.device.type != META:
                own_parameters(self)[name] = type(param)(param.to(META), requires_grad=param.requires_grad)

        nn.Module.register_parameter = register_parameter
        try:
            yield
        finally:
            nn.Module.register_parameter = original


def build_on_meta(path: Path, name: str | None, *, keep_buffers: bool = False):
    """Run the model file ``path`` and build its entry ``name`` without weights:
    ``(user_module, module, entry)``.

    The file's own code (its imports, a module-level instance) runs with ``parameters_on_meta``
    only, so what a library makes when first imported stays real for later loads; the entry is
    then built under ``torch.device("meta")`` too, where nothing is allocated (a layer's
    ``torch.empty`` weight is never made on the cpu, which an address-space limit would refuse),
    unless ``keep_buffers``: then buffers are built for real (weights come from a checkpoint next).
    """
    from fxstudio.core.loading.py_loader import resolve_entry, run_model_file

    with parameters_on_meta():
        user_module = run_model_file(path)
        with contextlib.nullcontext() if keep_buffers else torch.device(META):
            module, entry = resolve_entry(user_module, path, name)
    return user_module, module, entry


def real_buffers(module: nn.Module) -> dict[str, torch.Tensor]:
    """The buffers of ``module`` that hold data, by qualified name (built with ``keep_buffers``)."""
    return {name: b for name, b in module.named_buffers(remove_duplicate=False) if b.device.type != META}


def buffers_to_meta(module: nn.Module) -> None:
    """Replace every buffer of ``module`` by a ``meta`` tensor of its layout (in place)."""
    for sub in module.modules():
        for key, buf in list(own_buffers(sub).items()):
            if buf is not None and buf.device.type != META:
                own_buffers(sub)[key] = buf.to(META)


def inputs_to_meta(inputs: tuple) -> tuple:
    """Tensors of ``inputs`` as ``meta`` tensors of the same layout; other values as they are."""
    return tuple(t.to(META) if isinstance(t, torch.Tensor) else t for t in inputs)


def meta_tensor_names(module: nn.Module) -> list[str]:
    """Qualified names of the parameters and buffers of ``module`` that hold no data."""
    named = list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))
    return [name for name, t in named if t.device.type == META]


def has_meta_weights(module: nn.Module) -> bool:
    """True when some parameter or buffer of ``module`` lives on the meta device (no values)."""
    return any(t.device.type == META for t in module.parameters()) or any(
        t.device.type == META for t in module.buffers())


def parameter_bytes(module: nn.Module) -> int:
    """Bytes the module's parameters take once they hold data (each shared tensor counted once)."""
    return sum(p.numel() * p.element_size() for p in module.parameters())


MEMORY_LIMIT_ENV = "FXSTUDIO_MEMORY_LIMIT"
"""Bytes (or ``64G``, ``512M``) fxstudio assumes it may use at most, below what the system has free."""


def available_memory_bytes() -> int | None:
    """Memory a model's weights may take: the system's ``MemAvailable``, lowered by an address-space
    limit (``ulimit -v``) and by ``FXSTUDIO_MEMORY_LIMIT``; None when none of them is known."""
    import os
    import resource

    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            found += [int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append(soft)
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip().upper()
    if text:
        scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1], 1)
        try:
            found.append(int(float(text.rstrip("KMGT")) * scale))
        except ValueError:
            pass
    return min(found) if found else None


class TooLargeForMemory(LoadError):
    """The model's parameters would take more memory than is available: open it on the meta device."""

    def __init__(self, message: str, needed: int, available: int):
        super().__init__(message)
        self.needed, self.available = needed, available


def check_fits_memory(spec: str | Path, *, available: int | None = None) -> int:
    """Build the model of the ``.py`` file of ``spec`` (``FILE.py[::Name]``) on the meta device (cheap:
    no weight is allocated) and return its parameter bytes; ``TooLargeForMemory`` when they exceed
    ``available`` (default ``available_memory_bytes()``). (An open checks this itself with
    ``load_model(..., check_memory=True)``, without running the file twice: ``check_entry_fits``.)"""
    from fxstudio.core.loading.load import split_spec

    path, name = split_spec(spec)
    _, module, _ = build_on_meta(path.resolve(), name)
    return _fits(module, path, available)


def check_entry_fits(user_module, path: Path, name: str | None, *, available: int | None = None) -> int:
    """Build the entry ``name`` of the already-run model file ``user_module`` on the meta device (its
    constructor runs; nothing is allocated) and return its parameter bytes; ``TooLargeForMemory``
    when they exceed ``available`` (default ``available_memory_bytes()``)."""
    from fxstudio.core.loading.py_loader import resolve_entry

    with parameters_on_meta(), torch.device(META):
        module, _ = resolve_entry(user_module, path, name)
    return _fits(module, path, available)


def _fits(module: nn.Module, path: Path, available: int | None) -> int:
    needed = parameter_bytes(module)
    available = available if available is not None else available_memory_bytes()
    if available is not None and needed > available:
        raise TooLargeForMemory(
            f"{path.name}: its parameters take {_size(needed)}, more than the {_size(available)} of memory "
            "available. Open it on the meta device (--device meta): the graph and shapes without weights.",
            needed, available)
    return needed


def _size(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def meta_note(module: nn.Module) -> str:
    """The note of a model opened on the meta device without weights."""
    size = _size(parameter_bytes(module))
    return (f"built on the meta device: no weights ({size} of parameters not allocated); to run or compare, "
            "give --weights CKPT.safetensors")


def finish_meta_build(module: nn.Module, inputs: tuple | None, weights, notes: list[str]) -> tuple | None:
    """After a build under ``parameters_on_meta``: map the checkpoint ``weights`` (then the model and
    its ``inputs`` are real), or else move the buffers and ``inputs`` to ``meta``. Notes what it did."""
    if weights is not None:
        from fxstudio.core.loading.weights_safetensors import load_weights

        notes.append(load_weights(module, weights, real_buffers(module)))
        return inputs
    notes.append(meta_note(module))
    buffers_to_meta(module)
    return inputs_to_meta(inputs) if inputs is not None else None


class _StructureRead(LoadError):
    """Stops reading a ``.pt2`` once its structure is known (a ``LoadError``: the archive reader lets it through)."""

    def __init__(self, preview):
        super().__init__("structure read")
        self.preview = preview


def pt2_structure_only(path: Path, trust: bool = False):
    """The ``LoadedModel`` of a ``.pt2``'s structure (``pt2_structure``: node names, module frames,
    shapes; weights ``meta`` tensors) from its checked JSON, without reading its weight records."""
    from fxstudio.core.loading.pt2_loader import load_exported_program

    def stop(preview):
        raise _StructureRead(preview)

    try:
        load_exported_program(path, trust=trust, on_structure=stop)
    except _StructureRead as found:
        loaded = found.preview
        loaded.notes = [f"opened on the meta device: the program's structure and shapes without its weights "
                        f"({path.name} holds them); to run or compare, open it without --device meta"]
        return loaded
    raise LoadError(f"{path.name}: this program's structure cannot be read apart from its weights (it uses "
                    "operators the structure reader leaves to a full open); open it without --device meta.")
