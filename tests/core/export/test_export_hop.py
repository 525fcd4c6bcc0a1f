"""Exporting aten graphs whose higher-order ops call nested graphs (``torch.no_grad()`` regions,
``torch.autocast``, ``torch.cond``): each nested GraphModule becomes a generated class of its own,
the op is written ``torch.ops.higher_order.<name>``, and the file runs in a fresh process."""

from __future__ import annotations

import importlib.util
import operator

import torch
import torch.fx
from torch import nn

from fxstudio.core.document import Document
from fxstudio.core.export import export_python
from fxstudio.core.export.verify import run_exported
from fxstudio.core.loading import load_model
from fxstudio.core.model import LoadedModel
from tests.core.export.test_export import private_torch_imports


class NoGradInside(nn.Module):
    """A rotary-embedding-like model: a frequency table computed under ``torch.no_grad()``."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("inv_freq", torch.arange(1.0, 5.0))
        self.scale = nn.Parameter(torch.full((4,), 0.5))

    def forward(self, x):
        with torch.no_grad():  # a parameter read here gives a result without autograd history
            freqs = (x * self.inv_freq * self.scale).cos()
        return self.lin(x) * freqs, freqs


class MixedRegions(nn.Module):
    """no_grad with an enable_grad inside, autocast and cond in one forward."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            f = x * 2
            with torch.enable_grad():
                f = f + 1
            g = torch.cos(f) + torch.tensor([1.0, 2.0, 3.0, 4.0])
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.lin(x)
        return self.lin(x) + g, h, torch.cond(x.sum() > 0, lambda y: y.sin(), lambda y: y.cos(), (x,))


