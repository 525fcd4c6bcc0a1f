"""A ``.pt2``'s structure before its weights (issue #15, ``load_model(on_structure=...)``).

The view-only graph read from the archive's checked JSON has the nodes, names, edges and module
frames of the full open, on real ``torch.export.save`` archives; it holds no weights (``meta``
tensors); and a hostile archive is refused before any structure is handed out.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from tests.security import pt2_hostile as h


class Block(nn.Module):
    """Linear + ReLU + residual add (the issue's deep MLP block)."""

    def __init__(self, w):
        super().__init__()
        self.fc = nn.Linear(w, w)

    def forward(self, x):
        return x + torch.relu(self.fc(x))


class Mixed(nn.Module):
    """Sequential blocks, a batch norm (buffers), a split into several outputs, keyword arguments,
    a constant tensor and two outputs: every kind of node the structure reader meets."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(8), Block(8), Block(8))
        self.bn = nn.BatchNorm1d(8)
        self.register_buffer("offset", torch.arange(8.0))

    def forward(self, x):
        y = self.bn(self.blocks(x))
        a, b = torch.split(y, 4, dim=1)
        z = torch.cat([b, a], dim=1) + self.offset
        return torch.sum(z, dim=1, keepdim=True), z.max(dim=1).values


class Keywords(nn.Module):
    """Keyword inputs that the program records as constants (``use_cache=False``, ``scale=None``)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, use_cache=True, scale=None):
        return self.lin(x) if use_cache else self.lin(x) * 2


def _save(tmp_path, model, inputs, name, kwargs=None):
    path = tmp_path / name
    torch.manual_seed(0)
    torch.export.save(torch.export.export(model.eval(), inputs, kwargs), path)
    return path


def _shape(gm):
    """Each node as (op, name, target, input names), the hidden ``_guards_fn`` left out."""
    return [(n.op, n.name, str(n.target), [a.name for a in n.all_input_nodes])
            for n in gm.graph.nodes if n.op != "call_module"]


ARCHIVES = {
    "tiny": lambda tmp: h.save_tiny(tmp / "tiny.pt2"),
    "mixed": lambda tmp: _save(tmp, Mixed(), (torch.randn(4, 8),), "mixed.pt2"),
    "keywords": lambda tmp: _save(tmp, Keywords(), (torch.randn(2, 4),), "kw.pt2", {"use_cache": False, "scale": None}),
}


@pytest.mark.parametrize("which", sorted(ARCHIVES))
def test_the_structure_has_the_full_opens_nodes_edges_and_frames(tmp_path, which):
    path = ARCHIVES[which](tmp_path)
    seen = []
    full = load_model(path, on_structure=seen.append)
    assert len(seen) == 1
    preview = seen[0]
    assert _shape(preview.graph_module) == _shape(full.graph_module)
    frames = lambda gm: [n.meta.get("nn_module_stack") for n in gm.graph.nodes if n.op == "call_function"]  # noqa: E731
    assert frames(preview.graph_module) == frames(full.graph_module)
    assert any(frames(full.graph_module)) or which == "keywords", "the archive records module frames"
    # No weight is read: the structure's weights are meta tensors of the stored shapes and dtypes.
    for name, tensor in preview.module.state_dict().items():
        real = full.module.state_dict()[name]
        assert tensor.device.type == "meta" and tensor.shape == real.shape and tensor.dtype == real.dtype
    assert preview.exported_program is None
    # Inputs: zeros of the program's input shapes, and its recorded constants as they are.
    assert len(preview.example_inputs) == len(full.example_inputs)
    for mine, real in zip(preview.example_inputs, full.example_inputs):
        if isinstance(real, torch.Tensor):
            assert mine.shape == real.shape and mine.dtype == real.dtype and not mine.any()
        else:
            assert mine == real
    shapes = lambda gm: [n.meta.get("fxs_shape") for n in gm.graph.nodes if n.op != "call_module"]  # noqa: E731
    assert any(shapes(full.graph_module))
    assert shapes(preview.graph_module) == shapes(full.graph_module)


def test_the_structure_document_refuses_edits_and_the_full_one_takes_them(tmp_path):
    from fxstudio.core.document import Document
    from fxstudio.core.errors import EditRefused
    from fxstudio.qt.open_flow import structure_document

    path = ARCHIVES["mixed"](tmp_path)
    seen = []
    full = Document(load_model(path, on_structure=lambda p: seen.append(structure_document(p))))
    edit = {"op": "set_arg", "node": "relu_1", "key": 0, "value": "%linear"}
    with pytest.raises(EditRefused, match="still loading its weights"):
        seen[0].apply_edit(edit)
    full.apply_edit(edit)
    assert full.dirty


def test_a_hostile_archive_is_refused_before_any_structure(tmp_path):
    base = h.save_tiny(tmp_path / "base.pt2")
    bad_name = h.renamed(base, tmp_path / "quote.pt2", "lin.weight", 'lin.w"+str(1)+"')

    def retarget(program):
        program["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.aten.from_file.default"

    bad_target = h.program_edit(base, tmp_path / "from_file.pt2", retarget)
    for path in (bad_name, bad_target):
        seen = []
        with pytest.raises(LoadError):
            load_model(path, on_structure=seen.append)
        assert seen == [], path.name


def test_with_trust_there_is_no_early_structure(tmp_path):
    path = h.save_tiny(tmp_path / "tiny.pt2")
    seen = []
    assert load_model(path, trust=True, on_structure=seen.append).graph_module is not None
    assert seen == []
