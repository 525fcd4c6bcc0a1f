"""A model built on the meta device (``--device meta``) has shapes but no values: running it is
refused up front with one plain line, rather than failing deep inside a run."""

from __future__ import annotations

import torch

from fxstudio.core.errors import FxStudioError

NEEDS_WEIGHTS = ("the model was built on the meta device: it has no weights to run. Give its checkpoint "
                 "with --weights CKPT.safetensors, a file or a folder of shards (in the window: File > Open "
                 "with Options, Weights)")
"""What a run or compare says of a model opened on the meta device without weights."""


def refuse_meta_weights(*modules: torch.nn.Module, inputs: tuple = ()) -> None:
    """``FxStudioError`` (exit 2) when a weight of ``modules`` or a tensor of ``inputs`` is on ``meta``."""
    for module in modules:
        tensors = list(module.parameters()) + list(module.buffers())
        if any(t.device.type == "meta" for t in tensors):
            raise FxStudioError(NEEDS_WEIGHTS + ".")
    if any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in inputs):
        raise FxStudioError(NEEDS_WEIGHTS + " (its example inputs are meta tensors too).")
