"""An MLP whose weights go through computations that depend on nothing but the weights (what
``torch.fx.experimental.const_fold`` folds), with ``torch._assert`` shape checks as timm writes them."""

import torch
from torch import nn


class ConstMLP(nn.Module):
    """Linear layers, one with a weight scaled and transposed in forward (a constant subgraph)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 12))
        self.scale = nn.Parameter(torch.tensor(0.5))
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        torch._assert(x.ndim == 2, f"expected a batch of vectors, got {x.ndim} dims")
        h = torch.relu(self.fc1(x))
        h = h + torch.matmul(x, (self.w * self.scale).t())
        return self.fc2(h)


def get_model():
    """The model in eval mode with seeded random weights."""
    torch.manual_seed(0)
    return ConstMLP().eval()


def example_inputs():
    """A batch of three 12-vectors."""
    return (torch.randn(3, 12, generator=torch.Generator().manual_seed(1)),)
