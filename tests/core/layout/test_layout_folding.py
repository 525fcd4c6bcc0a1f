"""Weights folded into cards (``core/layout/folding.py``) on real exported and traced graphs."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.document import Document
from fxstudio.core.layout import compute_layout, fold_plan, folded_weights, row_label, row_shape
from fxstudio.core.layout.engine import CARD_H, CARD_H_ONE_LINE, CARD_LINE_H, WEIGHT_ROW_H, WEIGHT_ROWS_PAD
from fxstudio.core.loading import load_model
from tests.model_files import save_small_cnn_pt2


@pytest.fixture(scope="module")
def exported_cnn(tmp_path_factory):
    """A real ``.pt2`` of ``SmallCNN`` (eval mode) opened by the loader."""
    path = tmp_path_factory.mktemp("pt2") / "cnn.pt2"
    save_small_cnn_pt2(path)
    return load_model(path)


def _by_name(graph: torch.fx.Graph) -> dict[str, torch.fx.Node]:
    return {n.name: n for n in graph.nodes}


def test_every_parameter_of_an_exported_cnn_folds_into_the_op_that_uses_it(exported_cnn):
    graph = exported_cnn.graph_module.graph
    nodes = _by_name(graph)
    folded = {w.name: h.name for w, h in folded_weights(graph).items()}
    bn = next(n for n in graph.nodes if "batch_norm" in str(n.target))
    conv = next(n for n in graph.nodes if "conv2d" in str(n.target))
    linear = next(n for n in graph.nodes if "linear" in str(n.target))
    assert folded == {"conv_weight": conv.name, "bn_weight": bn.name, "bn_bias": bn.name,
                      "bn_running_mean": bn.name, "bn_running_var": bn.name,
                      "fc_weight": linear.name, "fc_bias": linear.name}
    # Export plumbing is drawn nowhere: the input guard and the BN's unused counter.
    hidden = {n.name for n, host in fold_plan(graph).items() if host is None}
    assert hidden == {"_guards_fn", "bn_num_batches_tracked"}
    assert row_label(nodes["bn_running_var"]) == "running_var" and row_shape(nodes["bn_running_var"]) == "8"
    assert row_label(nodes["conv_weight"]) == "weight" and row_shape(nodes["conv_weight"]) == "8×3×3×3"


def test_the_folded_layout_shows_operations_from_the_first_layers(exported_cnn):
    graph = exported_cnn.graph_module.graph
    plain = compute_layout(graph)
    folded = compute_layout(graph, fold_weights=True)
    off_canvas = {n.name for n in fold_plan(graph)}
    assert off_canvas and not off_canvas & folded.nodes.keys()
    assert off_canvas <= plain.nodes.keys()                 # without folding they are cards
    assert all(e.src not in off_canvas and e.dst not in off_canvas for e in folded.edges)
    assert folded.stats["n_layers"] <= plain.stats["n_layers"] and len(folded.edges) < len(plain.edges)
    # The first layer is the input; the next ones are operations, not parameter cards.
    by_layer = sorted(folded.nodes.values(), key=lambda b: (b.layer, b.x))
    assert [b.name for b in by_layer if b.layer == 0] == ["x"]
    assert all(_by_name(graph)[b.name].op == "call_function" for b in by_layer if 1 <= b.layer <= 3)
    bn = next(n.name for n in graph.nodes if "batch_norm" in str(n.target))
    # four rows, and a line naming its module "bn · BatchNorm2d" (its frame would hold that card only)
    assert folded.nodes[bn].h == CARD_H + CARD_LINE_H + 4 * WEIGHT_ROW_H + WEIGHT_ROWS_PAD
    assert plain.nodes[bn].h == CARD_H
    widths = [b.w for b in folded.nodes.values()]
    assert max(widths) >= len("running_mean 8") * 7   # a row's text fits its card


def test_a_traced_module_using_its_parameters_directly_folds_single_uses_only():
    class Direct(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 4))
            self.bias = nn.Parameter(torch.randn(4))
            self.scale = nn.Parameter(torch.ones(4))
            self.unused = nn.Parameter(torch.ones(4))

        def forward(self, x):
            y = nn.functional.linear(x, self.weight, self.bias)
            return y * self.scale + self.scale

    gm = torch.fx.symbolic_trace(Direct())
    gm.graph.create_node("get_attr", "unused")   # a read nothing uses: a dead card, not plumbing
    gm.recompile()
    folded = {w.name: h.name for w, h in folded_weights(gm.graph).items()}
    assert folded == {"weight": "linear", "bias": "linear"}   # scale has two users: its own card
    assert {n.name for n, h in fold_plan(gm.graph).items() if h is None} == set()
    layout = compute_layout(gm.graph, fold_weights=True)
    assert {"scale", "unused", "linear", "x"} <= layout.nodes.keys()
    assert not {"weight", "bias"} & layout.nodes.keys()


def _doc(loaded) -> Document:
    return Document(loaded)


def test_a_rewire_keeps_the_cards_and_an_edit_that_unfolds_a_weight_relays_out(exported_cnn):
    doc = _doc(exported_cnn)
    graph = doc.edited.graph
    layout = compute_layout(graph, fold_weights=True)
    nodes = _by_name(graph)
    mul = next(n for n in graph.nodes if "mul" in str(n.target))
    linear = next(n for n in graph.nodes if "linear" in str(n.target))
    # A second user for fc_bias: it leaves the linear's card and gets its own.
    doc.apply_edit({"op": "set_arg", "node": mul.name, "key": 1, "value": "%fc_bias"})
    changed = [mul, nodes["fc_bias"], linear]
    unfolded = compute_layout(graph, previous=layout, changed=changed, fold_weights=True)
    assert "rerouted" not in unfolded.stats
    # its shape only under its title (a frame names fc now), then one row: fc_weight
    assert "fc_bias" in unfolded.nodes and unfolded.nodes[linear.name].h == CARD_H_ONE_LINE + WEIGHT_ROW_H + WEIGHT_ROWS_PAD
    assert any(e.src == "fc_bias" and e.dst == mul.name for e in unfolded.edges)
    doc.undo()
    refolded = compute_layout(graph, previous=unfolded, changed=changed, fold_weights=True)
    assert "fc_bias" not in refolded.nodes
    assert refolded.nodes[linear.name].h == layout.nodes[linear.name].h
    # A rewire between drawn cards (the mul reads the relu instead of the linear) only reroutes.
    relu = next(n for n in graph.nodes if "relu" in str(n.target))
    doc.apply_edit({"op": "set_arg", "node": "flatten", "key": 0, "value": f"%{relu.name}"})
    pool = next(n for n in graph.nodes if "adaptive_avg_pool2d" in str(n.target))
    rerouted = compute_layout(graph, previous=refolded, changed=[nodes["flatten"], relu, pool], fold_weights=True)
    assert rerouted.stats.get("rerouted") == 1
    assert {n: (b.x, b.y) for n, b in rerouted.nodes.items()} == {n: (b.x, b.y) for n, b in refolded.nodes.items()}
    fresh = compute_layout(graph, fold_weights=True)
    assert rerouted.nodes.keys() == fresh.nodes.keys()
