"""A function kept as one call by ``torch.fx.wrap``, with a default and a keyword-only argument."""

import torch
import torch.fx
from torch import nn


def scaled_shift(x, shift=1.0, *, scale=2.0):
    """``(x + shift) * scale``; fx keeps the call (and its arguments) as one node."""
    return (x + shift) * scale


torch.fx.wrap("scaled_shift")


class WrappedFn(nn.Module):
    """Calls the wrapped ``scaled_shift`` with the default shift and an explicit scale."""

    def forward(self, x):
        y = scaled_shift(x, scale=3.0)
        return torch.tanh(y)


def example_inputs():
    """One 2x3 input."""
    return (torch.linspace(-1.0, 1.0, 6).reshape(2, 3),)
