"""Shared helpers for the pass tests: documents whose state trusts pass files, the two ops applied
through a Transaction (or through ``Document`` once they are declared), snapshots of weights."""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch

from fxstudio.core.document import Document
from fxstudio.core.edits import Changes, Transaction
from fxstudio.core.edits.whole_graph import op_replace_pattern, op_run_pass
from fxstudio.core.loading import load_model
from fxstudio.core.passes import PassTrust, trust_all
from fxstudio.resources import EXAMPLES_DIR, example_path
from tests.model_files import model_source

HANDLERS = {"run_pass": op_run_pass, "replace_pattern": op_replace_pattern}

# A ResNet-like model whose batch norms hold non-trivial statistics and affine parameters.
RESNET_LIKE = model_source('''

class Block(nn.Module):
    def __init__(self, c, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(c if stride == 1 else c // 2, c, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.down = None
        if stride != 1:
            self.down = nn.Sequential(nn.Conv2d(c // 2, c, 1, stride, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.down is None else self.down(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Conv2d(3, 8, 3, 1, 1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(Block(8), Block(8))
        self.layer2 = nn.Sequential(Block(16, 2), Block(16))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)
        self.fcbn = nn.BatchNorm1d(5)
        for m in self.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.3, 0.3)
        self.eval()

    def forward(self, x):
        x = self.relu(self.bn(self.stem(x)))
        x = self.layer2(self.layer1(x))
        return self.fcbn(self.fc(torch.flatten(self.pool(x), 1)))


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 3, 16, 16),)
''')


def write(tmp_path: Path, name: str, source: str) -> Path:
    """Write ``source`` (dedented) to ``tmp_path / name``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def load_source(tmp_path: Path, source: str, name: str = "net.py"):
    """Load a model file written from ``source``."""
    return load_model(write(tmp_path, name, source))


def trusting(doc: Document, base_dir: Path | None = None, allow_changed: bool = False) -> Document:
    """``doc`` with a state that trusts every pass file (``--trust-passes``)."""
    doc._state.pass_trust = PassTrust(base_dir=base_dir or EXAMPLES_DIR, trusted=trust_all,
                                      allow_changed=allow_changed)
    return doc


def example_doc(name: str, base_dir: Path | None = None) -> Document:
    """A trusting document on a built-in example (loaded afresh: passes must not touch it)."""
    return trusting(Document(load_model(example_path(name))), base_dir)


def apply(doc: Document, edit: dict) -> tuple[str, dict, Transaction]:
    """Run one pass op through a Transaction on the document's state (rolled back on refusal)."""
    tx = Transaction(doc._state)
    try:
        label, record = HANDLERS[edit["op"]](tx, edit)
    except Exception:
        tx.rollback()
        raise
    return label, record, tx


def revert(doc: Document, tx: Transaction) -> Changes:
    """Undo what ``tx`` did, as Document.undo does."""
    changes = Changes()
    for primitive in reversed(tx.done):
        primitive.revert(doc._state, changes)
    return changes


def reapply(doc: Document, tx: Transaction) -> Changes:
    """Redo what ``tx`` did, as Document.redo does."""
    changes = Changes()
    for primitive in tx.done:
        primitive.apply(doc._state, changes)
    return changes


def current(doc: Document) -> torch.fx.GraphModule:
    """The edited module, recompiled."""
    gm = doc._state.gm
    gm.recompile()
    return gm


def out(module, inputs):
    """``module(*inputs)`` without autograd."""
    with torch.no_grad():
        return module(*inputs)


def state_snapshot(module: torch.nn.Module) -> dict:
    """Every state tensor: the object, a clone of its values, its data_ptr and version."""
    return {k: (v, v.detach().clone(), v.data_ptr(), v._version)
            for k, v in module.state_dict(keep_vars=True).items()}


def assert_state_is(module: torch.nn.Module, snap: dict, same_objects: bool = True) -> None:
    """``module``'s state is exactly ``snap`` (bit for bit; the same tensor objects)."""
    now = module.state_dict(keep_vars=True)
    assert now.keys() == snap.keys()
    for k, (obj, value, ptr, version) in snap.items():
        v = now[k]
        assert torch.equal(v.detach(), value), k
        assert v.dtype == value.dtype and v.data_ptr() == ptr and v._version == version, k
        if same_objects:
            assert v is obj, k
