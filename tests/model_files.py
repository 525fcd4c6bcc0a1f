"""Model files written by tests: the torch imports every such file starts with, then its own body."""

from __future__ import annotations

import textwrap
from pathlib import Path

MODEL_HEAD = "import torch\nfrom torch import nn\n\n"
"""The first three lines of every model file a test writes (line numbers in messages count them)."""


def model_source(body: str) -> str:
    """A model file's text: :data:`MODEL_HEAD`, then ``body`` dedented."""
    return MODEL_HEAD + textwrap.dedent(body)


def write_model(path: Path, body: str) -> Path:
    """Write :func:`model_source` of ``body`` to ``path``; returns ``path``."""
    path.write_text(model_source(body))
    return path


LINEAR_RELU_BODY = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2
"""
"""A model with no example inputs: ``Net`` is ``Linear(4, 3)`` → ReLU → ``* 2``."""


def save_small_cnn_pt2(path: Path) -> Path:
    """Export a small CNN (conv → BN → ReLU → pool → linear, then ``* 2``; every weight used once,
    eval mode) with ``torch.export`` and save it to ``path``; returns ``path``."""
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            y = torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1)
            return self.fc(y) * 2

    torch.export.save(torch.export.export(SmallCNN().eval(), (torch.randn(1, 3, 8, 8),)), str(path))
    return path


REPEATED_BLOCKS = 40
REPEATED_BLOCKS_BODY = f"""
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 0.5 + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range({REPEATED_BLOCKS}))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 8),)
"""
"""``Net``: 40 identical ``Block``\\s (``blocks.0`` … ``blocks.39``, each Linear → ReLU → ``* 0.5`` →
``+ x``; block ``i``'s nodes are ``blocks_i_fc``, ``relu_i``, ``mul_i``, ``add_i``, block 0's
without the suffix): the repeated-block folds of issue #26. Open it as ``FILE::Net``."""


SEEDED_BLOCKS_BODY = """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.fc(x)) * 0.5 + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(Block() for _ in range(40))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def example_inputs():
    return (torch.randn(2, 8, generator=torch.Generator().manual_seed(0)),)
"""
"""``Net``: 40 ``Block``\\s with seeded weights and inputs (Linear → tanh → ``* 0.5`` → ``+ x``; block ``i``'s
nodes are ``blocks_i_fc``, ``tanh_i``, ``mul_i``, ``add_i``; 162 nodes in all): every process computes the
same values, so a changed constant diverges by the same amount (``fxstudio reduce`` tests)."""


DEEP_CNN_BODY = """
class DeepCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU()) for _ in range(64)))

    def forward(self, x):
        return self.blocks(x)


def get_model():
    return DeepCNN().eval()


def example_inputs():
    return (torch.randn(1, 4, 6, 6, generator=torch.Generator().manual_seed(1)),)
"""
"""``DeepCNN``: 64 seeded Conv2d(4, 4, 3) → ReLU blocks (``blocks.i.0`` / ``blocks.i.1``; traced with
``--tracer export``, 259 nodes): a deep float network in which a test quantizes one conv."""
