"""Two ``nn.Linear`` layers whose outputs are summed with ``torch.add``."""

import torch
from torch import nn


class TwoLinear(nn.Module):
    """``torch.add(linear1(x), linear2(x))`` with fixed, seeded weights."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear1 = nn.Linear(4, 3)
        self.linear2 = nn.Linear(4, 3)

    def forward(self, x):
        return torch.add(self.linear1(x), self.linear2(x))


def example_inputs():
    """A batch of two 4-vectors."""
    return (torch.linspace(-1.0, 1.0, 8).reshape(2, 4),)
