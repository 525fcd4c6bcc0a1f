"""Small models for the Python API tests, with deterministic weights, and the plain torch.fx edit
that each test compares the window's edit with."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.fx
from torch import nn

from tests.api.net_file import Net, example_inputs  # noqa: F401 - Net is what the tests import from here

MODEL_FILE = (Path(__file__).parent / "net_file.py").read_text(encoding="utf-8")
"""The text of a model file defining ``Net`` and its ``example_inputs`` (the module ``net_file``)."""


def example_input() -> torch.Tensor:
    """The input of ``MODEL_FILE``'s ``example_inputs``."""
    return example_inputs()[0]


def plain_fx_set_arg(model: nn.Module, node: str, index: int, value) -> torch.fx.GraphModule:
    """The edit ``set_arg(node, index, value)`` done by hand in torch.fx on a fresh trace."""
    gm = torch.fx.symbolic_trace(model)
    target = next(n for n in gm.graph.nodes if n.name == node)
    args = list(target.args)
    args[index] = value
    target.args = tuple(args)
    gm.recompile()
    return gm


def state_snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter and buffer (to check the original is unchanged)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
