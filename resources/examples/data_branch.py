"""A forward that branches on the data: ``symbolic_trace`` cannot follow ``if x.sum() > 0``.

How to open it anyway:

* fx tracer, fix the branch: pass a concrete value for the flag argument, e.g.
  ``fxstudio inspect data_branch.py --concrete-arg positive=True`` (or ``concrete_args={"positive":
  True}`` in Python); the graph holds that branch only (the flag stays an input, asserted to be True).
* export tracer: ``torch.export`` cannot decide ``if x.sum() > 0`` either; with the same flag,
  ``fxstudio inspect data_branch.py --tracer export --concrete-arg positive=True`` exports that branch
  (the flag becomes a guarded constant input).
* Without the flag, ``fxstudio inspect data_branch.py`` (either tracer) reports the trace failure
  with this file's line (``if positive:``) and suggests ``--concrete-arg positive=VALUE``.
"""

import torch
from torch import nn


class DataBranch(nn.Module):
    """Doubles positive-sum inputs and negates the rest; ``positive`` overrides the data test."""

    def forward(self, x, positive=None):
        if positive is None:
            positive = x.sum() > 0
        if positive:
            return x * 2
        return -x


def example_inputs():
    """An input whose sum is positive."""
    return (torch.linspace(-1.0, 3.0, 8).reshape(2, 4),)
