"""Opening a model holds its weights once (the document's graphs share the loaded module's tensors),
and nothing an edit, a shape refresh, a run or an export does writes into that shared state."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from fxstudio.core.compare import compare_models
from fxstudio.core import fx_compat
from fxstudio.core.document import Document
from fxstudio.core.export import export_python
from fxstudio.core.loading import load_model
from fxstudio.core.module_state import copy_to_run, run_copy, share_graph_module, state_tensors
from fxstudio.core.compare import module_for_run
from fxstudio.resources import example_path

# A model left in training mode (as a freshly built nn.Module is): batch norm updates its running
# statistics whenever it runs, dropout draws random masks; plus a buffer the graph reads.
TRAIN_MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8, 4)
        self.register_buffer("offset", torch.arange(4.0))

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = self.drop(y.mean(dim=(2, 3)))
        return self.fc(y) + self.offset


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 3, 8, 8),)
'''

# Boolean-mask indexing has no fake-tensor shape; a small model from a .py file runs for real anyway.
DYNAMIC_MODEL = '''
import torch
from torch import nn


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        y = self.bn(x)
        return y[y > 0].sum()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(3, 4),)
'''


def _load(tmp_path, source: str, name: str = "net.py", **options):
    path = tmp_path / name
    path.write_text(source)
    return load_model(path, **options)


def _storages(*modules: nn.Module) -> dict[int, int]:
    """data_ptr -> bytes of every distinct storage behind the modules' parameters and buffers."""
    out = {}
    for m in modules:
        for t in state_tensors(m):
            out[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return out


def _snapshot(module: nn.Module) -> dict:
    """Everything a run could change: values, dtypes, devices, storages, versions and modes."""
    return {
        "state": {k: (v.detach().clone(), v.dtype, v.device, v.data_ptr(), v._version)
                  for k, v in module.state_dict(keep_vars=True).items()},
        "modes": {name: m.training for name, m in module.named_modules()},
        "children": sorted(name for name, _ in module.named_children()),
    }


def _assert_same(before: dict, module: nn.Module) -> None:
    now = _snapshot(module)
    assert now["modes"] == before["modes"]
    assert now["children"] == before["children"]
    assert now["state"].keys() == before["state"].keys()
    for key, (value, dtype, device, ptr, version) in before["state"].items():
        v2, dtype2, device2, ptr2, version2 = now["state"][key]
        assert (dtype2, device2, ptr2) == (dtype, device, ptr), key
        assert torch.equal(v2, value), key
        assert version2 == version, f"{key} was written in place"


@pytest.mark.parametrize("tracer", ["fx", "export"])
def test_opening_holds_the_weights_once(tracer):
    loaded = load_model(example_path("residual_cnn.py"), tracer=tracer)
    doc = Document(loaded)
    graph = _storages(loaded.graph_module)
    assert graph and _storages(doc.original) == graph and _storages(doc.edited) == graph
    # all three together hold no more than the graph module as loaded
    assert sum(_storages(loaded.module, loaded.graph_module, doc.original, doc.edited).values()) == \
        sum(_storages(loaded.module, loaded.graph_module).values())
    for (name, p), (name2, q) in zip(loaded.graph_module.state_dict(keep_vars=True).items(),
                                     doc.edited.state_dict(keep_vars=True).items()):
        assert name == name2 and p is q


@pytest.mark.parametrize("tracer", ["fx", "export"])
def test_document_modules_are_what_a_deep_copy_was(tracer):
    loaded = load_model(example_path("residual_cnn.py"), tracer=tracer)
    doc = Document(loaded)
    deep = copy.deepcopy(loaded.graph_module)
    for gm in (doc.original, doc.edited):
        # the same classes, plus torch's deferring one: its code is generated when first used
        assert [c for c in type(gm).__mro__[1:] if c is not fx_compat._LazyGraphModule] == list(type(deep).__mro__[1:])
        assert type(gm).__name__ == type(deep).__name__
        assert gm.code == deep.code
        assert [(n, type(m).__name__, m.training) for n, m in gm.named_modules()] == \
            [(n, type(m).__name__, m.training) for n, m in deep.named_modules()]
        assert list(gm.state_dict()) == list(deep.state_dict())
        assert all(torch.equal(a, b) for a, b in zip(gm.state_dict().values(), deep.state_dict().values()))
        assert gm.graph is not loaded.graph_module.graph
        pairs = list(zip(gm.graph.nodes, loaded.graph_module.graph.nodes, strict=True))
        assert all(n.name == m.name and n.meta is not m.meta for n, m in pairs)
        assert all({k: v for k, v in n.meta.items() if k != "fxs_id"} == m.meta for n, m in pairs)
    assert doc.original.graph is not doc.edited.graph
    assert [n.meta["fxs_id"] for n in doc.edited.graph.nodes] == list(range(len(doc.edited.graph.nodes)))
    assert not any("fxs_id" in n.meta for n in loaded.graph_module.graph.nodes)
    with torch.no_grad():
        inputs = loaded.example_inputs
        assert torch.equal(doc.module()(*inputs), loaded.graph_module(*inputs))


def test_edits_shapes_runs_and_export_leave_the_loaded_model_untouched(tmp_path):
    loaded = _load(tmp_path, TRAIN_MODEL)
    assert loaded.module.training and loaded.module.bn.training
    doc = Document(loaded)
    module_before, original_before = _snapshot(loaded.module), _snapshot(doc.original)
    graph_before = _snapshot(loaded.graph_module)

    doc.apply_edit({"op": "insert", "kind": "call_module", "target": "torch.nn.Dropout(p=0.1)",
                    "after": "relu", "args": "(%relu,)"})
    assert isinstance(doc.edited.dropout, nn.Dropout) and doc.edited.dropout.training
    for other in (doc.original, loaded.graph_module, loaded.module):
        assert not hasattr(other, "dropout")
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "%fc"})
    # an in-place op on a buffer the graph reads: every run of the edited graph writes into it
    doc.apply_edit({"op": "insert", "kind": "call_method", "target": "add_", "after": "offset",
                    "args": "(%offset, 1.0)"})
    doc.refresh_shapes()  # evaluates the batch norm (in training mode) on fake tensors

    for eval_mode in (True, False):
        report = compare_models(loaded.module, doc.original, doc.module(), loaded.example_inputs,
                                eval_mode=eval_mode, repeats=2)
        assert report.error is None and not report.all_close  # the edits change the outputs
        assert all(o.max_abs == 0.0 for o in report.trace_outputs)  # same state for both runs
    report = compare_models(loaded.module, doc.original, doc.module(), loaded.example_inputs,
                            dtype="bfloat16", repeats=1)
    assert report.dtype == "bfloat16" and report.error is None
    result = export_python(doc, tmp_path / "net_edited.py")
    assert result.verified

    doc.go_to(0)
    assert not hasattr(doc.edited, "dropout")
    report = compare_models(loaded.module, doc.original, doc.module(), loaded.example_inputs, eval_mode=False,
                            repeats=2)
    assert report.all_close and report.error is None
    doc.go_to(3)
    assert isinstance(doc.edited.dropout, nn.Dropout)

    _assert_same(module_before, loaded.module)
    _assert_same(original_before, doc.original)
    _assert_same(graph_before, loaded.graph_module)