def _load_exported(py):
    spec = importlib.util.spec_from_file_location(py.stem, py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _opened_pt2(tmp_path, model: nn.Module, args: tuple, name: str) -> LoadedModel:
    torch.export.save(torch.export.export(model, args), tmp_path / f"{name}.pt2")
    return load_model(tmp_path / f"{name}.pt2")


def test_no_grad_region_exports_as_a_nested_class_and_runs_fresh(tmp_path):
    torch.manual_seed(0)
    loaded = _opened_pt2(tmp_path, NoGradInside(), (torch.randn(3, 4),), "rotary")
    assert any(isinstance(m, torch.fx.GraphModule) for n, m in loaded.graph_module.named_children())
    result = export_python(loaded, tmp_path / "rotary_export.py")
    assert result.verified and "identical" in result.verdict, result.verdict
    text = result.py_path.read_text()
    assert "torch.ops.higher_order.wrap_with_set_grad_enabled(False, " in text
    assert "class RotaryEditedSubmod1(nn.Module):" in text and "self.submod_1 = RotaryEditedSubmod1()" in text
    assert "GraphModule" not in text and not private_torch_imports(text)

    args = tuple(loaded.example_inputs)
    got = run_exported(result.py_path, args, search_paths=[tmp_path])  # a fresh `python -I`
    torch.testing.assert_close(got, loaded.graph_module(*args), rtol=0, atol=0)

    # The region still runs without autograd in the exported module; the rest still records it.
    model = _load_exported(result.py_path).get_model()
    out, freqs = model(*args)
    assert out.requires_grad and not freqs.requires_grad
    assert isinstance(model.submod_1, nn.Module) and not isinstance(model.submod_1, torch.fx.GraphModule)


def test_enable_grad_autocast_and_cond_regions_export(tmp_path):
    torch.manual_seed(0)
    loaded = _opened_pt2(tmp_path, MixedRegions(), (torch.randn(2, 4),), "mixed")
    result = export_python(loaded, tmp_path / "mixed_export.py")
    assert result.verified and "identical" in result.verdict, result.verdict
    text = result.py_path.read_text()
    for op in ("wrap_with_set_grad_enabled", "wrap_with_autocast", "cond"):
        assert f"torch.ops.higher_order.{op}(" in text
    assert "class MixedEditedTrueGraph0(nn.Module):" in text and "class MixedEditedFalseGraph0(nn.Module):" in text
    negative = torch.full((2, 4), -1.0)  # the other branch of the cond, too
    got = run_exported(result.py_path, (negative,), search_paths=[tmp_path])
    torch.testing.assert_close(got, loaded.graph_module(negative), rtol=0, atol=0)


def _nested_hop_module() -> torch.fx.GraphModule:
    """A graph calling ``wrap_with_set_grad_enabled`` on a subgraph that itself calls it on an inner
    subgraph holding a buffer of its own (read by ``get_attr`` there)."""
    hop = torch.ops.higher_order.wrap_with_set_grad_enabled
    inner_root = nn.Module()
    inner_root.register_buffer("scale", torch.tensor([2.0, -3.0, 0.5]))
    inner_graph = torch.fx.Graph()
    y = inner_graph.placeholder("y")
    inner_graph.output((inner_graph.call_function(torch.ops.aten.mul.Tensor, (y, inner_graph.get_attr("scale"))),))
    inner = torch.fx.GraphModule(inner_root, inner_graph)

    middle_root = nn.Module()
    middle_root.add_module("inner_body", inner)
    middle_graph = torch.fx.Graph()
    z = middle_graph.placeholder("z")
    call = middle_graph.call_function(hop, (True, middle_graph.get_attr("inner_body"), z))
    first = middle_graph.call_function(operator.getitem, (call, 0))
    middle_graph.output((middle_graph.call_function(torch.ops.aten.relu.default, (first,)),))
    middle = torch.fx.GraphModule(middle_root, middle_graph)

    root = nn.Module()
    root.add_module("outer_body", middle)
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    call = graph.call_function(hop, (False, graph.get_attr("outer_body"), x))
    first = graph.call_function(operator.getitem, (call, 0))
    graph.output(graph.call_function(torch.ops.aten.add.Tensor, (first, x)))
    return torch.fx.GraphModule(root, graph)


def test_nested_subgraphs_become_classes_recursively_with_their_weights(tmp_path):
    gm = _nested_hop_module()
    args = (torch.tensor([[1.0, 1.0, -4.0]]),)
    loaded = LoadedModel(path=None, kind="pt2", module=gm, graph_module=gm, example_inputs=args, tracer="export")
    result = export_python(loaded, tmp_path / "nested.py")
    assert result.verified and "identical" in result.verdict, result.verdict
    text = result.py_path.read_text()
    assert "self.inner_body = " in text and "self.outer_body = " in text
    assert text.count("(nn.Module):") == 3
    state = torch.load(result.weights_path, weights_only=True)
    torch.testing.assert_close(state["outer_body.inner_body.scale"], torch.tensor([2.0, -3.0, 0.5]))
    got = run_exported(result.py_path, args, search_paths=[tmp_path])
    torch.testing.assert_close(got, torch.tensor([[3.0, 1.0, -4.0]]), rtol=0, atol=0)


def test_edited_higher_order_op_exports_and_reopens(tmp_path):
    torch.manual_seed(0)
    loaded = _opened_pt2(tmp_path, NoGradInside(), (torch.randn(3, 4),), "rotary")
    doc = Document(loaded)
    region = next(n for n in doc.module().graph.nodes if n.target is torch.ops.higher_order.wrap_with_set_grad_enabled)
    doc.apply_edit({"op": "set_arg", "node": region.name, "key": 0, "value": "True"})  # grad on in the region
    result = export_python(doc, tmp_path / "rotary_grad.py")
    assert result.verified and "identical" in result.verdict, result.verdict
    text = result.py_path.read_text()
    assert f"{region.name} = torch.ops.higher_order.wrap_with_set_grad_enabled(True, submod_1, " in text
    out, freqs = _load_exported(result.py_path).get_model()(*loaded.example_inputs)
    assert freqs.requires_grad  # the edit took effect in the exported module

    again = load_model(result.py_path, tracer="export")  # the file opens again
    torch.testing.assert_close(again.graph_module(*loaded.example_inputs), doc.module()(*loaded.example_inputs))
