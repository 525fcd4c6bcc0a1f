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
    """A ``Document`` on a generated graph of about ``n_nodes`` nodes (``fxstudio.core.synthetic``)."""
    import torch

    from fxstudio.core import synthetic
    from fxstudio.core.document import Document
    from fxstudio.core.model import LoadedModel

    gm = synthetic.as_graph_module(synthetic.make_graph(kind, n_nodes))
    loaded = LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                         example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),))
    return Document(loaded)
