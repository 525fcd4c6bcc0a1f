"""Argument syntax (docs/edit-scripts.md): format → parse gives an equal value for everything an FX graph can
hold, parsing is a whitelist (never eval), and targets round-trip too."""

from __future__ import annotations

import math

import pytest
import torch
import torch.fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxstudio.core.argsyntax import format_value, parse_value, values_equal
from fxstudio.core.errors import EditRefused
from fxstudio.core.targets import format_target, parse_target
from tests.core.edit_helpers import loaded_example


def _graph():
    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x) + y

    return torch.fx.symbolic_trace(M()).graph


GRAPH = _graph()
NODES = [n for n in GRAPH.nodes if n.op != "output"]

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int64, torch.bool,
          torch.complex64, torch.uint8]
DEVICES = [torch.device("cpu"), torch.device("cuda:0"), torch.device("cuda"), torch.device("meta")]
CONSTANTS = [torch.contiguous_format, torch.channels_last, torch.preserve_format, torch.strided,
             torch.sparse_coo, Ellipsis, torch.ops.aten.add.Tensor]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=False), st.text(max_size=8), st.sampled_from(DTYPES + DEVICES + CONSTANTS),
    st.sampled_from(NODES),
)
small = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(NODES))
slices = st.builds(slice, small, small, small)
fx_values = st.recursive(
    st.one_of(scalars, slices),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=5), inner, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(fx_values)
def test_format_then_parse_gives_an_equal_value(value):
    text = format_value(value)
    assert values_equal(parse_value(text, GRAPH), value), text


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=30))
def test_parsing_arbitrary_text_returns_a_value_or_refuses(text):
    try:
        parse_value(text, GRAPH)
    except EditRefused as exc:
        assert exc.message.startswith("Cannot parse")


@pytest.mark.parametrize("value,text", [
    (float("inf"), "inf"), (-math.inf, "-inf"), ((1,), "(1,)"), ((), "()"), ([1, 2.5], "[1, 2.5]"),
    ({"dim": -1}, "{'dim': -1}"), (slice(None, 5), "slice(None, 5)"), (slice(1, 2, 3), "slice(1, 2, 3)"),
    (Ellipsis, "..."), ((slice(None, None), Ellipsis, None), "(slice(None, None), ..., None)"),
    (torch.float16, "torch.float16"), (torch.device("cuda:0"), "torch.device('cuda:0')"),
    (torch.channels_last, "torch.channels_last"), (torch.strided, "torch.strided"), ("a'b", '"a\'b"'),
    (torch.ops.aten.add.Tensor, "torch.ops.aten.add.Tensor"), (torch.tensor([1, 2]), "torch.tensor([1, 2], dtype=torch.int64)"),
])
def test_format_value_text(value, text):
    assert format_value(value) == text
    assert values_equal(parse_value(text), value)


def test_node_references_format_as_percent_name():
    x = NODES[0]
    assert format_value((x, [x])) == "(%x, [%x])"
    assert parse_value("(%x, %relu)", GRAPH) == (x, NODES[2])
    assert parse_value("'%x'", GRAPH) == "%x"  # inside a string it is just text


@pytest.mark.parametrize("text,reason", [
    ("__import__('os').system('ls')", "not allowed"),
    ("open('/etc/passwd')", "calling open() is not allowed"),
    ("(lambda: 1)()", "not allowed"),
    ("x.y.z", "is not a torch dtype"),
    ("1 + 1", "arithmetic is not allowed"),
    ("[i for i in range(3)]", "not allowed"),
    ("b'x'", "bytes"),
    ("%nope", "no node named %nope"),
    ("torch.float99", "is not a torch dtype"),
    ("torch.device(%x)", "device string"),
    ("slice(1, 2, 3, 4)", "1 to 3 arguments"),
    ("{**a}", "'**' unpacking"),
    ("1,,", "invalid syntax"),
])
def test_parser_refuses_what_is_not_an_fx_value(text, reason):
    with pytest.raises(EditRefused) as info:
        parse_value(text, GRAPH)
    assert reason in info.value.message and repr(text) in info.value.message


def test_values_equal_distinguishes_tuples_lists_and_bools():
    assert not values_equal((1,), [1])
    assert not values_equal(True, 1)
    assert values_equal(float("nan"), float("nan"))


@pytest.mark.parametrize("example", ["residual_cnn.py", "transformer_block.py", "relu_add.py", "wrapped_fn.py",
                                     "view_reshape.py"])
def test_every_target_of_an_example_round_trips(example):
    loaded = loaded_example(example)
    gm = loaded.graph_module
    known = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module", "get_attr"):
            text = format_target(node, loaded.user_module)
            assert parse_target(node.op, text, gm, loaded.user_module, known) == node.target, text
        for value in (node.args, node.kwargs):
            assert values_equal(parse_value(format_value(value), gm.graph), value)


def test_model_file_functions_are_written_with_the_file_stem():
    loaded = loaded_example("relu_add.py")
    fn = parse_target("call_function", "relu_add.my_relu", None, loaded.user_module)
    assert fn is loaded.user_module.my_relu
    assert parse_target("call_function", "model_file.my_relu", None, loaded.user_module) is fn
    node = next(n for n in loaded.graph_module.graph.nodes if n.op == "call_function")
    node_copy = torch.fx.Graph().create_node("call_function", fn, (), {}, name="r")
    assert format_target(node_copy, loaded.user_module) == "relu_add.my_relu"
    assert format_target(node, loaded.user_module) == "torch.relu"


def test_public_names_are_preferred_for_functions():
    g = torch.fx.Graph()
    gelu = g.create_node("call_function", torch.nn.functional.gelu, (), {})
    assert format_target(gelu) == "torch.nn.functional.gelu"
