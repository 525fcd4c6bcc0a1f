"""The node-by-node run's fast paths: planned node execution and the bitwise-equal shortcut."""

import copy
import math
import warnings

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare.divergence import _Stepper, graph_may_mutate, mutating_nodes, run_divergence
from fxstudio.core.compare.run_metrics import diff_values, fast_equal


pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Mixed(nn.Module):
    """Every kind of node argument the stepper plans or hands to ``run_node``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.full((4,), 0.5))

    def forward(self, x, y):
        a = self.fc(x)                          # call_module, planned
        b = a.transpose(0, 1).contiguous()      # call_method, planned
        c = torch.cat([a, y], dim=0)            # a list holding Nodes: run_node
        d = torch.add(a, other=y)               # a kwarg that is a Node: run_node
        n = x.size(0)                           # call_method returning an int
        e = c[:n]                               # a slice holding a Node: run_node
        f = torch.clamp(d, min=-1.0, max=1.0)   # constant kwargs: planned
        g = e * self.scale + f                  # get_attr: run_node
        return g.sum(dim=1), b, (n, g)


def traced(model):
    gm = torch.fx.symbolic_trace(model)
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    return gm


def inputs():
    gen = torch.Generator().manual_seed(1)
    return torch.randn(3, 4, generator=gen), torch.randn(3, 4, generator=gen)


def test_planned_steps_give_the_interpreters_values_for_every_node():
    gm = traced(Mixed().eval())
    args = inputs()
    stepper = _Stepper(gm, args)
    planned = {n.name for n, plan in zip(stepper.nodes, stepper._plans) if plan is not None}
    assert {"fc", "transpose", "contiguous", "size", "clamp"} <= planned
    assert not planned & {"x", "y", "cat", "add", "getitem", "scale", "output"}
    reference = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            reference[n] = super().run_node(n)
            return reference[n]

    with torch.no_grad():
        expected = Recorder(gm).run(*args)
        while not stepper.done():
            node = stepper.step()
            value = stepper.interp.env[node]
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, reference[node]), node.name
            elif node.op != "output":
                assert value == reference[node], node.name
        out = stepper.interp.env[stepper.nodes[-1]]
    assert torch.equal(out[0], expected[0]) and torch.equal(out[1], expected[1]) and out[2][0] == 3


def test_identical_mixed_graphs_are_equal_at_every_node_and_an_edit_is_found():
    gm = traced(Mixed().eval())
    ed = copy.deepcopy(gm)
    result = run_divergence(gm, ed, inputs(), rtol=1e-5, atol=1e-6, share=False)
    assert result.first is None and result.failure is None
    assert {r.status for r in result.nodes} == {"equal"}
    clamp = next(n for n in ed.graph.nodes if n.name == "clamp")
    clamp.kwargs = {"min": -0.5, "max": 1.0}
    ed.recompile()
    result = run_divergence(gm, ed, inputs(), rtol=1e-5, atol=1e-6, share=False)
    assert result.first is not None and result.first.name == "clamp"


def test_a_planned_node_that_raises_is_reported_with_its_name():
    gm = traced(Mixed().eval())
    ed = copy.deepcopy(gm)
    transpose = next(n for n in ed.graph.nodes if n.name == "transpose")
    transpose.args = (transpose.args[0], 0, 5)  # no dimension 5
    ed.recompile()
    result = run_divergence(gm, ed, inputs(), rtol=1e-5, atol=1e-6, share=False)
    assert result.failure is not None and result.failure.node_name == "transpose"
    assert result.nodes[-1].status == "error" and "IndexError" in result.failure.message


def test_equal_nans_are_never_equal_and_signed_zeros_are_equal():
    class Nan(nn.Module):
        def forward(self, x):
            return torch.log(x) * 0.0  # log(-1) is NaN in the same place in both runs

    gm = traced(Nan())
    x = torch.tensor([-1.0, 2.0, 0.5])
    rows = {r.name: r for r in run_divergence(gm, copy.deepcopy(gm), (x,), rtol=1e-5, atol=1e-6,
                                              share=False).nodes}
    # As before the fast path: a NaN is not equal to a NaN (torch.equal), so no shortcut is taken
    # and the full comparison reports it (score inf, max abs 0).
    assert rows["log"].status == "diverged" and rows["log"].max_abs == 0.0 and rows["log"].score == math.inf
    assert rows["mul"].status == "diverged"
    assert rows["x"].status == "equal"
    nan = torch.tensor([math.nan, 1.0])
    assert not diff_values(nan, nan, rtol=1e-5, atol=1e-6).equal  # not even the same tensor object
    assert fast_equal(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert diff_values(torch.tensor([0.0]), torch.tensor([-0.0]), rtol=0, atol=0).equal


def test_fast_equal_declines_layouts_it_does_not_know():
    dense = torch.eye(3)
    assert fast_equal(dense, dense.clone())
    assert not fast_equal(dense.to_sparse(), dense.to_sparse())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensor creation is deprecated, not gone
        q = torch.quantize_per_tensor(dense, 0.1, 0, torch.quint8)
    assert not fast_equal(q, q.clone())
    big = torch.arange(10_000, dtype=torch.float32)
    other = big.clone()
    other[-1] = 0.0
    assert fast_equal(big, big.clone()) and not fast_equal(big, other)
    d = diff_values(big, other, rtol=1e-5, atol=1e-6)
    assert not d.equal and d.max_abs == 9999.0 and not d.allclose
    assert math.isclose(d.cosine, float(torch.nn.functional.cosine_similarity(big, other, dim=0)), rel_tol=1e-6)


def test_mutation_checks_take_a_module_table_or_build_one():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(x + 1)

    gm = traced(InPlace())
    modules = dict(gm.named_modules())
    assert {n.name for n in mutating_nodes(gm)} == {n.name for n in mutating_nodes(gm, modules)} == {"act"}
    assert graph_may_mutate(gm, modules) and not graph_may_mutate(traced(Mixed()))
