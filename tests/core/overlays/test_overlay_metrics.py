"""compute_metrics against independent computations: a hand-written shadow run with plain torch and
forward hooks (isolated and accumulated error, SQNR), torch.ao's own SQNR on a PT2E-quantized CNN,
forward-hook timing of the same modules, and output bytes from hooks."""

import copy
import math
import statistics
import time
from pathlib import Path

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.core.overlays import compute_metrics, frame_totals, sqnr_db

QUANT_CNN = Path(__file__).resolve().parents[2] / "corpus" / "passes" / "quant_cnn.py"


def _quant_cnn_doc():
    loaded = load_model(str(QUANT_CNN))
    doc = Document(loaded)
    doc.apply_edit({"op": "set_target", "node": "relu_1", "target": "torch.sigmoid"})
    return loaded, doc


def test_isolated_and_accumulated_error_agree_with_a_hand_written_shadow_run():
    loaded, doc = _quant_cnn_doc()
    x = loaded.example_inputs[0]
    metrics = compute_metrics(doc.original, doc.module(), (x,), metrics=["error", "isolated", "sqnr"])
    m = loaded.module
    seen = {}
    handles = [getattr(m, name).register_forward_hook(lambda _m, _i, out, name=name: seen.__setitem__(name, out.clone()))
               for name in ("conv2", "fc")]
    with torch.no_grad():
        reference = m(x)
        # the edited model written by hand: torch.relu on conv2 became torch.sigmoid
        h = m.relu(m.bn1(m.conv1(x)))
        edited = m.fc(torch.flatten(m.pool(torch.sigmoid(m.conv2(h)) + h), 1))
    for handle in handles:
        handle.remove()
    conv2_out = seen["conv2"]
    # the edited node on the original's input: sigmoid(conv2) against relu(conv2)
    expected_isolated = (torch.sigmoid(conv2_out) - torch.relu(conv2_out)).abs().max().item()
    assert metrics.values["isolated"]["relu_1"] == pytest.approx(expected_isolated, rel=1e-6)
    # fc fed the original's flatten computes the original's value: nothing of its own
    assert metrics.values["isolated"]["fc"] == 0.0
    # accumulated: the whole edited run against the original
    expected_error = (edited - reference).abs().max().item()
    assert expected_error > 1e-3
    assert metrics.values["error"]["fc"] == pytest.approx(expected_error, rel=1e-6)
    signal, noise = reference.double().square().sum().item(), (edited - reference).double().square().sum().item()
    assert metrics.values["sqnr"]["fc"] == pytest.approx(10 * math.log10(signal / noise), rel=1e-6)
    # upstream of the edit nothing differs: zero error, infinite SQNR
    assert metrics.values["error"]["conv2"] == 0.0 and metrics.values["sqnr"]["conv2"] == math.inf
    # module frames total their nodes' worst error (fc is a frame of its own)
    assert metrics.frames["error"]["fc"] == metrics.values["error"]["fc"]


