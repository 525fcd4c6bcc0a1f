"""A pass edit compiles the edited module's code once (issue #14's speed goal): the working copy is
built without compiling, the pass's own ``recompile()`` is deferred, the runner compiles the result
once and the document adopts that code (``module()`` does not compile again). The pass still sees
current code whenever it reads or runs its module, and a rollback puts the old code back."""

from __future__ import annotations

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from tests.compile_spy import compiles  # noqa: F401 - fixture
from tests.core.passes.pass_helpers import trusting, write
from tests.model_files import model_source

MODEL = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.neg(self.fc1(x)))


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 4),)
''')

PASSES = '''
import torch

SEEN = {}


def neg_to_sigmoid(gm):
    for node in gm.graph.nodes:
        if node.target is torch.neg:
            node.target = torch.sigmoid
    gm.recompile()
    SEEN["code"] = gm.code  # reading the code compiles it: the pass sees its change
    SEEN["out"] = gm(torch.ones(1, 4))  # and running the module runs the changed graph
    return gm


def neg_to_tanh_quietly(gm):
    for node in gm.graph.nodes:
        if node.target is torch.neg:
            node.target = torch.tanh
    gm.recompile()
    return gm
'''


@pytest.fixture
def doc(tmp_path):
    write(tmp_path, "passes.py", PASSES)
    return trusting(Document(load_model(write(tmp_path, "net.py", MODEL))), tmp_path)


def _fc_path(doc, x, act):
    m = doc.loaded.module
    return m.fc2(act(m.fc1(x)))


def test_a_pass_edit_compiles_once_and_the_document_keeps_that_code(doc, compiles):
    x = doc.loaded.example_inputs[0]
    doc.module()
    compiles.clear()
    doc.apply_edit({"op": "run_pass", "file": "passes.py", "name": "neg_to_tanh_quietly"})
    assert len(compiles) == 1  # was 4: the copy's __init__, the pass, the runner's check, module()
    assert not doc.stale
    gm = doc.module()
    assert len(compiles) == 1
    assert gm.code == gm.graph.python_code(root_module="self").src and "torch.tanh" in gm.code
    torch.testing.assert_close(gm(x), _fc_path(doc, x, torch.tanh))
    torch.testing.assert_close(doc.original(x), _fc_path(doc, x, torch.neg))
    doc.undo()
    assert doc.stale and "torch.neg" in doc.module().code
    torch.testing.assert_close(doc.module()(x), _fc_path(doc, x, torch.neg))
    doc.redo()
    torch.testing.assert_close(doc.module()(x), _fc_path(doc, x, torch.tanh))


def test_the_pass_sees_current_code_when_it_reads_or_runs_its_module(doc):
    doc.apply_edit({"op": "run_pass", "file": "passes.py", "name": "neg_to_sigmoid"})
    from fxstudio.core.passes import load_pass

    seen = load_pass(doc._state.pass_trust.resolve("passes.py"), "neg_to_sigmoid").module.SEEN
    assert "torch.sigmoid" in seen["code"] and "torch.neg" not in seen["code"]
    ones = torch.ones(1, 4)
    torch.testing.assert_close(seen["out"], _fc_path(doc, ones, torch.sigmoid))
    torch.testing.assert_close(doc.module()(ones), seen["out"])


def test_a_refused_compound_puts_the_old_code_back_without_a_recompile(doc, compiles):
    x = doc.loaded.example_inputs[0]
    code = doc.module().code
    compiles.clear()
    with pytest.raises(EditRefused, match="Edit 2 of 2"):
        doc.apply_edits([{"op": "run_pass", "file": "passes.py", "name": "neg_to_tanh_quietly"},
                         {"op": "rename", "node": "no_such_node", "name": "y"}])
    assert not doc.stale and doc.edited.code == code and not doc.history
    torch.testing.assert_close(doc.module()(x), _fc_path(doc, x, torch.neg))
    assert len(compiles) == 1  # the pass's result only


def test_a_pass_after_other_edits_leaves_code_for_all_of_them(doc):
    x = doc.loaded.example_inputs[0]
    doc.apply_edits([{"op": "rename", "node": "fc1", "name": "first"},
                     {"op": "run_pass", "file": "passes.py", "name": "neg_to_tanh_quietly"}])
    assert not doc.stale and "first = self.fc1(x)" in doc.edited.code and "torch.tanh" in doc.edited.code
    torch.testing.assert_close(doc.module()(x), _fc_path(doc, x, torch.tanh))
    doc.apply_edit({"op": "rename", "node": "first", "name": "again"})
    assert doc.stale and "again = self.fc1(x)" in doc.module().code
