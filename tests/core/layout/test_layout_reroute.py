"""Rewire edits reroute only the changed input edges: every card stays, the new routes avoid cards."""

from __future__ import annotations

import random

import pytest
import torch

from fxstudio.testing import synthetic
from fxstudio.core.document import Document
from fxstudio.core.layout.graph_model import extract_graph
from fxstudio.core.layout import compute_layout
from fxstudio.core.layout.reroute import node_edges, node_facts, node_weight_like
from fxstudio.core.model import LoadedModel
from fxstudio.resources import EXAMPLES_DIR
from tests.core.edit_helpers import doc_for
from tests.core.layout.layout_checks import assert_routes_avoid_cards, assert_valid_layout


def _synthetic_doc(n: int = 1_500) -> Document:
    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n))
    return Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                                example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))


def _follow(doc: Document):
    events = []
    doc.subscribe(events.append)
    return lambda: [n for n in (doc.node(i) for i in events[-1].changed) if n is not None]


def _edge_keys(layout):
    return [(e.src, e.dst, e.key) for e in layout.edges]


def _check_against_fresh(doc: Document, layout) -> None:
    """The rerouted layout routes exactly the graph's edges, in a fresh layout's order, each from
    the bottom centre of its source to the top centre of its destination, downward, past every card."""
    fresh = compute_layout(doc.edited.graph)
    assert _edge_keys(layout) == _edge_keys(fresh)
    assert_valid_layout(layout, doc.edited.graph)
    for e in layout.edges:
        s, d = layout.nodes[e.src], layout.nodes[e.dst]
        assert e.points[0] == (s.x + s.w / 2, s.y + s.h)
        assert e.points[-1] == (d.x + d.w / 2, d.y)
        ys = [p[1] for p in e.points]
        assert ys == sorted(ys), e


@pytest.mark.parametrize("name", ["residual_cnn.py", "transformer_block.py"])
def test_flattening_one_node_matches_extract_graph(name):
    doc = doc_for(name)
    ga = extract_graph(doc.edited.graph)
    index = {n: i for i, n in enumerate(ga.names)}
    for i, node in enumerate(doc.edited.graph.nodes):
        assert node_facts(node) == (ga.ops[i], ga.targets[i], ga.module_paths[i], ga.module_stacks[i],
                                    int(ga.label_len[i]))
        at = [k for k in range(len(ga.dst)) if ga.dst[k] == i]
        assert node_edges(node, index) == [(int(ga.src[k]), ga.keys[k]) for k in at]
        inputs_wl = all(bool(ga.weight_like[int(ga.src[k])]) for k in at)
        assert node_weight_like(node, inputs_wl) == bool(ga.weight_like[i]), node.name


def test_rewires_keep_every_card_and_route_around_cards():
    doc = _synthetic_doc()
    changed = _follow(doc)
    base = compute_layout(doc.edited.graph)
    layout = base
    rng = random.Random(7)
    adds = [n for n in doc.edited.graph.nodes if n.op == "call_function" and n.name.startswith("add")]
    for node in rng.sample(adds, 12):
        # Read a node further up: a long edge appears across the layers between them.
        further = node.args[0].all_input_nodes[0]
        for _ in range(rng.randrange(0, 4)):
            further = further.all_input_nodes[0] if further.all_input_nodes else further
        doc.apply_edit({"op": "set_arg", "node": node.name, "key": 1, "value": f"%{further.name}"})
        after = compute_layout(doc.edited.graph, previous=layout, changed=changed())
        assert after.stats.get("rerouted") == 1, after.stats
        assert after.delta == (layout.serial, frozenset({node.name}))
        assert {n: (b.x, b.y, b.w, b.h) for n, b in after.nodes.items()} == \
               {n: (b.x, b.y, b.w, b.h) for n, b in base.nodes.items()}
        assert after.groups == base.groups
        new = [e for e in after.edges if e.dst == node.name and e.src == further.name]
        assert len(new) == 1 and len(new[0].points) >= 2
        layout = after
    _check_against_fresh(doc, layout)
    assert_routes_avoid_cards(layout)


