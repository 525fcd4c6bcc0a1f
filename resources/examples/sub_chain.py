"""A chain of three arithmetic ops: ``a = x + 10; b = a - 5; c = b * 2``."""

import torch
from torch import nn


class SubChain(nn.Module):
    """Add, subtract, multiply in sequence (erase ``sub`` and rewire ``mul`` to ``add``)."""

    def forward(self, x):
        a = x + 10
        b = a - 5
        c = b * 2
        return c


def example_inputs():
    """One 2x4 input, deterministic."""
    return (torch.linspace(-3.0, 4.0, 8).reshape(2, 4),)
