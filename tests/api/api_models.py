"""Small models for the Python API tests, with deterministic weights, and the plain torch.fx edit
that each test compares the window's edit with."""

from __future__ import annotations

import torch
import torch.fx
from torch import nn

MODEL_FILE = '''"""A model file for the fxstudio.apply vs fxstudio apply test."""

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
'''


class Net(nn.Module):
    """The same model as ``MODEL_FILE``'s ``Net``."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        with torch.no_grad():
            self.lin.weight.copy_(torch.arange(12.0).reshape(3, 4) / 10 - 0.5)
            self.lin.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))

    def forward(self, x):
        y = torch.relu(self.lin(x))
        return y * 2 + 1


def example_input() -> torch.Tensor:
    """The input of ``MODEL_FILE``'s ``example_inputs``."""
    return torch.arange(8.0).reshape(2, 4) / 4 - 1


def plain_fx_set_arg(model: nn.Module, node: str, index: int, value) -> torch.fx.GraphModule:
    """The edit ``set_arg(node, index, value)`` done by hand in torch.fx on a fresh trace."""
    gm = torch.fx.symbolic_trace(model)
    target = next(n for n in gm.graph.nodes if n.name == node)
    args = list(target.args)
    args[index] = value
    target.args = tuple(args)
    gm.recompile()
    return gm


def state_snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter and buffer (to check the original is unchanged)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
