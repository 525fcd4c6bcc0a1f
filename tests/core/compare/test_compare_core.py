"""compare_models on hand-built graphs: metrics, per-node matching, failures, dtypes, devices, inputs."""

import copy
import math
import threading

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import RunCancelled, available_devices, check_device, compare_models
from fxstudio.core.errors import RunError
from fxstudio.core.compare import graph_diff
from fxstudio.core.compare import (
    InputSpec, inputs_for_run, load_inputs_file, parse_input_spec, random_inputs, specs_from_inputs,
)
from fxstudio.core.compare.run_metrics import flatten_outputs


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        y = self.fc(x)
        z = torch.relu(y) + 1
        return {"logits": z * 2, "aux": (y, y.sum())}


def traced(model):
    gm = torch.fx.symbolic_trace(model)
    for i, n in enumerate(gm.graph.nodes):
        n.meta["fxs_id"] = 100 + i
    return gm


def node(gm, name):
    return next(n for n in gm.graph.nodes if n.name == name)


@pytest.fixture
def net():
    model = Net().eval()
    return model, traced(model), (torch.randn(5, 4, generator=torch.Generator().manual_seed(3)),)


def test_identical_models_are_exact_with_no_divergence(net):
    model, gm, inputs = net
    report = compare_models(model, gm, copy.deepcopy(gm), inputs, repeats=2)
    assert report.error is None and report.first_divergence is None
    assert [o.path for o in report.outputs] == ["out['logits']", "out['aux'][0]", "out['aux'][1]"]
    for o in report.outputs + report.trace_outputs:
        assert (o.max_abs, o.max_rel, o.cosine, o.allclose) == (0.0, 0.0, 1.0, True)
    assert {n.status for n in report.nodes} == {"equal"}
    assert len(report.nodes) == len(gm.graph.nodes)
    assert set(report.divergence_by_id.values()) == {0.0}
    assert set(report.timings_ms) == {"original", "traced", "edited"}
    assert all(t > 0 for t in report.timings_ms.values())
    assert report.all_close and "no node diverges" in report.format_text()


def test_changed_constant_diverges_at_that_node_and_metrics_are_right(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "mul").update_arg(1, 3)  # z * 2 -> z * 3
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    assert report.first_divergence.name == "mul"
    by_name = {n.name: n for n in report.nodes}
    assert by_name["add"].status == "equal" and by_name["mul"].status == "diverged"
    with torch.no_grad():
        expected = model(*inputs)["logits"]
    logits = report.outputs[0]
    assert logits.path == "out['logits']" and not logits.allclose
    assert logits.max_abs == pytest.approx(float((expected / 2).abs().max()), rel=1e-6)
    assert logits.max_rel == pytest.approx(0.5, rel=1e-6)
    assert logits.cosine == pytest.approx(1.0, abs=1e-6)  # a scaled output points the same way
    assert report.outputs[1].allclose and report.outputs[1].max_abs == 0.0
    assert report.divergence_by_id[node(ed, "mul").meta["fxs_id"]] > 1.0
    a, b = report.samples["out['logits']"]
    assert a.shape == b.shape == (15,) and b == pytest.approx(1.5 * a)


def test_tolerances_decide_between_close_and_diverged(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "add").update_arg(1, 1.0 + 1e-4)
    ed.recompile()
    strict = compare_models(model, gm, ed, inputs, rtol=0, atol=1e-6, repeats=1)
    loose = compare_models(model, gm, ed, inputs, rtol=0, atol=1e-3, repeats=1)
    assert strict.first_divergence.name == "add"
    assert loose.first_divergence is None and {n.name for n in loose.nodes if n.status == "close"} >= {"add", "mul"}
    assert loose.all_close and not strict.all_close


def test_inserted_node_has_no_counterpart_and_its_user_diverges(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    add = node(ed, "add")
    with ed.graph.inserting_after(add):
        neg = ed.graph.call_function(torch.neg, (add,))
    node(ed, "mul").update_arg(0, neg)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    row = {n.name: n for n in report.nodes}
    assert row["neg"].status == "no_counterpart" and row["neg"].node_id is None
    assert report.first_divergence.name == "mul"
    diff = graph_diff(gm, ed)
    assert diff.changed == {node(gm, "mul").meta["fxs_id"]} and not diff.removed
    assert len(diff.added) == 0  # the inserted node has no fxs_id here: nothing to key it by


def test_shape_breaking_edit_reports_the_node_that_raised(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    add = node(ed, "add")
    with ed.graph.inserting_after(add):
        bad = ed.graph.call_method("reshape", (add, 7, -1))
    bad.meta["fxs_id"] = 999
    node(ed, "mul").update_arg(0, bad)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    assert report.error is not None and report.error.graph == "edited"
    assert report.error.node_name == "reshape" and report.error.node_id == 999
    assert "shape" in report.error.message and "RuntimeError" in report.error.message
    assert report.outputs == [] and "edited" not in report.timings_ms
    assert report.nodes[-1].status == "error" and report.nodes[-1].name == "reshape"
    assert "at node reshape" in report.format_text()
    # Without the node-by-node run, the failing node is still found (by a rerun on failure).
    quick = compare_models(model, gm, ed, inputs, repeats=1, per_node=False)
    assert quick.error.node_name == "reshape" and quick.nodes == []


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_dtype_runs_cast_model_and_floating_inputs(net, dtype):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "mul").update_arg(1, 3)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, dtype=dtype, repeats=1, rtol=1e-2, atol=1e-2)
    assert report.dtype == dtype
    assert {o.dtype for o in report.outputs} == {dtype}
    assert report.first_divergence.name == "mul"
    assert model.fc.weight.dtype == torch.float32 and gm.fc.weight.dtype == torch.float32  # callers' untouched
    same = compare_models(model, gm, gm, inputs, dtype=dtype, repeats=1)
    assert same.first_divergence is None and all(o.max_abs == 0.0 for o in same.outputs)


