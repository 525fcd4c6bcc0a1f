"""Run by ``test_pt2_editable.py`` in a fresh process: export the test's ``.pt2`` archives into a
folder (corpus models of ``fxstudio.testing``, the residual MLP, hand-written models that use
dtype, device and memory-format arguments, and programs the fast reader leaves to torch)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import torch
from torch import nn

from fxstudio.testing import corpus
from fxstudio.testing.residual_mlp import residual_mlp_source
from tests.core.loading.test_pt2_structure import Keywords, Mixed

CORPUS = ("gpt2", "bert", "resnet", "mobilenet_v2", "lstm_tagger", "mha_encoder")


class Casts(nn.Module):
    """Arguments that are dtypes, devices, memory formats and layouts, and a tensor constant."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.scale = torch.tensor([0.5, 2.0, 1.0, 3.0])  # a constant (not a buffer)

    def forward(self, x):
        y = self.conv(x.contiguous(memory_format=torch.channels_last)).to(torch.float16).float()
        ones = torch.ones(y.shape[-1], dtype=torch.float64, device=x.device, layout=torch.strided)
        return y * self.scale.view(1, 4, 1, 1) + ones.float()


class Branches(nn.Module):
    """A ``torch.cond``: a higher-order operator the fast reader leaves to torch's full load."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: self.lin(t), lambda t: -t, (x,))


class Counting(nn.Module):
    """A buffer updated in place: the program returns its new value (left to torch's full load)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(1)
        return x * self.count


def _save(folder: Path, name: str, model: nn.Module, inputs: tuple, kwargs=None, **options) -> None:
    torch.manual_seed(0)
    torch.export.save(torch.export.export(model, inputs, kwargs, **options), folder / f"{name}.pt2")


def main(folder: Path) -> None:
    torch.manual_seed(0)
    for name in CORPUS:
        namespace = runpy.run_path(str(corpus.write_model_file(name, folder)))
        _save(folder, name, namespace["get_model"]().eval(), tuple(namespace["example_inputs"]()))
    (folder / "mlp_src.py").write_text(residual_mlp_source(blocks=40))
    namespace = runpy.run_path(str(folder / "mlp_src.py"))
    _save(folder, "mlp", namespace["get_model"]().eval(), tuple(namespace["example_inputs"]()))
    _save(folder, "mixed", Mixed().eval(), (torch.randn(4, 8),))
    _save(folder, "keywords", Keywords().eval(), (torch.randn(2, 4),), {"use_cache": False, "scale": None})
    _save(folder, "casts", Casts().eval(), (torch.randn(1, 3, 8, 8),))
    _save(folder, "branches", Branches().eval(), (torch.randn(2, 4),))
    _save(folder, "counting", Counting(), (torch.randn(3, 4),))
    batch = torch.export.Dim("batch", min=2, max=64)
    _save(folder, "dynamic", Mixed().eval(), (torch.randn(4, 8),), dynamic_shapes=({0: batch},))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
