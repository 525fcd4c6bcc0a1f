"""A pass is one undoable command: undo restores the code and the weights bit for bit, redo the
pass's result; the loaded model and the original graph module are never touched (copy on write:
only the tensors a pass changed are new)."""

from __future__ import annotations

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.core.module_state import state_tensors
from tests.core.passes.pass_helpers import (RESNET_LIKE, apply, assert_state_is, example_doc, load_source, out,
                                            reapply, revert, state_snapshot, trusting, write)
from tests.model_files import model_source


FUSE = {"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"}


def test_undo_restores_code_and_weights_bit_for_bit_and_redo_the_result(tmp_path):
    doc = Document(load_source(tmp_path, RESNET_LIKE))
    x = doc.loaded.example_inputs
    code_before = doc.module().code
    snap_before = state_snapshot(doc.module())
    events = []
    doc.subscribe(events.append)
    doc.apply_edit(FUSE)
    fused_code = doc.module().code
    snap_fused = state_snapshot(doc.module())
    fused_out = out(doc.module(), x)
    assert fused_code != code_before and doc.history == [doc.history[0]]
    assert doc.edit_script()["edits"] == [FUSE]
    event = events[-1]
    assert event.kind == "edited" and event.removed and event.changed and not event.added
    doc.undo()
    assert doc.module().code == code_before
    assert_state_is(doc.module(), snap_before)
    assert torch.equal(out(doc.module(), x), out(doc.loaded.module, x))
    assert events[-1].kind == "undone" and events[-1].added == event.removed
    doc.redo()
    assert doc.module().code == fused_code
    assert_state_is(doc.module(), snap_fused)
    assert torch.equal(out(doc.module(), x), fused_out)
    for node_id in event.removed:
        assert doc.node(node_id) is None
    doc.undo()
    assert all(doc.node(i) is not None for i in event.removed)


def test_a_fusing_pass_leaves_the_loaded_model_and_the_original_untouched(tmp_path):
    loaded = load_source(tmp_path, RESNET_LIKE)
    doc = Document(loaded)
    snaps = {name: state_snapshot(m) for name, m in
             (("module", loaded.module), ("graph_module", loaded.graph_module), ("original", doc.original))}
    ptrs = {t.data_ptr() for t in state_tensors(loaded.graph_module)}
    doc.apply_edit(FUSE)
    out(doc.module(), loaded.example_inputs)
    for name, m in (("module", loaded.module), ("graph_module", loaded.graph_module), ("original", doc.original)):
        assert_state_is(m, snaps[name])
    # copy on write: the fused convs hold new tensors; everything else is still shared
    fused = {n.target for n in doc.edited.graph.nodes if n.op == "call_module"
             and isinstance(doc.original.get_submodule(n.target), (torch.nn.Conv2d, torch.nn.Linear))}
    for key, t in doc.edited.state_dict(keep_vars=True).items():
        owner = key.rsplit(".", 1)[0]
        if owner in fused:
            assert t.data_ptr() not in ptrs, key
        else:
            assert t.data_ptr() in ptrs, key
    doc.undo()
    doc.redo()
    for name, m in (("module", loaded.module), ("graph_module", loaded.graph_module), ("original", doc.original)):
        assert_state_is(m, snaps[name])


IN_PLACE_WRITER = '''
import torch


def scale(gm):
    gm.fc.weight.data.mul_(2.0)
    with torch.no_grad():
        gm.fc.bias.add_(1.0)
    return gm
'''

LINEAR = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(self.fc(x))


def example_inputs():
    return (torch.randn(2, 4),)
