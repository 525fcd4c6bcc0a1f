"""Module frames on real graphs (issue #15): they follow ``nn_module_stack``, carry the class name
and never overlap — siblings apart, every card inside its own frame and in no other, inputs in none."""

from __future__ import annotations

import functools

import pytest

from fxstudio.core.layout import compute_layout, frame_problems
from fxstudio.core.loading import load_model
from tests.core.layout import real_models


@functools.lru_cache(maxsize=None)
def graph(kind: str):
    spec = {"cnn.pt2": real_models.cnn_pt2, "cnn.py": real_models.cnn_py,
            "gpt2.pt2": real_models.gpt2_pt2, "bert.pt2": real_models.bert_pt2}[kind]()
    return load_model(spec).graph_module.graph


def inside(inner, outer) -> bool:
    return (outer.x <= inner.x and outer.y <= inner.y and inner.x + inner.w <= outer.x + outer.w
            and inner.y + inner.h <= outer.y + outer.h)


@pytest.mark.parametrize("kind", ["cnn.pt2", "cnn.py", "gpt2.pt2", "bert.pt2"])
@pytest.mark.parametrize("fold_weights", [True, False])
def test_frames_are_apart_and_hold_their_cards(kind, fold_weights):
    g = graph(kind)
    layout = compute_layout(g, fold_weights=fold_weights)
    assert layout.groups
    assert frame_problems(layout, g) == []
    # The same rule, spelled out: siblings disjoint, each card inside every frame of its path.
    groups = layout.groups
    for a in groups.values():
        for b in groups.values():
            if a.path < b.path and a.path.rpartition(".")[0] == b.path.rpartition(".")[0]:
                assert (a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y), (a.path, b.path)
    for node in g.nodes:
        box = layout.nodes.get(node.name)
        if box is None:
            continue
        path = node.meta["fxs_module_path"]
        for p, frame in groups.items():
            if path == p or path.startswith(p + "."):
                assert inside(box, frame), (node.name, p)
            elif node.op == "placeholder" and not path:
                assert not (frame.x < box.x + box.w and box.x < frame.x + frame.w
                            and frame.y < box.y + box.h and box.y < frame.y + frame.h), (node.name, p)


def test_exported_frames_carry_class_names():
    labels = {p: g.label for p, g in compute_layout(graph("cnn.pt2"), fold_weights=False).groups.items()}
    assert labels["conv"] == "conv · Conv2d" and labels["bn"] == "bn · BatchNorm2d"
    assert labels["layer1.0"] == "layer1.0 · Block" and labels["layer1"] == "layer1 · Sequential"
    assert labels["layer1.0.bn2"] == "layer1.0.bn2 · BatchNorm2d"
    assert not [p for p, text in labels.items() if text.endswith("Module")]
    gpt = {p: g.label for p, g in compute_layout(graph("gpt2.pt2"), fold_weights=True).groups.items()}
    assert gpt["m"] == "m · GPT2Model" and gpt["m.h.3"] == "m.h.3 · GPT2Block"
    assert gpt["m.h.3.attn"] == "m.h.3.attn · GPT2Attention" and gpt["m.h.3.attn.c_attn"] == "m.h.3.attn.c_attn · Conv1D"
    bert = {p: g.label for p, g in compute_layout(graph("bert.pt2"), fold_weights=False).groups.items()}
    assert bert["m.encoder.layer.1"] == "m.encoder.layer.1 · BertLayer"
    assert bert["m.encoder.layer.1.attention.self.query"].endswith("· Linear")


def test_a_module_holding_one_card_gets_no_frame_and_the_card_a_line_naming_it():
    # With its weights folded, a Linear is one `linear` card: a frame around it only repeats it
    # (issue #26). Its card says the module instead, one line taller; a parent left with one card
    # loses its frame in turn, and a module of two cards keeps it.
    g = graph("bert.pt2")
    layout = compute_layout(g, fold_weights=True)
    query = "m.encoder.layer.1.attention.self.query"
    assert query not in layout.groups and "m.encoder.layer.1.attention.self" in layout.groups
    card = next(n.name for n in g.nodes if n.meta.get("fxs_module_path") == query and n.name in layout.nodes)
    box, frame = layout.nodes[card], layout.groups["m.encoder.layer.1.attention.self"]
    assert inside(box, frame)
    plain = compute_layout(g, fold_weights=False)   # the weights as cards of their own: two or more
    assert query in plain.groups and plain.nodes[card].h < box.h
    assert frame_problems(layout, g) == []
    cnn = compute_layout(graph("cnn.pt2"), fold_weights=True)
    assert not {"conv", "bn", "layer1.0.conv1", "layer1.0.bn2"} & set(cnn.groups)
    assert {"layer1", "layer1.0", "layer2.0"} <= set(cnn.groups)


def test_weights_of_an_exported_graph_get_the_class_from_the_module_stack():
    g = graph("cnn.pt2")
    node = next(n for n in g.nodes if n.op == "get_attr" and n.target == "bn.running_mean")
    assert node.meta["fxs_module_stack"] == [("bn", "BatchNorm2d")]
    x = next(n for n in g.nodes if n.op == "placeholder")
    assert x.meta["fxs_module_path"] == "" and x.meta["fxs_module_stack"] == []


def test_a_module_called_twice_around_a_sibling_gets_no_frame_rather_than_an_overlapping_one():
    # Block.relu runs after bn1 and again after bn2: a frame around both calls would cover conv2
    # and bn2. It is left out; its cards count for the block's frame.
    layout = compute_layout(graph("cnn.pt2"), fold_weights=False)
    assert "layer1.0.relu" not in layout.groups and "layer1.0.conv2" in layout.groups
    assert frame_problems(layout, graph("cnn.pt2")) == []


def test_frame_problems_reports_an_overlap():
    from dataclasses import replace

    g = graph("cnn.pt2")
    layout = compute_layout(g, fold_weights=False)   # conv and bn: a frame each (the op and its weights)
    conv, bn = layout.groups["conv"], layout.groups["bn"]
    layout.groups["bn"] = replace(bn, y=conv.y + 4)
    problems = frame_problems(layout, g)
    assert {"frames 'bn' and 'conv' overlap", "frames 'conv' and 'bn' overlap"} & set(problems)
    assert "card 'conv2d' (conv) is drawn inside frame 'bn'" in problems
    assert any("'batch_norm'" in p and "not inside its frame 'bn'" in p for p in problems)
