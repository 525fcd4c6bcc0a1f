"""The comparison a report shows, run the way ``fxstudio compare`` runs it; a comparison that
cannot run (no inputs, the original failing on them) becomes the reason the report gives instead."""

from __future__ import annotations

from typing import Any

import torch

from fxstudio.core.compare import RunCancelled, compare_models
from fxstudio.core.errors import RunError


def compare_for_report(original: torch.nn.Module, traced: torch.fx.GraphModule, edited: torch.fx.GraphModule,
                       inputs: tuple[Any, ...] | None, **options: Any) -> tuple[object | None, str]:
    """(``CompareReport``, "") or (None, why it was not compared). ``options`` go to
    ``compare_models`` (device, rtol, atol, seed, per_node, cancel, progress, threads...); a
    cancelled run raises ``RunCancelled`` as there."""
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if placeholders and not inputs:
        return None, "the model has no example inputs (give --input-shape, or inputs in the Run pane)"
    try:
        return compare_models(original, traced, edited, tuple(inputs or ()), **options), ""
    except RunCancelled:
        raise
    except RunError as exc:
        first = exc.message.strip().splitlines()[0] if exc.message.strip() else "the comparison failed"
        return None, first
