"""Example inputs made from ``--input-shape`` sizes."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.errors import LoadError


def inputs_from_shapes(shapes: Sequence[Sequence[int]], *, budget: DataBudget | None = None) -> tuple[torch.Tensor, ...]:
    """Seeded ``randn`` float32 tensors of the given shapes (what ``--input-shape`` makes).

    Their bytes, summed, are counted against ``budget`` (the graph's data budget; a fresh one named
    ``--input-shape`` when None) before any is made: ``LoadError`` past it, nothing allocated.
    """
    budget = budget if budget is not None else DataBudget("--input-shape")
    all_dims = []
    for i, shape in enumerate(shapes, 1):
        dims = tuple(int(d) for d in shape)
        text = ",".join(map(str, dims))
        if any(d < 0 for d in dims):
            raise LoadError(f"--input-shape {text}: sizes must not be negative.")
        try:
            budget.take_tensor(dims, torch.float32, f"input {i} of --input-shape ({text}, float32)")
        except BudgetExceeded as exc:
            raise LoadError(exc.message) from None
        all_dims.append(dims)
    gen = torch.Generator().manual_seed(0)
    return tuple(torch.randn(dims, generator=gen) for dims in all_dims)
