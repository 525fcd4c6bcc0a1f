"""Every built-in example loads, traces and carries metadata with both tracers (except data_branch/fx)."""

import json

import pytest
import torch

from fxstudio.core.errors import TraceError
from fxstudio.core.inspect_view import inspect_record
from fxstudio.core.loading import load_model
from fxstudio.resources import DEFAULT_EXAMPLE, EXAMPLES_DIR

EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py"))


def test_the_expected_examples_exist():
    expected = {
        "add_mul.py", "sub_chain.py", "clamp.py", "relu_add.py", "view_reshape.py", "two_linear.py",
        "wrapped_fn.py", "conv_bn_relu.py", "residual_cnn.py", "transformer_block.py", "data_branch.py",
    }
    assert expected <= set(EXAMPLES)
    assert DEFAULT_EXAMPLE in EXAMPLES


@pytest.mark.parametrize("tracer", ["fx", "export"])
@pytest.mark.parametrize("name", [n for n in EXAMPLES if n != "data_branch.py"])
def test_example_traces_and_matches_the_module(name, tracer):
    loaded = load_model(EXAMPLES_DIR / name, tracer=tracer)
    gm, inputs = loaded.graph_module, loaded.example_inputs
    assert loaded.kind == "py" and loaded.tracer == tracer and loaded.entry
    torch.testing.assert_close(gm(*inputs), loaded.module(*inputs))
    gm.graph.lint()
    out = next(iter(n for n in gm.graph.nodes if n.op == "output"))
    value = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
    expected = loaded.module(*inputs)
    assert value.meta["fxs_shape"] == tuple(expected.shape)
    assert value.meta["fxs_dtype"] == str(expected.dtype).removeprefix("torch.")
    record = json.loads(json.dumps(inspect_record(loaded)))  # the `inspect --json` document
    assert record["lint"]["ok"] and len(record["nodes"]) == len(gm.graph.nodes)
    for node in gm.graph.nodes:
        assert "fxs_module_path" in node.meta and "fxs_module_stack" in node.meta
        if node.op in ("call_function", "call_module") and not node.meta.get("fxs_hidden"):
            assert node.meta["fxs_source"]["file"] == str(EXAMPLES_DIR / name)


def _line_of(path, text):
    return path.read_text().splitlines().index(text) + 1


def test_data_branch_needs_a_concrete_arg_for_fx():
    with pytest.raises(TraceError) as info:
        load_model(EXAMPLES_DIR / "data_branch.py")
    msg = str(info.value)
    line = _line_of(EXAMPLES_DIR / "data_branch.py", "        if positive:")
    assert f"data_branch.py:{line} in forward (`if positive:`)" in msg
    assert "--concrete-arg positive=VALUE" in msg
    for tracer in ("fx", "export"):
        loaded = load_model(EXAMPLES_DIR / "data_branch.py", tracer=tracer, concrete_args={"positive": True})
        x = loaded.example_inputs[0]
        torch.testing.assert_close(loaded.graph_module(*loaded.example_inputs), x * 2)
        assert any("positive=True" in n for n in loaded.notes)


def test_residual_cnn_is_a_real_looking_model():
    loaded = load_model(EXAMPLES_DIR / "residual_cnn.py")
    nodes = list(loaded.graph_module.graph.nodes)
    assert 50 <= len(nodes) <= 100
    conv = next(n for n in nodes if n.target == "layer2.0.conv1")
    assert conv.meta["fxs_module_path"] == "layer2.0.conv1"
    assert conv.meta["fxs_module_stack"] == [
        ("layer2", "Sequential"), ("layer2.0", "BasicBlock"), ("layer2.0.conv1", "Conv2d")
    ]
    assert conv.meta["fxs_shape"] == (1, 32, 16, 16)
    add = next(n for n in nodes if n.name == "add")
    assert add.meta["fxs_module_path"] == "layer1.0"
    assert add.meta["fxs_source"]["code"] == "out = out + identity"


def test_export_hides_plumbing_but_keeps_it_in_the_graph():
    loaded = load_model(EXAMPLES_DIR / "two_linear.py", tracer="export")
    hidden = [n for n in loaded.graph_module.graph.nodes if n.meta.get("fxs_hidden")]
    names = {n.name for n in hidden}
    assert "_guards_fn" in names and {"linear1_weight", "linear1_bias"} <= names
    weight = next(n for n in hidden if n.name == "linear1_weight")
    assert weight.meta["fxs_module_path"] == "linear1"
    linear = next(n for n in loaded.graph_module.graph.nodes if n.name == "linear")
    assert linear.meta["fxs_module_path"] == "linear1" and linear.target is torch.ops.aten.linear.default
