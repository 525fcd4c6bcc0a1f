"""``x.view(-1, 1)`` — swap the ``view`` method for ``reshape``."""

import torch
from torch import nn


class ViewReshape(nn.Module):
    """Flattens the input into a column with ``view``."""

    def forward(self, x):
        return x.view(-1, 1)


def example_inputs():
    """One contiguous 2x3 input."""
    return (torch.arange(6, dtype=torch.float32).reshape(2, 3),)