def test_sqnr_of_a_pt2e_quantized_cnn_matches_torch_ao():
    pytest.importorskip("torchao")
    from torch.ao.ns.fx.utils import compute_sqnr
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)

    import importlib.util
    spec = importlib.util.spec_from_file_location("quant_cnn_for_sqnr", QUANT_CNN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, inputs = module.get_model(), module.example_inputs()
    float_gm = torch.export.export(model, inputs).module()
    quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(copy.deepcopy(float_gm), quantizer)
    prepared(*inputs)
    quant_gm = convert_pt2e(prepared)
    metrics = compute_metrics(float_gm, quant_gm, inputs, metrics=["sqnr"], match="name")
    checked = 0
    for name in ("relu_1", "add", "linear"):
        ref, q = _value_of(float_gm, name, inputs), _value_of(quant_gm, name, inputs)
        expected = compute_sqnr(ref, q).item()   # torch.ao: 20 log10(|ref| / |ref - q|)
        assert 10 < metrics.values["sqnr"][name] < 80, "quantization noise, not identity nor garbage"
        assert metrics.values["sqnr"][name] == pytest.approx(expected, abs=1e-3)
        checked += 1
    assert checked == 3


def _value_of(gm: torch.fx.GraphModule, name: str, inputs: tuple) -> torch.Tensor:
    """Node ``name``'s value, by a copy of the graph that outputs it (plain torch.fx, no fxstudio)."""
    gm = copy.deepcopy(gm)
    node = next(n for n in gm.graph.nodes if n.name == name)
    out = next(n for n in gm.graph.nodes if n.op == "output")
    out.args = ((node,),)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    with torch.no_grad():
        out = gm(*inputs)
    # an exported module's output spec unflattens the one leaf to the tensor itself
    return out[0] if isinstance(out, (tuple, list)) else out


class _Heavy(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.big = nn.Linear(768, 768)
        self.act = nn.ReLU()
        self.small = nn.Linear(768, 8)

    def forward(self, x):
        return self.small(self.act(self.big(x)))


def test_time_agrees_with_forward_hook_timing_of_the_same_modules():
    model = _Heavy().eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(256, 768)
    starts, spans = {}, {n: [] for n in ("big", "act", "small")}
    for name in spans:
        mod = getattr(model, name)
        mod.register_forward_pre_hook(lambda _m, _i, name=name: starts.__setitem__(name, time.perf_counter_ns()))
        mod.register_forward_hook(lambda _m, _i, _o, name=name: spans[name].append(time.perf_counter_ns() - starts[name]))
    with torch.no_grad():
        for _ in range(3):
            model(x)   # warm up, as compute_metrics does
        for name in spans:
            spans[name].clear()
        for _ in range(7):
            model(x)
    hooked = {name: statistics.median(v) / 1e6 for name, v in spans.items()}
    metrics = compute_metrics(gm, gm, (x,), metrics=["time"], repeats=7, match="name")
    times = metrics.values["time"]
    assert set(times) == {"big", "act", "small"} and metrics.units["time"] == "ms"
    # the big matmul is the bulk of the forward, by both clocks
    assert times["big"] == max(times.values()) and hooked["big"] == max(hooked.values())
    ratio = times["big"] / hooked["big"]
    assert 1 / 3 < ratio < 3, (times, hooked)


def test_memory_is_the_bytes_of_each_node_output_and_frames_sum_them():
    loaded, doc = _quant_cnn_doc()
    m = loaded.module
    sizes = {}
    for name in ("conv1", "bn1", "conv2", "pool", "fc"):
        getattr(m, name).register_forward_hook(
            lambda _m, _i, out, name=name: sizes.__setitem__(name, out.numel() * out.element_size()))
    with torch.no_grad():
        m(*loaded.example_inputs)
    metrics = compute_metrics(doc.original, doc.module(), tuple(loaded.example_inputs), metrics=["memory"])
    for name, size in sizes.items():
        assert metrics.values["memory"][name] == size
    assert metrics.units["memory"] == "bytes"
    totals = frame_totals(doc.edited.graph, metrics.values["memory"], "sum")
    assert totals == metrics.frames["memory"] and totals["conv1"] == sizes["conv1"]


def test_sqnr_edges():
    assert sqnr_db(4.0, 0.0) == math.inf
    assert sqnr_db(0.0, 1.0) == -math.inf
    assert sqnr_db(1.0, math.inf) == -math.inf
    assert sqnr_db(100.0, 1.0) == pytest.approx(20.0)


def test_a_node_that_cannot_take_the_original_values_has_no_isolated_error():
    class Net(nn.Module):
        def forward(self, x):
            return (x * 2).reshape(4, 3).sum(0)

    gm = torch.fx.symbolic_trace(Net())
    edited = copy.deepcopy(gm)
    graph = edited.graph
    mul = next(n for n in graph.nodes if n.name == "mul")
    mul.target, mul.args = torch.cat, ((mul.args[0], mul.args[0]),)   # now 4x6, same name
    reshape = next(n for n in graph.nodes if n.name == "reshape")
    reshape.update_arg(1, 4)
    reshape.update_arg(2, 6)   # fed the original's 2x3 mul this raises
    edited.recompile()
    metrics = compute_metrics(gm, edited, (torch.randn(2, 6),), metrics=["isolated", "error"], match="name")
    assert "reshape" not in metrics.values["isolated"]
    assert any("raise on the original's input values: reshape" in note for note in metrics.notes)
    assert metrics.values["error"]["reshape"] == math.inf   # another shape than the original's