def test_undo_brings_back_the_route_as_it_was():
    doc = _synthetic_doc(600)
    changed = _follow(doc)
    base = compute_layout(doc.edited.graph)
    adds = [n for n in doc.edited.graph.nodes if n.op == "call_function" and n.name.startswith("add")]
    node = adds[len(adds) // 2]
    doc.apply_edit({"op": "set_arg", "node": node.name, "key": 1, "value": f"%{node.args[0].all_input_nodes[0].name}"})
    edited = compute_layout(doc.edited.graph, previous=base, changed=changed())
    assert edited.stats.get("rerouted") == 1
    assert [e.points for e in edited.edges] != [e.points for e in base.edges]
    doc.undo()
    back = compute_layout(doc.edited.graph, previous=edited, changed=changed())
    assert back.stats.get("rerouted") == 1
    assert [(e.src, e.dst, e.key, e.points) for e in back.edges] == \
           [(e.src, e.dst, e.key, e.points) for e in base.edges]
    # The next full incremental layout still works from a rerouted one.
    doc.apply_edit({"op": "insert", "after": node.name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{node.name},)"})
    grown = compute_layout(doc.edited.graph, previous=back, changed=None)
    assert "rerouted" not in grown.stats
    assert_valid_layout(grown, doc.edited.graph)


def test_rewires_on_the_examples_route_around_cards():
    total = 0
    for name in sorted(p.name for p in EXAMPLES_DIR.glob("*.py")):
        if name in ("data_branch.py",):
            continue
        doc = doc_for(name)
        changed = _follow(doc)
        layout = compute_layout(doc.edited.graph)
        nodes = list(doc.edited.graph.nodes)
        rng = random.Random(name)
        done = rerouted = 0
        for node in rng.sample(nodes, len(nodes)):
            args = [i for i, a in enumerate(node.args) if isinstance(a, torch.fx.Node)]
            if node.op not in ("call_function", "call_method") or not args:
                continue
            key = args[-1]
            layer = layout.nodes[node.name].layer
            earlier = [n for n in nodes[:nodes.index(node)] if n.op != "output" and n is not node.args[key]
                       and layout.nodes[n.name].layer < layer - 1]
            if not earlier:
                continue
            source = rng.choice(earlier)
            try:
                doc.apply_edit({"op": "set_arg", "node": node.name, "key": key, "value": f"%{source.name}"})
            except Exception:  # noqa: BLE001 - a rewire the engine refuses (shapes) is not this test's business
                continue
            before = layout
            layout = compute_layout(doc.edited.graph, previous=layout, changed=changed())
            # A rewire that changes a card's width (its shape text) or what counts as weight-like
            # (which places nodes next to their consumers) is laid out incrementally instead.
            widths = {n: b.w for n, b in compute_layout(doc.edited.graph).nodes.items()}
            same_kinds = (extract_graph(doc.edited.graph).weight_like == before.inputs[1].weight_like).all()
            if same_kinds and all(widths[n] == b.w for n, b in before.nodes.items()):
                assert layout.stats.get("rerouted") == 1, (name, source.name, node.name, layout.stats)
                rerouted += 1
            assert_routes_avoid_cards(layout)
            done += 1
            if done == 5:   # (cards are as wide as their shape with its dtype: fewer rewires keep every width)
                break
        _check_against_fresh(doc, layout)
        total += rerouted
    assert total >= 10


def test_what_a_reroute_cannot_keep_falls_back_to_the_incremental_layout():
    doc = doc_for("residual_cnn.py")
    changed = _follow(doc)
    layout = compute_layout(doc.edited.graph)
    # A rename changes a name the layout keys on.
    doc.apply_edit({"op": "rename", "node": "layer1_0_relu", "name": "act"})
    after = compute_layout(doc.edited.graph, previous=layout, changed=changed())
    assert "rerouted" not in after.stats and "act" in after.nodes
    # An input from a layer at or below the user's: the layering itself must change.
    user, same_layer = doc.find("layer2_0_downsample_1"), doc.find("layer2_0_bn1")
    assert after.nodes[user.name].layer == after.nodes[same_layer.name].layer
    doc.apply_edit({"op": "set_arg", "node": user.name, "key": 0, "value": f"%{same_layer.name}"})
    again = compute_layout(doc.edited.graph, previous=after, changed=changed())
    assert "rerouted" not in again.stats
    assert_valid_layout(again, doc.edited.graph, check_routes=True)
    # A collapsed group is laid out the ordinary way.
    folded = compute_layout(doc.edited.graph, collapsed=frozenset({"layer1"}), previous=again, changed=[user])
    assert "rerouted" not in folded.stats
