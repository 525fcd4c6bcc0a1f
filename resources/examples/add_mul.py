"""Add then multiply: ``(x + 5) * 2`` — the smallest graph to edit a constant in."""

import torch
from torch import nn


class AddMul(nn.Module):
    """Adds 5 to the input, then doubles it."""

    def forward(self, x):
        y = x + 5
        return y * 2


def example_inputs():
    """One 2x3 input, deterministic."""
    return (torch.arange(6, dtype=torch.float32).reshape(2, 3),)
