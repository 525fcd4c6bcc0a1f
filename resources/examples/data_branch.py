"""A forward that branches on the data: ``symbolic_trace`` cannot follow ``if x.sum() > 0``.

How to open it anyway:

* fx tracer, fix the branch: pass a concrete value for the flag argument, e.g.
  ``fxstudio inspect data_branch.py --concrete-arg positive=True`` (or ``concrete_args={"positive":
  True}`` in Python); the trace then takes that branch only and the flag is no longer an input.
* export tracer: ``fxstudio inspect data_branch.py --tracer export`` works too; ``torch.export``
  also needs the branch decided, which the flag does the same way when given.
* Without either, ``fxstudio inspect data_branch.py`` reports the trace failure with this file's
  line and suggests ``concrete_args``.
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
