"""One way to present a node (issue #16 item 4): ``core.node_text`` for its target and shape, and
``core.signatures`` for its callee, which the Properties panel and edit validation both ask, so
they agree, ``call_method`` included."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
from fxstudio.core import fx_compat, node_text, signatures
from fxstudio.core.edits.validation import check_call
from fxstudio.core.metadata import normalized_arguments
from fxstudio.core.targets import parse_target


def _graph(method: str, args: tuple, receiver_is_tensor: bool = True):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    if receiver_is_tensor:
        x.meta["tensor_meta"] = fx_compat.extract_tensor_metadata(torch.ones(2, 3))
    node = g.call_method(method, (x, *args))
    g.output(node)
    torch.fx.GraphModule(torch.nn.Module(), g)
    return node


def _panel_view(node):
    pytest.importorskip("PySide6")
    from fxstudio.qt.properties.signature import parameter_view  # the panel's (Qt-free) module

    return parameter_view(node, node.graph.owning_module)


@pytest.mark.parametrize("method, args, names", [
    ("view", (-1, 1), None),                 # sizes one by one: valid, shown without position names
    ("view", ((-1, 1),), ["input", "size"]),
    ("transpose", (0, 1), ["input", "dim0", "dim1"]),
    ("reshape", (3, 2), None),
])
def test_panel_and_validation_agree_on_tensor_methods(method, args, names):
    node = _graph(method, args)
    assert signatures.node_signatures(node)  # a method on a known tensor has signatures ...
    assert check_call(node.op, node.target, node.args, dict(node.kwargs), node.graph.owning_module) is None
    view = _panel_view(node)
    if names is not None:
        assert view.positional_names == names
    # ... and the names the panel shows are keywords validation accepts
    labelled = [i for i, n in enumerate(view.positional_names) if n and i > 0]
    if labelled:
        kwargs = {view.positional_names[i]: node.args[i] for i in labelled}
        rest = tuple(a for i, a in enumerate(node.args) if i not in labelled)
        assert check_call(node.op, node.target, rest, kwargs, node.graph.owning_module) is None


def test_wrong_arguments_of_a_tensor_method_are_refused_and_the_panel_says_so():
    node = _graph("transpose", (0,))
    reason = check_call(node.op, node.target, node.args, {}, node.graph.owning_module)
    assert reason and ".transpose()" in reason
    assert "no known signature accepts" in _panel_view(node).note
    bad_kw = check_call(node.op, node.target, node.args + (1,), {"bogus": 1}, node.graph.owning_module)
    assert bad_kw and "bogus" in bad_kw


def test_a_method_on_something_not_known_to_be_a_tensor_has_no_signature_anywhere():
    node = _graph("transpose", (0,), receiver_is_tensor=False)  # would be wrong on a tensor
    assert signatures.node_signatures(node) == ()
    assert check_call(node.op, node.target, node.args, {}, node.graph.owning_module) is None
    view = _panel_view(node)
    assert view.positional_names == [None, None] and "signature unknown" in view.note
    args, note = normalized_arguments(node)
    assert args is None and "not known to be a tensor" in note
    append = _graph("append", (1,), receiver_is_tensor=False)
    assert signatures.node_signatures(append) == ()


def test_functions_use_schemas_for_torch_and_python_signatures_otherwise():
    assert len(signatures.function_signatures(torch.add)) > 1
    (mul,) = signatures.function_signatures(operator.mul)
    assert [p.kind for p in mul.parameters.values()] == [mul.parameters["a"].POSITIONAL_ONLY] * 2


def test_target_text_round_trips_and_the_short_label_is_the_bare_name():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    gelu = g.call_function(torch.nn.functional.gelu, (x,))
    add = g.call_function(operator.add, (gelu, 1))
    m = g.call_method("reshape", (add, -1))
    g.output(m)
    assert node_text.target_text(gelu) == "torch.nn.functional.gelu"
    assert parse_target("call_function", node_text.target_text(gelu)) is torch.nn.functional.gelu
    assert node_text.target_text(add) == "operator.add" and node_text.target_label(add) == "add"
    assert node_text.target_text(m) == "reshape" == node_text.target_label(m)
    assert node_text.card_target_text(x) == "input"
    assert node_text.call_label("call_method", "reshape") == ".reshape()"


def test_shape_texts():
    g = torch.fx.Graph()
    a, b, c = g.placeholder("a"), g.placeholder("b"), g.placeholder("c")
    a.meta.update({node_text.META_SHAPE: (1, 64), node_text.META_DTYPE: "float32"})
    b.meta.update({node_text.META_SHAPE: [(2, 3), None], node_text.META_DTYPE: ["float32", None]})
    c.meta.update({node_text.META_SHAPE: (), node_text.META_DTYPE: "int64"})
    assert node_text.shape_text(a) == "1×64 float32" and node_text.shape_columns(a) == ("1×64", "float32")
    assert node_text.shape_text(b) == "(2×3 float32, ?)" and node_text.shape_columns(b) == ("2×3, ?", "float32, None")
    assert node_text.shape_text(c) == "scalar int64" and node_text.edge_label(c) == "scalar"
    assert node_text.edge_label(b) == "" and node_text.dtype_name(torch.bfloat16) == "bfloat16"
