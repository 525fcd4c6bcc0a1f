"""Operator namespaces that torch registers only when one of its own modules is imported.

``torch.ops.quantized_decomposed.*`` (the quantize/dequantize ops of PT2E quantization) exists only
after ``import torch.ao.quantization.fx._decomposed``; a ``.pt2`` or an exported file calling them
fails to load in a process that did not import it. ``ensure_registered`` imports the module torch
ships for such a namespace: a fixed table of torch's own modules, never a name read from a file.
"""

from __future__ import annotations

import importlib

import torch

TORCH_REGISTRARS: dict[str, str] = {
    "quantized_decomposed": "torch.ao.quantization.fx._decomposed",
}
"""Namespace → the module of torch itself whose import registers its operators."""


def namespace_of(target: str) -> str | None:
    """``quantized_decomposed`` for ``torch.ops.quantized_decomposed.quantize_per_tensor.default``."""
    parts = target.split(".")
    if len(parts) >= 3 and parts[0] == "torch" and parts[1] == "ops":
        return parts[2]
    return None


def ensure_registered(namespace: str) -> str | None:
    """Import torch's registering module for ``namespace`` if it has one in ``TORCH_REGISTRARS``;
    the module's name when it was needed, else None."""
    module = TORCH_REGISTRARS.get(namespace)
    if module is None:
        return None
    importlib.import_module(module)
    return module


def registered(namespace: str) -> bool:
    """Whether ``torch.ops.<namespace>`` has any operator now (without importing anything)."""
    ops = getattr(torch.ops, namespace, None)
    try:
        return bool(ops is not None and list(iter(ops)))
    except TypeError:
        return ops is not None
