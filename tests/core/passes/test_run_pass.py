"""run_pass and replace_pattern on the real examples: each kind of pass, the example pass files,
stable node ids across a pass, and listing a file's passes without running it."""

from __future__ import annotations

import sys

import pytest
import torch

from fxstudio.core.passes import file_sha256, pass_names
from fxstudio.resources import EXAMPLES_DIR
from tests.core.passes.pass_helpers import apply, current, example_doc, out, write
from tests.model_files import model_source

PASSES = EXAMPLES_DIR / "passes"


def _ids(doc):
    return {n.name: n.meta["fxs_id"] for n in doc._state.graph.nodes}


def test_transformer_example_view_to_reshape():
    doc = example_doc("view_reshape.py")
    x = doc.loaded.example_inputs
    before = out(doc.loaded.module, x)
    ids = _ids(doc)
    label, record, tx = apply(doc, {"op": "run_pass", "file": "passes/view_to_reshape.py", "name": "ViewToReshape"})
    gm = current(doc)
    assert "reshape(-1, 1)" in gm.code and ".view(" not in gm.code
    assert torch.equal(out(gm, x), before)
    assert record == {"op": "run_pass", "file": "passes/view_to_reshape.py", "name": "ViewToReshape",
                      "sha256": file_sha256(PASSES / "view_to_reshape.py")}
    assert label.startswith("Run pass view_to_reshape.py::ViewToReshape")
    now = _ids(doc)
    assert now["x"] == ids["x"] and now["output"] == ids["output"]  # kept nodes keep their ids
    assert tx.changes.removed == {ids["view"]} and tx.changes.added == {now["reshape"]}
    assert now["reshape"] not in ids.values()  # a fresh id
    assert doc._state.by_id[now["reshape"]].name == "reshape" and doc.find("reshape") is not None


def test_function_example_swaps_every_relu_module_for_gelu():
    doc = example_doc("residual_cnn.py")
    x = doc.loaded.example_inputs
    relus = [n for n in doc._state.graph.nodes if n.op == "call_module"
             and type(doc.edited.get_submodule(n.target)) is torch.nn.ReLU]
    _, _, tx = apply(doc, {"op": "run_pass", "file": "passes/relu_to_gelu.py", "name": "relu_to_gelu"})
    gm = current(doc)
    assert all(type(gm.get_submodule(n.target)) is torch.nn.GELU for n in relus)
    assert tx.changes.changed >= {n.meta["fxs_id"] for n in relus} and not tx.changes.added
    # the reference: the same swap on a deep copy of the model
    import copy

    ref = copy.deepcopy(doc.loaded.module)
    for name, m in list(ref.named_modules()):
        for child_name, child in list(m.named_children()):
            if type(child) is torch.nn.ReLU:
                setattr(m, child_name, torch.nn.GELU())
    assert torch.allclose(out(gm, x), out(ref, x), atol=1e-6)
    assert all(type(m) is torch.nn.ReLU for m in doc.loaded.module.modules() if isinstance(m, (torch.nn.ReLU, torch.nn.GELU)))
    assert all(type(doc.original.get_submodule(n.target)) is torch.nn.ReLU for n in relus)


def test_replace_pattern_example_decomposes_relu():
    doc = example_doc("relu_add.py")
    x = doc.loaded.example_inputs
    ids = _ids(doc)
    label, record, tx = apply(doc, {"op": "replace_pattern", "file": "passes/relu_pattern.py", "pattern": "pattern",
                                    "replacement": "replacement"})
    gm = current(doc)
    assert "relu" not in gm.code and "> 0" in gm.code
    assert torch.equal(out(gm, x), out(doc.loaded.module, x))
    assert "(1 match;" in label
    assert record == {"op": "replace_pattern", "file": "passes/relu_pattern.py", "pattern": "pattern",
                      "replacement": "replacement",
                      "sha256": file_sha256(EXAMPLES_DIR / "passes" / "relu_pattern.py")}
    assert _ids(doc)["add"] == ids["add"] and ids["add"] in tx.changes.changed
    assert tx.changes.removed == {ids["relu"]} and len(tx.changes.added) == 2


def test_observer_example_inserts_after_every_conv():
    doc = example_doc("conv_bn_relu.py")
    x = doc.loaded.example_inputs
    _, _, tx = apply(doc, {"op": "run_pass", "file": "passes/observers.py", "name": "insert_observers"})
    gm = current(doc)
    observers = [n for n in gm.graph.nodes if n.op == "call_function" and n.target.__name__ == "observe"]
    assert [n.args[1] for n in observers] == ["conv1", "conv2"]
    assert {n.meta["fxs_id"] for n in observers} == tx.changes.added
    assert all(list(n.args[0].users) == [n] for n in observers)  # the conv's users moved onto it
    module = sys.modules[observers[0].target.__module__]
    module.OBSERVED.clear()
    assert torch.equal(out(gm, x), out(doc.loaded.module, x))
    assert set(module.OBSERVED) == {"conv1", "conv2"} and all(v > 0 for v in module.OBSERVED.values())


PASS_KINDS = '''
import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase, PassResult


class NegToSigmoid(torch.fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target is torch.neg:
            target = torch.sigmoid
        return super().call_function(target, args, kwargs)


def _swap(gm):
    for node in gm.graph.nodes:
        if node.target is torch.neg:
            node.target = torch.sigmoid
    gm.recompile()


class SwapPass(PassBase):
    def call(self, gm):
        _swap(gm)
        return PassResult(gm, True)


swap_instance = SwapPass()


def in_place(gm):
    _swap(gm)


def returns_module(gm):
    _swap(gm)
    return gm


def returns_result(gm):
    _swap(gm)
    return PassResult(gm, True)


THRESHOLD = 3
'''

NEG_MODEL = model_source('''

class Net(nn.Module):
    def forward(self, x):
        return torch.neg(x) * 2


def example_inputs():
    return (torch.linspace(-1.0, 1.0, 5),)
''')


@pytest.mark.parametrize("name", ["NegToSigmoid", "SwapPass", "swap_instance", "in_place", "returns_module",
                                  "returns_result"])
def test_every_kind_of_pass(tmp_path, name):
    from fxstudio.core.loading import load_model

    from tests.core.passes.pass_helpers import trusting
    from fxstudio.core.document import Document

    write(tmp_path, "kinds.py", PASS_KINDS)
    doc = trusting(Document(load_model(write(tmp_path, "neg.py", NEG_MODEL))), tmp_path)
    x = doc.loaded.example_inputs
    apply(doc, {"op": "run_pass", "file": "kinds.py", "name": name})
    assert torch.allclose(out(current(doc), x), torch.sigmoid(x[0]) * 2)
    assert torch.equal(out(doc.original, x), torch.neg(x[0]) * 2)


def test_pass_names_reads_definitions_without_running(tmp_path):
    marker = tmp_path / "ran"
    path = write(tmp_path, "kinds.py", PASS_KINDS + f"\nopen({str(marker)!r}, 'w').close()\n")
    found = {(p.name, p.kind) for p in pass_names(path)}
    assert found == {("NegToSigmoid", "transformer"), ("SwapPass", "pass_class"), ("swap_instance", "assignment"),
                     ("in_place", "function"), ("returns_module", "function"), ("returns_result", "function")}
    assert not marker.exists()
    names = {p.name for p in pass_names(PASSES / "observers.py")}
    assert "insert_observers" in names and "observe" not in names  # observe takes two arguments
