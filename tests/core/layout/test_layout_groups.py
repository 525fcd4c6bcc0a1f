"""Module groups in the layout: nested frames, collapse to one card, expand again, repeated blocks."""

import functools

import pytest

from fxstudio.testing import synthetic
from fxstudio.core.layout import compute_layout
from fxstudio.core.layout import repeated_groups
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path
from tests.core.layout.layout_checks import assert_valid_layout


@functools.lru_cache(maxsize=None)
def resnet():
    return load_model(example_path("residual_cnn.py")).graph_module.graph


def inside(inner, outer):
    return (outer.x <= inner.x and outer.y <= inner.y and inner.x + inner.w <= outer.x + outer.w
            and inner.y + inner.h <= outer.y + outer.h)


def frames_apart(a, b):
    return a.y + a.h <= b.y or b.y + b.h <= a.y or a.x + a.w <= b.x or b.x + b.w <= a.x


def test_frames_nest_and_enclose_their_cards():
    graph = resnet()
    layout = compute_layout(graph)
    groups = layout.groups
    assert {"layer1", "layer1.0", "layer2.0", "layer2.0.downsample"} <= set(groups)
    assert groups["layer1.0"].label == "layer1.0 · BasicBlock" and groups["layer1.0"].depth == 1
    assert inside(groups["layer1.0"], groups["layer1"]) and inside(groups["layer2.0.downsample"], groups["layer2.0"])
    for node in graph.nodes:
        path = node.meta["fxs_module_path"]
        for p in (p for p in groups if path == p or path.startswith(p + ".")):
            assert inside(layout.nodes[node.name], groups[p]), (node.name, p)
    blocks = [groups[p] for p in ("layer1.0", "layer1.1", "layer1.2", "layer2.0", "layer2.1", "layer2.2")]
    assert all(frames_apart(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1:])
    assert groups["layer1"].members == 21 and not groups["layer1"].collapsed


def test_a_collapsed_group_is_one_card_with_its_external_edges():
    graph = resnet()
    layout = compute_layout(graph, collapsed={"layer1"})
    assert_valid_layout(layout, graph)
    card = layout.groups["layer1"]
    assert card.collapsed and card.members == 21 and card.layer >= 0
    assert not any(p.startswith("layer1.") for p in layout.groups)
    into = {(e.src, e.dst) for e in layout.edges if e.dst == "layer1"}
    out = {(e.src, e.dst) for e in layout.edges if e.src == "layer1"}
    assert into == {("relu", "layer1")}
    assert out == {("layer1", "layer2_0_conv1"), ("layer1", "layer2_0_downsample_0")}
    assert len(layout.nodes) == len(graph.nodes) - 21


def test_expanding_a_group_keeps_the_cards_above_it_in_place():
    graph = resnet()
    collapsed = compute_layout(graph, collapsed={"layer2"})
    expanded = compute_layout(graph, previous=collapsed)
    assert_valid_layout(expanded, graph)
    above = [n for n, b in collapsed.nodes.items() if b.y < collapsed.groups["layer2"].y]
    assert len(above) > 20
    for name in above:
        a, b = collapsed.nodes[name], expanded.nodes[name]
        assert (a.x, a.y) == (b.x, b.y), name
    # Collapsing again from the expanded view keeps the same cards in place too.
    again = compute_layout(graph, collapsed={"layer2"}, previous=expanded)
    assert all((again.nodes[n].x, again.nodes[n].y) == (expanded.nodes[n].x, expanded.nodes[n].y) for n in above)


def test_collapsing_every_layer_of_an_exported_stack():
    graph = synthetic.exported(30)
    full = compute_layout(graph)
    top = {p for p in full.groups if p.count(".") == 1}
    assert len(top) == 30
    layout = compute_layout(graph, collapsed=top)
    assert_valid_layout(layout, graph)
    assert sum(g.collapsed for g in layout.groups.values()) == 30
    chain = sorted((g.layer, p) for p, g in layout.groups.items() if g.collapsed)
    assert [p for _, p in chain] == [f"layers.{i}" for i in range(30)]


def test_repeated_blocks_are_recognised():
    assert repeated_groups(synthetic.transformer(6)) == [[f"layers.{i}" for i in range(6)]]
    assert repeated_groups(synthetic.exported(3)) == [["layers.0", "layers.1", "layers.2"]]
    # layer2.0 has a downsample branch, so only its two plain siblings repeat.
    assert repeated_groups(resnet()) == [["layer1.0", "layer1.1", "layer1.2"], ["layer2.1", "layer2.2"]]


REPEATED_MULTI_OUTPUT = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        a, b = self.lin(x).chunk(2, dim=-1)
        return torch.cat([b, a], dim=-1) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(3)])

    def forward(self, x):
        return self.blocks(x)


def example_inputs():
    return (torch.randn(2, 8),)
'''


@pytest.mark.parametrize("tracer", ["fx", "export"])
def test_repeated_blocks_with_multi_output_nodes_are_found(tmp_path, tracer):
    """A node with several outputs (``chunk``) stores a list of shapes; the repeated blocks around it
    are still recognised (this crashed ``fxstudio layout`` with "unhashable type: 'list'" on ViT and
    GPT-2)."""
    path = tmp_path / "multi_out.py"
    path.write_text(REPEATED_MULTI_OUTPUT)
    gm = load_model(f"{path}::Net", tracer=tracer).graph_module
    assert any(isinstance(n.meta.get("fxs_shape"), list) for n in gm.graph.nodes)
    groups = repeated_groups(gm.graph)
    assert ["blocks.0", "blocks.1", "blocks.2"] in groups
