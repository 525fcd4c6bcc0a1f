"""``torch.relu(x) + 1``, plus ``my_relu`` to swap in for ``torch.relu`` (the Transformer pattern)."""

import torch
from torch import nn


def my_relu(x):
    """A leaky ReLU written by hand: what the edit walk-through swaps in for ``torch.relu``."""
    return x.clamp(min=0) * 1.0 + x.clamp(max=0) * 0.01


class ReluAdd(nn.Module):
    """ReLU of the input, plus one."""

    def forward(self, x):
        return torch.relu(x) + 1


def example_inputs():
    """Values from -2 to 2, half of them negative."""
    return (torch.linspace(-2.0, 2.0, 12).reshape(3, 4),)
