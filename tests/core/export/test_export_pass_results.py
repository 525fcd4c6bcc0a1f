"""Exporting what real passes produce: torch.ao FX quantization (prepare, QAT prepare, fuse, convert,
reference convert), torchao's PT2E quantization (prepare, convert), ``split_module``, const folding,
optimum's ``FuseBiasInLinear`` and module names that are not identifiers (``block1-0``).

Each pass result is built with plain torch/torchao/optimum, exported (the export verifies itself in
a fresh process), then imported once more in another fresh process: ``get_model()(*inputs)`` must
equal the pass result's own output, and the exported model's state (observer statistics, quantized
weights and their qparams...) the pass result's state.
"""

from __future__ import annotations

import copy
import json
import operator
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from fxstudio.core.document import Document
from fxstudio.core.errors import ExportError
from fxstudio.core.export import export_python
from fxstudio.core.export.module_writer import ModuleWriter
from fxstudio.core.export.modules import ImportNamer, literal
from fxstudio.core.export.state_rebuild import same_state
from fxstudio.core.model import LoadedModel

warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.ao\..*")

FRESH = textwrap.dedent(r"""
    import importlib.util, json, sys, torch
    for i, (py, inputs, result) in enumerate(json.loads(sys.argv[1])):
        spec = importlib.util.spec_from_file_location(f"exported_pass_result_{i}", py)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        model = module.get_model()
        # Copied before running: observers update their statistics in place when run.
        state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in model.state_dict().items()}
        torch.manual_seed(0)
        with torch.no_grad():
            out = model(*torch.load(inputs, weights_only=True))
        torch.save({"out": out, "state": state}, result)
""")


