"""Scripts for the torch.compile capture tests: a small model whose ``forward`` breaks the graph
twice (a ``print``, then a data-dependent ``if``), run under ``torch.compile``."""

from __future__ import annotations

from pathlib import Path

BREAKING_MODEL = '''\
import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        y = torch.relu(self.lin(x)) + 0.5
        print("between the graphs")  # graph break 1
        if y.sum() > 0:  # graph break 2: data-dependent branch
            return torch.tanh(y) * 2
        return y - 1


def main(argv):
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model, backend=BACKEND) if BACKEND else torch.compile(model)
    x = torch.randn(2, 4)
    out = compiled(x)
    print("ARGS", argv)
    print("MAX_DIFF", float((out - model(x)).abs().max()))
    return model, x, out


BACKEND = None
if __name__ == "__main__":
    main(sys.argv[1:])
'''

PRINT_LINE = 14
"""The line of ``BREAKING_MODEL`` whose ``print`` breaks the graph."""
BRANCH_LINE = 15
"""The line of ``BREAKING_MODEL`` whose ``if`` on a tensor breaks the graph."""


def write_script(folder: Path, name: str = "breaking_model.py", backend: str | None = None) -> Path:
    """``BREAKING_MODEL`` written to ``folder/name``; ``backend`` is passed to its ``torch.compile``."""
    path = Path(folder) / name
    text = BREAKING_MODEL if backend is None else BREAKING_MODEL.replace("BACKEND = None", f"BACKEND = {backend!r}")
    path.write_text(text)
    return path
