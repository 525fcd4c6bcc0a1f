"""``core.diff``: lineage (stable ids, torch's ``from_node``), structure, per-argument and weight changes,
and three graphs, on real traced and exported modules."""

from __future__ import annotations

import copy

import torch
from torch import nn

from fxstudio.core.diff import DiffGraph, diff_graphs
from fxstudio.core.document import Document
from fxstudio.core.loading import load_in_memory


class LinNormGelu(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.ln = nn.LayerNorm(4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(self.lin(x))) * 0.5


def _rows(diff, k=0):
    return {(r.base.name if r.base is not None else None, r.other.name if r.other is not None else None): r
            for r in diff.comparisons[k].rows}


def test_decomposition_is_matched_by_torch_provenance():
    ep = torch.export.export(LinNormGelu(), (torch.randn(2, 4),))
    before, after = ep.module(), ep.run_decompositions().module()
    diff = diff_graphs([DiffGraph("A", before), DiffGraph("B", after)])
    m = diff.comparisons[0].matching
    pairs = {b.name: (o.name, m.how[o]) for o, b in m.to_base.items()}
    linear_users = {o.name for o in after.graph.nodes if o.target == torch.ops.aten.addmm.default}
    assert pairs["linear"][1] == "lineage" and pairs["linear"][0] in linear_users
    # layer_norm became native_layer_norm + getitem: the getitem gives its value
    name, how = pairs["layer_norm"]
    assert how == "lineage" and after.graph.find_nodes(op="call_function", target=__import__("operator").getitem)[0].name == name
    counts = diff.comparisons[0].counts()
    assert counts["added"] == 2 and counts["removed"] == 0   # permute and native_layer_norm
    assert diff.differ


def test_document_original_and_edited_match_by_stable_id():
    doc = Document(load_in_memory(LinNormGelu(), (torch.randn(2, 4),)))
    doc.apply_edit({"op": "rename", "node": "mul", "name": "half"})
    doc.apply_edit({"op": "set_arg", "node": "half", "key": 1, "value": "0.25"})
    doc.apply_edit({"op": "insert", "after": "gelu", "kind": "call_function", "target": "torch.relu",
                    "args": "(%gelu,)", "kwargs": "{}", "name": "relu", "reroute": True})
    diff = diff_graphs([DiffGraph("A", doc.original, lineage="d"), DiffGraph("B", doc.module(), lineage="d")])
    rows = _rows(diff)
    row = rows[("mul", "half")]
    assert row.how == "lineage" and [c.text() for c in row.changes] == ["args[0]: %gelu -> %relu", "args[1]: 0.5 -> 0.25"]
    assert rows[(None, "relu")].status == "added"
    assert {r.how for r in diff.comparisons[0].rows if r.base is not None and r.other is not None} == {"lineage"}
    # without the lineage tag the same pair is matched by structure, and the rename stays a rename
    by_structure = _rows(diff_graphs([DiffGraph("A", doc.original), DiffGraph("B", doc.module())]))
    assert by_structure[("mul", "half")].status == "changed"


def test_changed_weights_and_module_configuration():
    model = LinNormGelu()
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.lin.weight[0, 0] += 0.5
    other.ln.eps = 1e-3
    a = torch.fx.symbolic_trace(model)
    b = torch.fx.symbolic_trace(other)
    rows = _rows(diff_graphs([DiffGraph("A", a), DiffGraph("B", b)]))
    lin = [c.text() for c in rows[("lin", "lin")].changes]
    assert lin == ["weights['weight']: values (max |Δ| 0.5)"]
    ln = [c.field for c in rows[("ln", "ln")].changes]
    assert ln == ["module"] and "eps=0.001" in rows[("ln", "ln")].changes[0].after
    assert rows[("gelu", "gelu")].status == "same"


def test_three_graphs_partners_go_through_the_base():
    inputs = (torch.randn(2, 4),)
    fx = load_in_memory(LinNormGelu(), inputs, tracer="fx").graph_module
    exported = load_in_memory(LinNormGelu(), inputs, tracer="export").graph_module
    again = load_in_memory(LinNormGelu(), inputs, tracer="export").graph_module
    diff = diff_graphs([DiffGraph("fx", fx), DiffGraph("export", exported), DiffGraph("export again", again)])
    lin_export = next(n for n in exported.graph.nodes if n.target == torch.ops.aten.linear.default)
    partners = diff.partners(1, lin_export)
    assert partners[0].name == "lin" and partners[1] is lin_export
    assert partners[2] is not lin_export and partners[2].target == torch.ops.aten.linear.default
    assert diff.status_of(0).get(partners[0]) == "changed"   # a module call against an ATen op
    assert diff.comparisons[0].differ and diff.comparisons[1].differ


def test_float_against_pt2e_quantized():
    """torchao's PT2E int8 graph against the float export graph: the quantize/dequantize pairs are
    added, conv2d and linear matched by structure (through the inserted nodes) and changed where
    they now read dequantized values."""
    import pytest

    pytest.importorskip("torchao")
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = nn.Conv2d(3, 8, 3)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).mean((2, 3)))

    inputs = (torch.randn(1, 3, 8, 8),)
    base = load_in_memory(Net().eval(), inputs, tracer="export").graph_module
    prepared = prepare_pt2e(copy.deepcopy(base), X86InductorQuantizer().set_global(
        get_default_x86_inductor_quantization_config()))
    prepared(*inputs)
    quantized = convert_pt2e(prepared)
    diff = diff_graphs([DiffGraph("float", base), DiffGraph("int8", quantized)])
    rows = _rows(diff)
    conv = [c.text() for c in rows[("conv2d", "conv2d")].changes]
    assert conv[0].startswith("args[0]: %x -> %dequantize_per_tensor")
    assert rows[("linear", "linear")].status == "changed" and rows[("relu", "relu")].status == "same"
    added = {r.other.target for r in diff.comparisons[0].rows if r.status == "added" and r.other.op == "call_function"}
    assert torch.ops.quantized_decomposed.quantize_per_tensor.default in added
    assert torch.ops.quantized_decomposed.dequantize_per_channel.default in added
