"""Graphs that write in place run in the generated engine and give the Interpreter engine's rows.

As in the Interpreter run: each graph gets its own copy of the inputs, no node is shared, an
original value still awaiting its comparison is copied before an in-place op may change it, and
every comparison is made (no reuse of a rearranged source's result).
"""

import copy

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import divergence_codegen as codegen
from fxstudio.core.compare import run_divergence
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path

from test_divergence_codegen import both, scale_first_value

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def with_ids(gm):
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    return gm


def program_source(gm):
    sched = getattr(gm.graph, codegen._CACHE_ATTR)[0]
    return next(reversed(sched.programs.values())).source


class AddInPlace(nn.Module):
    def forward(self, x):
        y = x + 1
        y.add_(1)
        return torch.relu(y)


def test_a_method_that_writes_in_place_runs_generated_with_the_interpreters_rows():
    gm = with_ids(torch.fx.symbolic_trace(AddInPlace()))
    edited = copy.deepcopy(gm)
    result = both(gm, edited, (torch.ones(2),))
    assert result.first is None and {r.status for r in result.nodes} == {"equal"}
    assert not any(r.shared for r in result.nodes)  # a graph that writes shares nothing
    run_divergence(gm, edited, (torch.ones(2),), rtol=1e-5, atol=1e-6, engine="generated")
    source = program_source(edited)
    assert "_clone(" not in source  # y is compared before add_ runs: nothing to copy


def inplace_relu_cnn():
    """The residual CNN as torchvision writes its ReLUs: ``nn.ReLU(inplace=True)``."""
    gm = copy.deepcopy(load_model(example_path("residual_cnn.py")).graph_module)
    for module in gm.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = True
    return with_ids(gm)


def test_in_place_relu_modules_run_generated_inlined_and_match_the_interpreter():
    gm = inplace_relu_cnn()
    x = torch.randn(2, 3, 32, 32)
    for share in (False, True):
        same = both(gm, copy.deepcopy(gm), (x,), share=share)
        assert same.first is None and same.failure is None
    scaled = scale_first_value(gm)
    result = both(gm, scaled, (x,))
    assert result.first is not None and result.failure is None
    assert "_F.relu(" in program_source(scaled) and "inplace=True" not in program_source(scaled)
    # the flag comes from the table, read at each run
    edited = copy.deepcopy(gm)
    with torch.no_grad():
        edited.get_submodule("layer1.0.conv1").weight.mul_(1.01)
    changed = both(gm, edited, (x,))
    assert changed.first is not None and changed.first.name == "layer1_0_conv1"


def test_the_callers_inputs_are_never_written():
    class ReluInPlace(nn.Module):
        def forward(self, x):
            return x.relu_() * 2

    gm = with_ids(torch.fx.symbolic_trace(ReluInPlace()))
    x = torch.tensor([-1.0, 2.0, -3.0])
    keep = x.clone()
    result = both(gm, copy.deepcopy(gm), (x,))
    assert result.first is None and torch.equal(x, keep)
    run_divergence(gm, copy.deepcopy(gm), (x,), rtol=0.0, atol=0.0, engine="generated")
    assert torch.equal(x, keep)


def reordered_pair():
    """An original whose ``a`` is doubled in place by ``w`` after it is computed, and an edited
    graph that runs ``w`` (now on ``z``) before ``a``: the lockstep run advances the original past
    the in-place op while ``a`` still awaits its comparison, so ``a`` must be copied first."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(torch.add, (x, 1.0))
    z = g.call_function(torch.mul, (x, 3.0))
    w = g.call_method("mul_", (a, 2.0))
    out = g.call_function(torch.add, (w, z))
    g.output(out)
    original = torch.fx.GraphModule(nn.Module(), g)
    for node, i in zip(original.graph.nodes, range(6)):
        node.meta["fxs_id"] = i

    h = torch.fx.Graph()
    x2 = h.placeholder("x")
    z2 = h.call_function(torch.mul, (x2, 3.0))
    w2 = h.call_method("mul_", (z2, 2.0))
    a2 = h.call_function(torch.add, (x2, 1.0))
    out2 = h.call_function(torch.add, (w2, a2))
    h.output(out2)
    edited = torch.fx.GraphModule(nn.Module(), h)
    ids = {"x": 0, "add": 1, "mul": 2, "mul_": 3, "add_1": 4, "output": 5}
    for node in edited.graph.nodes:
        node.meta["fxs_id"] = ids[node.name]
    return original, edited


def test_a_value_awaiting_its_comparison_is_copied_before_an_in_place_op_changes_it():
    original, edited = reordered_pair()
    x = torch.tensor([1.0, 2.0])
    result = both(original, edited, (x,))
    status = {r.name: r.status for r in result.nodes}
    assert status["add"] == "equal"  # x + 1 in both: the original's a was copied before mul_ doubled it
    assert status["mul_"] == "diverged"  # 2 * (3x) against 2 * (x + 1)
    source = program_source(edited)
    assert "_clone(" in source and "_re(" not in source


def test_graphs_that_do_not_write_get_the_program_they_had():
    gm = with_ids(copy.deepcopy(load_model(example_path("residual_cnn.py")).graph_module))
    edited = scale_first_value(gm)
    run_divergence(gm, edited, (torch.randn(1, 3, 32, 32),), rtol=1e-5, atol=1e-6)
    source = program_source(edited)
    assert "_clone(" not in source
