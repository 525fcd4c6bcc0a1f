"""A fixture counting real code generation: ``GraphModule.recompile`` calls that generate and
compile code (a spy calling torch's own; a deferring class's ``recompile()`` does not reach it)."""

from __future__ import annotations

import pytest
import torch
import torch.fx


@pytest.fixture
def compiles(monkeypatch):
    """The class names of the modules whose code was generated, in order."""
    calls = []
    real = torch.fx.GraphModule.recompile

    def spy(self):
        calls.append(type(self).__name__)
        return real(self)

    monkeypatch.setattr(torch.fx.GraphModule, "recompile", spy)
    return calls
