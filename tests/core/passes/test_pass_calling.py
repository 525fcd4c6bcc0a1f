"""How the runner calls each kind of pass (``fxstudio.core.passes.calling``), on a small traced module
through ``run_pass``: keyword arguments to the constructor or the call, ``example_inputs``, classes
of callable passes, Interpreter analyses; the Run Pass dialog's argument text; analysis summaries."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase, PassResult
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core.errors import EditRefused
from fxstudio.core.passes import PassInputs, parse_pass_kwargs, run_pass, split_pass_arguments, summary

X = (torch.randn(2, 3),)


class Small(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


@pytest.fixture
def gm():
    return torch.fx.symbolic_trace(Small())


def inputs(**kwargs):
    return PassInputs(X, parse_pass_kwargs({k: v for k, v in kwargs.items()}))


class AddTo(torch.fx.Transformer):
    def __init__(self, module, amount=1.0):
        super().__init__(module)
        self.amount = amount

    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return super().call_function(torch.add, (args[0], self.amount), {})
        return super().call_function(target, args, kwargs)


class Counted(PassBase):
    def __init__(self, times=1):
        self.times = times

    def call(self, graph_module):
        for node in list(graph_module.graph.nodes):
            if node.target is torch.relu:
                node.target = torch.sigmoid
        graph_module.recompile()
        return PassResult(graph_module, True)


class Callable:
    def __init__(self, target=torch.tanh):
        self.target = target

    def __call__(self, graph_module, example_inputs, lint=True):
        assert isinstance(example_inputs, tuple) and example_inputs[0] is not X[0]   # a copy
        for node in graph_module.graph.nodes:
            if node.target is torch.relu:
                node.target = self.target
        graph_module.recompile()
        return graph_module


class Counter(torch.fx.Interpreter):
    def __init__(self, module, start=0):
        super().__init__(module)
        self.calls = {}
        self.start = start

    def run_node(self, n):
        self.calls[n] = self.start + 1
        return super().run_node(n)


def test_a_transformer_takes_constructor_kwargs(gm):
    result = run_pass(AddTo, gm, "AddTo", inputs=inputs(amount="5.0")).module
    assert torch.equal(result(*X), X[0] + 5.0 + 1)
    assert "relu" in gm.code  # the given module is never changed


def test_pass_base_subclass_and_instance(gm):
    assert "sigmoid" in run_pass(Counted, gm, "Counted", inputs=inputs(times="2")).module.code
    assert "sigmoid" in run_pass(Counted(), gm, "Counted()", inputs=inputs()).module.code


def test_a_class_of_callable_passes_gets_example_inputs_and_kwargs(gm):
    result = run_pass(Callable, gm, "Callable", inputs=inputs(target="torch.ops.aten.sigmoid.default", lint="False"))
    assert "sigmoid" in result.module.code


def test_an_interpreter_analysis_maps_its_node_dicts(gm):
    run = run_pass(Counter, gm, "Counter", inputs=inputs(start="41"))
    assert run.in_place and run.module.code == gm.code
    assert {n.name: v for n, v in run.analysis["calls"].items()} == {"x": 42, "relu": 42, "add": 42, "output": 42}


def test_a_class_without_call_is_not_a_pass(gm):
    with pytest.raises(EditRefused, match="is the class int, whose instances are not callable, not a pass"):
        run_pass(int, gm, "int", inputs=inputs())


def test_a_function_that_takes_no_kwargs_names_none(gm):
    with pytest.raises(EditRefused, match=r"takes no argument 'n' \(it takes none\)"):
        run_pass(lambda g: g, gm, "f", inputs=inputs(n="1"))


def test_the_dialogs_argument_text():
    assert split_pass_arguments("") == {}
    assert split_pass_arguments("a=1, b=(1, 2), c='x,y', d=torch.float16") == {
        "a": "1", "b": "(1, 2)", "c": "'x,y'", "d": "torch.float16"}
    for bad in ("1", "a", "**a", "a=1,,", "a=1, a=2"):
        with pytest.raises(EditRefused):
            split_pass_arguments(bad)


def test_summaries_are_short_text():
    meta = TensorMetadata(torch.Size([2, 3]), torch.float32, False, (3, 1), torch.contiguous_format, False, {})
    assert summary(meta) == "2×3 float32"
    assert summary([0.5]) == "[0.5]"
    assert summary([1.0, 2.0, 3.0, 4.0, 5.0]) == "5 values: min 1, mean 3, max 5"
    assert summary(torch.Tensor) == "torch.Tensor"
    assert len(summary("x" * 1000)) == 200
