"""Issue #12: an edit never executes a new target before the user runs the model. The shape
refresh after an edit works on fake tensors only, never calls a callable outside the trust
boundary (whatever put it in the graph), and bounds Python arithmetic it must evaluate."""

from __future__ import annotations

import operator
import os
import shutil
import sys
import time

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path


def _document(tmp_path, example: str) -> Document:
    shutil.copy(example_path(example), tmp_path / example)
    return Document(load_model(tmp_path / example))


def _graft(doc: Document, target, args: tuple) -> torch.fx.Node:
    """A node put straight into the edited graph, past the edit engine (as a bug elsewhere could)."""
    graph = doc.edited.graph
    anchor = next(n for n in graph.nodes if n.op == "placeholder")
    with graph.inserting_after(anchor):
        node = graph.call_function(target, args)
    node.meta["fxs_id"] = 10_000
    return node


def test_refresh_never_calls_a_callable_outside_the_boundary(hostile, tmp_path):
    doc = _document(tmp_path, "relu_add.py")
    _graft(doc, os.system, (f'{sys.executable} -c "{hostile.payload}"',))
    doc.refresh_shapes()
    hostile.assert_clean()


def test_refresh_bounds_python_arithmetic(tmp_path):
    doc = _document(tmp_path, "relu_add.py")
    node = _graft(doc, operator.pow, (10, 100_000_000))
    start = time.perf_counter()
    doc.refresh_shapes()
    assert time.perf_counter() - start < 10
    assert "fxs_shape" not in node.meta  # shape unknown, not computed for real


def test_edit_time_refresh_uses_fake_tensors_not_the_real_weights(tmp_path):
    doc = _document(tmp_path, "conv_bn_relu.py")
    weight = doc.edited.get_submodule("conv1").weight
    before = weight.detach().clone()
    doc.apply_edits([
        {"op": "insert", "after": "x", "kind": "get_attr", "target": "conv1.weight", "name": "w"},
        {"op": "insert", "after": "w", "kind": "call_function", "target": "torch.nn.init.ones_",
         "args": "(%w,)", "name": "filled"},
    ])
    filled = doc.find("filled")
    assert filled.meta["fxs_shape"] == tuple(before.shape)  # the shape is known: it ran, on a fake
    assert torch.equal(weight, before)  # and the real weight was never written


def test_edit_time_checks_never_evaluate_an_operand_outside_the_boundary(hostile, tmp_path):
    """The cost and size checks of a new call evaluate its operands on fake tensors; an operand
    node calling something outside the boundary stays unknown (and the growing op is refused)."""
    doc = _document(tmp_path, "relu_add.py")
    grafted = _graft(doc, os.system, (f'{sys.executable} -c "{hostile.payload}"',))
    grafted.name = "grafted"
    doc._state.by_name["grafted"] = grafted
    with pytest.raises(EditRefused, match="rule: bounded cost"):
        doc.apply_edit({"op": "insert", "after": "grafted", "kind": "call_function", "target": "operator.mul",
                        "args": "(%grafted, 1000)"})
    hostile.assert_clean()
