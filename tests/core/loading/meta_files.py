"""Model files for the meta-device tests (issue #28): a small MLP with a buffer (both tracers), the
small Llama of ``fxstudio.testing.llama_file`` (export tracer), and a safetensors checkpoint of real
values for either."""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch

from fxstudio.testing.llama_file import llama_source  # noqa: F401 - the tests' Llama files

MLP_SOURCE = textwrap.dedent("""
    import torch
    from torch import nn


    class MLP(nn.Module):
        def __init__(self, width=16):
            super().__init__()
            self.fc1 = nn.Linear(width, 32)
            self.fc2 = nn.Linear(32, 8)
            self.register_buffer("scale", torch.full((8,), 2.0))

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x))) * self.scale


    def get_model():
        return MLP()


    def example_inputs():
        return (torch.randn(4, 16, generator=torch.Generator().manual_seed(0)),)
""").lstrip()


def write(folder: Path, name: str, source: str) -> Path:
    """Write ``source`` as ``folder/name`` and return its path."""
    path = folder / name
    path.write_text(source)
    return path


def save_checkpoint(module: torch.nn.Module, path: Path, *, seed: int = 7) -> dict[str, torch.Tensor]:
    """Give ``module`` seeded random weights, save its state dict (each tied tensor once) as a
    safetensors file at ``path``, and return what was saved."""
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    seen, state = set(), {}
    for name, t in module.state_dict().items():
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            state[name] = t.contiguous()
    save_file(state, str(path))
    return state
