"""The five built-in passes, each against the torch implementation it mirrors."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.fx.experimental.const_fold import split_const_subgraphs
from torch.fx.experimental.normalize import NormalizeArgs
from torch.fx.experimental.optimization import fuse, remove_dropout

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.passes import BUILTIN_PASSES
from tests.core.passes.pass_helpers import RESNET_LIKE, apply, current, load_source, out
from tests.model_files import model_source


def _run(doc, name):
    return apply(doc, {"op": "run_pass", "name": f"fxstudio.passes.{name}"})


def test_the_five_builtins_are_listed():
    assert sorted(BUILTIN_PASSES) == sorted(f"fxstudio.passes.{n}" for n in (
        "fuse_conv_bn", "remove_dropout", "fold_constants", "normalize_args", "eliminate_dead_code"))


def test_fuse_conv_bn_equals_the_fx_tutorial_fuse(tmp_path):
    loaded = load_source(tmp_path, RESNET_LIKE)
    stats = [m.running_var for m in loaded.module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert stats and all(not torch.allclose(v, torch.ones_like(v)) for v in stats)  # non-trivial statistics
    doc = Document(loaded)
    bns = [n for n in doc._state.graph.nodes if n.op == "call_module"
           and isinstance(doc.edited.get_submodule(n.target), torch.nn.modules.batchnorm._BatchNorm)]
    label, record, tx = _run(doc, "fuse_conv_bn")
    assert record == {"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"}
    gm = current(doc)
    assert not any(isinstance(gm.get_submodule(n.target), torch.nn.modules.batchnorm._BatchNorm)
                   for n in gm.graph.nodes if n.op == "call_module")
    reference = fuse(loaded.module)  # the FX tutorial's fuse (deep-copies, re-traces)
    x = loaded.example_inputs
    assert (out(gm, x) - out(reference, x)).abs().max() <= 1e-5
    assert (out(gm, x) - out(loaded.module, x)).abs().max() <= 1e-4  # and still the same model
    assert len(bns) == 11 and f"0 added, {len(bns)} removed" in label  # 10 conv/bn pairs, 1 linear/bn1d pair
    assert tx.changes.removed == {n.meta["fxs_id"] for n in bns} and not tx.changes.added


def test_fuse_conv_bn_refuses_batch_norms_in_training_mode(tmp_path):
    loaded = load_source(tmp_path, RESNET_LIKE.replace("        self.eval()\n", ""))
    doc = Document(loaded)
    before = doc._state.gm.graph.python_code("self").src
    with pytest.raises(EditRefused, match="training mode"):
        _run(doc, "fuse_conv_bn")
    assert doc._state.gm.graph.python_code("self").src == before


DROPOUT = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(8, 3)
        self.drop2 = nn.Dropout(0.1)
        self.eval()

    def forward(self, x):
        return self.drop2(self.fc2(self.drop(torch.relu(self.fc1(x)))))


def example_inputs():
    return (torch.randn(2, 4),)
''')


def test_remove_dropout_equals_torch_remove_dropout(tmp_path):
    loaded = load_source(tmp_path, DROPOUT)
    doc = Document(loaded)
    label, _, tx = _run(doc, "remove_dropout")
    gm = current(doc)
    reference = remove_dropout(loaded.module)
    assert gm.code == reference.code
    assert torch.equal(out(gm, loaded.example_inputs), out(reference, loaded.example_inputs))
    assert len(tx.changes.removed) == 2 and "2 removed" in label


def test_remove_dropout_without_dropout_changes_nothing(tmp_path):
    doc = Document(load_source(tmp_path, RESNET_LIKE))
    with pytest.raises(EditRefused, match="changed nothing"):
        _run(doc, "remove_dropout")


CONSTANTS = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = nn.Parameter(torch.randn(3, 4))
        self.b = nn.Parameter(torch.randn(3))

    def forward(self, x):
        w = self.w * 2.0 + 1.0
        return x @ w.t() + self.b.relu()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 4),)
''')


def test_fold_constants_equals_const_fold(tmp_path):
    loaded = load_source(tmp_path, CONSTANTS)
    doc = Document(loaded)
    before = len(doc._state.graph.nodes)
    _run(doc, "fold_constants")
    gm = current(doc)
    reference = split_const_subgraphs(torch.fx.symbolic_trace(loaded.module))
    reference.run_folding()
    x = loaded.example_inputs
    assert torch.equal(out(gm, x), out(reference, x))
    ops = [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert len(gm.graph.nodes) < before and "relu" not in ops  # the weight subgraphs are precomputed
    assert torch.equal(out(gm, x), out(loaded.module, x))


def test_fold_constants_with_nothing_to_fold_changes_nothing(tmp_path):
    doc = Document(load_source(tmp_path, DROPOUT))
    with pytest.raises(EditRefused, match="changed nothing"):
        _run(doc, "fold_constants")


def test_normalize_args_equals_normalize_args(tmp_path):
    loaded = load_source(tmp_path, RESNET_LIKE)
    doc = Document(loaded)
    reference = NormalizeArgs(copy.deepcopy(doc._state.gm)).transform()
    _, _, tx = _run(doc, "normalize_args")
    gm = current(doc)
    assert gm.code == reference.code
    assert not tx.changes.added and not tx.changes.removed and tx.changes.changed
    x = loaded.example_inputs
    assert torch.equal(out(gm, x), out(loaded.module, x))


DEAD = model_source('''

class Net(nn.Module):
    def forward(self, x):
        unused = torch.sin(x) * 2
        return x + 1


def example_inputs():
    return (torch.randn(3),)
''')


def test_eliminate_dead_code_equals_graph_eliminate_dead_code(tmp_path):
    loaded = load_source(tmp_path, DEAD)
    doc = Document(loaded)
    reference = copy.deepcopy(doc._state.gm)
    reference.graph.eliminate_dead_code()
    reference.recompile()
    _, _, tx = _run(doc, "eliminate_dead_code")
    assert current(doc).code == reference.code
    assert len(tx.changes.removed) == 2
    with pytest.raises(EditRefused, match="changed nothing"):
        _run(doc, "eliminate_dead_code")


@pytest.mark.parametrize("edit, message", [
    ({"op": "run_pass", "name": "fxstudio.passes.nope"}, "Unknown built-in pass"),
    ({"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn", "sha256": "ab"}, "only for pass files"),
    ({"op": "run_pass", "name": "my_pass"}, "needs a 'file'"),
])
def test_builtin_refusals(tmp_path, edit, message):
    doc = Document(load_source(tmp_path, DEAD))
    with pytest.raises(EditRefused, match=message):
        apply(doc, edit)


def test_normalize_args_keeps_an_exported_graph_runnable():
    from fxstudio.core.loading import load_model
    from fxstudio.resources import example_path

    loaded = load_model(example_path("two_linear.py"), tracer="export")
    doc = Document(loaded)
    label, _, _ = _run(doc, "normalize_args")  # torch.ops overloads keep their positional arguments
    x = loaded.example_inputs
    assert torch.equal(out(current(doc), x), out(loaded.graph_module, x))
    assert "renamed" in label  # a Transformer names nodes after the overload (linear_default)