''')


def test_a_user_pass_writing_weights_in_place_writes_only_its_copy(tmp_path):
    write(tmp_path, "writer.py", IN_PLACE_WRITER)
    loaded = load_model(write(tmp_path, "net.py", LINEAR))
    doc = trusting(Document(loaded), tmp_path)
    snap = state_snapshot(loaded.module)
    weight, bias = loaded.module.fc.weight.detach().clone(), loaded.module.fc.bias.detach().clone()
    doc.apply_edit({"op": "run_pass", "file": "writer.py", "name": "scale"})
    assert_state_is(loaded.module, snap)
    assert_state_is(doc.original, state_snapshot(loaded.graph_module))
    edited = doc.module()
    assert torch.equal(edited.fc.weight, weight * 2) and torch.equal(edited.fc.bias, bias + 1)
    # the weights the pass did not change are the loaded ones again, not copies
    assert edited.fc2.weight is loaded.graph_module.fc2.weight and edited.fc2.bias is loaded.graph_module.fc2.bias
    doc.undo()
    assert doc.module().fc.weight is loaded.graph_module.fc.weight


def test_a_pass_in_a_compound_edit_rolls_back_with_it(tmp_path):
    doc = Document(load_source(tmp_path, RESNET_LIKE))
    code = doc.module().code
    snap = state_snapshot(doc.module())
    with pytest.raises(EditRefused, match="Edit 2 of 2"):
        doc.apply_edits([FUSE, {"op": "rename", "node": "no_such_node", "name": "y"}])
    assert doc.module().code == code and not doc.history
    assert_state_is(doc.module(), snap)
    doc.apply_edits([FUSE, {"op": "rename", "node": "stem", "name": "stem_fused"}])
    assert "stem_fused = self.stem(x)" in doc.module().code
    doc.undo()
    assert doc.module().code == code
    assert_state_is(doc.module(), snap)


def test_edits_after_a_pass_use_the_new_graph_and_undo_in_order():
    doc = example_doc("view_reshape.py")
    doc.apply_edit({"op": "run_pass", "file": "passes/view_to_reshape.py", "name": "ViewToReshape"})
    doc.apply_edit({"op": "set_arg", "node": "reshape", "key": 2, "value": "2"})
    doc.apply_edit({"op": "rename", "node": "reshape", "name": "flat"})
    assert "flat = x.reshape(-1, 2)" in doc.module().code
    doc.go_to(0)
    assert "x.view(-1, 1)" in doc.module().code and doc.find("reshape") is None
    doc.go_to(3)
    assert "flat = x.reshape(-1, 2)" in doc.module().code
    x = doc.loaded.example_inputs
    assert torch.equal(out(doc.module(), x), x[0].reshape(-1, 2))


def test_shapes_follow_a_pass(tmp_path):
    doc = example_doc("relu_add.py")
    doc.apply_edit({"op": "replace_pattern", "file": "passes/relu_pattern.py", "pattern": "pattern",
                    "replacement": "replacement"})
    for node in doc.edited.graph.nodes:
        if node.op not in ("output",):
            assert node.meta.get("fxs_shape") == (3, 4), node.name


def test_the_transaction_api_undo(tmp_path):
    doc = Document(load_source(tmp_path, RESNET_LIKE))
    gm = doc._state.gm
    gm.recompile()
    code, snap = gm.code, state_snapshot(gm)
    _, _, tx = apply(doc, FUSE)
    revert(doc, tx)
    gm.recompile()
    assert gm.code == code
    assert_state_is(gm, snap)
    reapply(doc, tx)
    gm.recompile()
    assert gm.code != code



def test_a_pass_prepared_ahead_installs_its_result_and_goes_stale_after_an_edit(tmp_path, monkeypatch):
    """``prepare_edit`` runs the pass on a copy in a worker thread (as the window does); ``apply_edit``
    with it installs that result without running the pass again, and refuses once the graph moved."""
    import threading

    doc = Document(load_source(tmp_path, RESNET_LIKE))
    code_before, x = doc.module().code, doc.loaded.example_inputs
    box = {}
    worker = threading.Thread(target=lambda: box.update(p=doc.prepare_edit(FUSE)))
    worker.start()
    worker.join(120)
    assert doc.module().code == code_before and not doc.can_undo   # preparing changed nothing
    import fxstudio.core.edits.whole_graph as whole_graph

    def not_again(*_a, **_k):
        raise AssertionError("the prepared pass ran again")

    monkeypatch.setattr(whole_graph, "run_pass", not_again)
    result = doc.apply_edit(FUSE, prepared=box["p"])
    assert result.removed and "fuse_conv_bn" in result.label
    assert torch.allclose(out(doc.module(), x), out(doc.original, x), atol=1e-5)
    doc.undo()
    assert doc.module().code == code_before
    with pytest.raises(EditRefused, match="changed while the pass ran"):
        doc.apply_edit(FUSE, prepared=box["p"])   # the undo moved the graph: the result is stale
    with pytest.raises(EditRefused, match="Only run_pass"):
        doc.prepare_edit({"op": "erase", "node": "relu"})
