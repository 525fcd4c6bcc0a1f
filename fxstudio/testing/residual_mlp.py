"""A deep residual MLP as a model file: the ~3,000-node graph of issue #25's window checks
(``tests/e2e/test_stalls.py``, ``tests/qt/test_run_threads_progress.py``).

Each block is ``LayerNorm(x + Linear(64, 16)(gelu(Linear(16, 64)(x))) * 1.0)``: six graph nodes, so
500 blocks make 3,000 nodes (plus the input and the output). The inputs are 2×16: every tensor is
small, the case where torch's threads only cost time. The same architecture as ``bench/floor.py``'s
model (whose file has no ``get_model()`` and so opens as ``deep_mlp.py::Deep``).
"""

from __future__ import annotations

from pathlib import Path

SOURCE = '''\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear({width}, {hidden})
        self.fc2 = nn.Linear({hidden}, {width})
        self.norm = nn.LayerNorm({width})

    def forward(self, x):
        return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))) * 1.0)


class ResidualMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range({blocks})])

    def forward(self, x):
        return self.blocks(x)


def get_model():
    torch.manual_seed(0)
    return ResidualMLP().eval()


def example_inputs():
    return (torch.randn({batch}, {width}, generator=torch.Generator().manual_seed(1)),)
'''

NODES_PER_BLOCK = 6


def residual_mlp_source(blocks: int = 500, *, width: int = 16, hidden: int = 64, batch: int = 2) -> str:
    """The text of the model file: ``blocks`` residual blocks (``6 * blocks`` graph nodes)."""
    return SOURCE.format(blocks=blocks, width=width, hidden=hidden, batch=batch)


def write_residual_mlp(folder: str | Path, blocks: int = 500, name: str = "residual_mlp.py") -> Path:
    """Write the model file into ``folder``; returns its path."""
    path = Path(folder) / name
    path.write_text(residual_mlp_source(blocks), encoding="utf-8")
    return path