def test_a_run_in_training_mode_gives_what_private_copies_gave(tmp_path):
    """eval_mode=False runs the batch norm in training mode: the outputs are those of deep copies."""
    loaded = _load(tmp_path, TRAIN_MODEL)
    doc = Document(loaded)
    doc.apply_edit({"op": "set_target", "node": "relu", "target": "torch.sigmoid"})
    shared = compare_models(loaded.module, doc.original, doc.module(), loaded.example_inputs, eval_mode=False,
                            repeats=1)
    copies = [copy.deepcopy(m) for m in (loaded.module, doc.original, doc.module())]
    private = compare_models(*copies, loaded.example_inputs, eval_mode=False, repeats=1)
    a, b = shared.to_json(), private.to_json()
    a.pop("timings_ms"), b.pop("timings_ms")
    assert a == b
    assert int(loaded.module.bn.num_batches_tracked) == 0
    assert int(copies[0].bn.num_batches_tracked) == 0  # compare never writes into what it is given


def test_shape_refresh_never_runs_the_real_modules(tmp_path):
    loaded = _load(tmp_path, TRAIN_MODEL)
    doc = Document(loaded)
    stats = loaded.module.bn.running_mean.clone()
    doc.apply_edit({"op": "insert", "kind": "call_function", "target": "torch.tanh", "after": "conv",
                    "args": "(%conv,)"})
    doc.apply_edit({"op": "set_arg", "node": "bn", "key": 0, "value": "%tanh"})
    doc.refresh_shapes()
    assert doc.find("bn").meta["fxs_shape"] == (2, 8, 8, 8)
    assert int(loaded.module.bn.num_batches_tracked) == 0
    assert torch.equal(loaded.module.bn.running_mean, stats)


