"""Shared by the trace-failure tests: a load that must fail, and the model whose helper cannot be traced."""

from __future__ import annotations

import pytest

from fxstudio.core.errors import TraceError
from fxstudio.core.loading import load_model

HELPER_LEN = """
def per_row(x):
    return x / len(x)

class Net(nn.Module):
    def forward(self, x):
        return per_row(x) + 1

EXAMPLE_INPUTS = (torch.ones(4, 2),)
"""
"""A model body (for ``write_model``) whose helper ``per_row`` fails to trace at its line 6 (``len``)."""


def fails(spec, **options) -> TraceError:
    """The ``TraceError`` that ``load_model(spec, **options)`` must raise."""
    with pytest.raises(TraceError) as info:
        load_model(spec, **options)
    return info.value
