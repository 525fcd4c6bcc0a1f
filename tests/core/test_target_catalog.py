"""The completion lists of targets agree with the target parser of the edit engine."""

from __future__ import annotations

import pytest

from fxstudio.core.loading import load_model
from fxstudio.core.target_catalog import filter_targets, targets_for
from fxstudio.core.targets import parse_target
from fxstudio.resources import example_path


@pytest.fixture(scope="module")
def conv_model():
    return load_model(example_path("conv_bn_relu.py"))


def test_function_targets_all_parse_and_include_the_files_functions():
    loaded = load_model(example_path("relu_add.py"))
    targets = targets_for("call_function", loaded.graph_module, loaded.user_module)
    assert targets[0] == "torch.relu"  # common choices first
    for name in ("relu_add.my_relu", "torch.nn.functional.gelu", "operator.add", "torch.add"):
        assert name in targets
    assert "relu_add.example_inputs" not in targets  # a loader hook, not a graph function
    assert "torch.save" not in targets and "torch.manual_seed" not in targets
    for text in targets:
        parse_target("call_function", text, loaded.graph_module, loaded.user_module)


def test_method_module_and_attribute_targets_parse(conv_model):
    gm = conv_model.graph_module
    methods = targets_for("call_method", gm)
    assert {"reshape", "view", "relu", "transpose"} <= set(methods)
    modules = targets_for("call_module", gm)
    assert modules[:3] == ["conv1", "bn1", "relu1"]
    assert "torch.nn.Dropout(p=0.1)" in modules and "torch.nn.Linear(in_features, out_features)" in modules
    attrs = targets_for("get_attr", gm)
    assert "conv1.weight" in attrs and "bn1.running_mean" in attrs
    for op, texts in (("call_method", methods[:50]), ("get_attr", attrs),
                      ("call_module", [t for t in modules if "(" not in t or t.endswith("()") or "=" in t][:40])):
        for text in texts:
            parse_target(op, text, gm, None)
    assert targets_for("placeholder", gm) == [] and targets_for("output", gm) == []


def test_filter_ranks_exact_and_prefix_matches_first():
    targets = targets_for("call_function")
    ranked = filter_targets(targets, "relu")
    assert ranked[0] == "torch.relu"
    assert ranked.index("torch.nn.functional.relu") < ranked.index("torch.nn.functional.rrelu")
    assert all("relu" in t.lower() for t in ranked)
    assert len(filter_targets(targets, "", limit=10)) == 10
    assert filter_targets(targets, "no_such_thing_at_all") == []