class SmallCNN(nn.Module):
    """Conv-BN-ReLU twice with a residual add, pooling and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        z = F.relu(self.bn2(self.conv2(y))) + y
        return self.fc(torch.flatten(self.pool(z), 1))


class SmallAttention(nn.Module):
    """Query/key/value projections and an output projection (the Linear layers optimum rewrites)."""

    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        weights = torch.softmax(q @ k.transpose(-1, -2) / 8 ** 0.5, dim=-1)
        return self.out(weights @ v)


class DashedNames(nn.Module):
    """Module paths as torchvision's RegNet has them (``trunk_output.block1.block1-0.proj.0``)."""

    def __init__(self):
        super().__init__()
        block = nn.Module()
        block.add_module("block1-0", nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
        self.trunk_output = nn.Module()
        self.trunk_output.add_module("block1", block)
        self.register_buffer("off-set", torch.linspace(0, 1, 4))

    def forward(self, x):
        return self.trunk_output.block1.get_submodule("block1-0")(x) + getattr(self, "off-set")


class Folded(nn.Module):
    """A forward whose weight expressions const_fold folds into ``_FX_CONST_FOLDED_ATTRS``."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.b = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return x @ (self.w * 2).t() + self.b.relu()


def _cnn() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return SmallCNN().eval(), (torch.randn(2, 3, 8, 8),)


def _calibrated_fx(qat: bool = False):
    from torch.ao.quantization import get_default_qat_qconfig_mapping, get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import prepare_fx, prepare_qat_fx

    model, example = _cnn()
    if qat:
        prepared = prepare_qat_fx(model.train(), get_default_qat_qconfig_mapping("x86"), example)
    else:
        prepared = prepare_fx(model, get_default_qconfig_mapping("x86"), example)
    for _ in range(2):
        prepared(torch.randn(2, 3, 8, 8))
    return prepared, example


def _pt2e(convert: bool):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    model, example = _cnn()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(torch.export.export(model, example).module(), quantizer)
    prepared(*example)
    return (convert_pt2e(prepared) if convert else prepared), example


def _prepare_fx():
    return _calibrated_fx()


def _prepare_qat_fx():
    return _calibrated_fx(qat=True)


def _fuse_fx():
    from torch.ao.quantization.quantize_fx import fuse_fx

    model, example = _cnn()
    return fuse_fx(model), example


def _convert_fx():
    from torch.ao.quantization.quantize_fx import convert_fx

    prepared, example = _calibrated_fx()
    return convert_fx(prepared), example


def _convert_to_reference_fx():
    from torch.ao.quantization.quantize_fx import convert_to_reference_fx

    prepared, example = _calibrated_fx()
    return convert_to_reference_fx(prepared), example


def _split_module():
    from torch.fx.passes.split_module import split_module

    model, example = _cnn()
    traced = torch.fx.symbolic_trace(model)
    first = {"conv1", "bn1", "relu"}
    return split_module(traced, model, lambda node: 0 if node.name in first else 1), example


def _const_fold():
    from torch.fx.experimental import const_fold

    torch.manual_seed(0)
    folded = const_fold.split_const_subgraphs(Folded())
    folded.run_folding()
    return folded, (torch.randn(3, 4),)


def _fuse_bias_in_linear():
    from optimum.fx.optimization import FuseBiasInLinear

    torch.manual_seed(0)
    return FuseBiasInLinear()(torch.fx.symbolic_trace(SmallAttention().eval())), (torch.randn(2, 3, 8),)


def _dashed_names():
    torch.manual_seed(0)
    return torch.fx.symbolic_trace(DashedNames()), (torch.randn(2, 4),)


PASSES = {
    "prepare_fx": _prepare_fx,
    "prepare_qat_fx": _prepare_qat_fx,
    "fuse_fx": _fuse_fx,
    "convert_fx": _convert_fx,
    "convert_to_reference_fx": _convert_to_reference_fx,
    "prepare_pt2e": lambda: _pt2e(convert=False),
    "convert_pt2e": lambda: _pt2e(convert=True),
    "split_module": _split_module,
    "const_fold": _const_fold,
    "fuse_bias_in_linear": _fuse_bias_in_linear,
    "dashed_names": _dashed_names,
}


def loaded_model(gm: torch.fx.GraphModule, example: tuple) -> LoadedModel:
    """The pass result as fxstudio holds a module handed to it in memory."""
    return LoadedModel(path=None, kind="memory", module=gm, graph_module=gm, example_inputs=example)


def run_fresh(files: list, examples: list[tuple], tmp_path) -> list[dict]:
    """Each exported file's ``get_model()`` state and outputs on its example, from one fresh ``python -I``."""
    jobs = []
    for i, (py, example) in enumerate(zip(files, examples)):
        torch.save(tuple(example), tmp_path / f"inputs_{i}.pt")
        jobs.append([str(py), str(tmp_path / f"inputs_{i}.pt"), str(tmp_path / f"result_{i}.pt")])
    proc = subprocess.run([sys.executable, "-I", "-c", FRESH, json.dumps(jobs)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [torch.load(job[2], weights_only=True) for job in jobs]


def plain_output(gm: nn.Module, example: tuple):
    """The pass result's own output (on a copy where it has one: observers would update their statistics;
    const_fold's module loses its folding flag when copied, and has nothing to update)."""
    for module in (copy.deepcopy(gm), gm):
        torch.manual_seed(0)
        try:
            with torch.no_grad():
                return module(*example)
        except AttributeError:
            continue
    raise AssertionError("the pass result does not run")


def assert_same_output(got, expected) -> None:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(got, expected) or torch.allclose(got, expected, rtol=0, atol=1e-6), \
        (got - expected).abs().max()


# What each export must say: observers and quantized modules restored from their class and state, fused
# modules with their children, nested graphs as classes, the op namespace imported, dashed names quoted.
WRITTEN = {
    "prepare_fx": ["_restore(\n            HistogramObserver,", '"qscheme": torch.per_tensor_affine',
                   'children={"0": nn.Conv2d(3, 8, (3, 3), padding=(1, 1)), "1": nn.ReLU()}'],
    "prepare_qat_fx": ["_restore(\n            FusedMovingAvgObsFakeQuantize,", '"bn": nn.BatchNorm2d(8)'],
    "convert_fx": ['children={"_packed_params": _restore(LinearPackedParams'],
    "convert_to_reference_fx": ['"weight_qscheme": torch.per_channel_affine'],
    "prepare_pt2e": ["from torchao.quantization.pt2e.observer import HistogramObserver"],
    "convert_pt2e": ["import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers torch.ops.quantized_decomposed"],
    "split_module": ["self.submod_0 = ModelEditedSubmod0()", "The nested graph `submod_1` that the graph calls as a submodule."],
    "const_fold": ["_restore(\n            nn.ParameterList,"],
    "fuse_bias_in_linear": ['parameters={"weight": nn.Parameter(torch.empty(8, 9)), "bias": None}'],
    "dashed_names": ['_attach(self, "trunk_output.block1.block1-0.0", nn.Linear(4, 4))',
                     '_attach(self, "off-set", torch.empty(4))', 'getattr(self.trunk_output.block1, "block1-0")'],
}
NOT_WRITTEN = {"split_module": ["GraphModule"], "const_fold": ["const_subgraph_module"]}


@pytest.mark.parametrize("name", list(PASSES))
def test_a_pass_result_exports_verified_and_runs_fresh(name, tmp_path):
    gm, example = PASSES[name]()
    state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in gm.state_dict().items()}
    expected = plain_output(gm, example)
    result = export_python(loaded_model(gm, example), tmp_path / f"{name}_export.py")
    assert result.verified and result.verdict.startswith("verified"), result.verdict
    changed = [k for k, v in gm.state_dict().items() if not same_state(v, state[k])]
    assert not changed, f"the export's own check ran the pass result in place: {changed}"
    text = result.py_path.read_text()
    assert all(snippet in text for snippet in WRITTEN.get(name, [])), text
    assert not any(snippet in text for snippet in NOT_WRITTEN.get(name, []))

    fresh = run_fresh([result.py_path], [example], tmp_path)[0]
    assert_same_output(fresh["out"], expected)
    assert fresh["state"], "nothing was exported with its state"
    for key, value in fresh["state"].items():
        assert key in state and same_state(value, state[key]), key


def test_a_document_of_a_quantized_model_exports(tmp_path):
    gm, example = _convert_fx()
    result = export_python(Document(loaded_model(gm, example)), tmp_path / "converted_doc.py")
    assert result.verified and result.verdict.startswith("verified")


def test_containers_read_whole_are_restored_with_their_children(tmp_path):
    """A graph reading an ``nn.ModuleDict``, an ``nn.ModuleList`` and an ``nn.ParameterList`` as
    attributes (as const_fold reads its folded list): each is made with its entries."""
    torch.manual_seed(0)
    root = nn.Module()
    root.table = nn.ModuleDict({"a": nn.Linear(3, 3), "b-c": nn.Linear(3, 3, bias=False)})
    root.stack = nn.ModuleList([nn.Linear(3, 3)])
    root.scales = nn.ParameterList([nn.Parameter(torch.rand(3))])
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    table, stack, scales = graph.get_attr("table"), graph.get_attr("stack"), graph.get_attr("scales")
    y = x
    for container, key in ((table, "a"), (table, "b-c"), (stack, 0)):
        layer = graph.call_function(operator.getitem, (container, key))
        y = graph.call_function(F.linear, (y, graph.call_function(getattr, (layer, "weight"))))
    graph.output(graph.call_function(operator.mul, (y, graph.call_function(operator.getitem, (scales, 0)))))
    gm = torch.fx.GraphModule(root, graph)
    example = (torch.randn(2, 3),)
    result = export_python(loaded_model(gm, example), tmp_path / "containers.py")
    assert result.verified
    text = result.py_path.read_text()
    assert "_restore(\n            nn.ModuleDict," in text and '"b-c": nn.Linear(3, 3, bias=False)' in text
    assert_same_output(run_fresh([result.py_path], [example], tmp_path)[0]["out"], plain_output(gm, example))


class _Unrestorable(nn.Module):
    """A module no strategy writes: a constructor argument not kept, and a function as attribute."""

    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.act = F.relu

    def forward(self, x):
        return self.act(self.lin(x))


def test_a_module_no_strategy_writes_is_refused_saying_what_was_tried():
    with pytest.raises(ExportError) as info:
        ModuleWriter(ImportNamer(set(), None, None)).rebuild(_Unrestorable(3), "blocks.0")
    message = str(info.value)
    assert message.startswith("cannot export submodule 'blocks.0' (")
    assert "its configuration does not rebuild it (" in message and "__init__ parameter 'width' is not stored" in message
    assert "it cannot be restored from its class and state: its attribute 'act' holds a function" in message
    assert "Trace through" not in message and "\n" not in message


def test_an_operator_namespace_nothing_registers_is_refused(tmp_path):
    library = torch.library.Library("fxstudio_unregistered_ns", "DEF")  # a local: no module holds it
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.ops.fxstudio_unregistered_ns.twice.default, (x,)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    with pytest.raises(ExportError, match=r"torch\.ops\.fxstudio_unregistered_ns\.twice.*no imported Python module "
                                          r"registers.*'fxstudio_unregistered_ns'"):
        export_python(loaded_model(gm, (torch.ones(2),)), tmp_path / "unregistered.py")
    assert not list(tmp_path.iterdir())


def test_literals_cover_what_observers_hold():
    values = [torch.per_channel_symmetric, torch.qint8, torch.channels_last, torch.device("cpu"),
              torch.Size([2, 3]), {"a": (1, 2.5)}, [float("inf")]]
    for value in values:
        text = literal(value)
        back = eval(text, {"torch": torch})  # noqa: S307 - text written by literal() itself
        assert type(back) is type(value) and back == value, text
