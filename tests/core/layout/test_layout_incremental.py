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


def test_erasing_a_node_closes_its_gap_and_moves_nothing_sideways():
    doc = doc_for("residual_cnn.py")
    before = compute_layout(doc.edited.graph)
    erased_y = before.nodes["layer2_1_relu"].y
    doc.apply_edit({"op": "erase", "node": "layer2_1_relu", "replace_uses_with": "layer2_1_bn1"})
    after = compute_layout(doc.edited.graph, previous=before)
    assert_valid_layout(after, doc.edited.graph)
    assert "layer2_1_relu" not in after.nodes
    above = [n for n, b in before.nodes.items() if b.y < erased_y and n in after.nodes]
    below = [n for n, b in before.nodes.items() if b.y > erased_y and n in after.nodes]
    assert above and below
    assert not set(moved(before, after)) & set(above)  # what is above the erased card stays put
    # Below it, every card moves up (into the erased layer's band), none sideways:
    # no hole is left where the card was (issue #26: erase and fusion left holes).
    assert all(before.nodes[n].y > after.nodes[n].y for n in below)
    assert all(before.nodes[n].x == after.nodes[n].x for n in below)
    fresh = compute_layout(doc.edited.graph)
    height = lambda lay: max(b.y + b.h for b in lay.nodes.values())  # noqa: E731
    assert height(after) <= height(before) - before.nodes["layer2_1_relu"].h  # the hole is closed
    assert height(after) <= height(fresh) + 24  # as a fresh layout would, within a band's slack


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
    erased_y = before.nodes[relu.name].y
    after = compute_layout(graph, previous=before)
    assert_valid_layout(after, graph)
    above = {n for n, b in before.nodes.items() if b.y < erased_y and n in after.nodes}
    assert not set(moved(before, after)) & above
    sideways = [n for n, b in after.nodes.items() if n in before.nodes and before.nodes[n].x != b.x]
    assert len(sideways) <= 0.05 * len(after.nodes)
