"""Helpers shared by the benchmarks: timing and the synthetic documents they edit."""

from __future__ import annotations

import statistics
import time


def best_time(fn, repeats: int, *, clock=time.perf_counter, warm_up: bool = False) -> float:
    """Best of ``repeats`` timed calls of ``fn`` in seconds, by ``clock`` (after one untimed call if ``warm_up``)."""
    if warm_up:
        fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def median_ms(samples: list[float]) -> float:
    """Median of samples in seconds, as milliseconds."""
    return statistics.median(samples) * 1000


def synthetic_document(n_nodes: int, kind: str = "skip_chain"):
    """A ``Document`` on a generated graph of about ``n_nodes`` nodes (``fxstudio.testing.synthetic``)."""
    import torch

    from fxstudio.testing import synthetic
    from fxstudio.core.document import Document
    from fxstudio.core.model import LoadedModel

    gm = synthetic.as_graph_module(synthetic.make_graph(kind, n_nodes))
    loaded = LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                         example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),))
    return Document(loaded)


DEEP_MODEL_TEMPLATE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        y = self.fc(self.norm(x))
        y = torch.relu(y) * 0.5
        return x + y


class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block({width}) for _ in range({blocks})])

    def forward(self, x):
        return self.blocks(x)


def example_inputs():
    return (torch.randn({batch}, {width}),)
'''


def deep_model_source(*, width: int, blocks: int, batch: int) -> str:
    """Source of a model file: ``blocks`` residual LayerNorm+Linear blocks (5 graph nodes each)."""
    return DEEP_MODEL_TEMPLATE.format(width=width, blocks=blocks, batch=batch)
