"""Incremental layout: after an edit in a document, the cards the edit did not touch stay put."""

from fxstudio.testing import synthetic
from fxstudio.core.layout import compute_layout
from tests.core.edit_helpers import doc_for
from tests.core.layout.layout_checks import assert_valid_layout


def moved(before, after):
    """Names of cards present in both layouts whose position changed."""
    return [n for n, b in after.nodes.items() if n in before.nodes and (before.nodes[n].x, before.nodes[n].y) != (b.x, b.y)]


def test_editing_an_argument_moves_nothing():
    doc = doc_for("residual_cnn.py")
    before = compute_layout(doc.edited.graph)
    doc.apply_edit({"op": "set_arg", "node": "flatten", "key": 1, "value": "1"})
    after = compute_layout(doc.edited.graph, previous=before)
    assert moved(before, after) == [] and set(after.nodes) == set(before.nodes)


def test_erasing_a_node_leaves_every_other_card_in_place():
    doc = doc_for("residual_cnn.py")
    before = compute_layout(doc.edited.graph)
    doc.apply_edit({"op": "erase", "node": "layer2_1_relu", "replace_uses_with": "layer2_1_bn1"})
    after = compute_layout(doc.edited.graph, previous=before)
    assert_valid_layout(after, doc.edited.graph)
    assert "layer2_1_relu" not in after.nodes
    assert moved(before, after) == []
    # A fresh layout closes the gap instead: everything below the erased node moves up.
    assert len(moved(before, compute_layout(doc.edited.graph))) > 10


def test_inserting_a_node_moves_only_what_is_below_it():
    doc = doc_for("residual_cnn.py")
    before = compute_layout(doc.edited.graph)
    doc.apply_edit({"op": "insert", "after": "layer2_1_bn1", "kind": "call_function", "target": "torch.sigmoid",
                    "args": "(%layer2_1_bn1,)", "name": "gate"})
    doc.apply_edit({"op": "set_arg", "node": "layer2_1_relu", "key": 0, "value": "%gate"})
    after = compute_layout(doc.edited.graph, previous=before)
    assert_valid_layout(after, doc.edited.graph)
    gate = after.nodes["gate"]
    assert after.nodes["layer2_1_bn1"].y < gate.y < after.nodes["layer2_1_relu"].y
    above = [n for n, b in before.nodes.items() if b.y <= before.nodes["layer2_1_bn1"].y]
    assert len(above) > len(before.nodes) * 0.6
    assert not set(moved(before, after)) & set(above)


def test_incremental_layout_of_a_big_graph_after_an_edit():
    graph = synthetic.skip_chain(3000, seed=1)
    before = compute_layout(graph)
    # Erase one relu in the middle (its users take its input), as the editor's erase does.
    relu = [n for n in graph.nodes if n.name.startswith("relu")][300]
    relu.replace_all_uses_with(relu.args[0])
    graph.erase_node(relu)
    after = compute_layout(graph, previous=before)
    assert_valid_layout(after, graph)
    kept = len(after.nodes) - len(moved(before, after))
    assert kept >= 0.95 * len(after.nodes)