def test_loading_with_a_real_forward_leaves_the_model_untouched(tmp_path):
    loaded = _load(tmp_path, DYNAMIC_MODEL)
    # a small model from a .py file: its shapes come from a real run (shape_propagation.prefer_real)
    assert int(loaded.module.bn.num_batches_tracked) == 0
    assert torch.equal(loaded.module.bn.running_mean, torch.zeros(4))
    assert loaded.graph_module.graph.find_nodes(op="call_module", target="bn")[0].meta["tensor_meta"].shape == (3, 4)


def test_run_copy_owns_modes_and_buffers_and_shares_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.b.weight = self.a.weight
            self.bn = nn.BatchNorm1d(4)

        def forward(self, x):
            return self.bn(self.b(self.a(x)))

    model = Tied()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(3, 4)
    for source in (model, gm):
        clone = run_copy(source)
        assert type(clone) is type(source)
        assert clone.a.weight is source.a.weight and clone.b.weight is clone.a.weight
        assert clone.bn.running_mean is not source.bn.running_mean
        assert torch.equal(clone.bn.running_mean, source.bn.running_mean)
        clone.eval()
        assert source.training and source.bn.training and not clone.bn.training
        with torch.no_grad():
            clone.train()(x)
        assert int(source.bn.num_batches_tracked) == 0 and int(clone.bn.num_batches_tracked) == 1
    assert run_copy(gm).code == gm.code and run_copy(gm).graph is gm.graph  # nothing recompiled
    # the weights a graph writes into in place are cloned too
    graph = gm.graph
    weight = graph.find_nodes(op="call_module", target="a")[0]
    with graph.inserting_before(weight):
        w = graph.get_attr("a.weight")
        graph.call_method("mul_", (w, 2.0))
    gm.recompile()
    runnable = copy_to_run(gm)
    assert runnable is not gm and runnable.a.weight is not gm.a.weight and runnable.b.weight is runnable.a.weight
    plain = torch.fx.symbolic_trace(nn.Linear(2, 2))
    assert copy_to_run(plain) is plain  # nothing a run could write: no copy


def test_share_graph_module_keeps_the_source_as_it_was():
    gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(3, 3), nn.ReLU()).eval())
    shared = share_graph_module(gm)
    assert not shared.training and shared.get_submodule("0") is gm.get_submodule("0")
    shared.add_submodule("extra", nn.Identity())
    assert not hasattr(gm, "extra")
    assert shared.graph is not gm.graph and shared.code == gm.code


def test_moves_share_the_moved_weights(tmp_path):
    loaded = _load(tmp_path, TRAIN_MODEL)
    doc = Document(loaded)
    memo: dict = {}
    a = module_for_run(doc.original, "cpu", torch.float64, memo=memo)
    b = module_for_run(doc.edited, "cpu", torch.float64, memo=memo)
    assert a.fc.weight.dtype == torch.float64 and a.fc.weight is b.fc.weight
    assert doc.original.fc.weight.dtype == torch.float32 and doc.original.fc.weight is loaded.module.fc.weight
