"""``insert`` with ``"reroute": true`` (issue #13 item 11): the anchor's users move to the new node,
as the window's default insert does, in one undoable command that a script replays exactly."""

from __future__ import annotations

import torch

from fxstudio.core.document import replay
from tests.core.edit_helpers import code, doc_for, run

RELU_AFTER_ADD = {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu",
                  "args": "(%add,)"}


def test_without_reroute_the_anchors_users_stay_on_the_anchor():
    doc = doc_for("add_mul.py")
    doc.apply_edit(RELU_AFTER_ADD)
    relu, mul = doc.find("relu"), doc.find("mul")
    assert mul.args[0] is doc.find("add") and not relu.users  # a dead node
    x = doc.loaded.example_inputs[0]
    assert torch.equal(run(doc), (x + 5) * 2)


def test_reroute_moves_every_user_of_the_anchor_but_the_new_node():
    doc = doc_for("add_mul.py")
    doc.apply_edit({**RELU_AFTER_ADD, "reroute": True})
    add, relu, mul = doc.find("add"), doc.find("relu"), doc.find("mul")
    assert relu.args == (add,) and list(add.users) == [relu]
    assert mul.args[0] is relu
    x = doc.loaded.example_inputs[0]
    assert torch.equal(run(doc), torch.relu(x + 5) * 2)
    assert doc.history == ["Insert relu after add (its users now use relu)"]
    assert doc.edit_script()["edits"] == [{**RELU_AFTER_ADD, "kwargs": "{}", "name": "relu", "reroute": True}]


def test_reroute_is_one_undo_step_and_replays_to_the_same_code():
    doc = doc_for("sub_chain.py")
    original = code(doc)
    doc.apply_edit({"op": "insert", "after": "x", "kind": "call_function", "target": "torch.neg",
                    "args": "(%x,)", "name": "negx", "reroute": True})
    edited = code(doc)
    assert doc.find("add").args[0] is doc.find("negx")
    again = replay(doc.loaded, doc.edit_script())
    assert code(again) == edited
    doc.undo()
    assert code(doc) == original
    doc.redo()
    assert code(doc) == edited


def test_reroute_reaches_the_output_and_several_users():
    doc = doc_for("residual_cnn.py")
    anchor = next(n for n in doc.edited.graph.nodes if len(n.users) > 1)
    users = list(anchor.users)
    doc.apply_edit({"op": "insert", "after": anchor.name, "kind": "call_function", "target": "torch.neg",
                    "args": f"(%{anchor.name},)", "name": "flipped", "reroute": True})
    flipped = doc.find("flipped")
    assert list(anchor.users) == [flipped]
    assert all(flipped in u.all_input_nodes for u in users)
    doc.module()  # lints and recompiles


def test_reroute_on_a_node_without_users_inserts_only():
    doc = doc_for("add_mul.py")
    doc.apply_edit(RELU_AFTER_ADD)  # relu: no users
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.neg",
                    "args": "(%relu,)", "reroute": True})
    assert doc.history[-1] == "Insert neg after relu"
    assert list(doc.find("relu").users) == [doc.find("neg")]
