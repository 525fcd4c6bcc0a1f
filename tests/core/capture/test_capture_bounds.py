"""The bounds a capture is read and rebuilt within (issue #23), in process: the manifest's JSON
measured before parsing, the fast reader of simple argument text against the full parser, the
graph's fake evaluation (shared results, in-place layout changes, the data budget) and the
escaping of strings from the file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fxstudio.core.argsyntax import parse_value
from fxstudio.core.capture import read_capture, rebuild_graph
from fxstudio.core.capture.fileformat import brief, printable
from fxstudio.core.capture.members import MAX_JSON_DEPTH, check_json_size
from fxstudio.core.capture.rebuild import _parse_simple
from fxstudio.core.errors import LoadError
from tests.security.test_capture_hostile import TENSOR, _graph, _node, write_capture


# ----------------------------------------------------------------------------- the manifest's JSON


@pytest.mark.parametrize("text", [
    json.dumps({"a": ["[[[{{{", "\\\"]]]", 'x"y'], "b": {"c": [1, 2, {}]}}).encode(),
    json.dumps({"deep": "[" * 500}).encode(),  # brackets inside strings do not count
    b'{"a": "\\\\", "b": [[[]]]}',  # an escaped backslash before a closing quote
])
def test_brackets_inside_strings_are_not_counted(text):
    check_json_size(text, Path("x"), "capture.json")


def test_depth_past_the_limit_is_refused_and_at_the_limit_is_not():
    check_json_size(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, Path("x"), "capture.json")
    with pytest.raises(LoadError, match="levels deep"):
        check_json_size(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), Path("x"), "capture.json")


def test_measuring_is_linear_on_a_run_of_escaped_quotes():
    """One pattern for strings with escapes inside backtracks quadratically on this text."""
    start = time.perf_counter()
    check_json_size(b'"' + b'\\"' * 5_000_000, Path("x"), "capture.json")
    assert time.perf_counter() - start < 5


# ----------------------------------------------------------------------------- argument text


_SIMPLE = st.one_of(st.sampled_from(["%x", "%y", "True", "False", "None", "-0", "0", "-0.0", "1.5e3", "007"]),
                    st.integers(-10 ** 20, 10 ** 20).map(str),
                    st.floats(allow_nan=False, allow_infinity=False).map(repr))
_TEXTS = st.one_of(
    st.lists(_SIMPLE, max_size=4).map(lambda items: "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"),
    st.lists(_SIMPLE, max_size=4).map(lambda items: "(" + ", ".join(items) + ")"),
    st.dictionaries(st.sampled_from(["dim", "alpha", "class", "x y"]), _SIMPLE, max_size=3).map(
        lambda d: "{" + ", ".join(f"{k!r}: {v}" for k, v in d.items()) + "}"),
    st.text(alphabet="(){}%xy,:' 0123456789.-", max_size=12))


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(text=_TEXTS)
def test_the_fast_reader_agrees_with_the_full_parser(text):
    graph = torch.fx.Graph()
    env = {"x": graph.placeholder("x"), "y": graph.placeholder("y")}
    try:
        fast = _parse_simple(text, env)
    except KeyError:
        return  # left to the full parser
    full = parse_value(text, env)
    assert type(fast) is type(full) and fast == full
    assert [type(v) for v in (fast.values() if isinstance(fast, dict) else fast)] == \
        [type(v) for v in (full.values() if isinstance(full, dict) else full)]


# ----------------------------------------------------------------------------- fake evaluation


def _rebuilt(tmp_path, middle, inputs=None):
    graph = _graph(middle)
    if inputs is not None:
        graph["inputs"] = inputs
    path = write_capture(tmp_path / "g.fxcap", [graph])
    return rebuild_graph(read_capture(path), 0)


def _real_shapes(gm, inputs):
    shapes = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                shapes[n.name] = tuple(value.shape)
            return value

    Recorder(gm).run(*[t.clone() for t in inputs])
    return shapes


@pytest.mark.parametrize("middle", [
    # the same call on the same layouts, shared; then an in-place layout change of a shared value
    [_node("call_method", "a", "relu", "(%x,)"), _node("call_method", "b", "relu", "(%x,)"),
     _node("call_method", "c", "unsqueeze_", "(%a, 0)"), _node("call_method", "d", "repeat", "(%b, 1, 3)"),
     _node("call_function", "e", "operator.add", "(%c, %b)")],
    # an in-place change of the input itself, after a shared read of it
    [_node("call_method", "a", "add_", "(%x, 1)"), _node("call_method", "b", "t_", "(%x,)"),
     _node("call_method", "c", "size", "(%x, 0)"), _node("call_function", "d", "torch.ones", "((%c, 2),)")],
])
def test_fake_shapes_match_a_real_run_when_a_call_changes_a_layout_in_place(tmp_path, middle):
    gm, inputs, _ = _rebuilt(tmp_path, middle, [{"kind": "tensor", "shape": [2, 3], "dtype": "float32"}])
    real = _real_shapes(gm, inputs)
    fake = {n.name: tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes
            if hasattr(n.meta.get("tensor_meta"), "shape")}
    assert fake == real


def test_a_deep_graph_of_repeated_calls_is_evaluated_quickly(tmp_path):
    middle, prev = [], "x"
    for i in range(5000):
        middle.append(_node("call_function", f"r{i}", "torch.relu", f"(%{prev},)", value=TENSOR))
        prev = f"r{i}"
    start = time.perf_counter()
    gm, _, _ = _rebuilt(tmp_path, middle)
    assert time.perf_counter() - start < 10
    assert all("tensor_meta" in n.meta for n in gm.graph.nodes)


def test_outputs_are_summed_over_the_graph(tmp_path, monkeypatch):
    monkeypatch.setenv("FXSTUDIO_DATA_BUDGET", "10M")
    middle = [_node("call_function", f"z{i}", "torch.zeros", "((1024, 1024),)") for i in range(3)]
    with pytest.raises(LoadError, match=r"g.fxcap::0: node 3 \(z2\)'s output needs 4.0 MiB, which with the 8.0 MiB"):
        _rebuilt(tmp_path, middle)


def test_python_arithmetic_is_checked_on_the_values_computed(tmp_path):
    middle = [_node("call_method", "s", "size", "(%x, 0)", value={"kind": "int", "value": 2}),
              _node("call_function", "p", "operator.lshift", "(%s, 100000)")]
    middle[0]["value"]["value"] = 0  # the record lies: with 0 the shift would be free
    with pytest.raises(LoadError, match=r"node 2 \(p\).*bounded cost"):
        _rebuilt(tmp_path, middle)


def test_a_call_fake_tensors_cannot_evaluate_is_refused(tmp_path):
    with pytest.raises(LoadError, match=r"node 1 \(i\) cannot be evaluated on fake tensors"):
        _rebuilt(tmp_path, [_node("call_method", "i", "item", "(%x,)")])


def test_input_shapes_replace_the_recorded_inputs_and_their_shapes(tmp_path):
    from fxstudio.core.loading import load_model

    path = write_capture(tmp_path / "g.fxcap", [_graph([_node("call_method", "s", "softmax", "(%x,)", "{'dim': -1}")])])
    loaded = load_model(f"{path}::0", input_shapes=[(3, 5)])
    assert [tuple(t.shape) for t in loaded.example_inputs] == [(3, 5)]
    assert [n.meta["fxs_shape"] for n in loaded.graph_module.graph.nodes][:2] == [(3, 5), (3, 5)]
    assert not any("val" in n.meta or "fxs_hidden" in n.meta for n in loaded.graph_module.graph.nodes)
    with pytest.raises(LoadError, match="takes 1 input"):
        load_model(f"{path}::0", input_shapes=[(3, 5), (2,)])


# ----------------------------------------------------------------------------- strings from the file


def test_printable_escapes_control_and_format_characters_and_bounds_length():
    assert printable("a\x1b[2Jb\r\u202ec\x00") == "a\\x1b[2Jb\\r\\u202ec\\x00"
    assert printable("é×ü") == "é×ü"
    assert printable("x" * 1000, 10) == "x" * 10
    assert brief([0] * 10 ** 6) == "<list of 1,000,000 items>" and brief(10 ** 4000).startswith("<int of")
