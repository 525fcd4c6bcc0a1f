"""A module's own tables of parameters and buffers (torch's private ``_parameters`` / ``_buffers``
dicts), for code that must put a tensor in place without ``register_parameter``'s checks: the meta
device build (``core/loading/meta_device.py``) and a checkpoint mapped into it
(``core/loading/weights_safetensors.py``). The only place outside ``fx_compat*.py`` that would
otherwise name them."""

from __future__ import annotations

import torch


def own_parameters(module: torch.nn.Module) -> dict[str, torch.nn.Parameter | None]:
    """The live dict of ``module``'s own parameters, by attribute name (writes change the module)."""
    return module._parameters


def own_buffers(module: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    """The live dict of ``module``'s own buffers, by attribute name (writes change the module)."""
    return module._buffers


__all__ = ["own_buffers", "own_parameters"]
