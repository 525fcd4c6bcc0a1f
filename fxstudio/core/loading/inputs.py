"""Example inputs made from ``--input-shape`` sizes."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fxstudio.core.errors import LoadError


def inputs_from_shapes(shapes: Sequence[Sequence[int]]) -> tuple[torch.Tensor, ...]:
    """Seeded ``randn`` float32 tensors of the given shapes (what ``--input-shape`` makes)."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for shape in shapes:
        dims = tuple(int(d) for d in shape)
        if any(d < 0 for d in dims):
            raise LoadError(f"--input-shape {','.join(map(str, dims))}: sizes must not be negative.")
        out.append(torch.randn(dims, generator=gen))
    return tuple(out)
