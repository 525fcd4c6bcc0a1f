"""A model file (the tests write its text as a .py and import it as a module): `Net` and its inputs."""

import torch
from torch import nn


class Net(nn.Module):
    """Linear, ReLU, times 2, plus 1; weights set from aranges (the same in every process)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        with torch.no_grad():
            self.lin.weight.copy_(torch.arange(12.0).reshape(3, 4) / 10 - 0.5)
            self.lin.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))

    def forward(self, x):
        y = torch.relu(self.lin(x))
        return y * 2 + 1


def example_inputs():
    """One 2x4 input."""
    return (torch.arange(8.0).reshape(2, 4) / 4 - 1,)
