"""The classic torch.fx editing walk-throughs, done as edits on the built-in examples; each edited
module is run and checked against numbers computed independently with plain torch."""

from __future__ import annotations

import copy

import torch
from torch import nn

from tests.core.edit_helpers import code, doc_for, run


def test_change_constant_of_y_times_2_to_10():
    doc = doc_for("add_mul.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    assert doc.history == ["Set mul.args[1] = 10"]
    torch.testing.assert_close(run(doc), (x + 5) * 10)


def test_rewire_c_to_use_a_then_dead_code_elimination():
    doc = doc_for("sub_chain.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})
    torch.testing.assert_close(run(doc), (x + 10) * 2)
    assert "sub" in code(doc)  # still there, now dead
    doc.apply_edit({"op": "eliminate_dead_code"})
    assert doc.find("sub") is None and " - 5" not in code(doc)
    assert doc.history[-1] == "Eliminate dead code (1 node)"
    torch.testing.assert_close(run(doc), (x + 10) * 2)


def test_change_clamp_max_keyword():
    doc = doc_for("clamp.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"})
    assert doc.history == ["Set clamp.max = 10.0"]
    torch.testing.assert_close(run(doc), x.clamp(-5.0, 10.0))
    assert run(doc).max().item() == 10.0


def test_add_alpha_keyword_to_torch_add():
    doc = doc_for("two_linear.py")
    (x,) = doc.loaded.example_inputs
    model = doc.loaded.module
    doc.apply_edit({"op": "set_arg", "node": "add", "key": "alpha", "value": "0.5"})
    with torch.no_grad():
        expected = model.linear1(x) + 0.5 * model.linear2(x)
    torch.testing.assert_close(run(doc), expected)


def test_swap_torch_relu_for_a_function_of_the_model_file():
    doc = doc_for("relu_add.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"})
    my_relu = doc.loaded.user_module.my_relu
    assert doc.find("relu").target is my_relu
    expected = x.clamp(min=0) + x.clamp(max=0) * 0.01 + 1
    torch.testing.assert_close(run(doc), expected)
    assert (run(doc) < 1).any()  # negative inputs now leak through
    # the design's alias for "the opened model file" resolves to the same function
    doc.undo()
    doc.apply_edit({"op": "set_target", "node": "relu", "target": "model_file.my_relu"})
    assert doc.find("relu").target is my_relu


def test_swap_view_for_reshape():
    doc = doc_for("view_reshape.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "set_target", "node": "view", "target": "reshape"})
    assert ".reshape(-1, 1)" in code(doc) and ".view(" not in code(doc)
    torch.testing.assert_close(run(doc), x.reshape(-1, 1))
    # reshape also works where view cannot: a non-contiguous input
    xt = x.t()
    torch.testing.assert_close(run(doc, xt), xt.reshape(-1, 1))


def test_insert_relu_between_two_nodes():
    doc = doc_for("add_mul.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edits([
        {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"},
        {"op": "replace_uses", "node": "add", "with": "relu"},
    ], label="Insert relu between add and mul")
    assert doc.history == ["Insert relu between add and mul"]
    torch.testing.assert_close(run(doc), torch.relu(x + 5) * 2)
    torch.testing.assert_close(run(doc, x - 10), torch.relu(x - 5) * 2)


def test_rebuild_mul_as_add():
    doc = doc_for("sub_chain.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "insert", "after": "mul", "kind": "call_function", "target": "operator.add",
                    "args": "(%sub, 2)", "name": "plus2"})
    doc.apply_edit({"op": "replace_uses", "node": "mul", "with": "plus2"})
    doc.apply_edit({"op": "erase", "node": "mul"})
    assert doc.find("mul") is None
    torch.testing.assert_close(run(doc), (x + 10 - 5) + 2)


def test_erase_batchnorm_replacing_its_uses_with_its_input():
    doc = doc_for("conv_bn_relu.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "erase", "node": "bn1", "replace_uses_with": "conv1"})
    assert doc.history == ["Erase bn1 (uses → conv1)"]
    reference = copy.deepcopy(doc.loaded.module)
    reference.bn1 = nn.Identity()
    with torch.no_grad():
        expected = reference(x)
    torch.testing.assert_close(run(doc), expected)
    assert not torch.allclose(run(doc), doc.loaded.module(x))


def test_insert_new_dropout_submodule_and_undo_removes_it():
    doc = doc_for("conv_bn_relu.py")
    doc.apply_edits([
        {"op": "insert", "after": "conv1", "kind": "call_module", "target": "torch.nn.Dropout(p=0.1)",
         "args": "(%conv1,)"},
        {"op": "replace_uses", "node": "conv1", "with": "dropout"},
    ])
    assert isinstance(doc.edited.dropout, nn.Dropout) and doc.edited.dropout.p == 0.1
    torch.testing.assert_close(run(doc), doc.loaded.module(*doc.loaded.example_inputs))  # eval mode like the model
    assert "self.dropout(conv1)" in code(doc)
    doc.undo()
    assert not hasattr(doc.edited, "dropout")
    doc.redo()
    assert isinstance(doc.edited.dropout, nn.Dropout)


def test_insert_get_attr_and_existing_submodule():
    doc = doc_for("conv_bn_relu.py")
    (x,) = doc.loaded.example_inputs
    doc.apply_edit({"op": "insert", "before": "output", "kind": "get_attr", "target": "bn2.running_mean",
                    "name": "mean2"})
    doc.apply_edit({"op": "insert", "after": "relu2", "kind": "call_module", "target": "relu1",
                    "args": "(%relu2,)", "name": "relu_again"})
    doc.apply_edit({"op": "set_arg", "node": "output", "key": 0, "value": "(%relu_again, %mean2)"})
    out, mean = run(doc)
    torch.testing.assert_close(mean, doc.loaded.module.bn2.running_mean)
    torch.testing.assert_close(out, doc.loaded.module(x))