def test_integer_inputs_stay_integer_under_a_float_dtype():
    class Emb(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, t):
            return self.emb(t).mean(1)

    model = Emb().eval()
    gm = traced(model)
    tokens = torch.tensor([[1, 2, 3]])
    report = compare_models(model, gm, gm, (tokens,), dtype="float16", repeats=1)
    assert report.outputs[0].dtype == "float16" and report.outputs[0].max_abs == 0.0
    assert inputs_for_run((tokens,), "cpu", torch.float16)[0].dtype == torch.int64


def test_progress_and_cancel(net):
    model, gm, inputs = net
    seen = []
    compare_models(model, gm, gm, inputs, repeats=1, progress=lambda f, text: seen.append((f, text)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and any("node" in t for _, t in seen)
    event = threading.Event()
    event.set()
    with pytest.raises(RunCancelled):
        compare_models(model, gm, gm, inputs, cancel=event)
    calls = []

    def cancel_midway():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(RunCancelled):
        compare_models(model, gm, gm, inputs, cancel=cancel_midway)


def test_devices_listed_are_what_this_machine_has():
    devices = available_devices()
    assert devices[0] == "cpu"
    assert [d for d in devices if d.startswith("cuda")] == [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    assert ("mps" in devices) == (hasattr(torch.backends, "mps") and torch.backends.mps.is_available())
    assert check_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(RunError, match="not available"):
            check_device("cuda:0")
    with pytest.raises(RunError, match="not a device"):
        check_device("gpu-please")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_run_matches_cpu_run(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "mul").update_arg(1, 3)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, device="cuda:0", repeats=2)
    assert report.device == "cuda:0" and report.first_divergence.name == "mul"
    assert next(model.parameters()).device.type == "cpu"


@pytest.mark.skipif(not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()), reason="no MPS device here")
def test_mps_run(net):
    model, gm, inputs = net
    report = compare_models(model, gm, gm, inputs, device="mps", repeats=2)
    assert report.first_divergence is None and report.all_close


def test_input_specs_random_and_file(tmp_path):
    assert parse_input_spec("1,3,32,32") == InputSpec((1, 3, 32, 32), "float32")
    assert parse_input_spec("1x3x8:float16") == InputSpec((1, 3, 8), "float16")
    assert parse_input_spec("2,16:int64[0,100)") == InputSpec((2, 16), "int64", 0, 100)
    for bad in ("1,a", "2,x", "2,,3", "2,3:complex7", "4:int64[5,5)"):
        with pytest.raises(RunError):
            parse_input_spec(bad)
    specs = specs_from_inputs((torch.zeros(2, 3), torch.tensor([[4, 7]])))
    assert specs[1] == InputSpec((1, 2), "int64", 0, 8) and specs[1].text() == "1,2:int64[0,8)"
    a, b = random_inputs(specs, seed=5), random_inputs(specs, seed=5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and int(a[1].max()) < 8
    assert not torch.equal(a[0], random_inputs(specs, seed=6)[0])
    path = tmp_path / "in.pt"
    torch.save({"y": torch.ones(1), "x": torch.zeros(2)}, path)
    x, y = load_inputs_file(path, ["x", "y"])
    assert x.shape == (2,) and y.shape == (1,)
    with pytest.raises(RunError, match="no value for z"):
        load_inputs_file(path, ["z"])
    evil = tmp_path / "evil.pt"
    torch.save(Net(), evil)
    with pytest.raises(RunError, match="Cannot read inputs"):
        load_inputs_file(evil)


def test_flatten_paths_of_nested_outputs():
    from collections import namedtuple

    Out = namedtuple("Out", "logits hidden")
    leaves = flatten_outputs([Out(1, {"a": (2, 3)}), None])
    assert [p for p, _ in leaves] == ["out[0].logits", "out[0].hidden['a'][0]", "out[0].hidden['a'][1]", "out[1]"]


def test_nan_and_shape_changes_are_divergence_not_crashes(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "add").update_arg(1, math.nan)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    assert report.first_divergence.name == "add" and "NaN" in report.first_divergence.note
    assert report.divergence_by_id[node(ed, "add").meta["fxs_id"]] == math.inf
    data = report.to_json()
    assert data["first_divergence"]["score"] is None  # JSON has no inf


def test_in_place_ops_do_not_corrupt_the_comparison_or_the_inputs():
    class InPlace(nn.Module):
        def forward(self, x):
            x.add_(1)  # writes into the caller's tensor
            y = x * 2
            z = torch.relu(y)
            return z.sub_(3)

    model = InPlace()
    gm = traced(model)
    x = torch.tensor([[-2.0, 0.5, 3.0]])
    report = compare_models(model, gm, copy.deepcopy(gm), (x,), repeats=2)
    assert torch.equal(x, torch.tensor([[-2.0, 0.5, 3.0]]))
    assert report.first_divergence is None and all(o.max_abs == 0.0 for o in report.outputs)
    # The original runs ahead to reach the edited graph's first node: its in-place mul_ then
    # writes into `add`, whose comparison with the edited graph is still to come.
    class AheadInPlace(nn.Module):
        def forward(self, x):
            a = x + 1
            c = a.mul_(2)
            b = x * 3
            return c + b

    model = AheadInPlace()
    gm = traced(model)
    ed = copy.deepcopy(gm)
    next(iter(ed.graph.nodes)).append(node(ed, "mul"))  # compute x * 3 first
    ed.recompile()
    assert [n.name for n in ed.graph.nodes][:3] == ["x", "mul", "add"]
    report = compare_models(model, gm, ed, (x,), repeats=1)
    assert {n.status for n in report.nodes} == {"equal"}, [(n.name, n.status) for n in report.nodes]


def test_nodes_upstream_of_every_edit_are_shared_and_everything_else_compared(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    node(ed, "add").update_arg(1, 2)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    shared = [n.name for n in report.nodes if n.shared]
    assert shared == ["x", "fc", "relu", "sum_1"]  # equal weights; relu and sum read only fc
    assert {n.name for n in report.nodes if n.status == "diverged"} >= {"add", "mul"}
    full = compare_models(model, gm, ed, inputs, repeats=1, share_unchanged=False)
    assert not any(n.shared for n in full.nodes)
    assert [(n.name, n.status) for n in full.nodes] == [(n.name, n.status) for n in report.nodes]


def test_a_submodule_with_other_weights_is_not_shared_and_diverges(net):
    model, gm, inputs = net
    ed = copy.deepcopy(gm)
    with torch.no_grad():
        ed.fc.bias.add_(0.5)  # same graph, same target path, different state
    report = compare_models(model, gm, ed, inputs, repeats=1)
    assert [n.name for n in report.nodes if n.shared] == ["x"]
    assert report.first_divergence.name == "fc"


def test_graphs_without_stable_ids_are_matched_by_name(net):
    model, _, inputs = net
    gm = torch.fx.symbolic_trace(model)  # no fxs_id anywhere
    ed = copy.deepcopy(gm)
    node(ed, "mul").update_arg(1, 3)
    ed.recompile()
    report = compare_models(model, gm, ed, inputs, repeats=1)
    assert report.first_divergence.name == "mul" and "matched by name" in report.notes[-1]
    assert "nodes diverge beyond tolerance" in report.format_text()


def test_same_module_compares_type_configuration_mode_and_weights():
    from fxstudio.core.same_computation import same_module

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self._scale = 2.0
            self.lin = nn.Linear(2, 2)

    a = Scaled()
    assert same_module(a, copy.deepcopy(a))
    b = copy.deepcopy(a)
    b._scale = 3.0
    c = copy.deepcopy(a)
    with torch.no_grad():
        c.lin.weight[0, 0] += 1
    d = copy.deepcopy(a).eval()
    assert not any(same_module(a, other) for other in (b, c, d))
    assert not same_module(nn.LeakyReLU(0.1), nn.LeakyReLU(0.2))


def test_graph_diff_marks_a_fused_conv_as_changed_and_agrees_with_the_pass():
    """A fusion rewrites conv1's weights behind an unchanged ``call_module`` node: the diff against
    the original says so (issue #26: the fused conv was not outlined), and after one pass it
    counts what the pass's own summary counts."""
    from fxstudio.core.compare.graph_diff import GraphDiffer
    from tests.core.edit_helpers import doc_for

    doc = doc_for("conv_bn_relu.py")
    result = doc.apply_edit({"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"})
    diff = GraphDiffer(doc.original).diff(doc.edited)
    names = doc.original_names_by_id()
    assert {names[i] for i in diff.changed} == {"conv1", "conv2", "relu1", "relu2"}
    assert {names[i] for i in diff.removed} == {"bn1", "bn2"} and not diff.added
    assert f"0 added, 2 removed, {len(diff.changed)} changed" in result.label
    # Across two files (names matched), weights are not compared by identity: same class, same node.
    assert GraphDiffer(doc.original, match="name").diff(doc.original).empty
