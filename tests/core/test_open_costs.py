"""What an open no longer pays for (issue #15's first frame), each checked against the full-price
answer it replaces:

- ``contiguous_metadata`` gives the ``TensorMetadata`` torch's ``_extract_tensor_metadata`` gives,
  or None where it cannot tell (then torch is asked), on real, meta and fake tensors;
- a document's graph modules generate their code when first used, not when the document is built,
  and that code is the code torch generates; running them gives the model's output;
- ``Document(adopt_graph=True)`` takes the loaded graph itself, and edits still leave the original
  as it was.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from fxstudio.core import fx_compat
from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.core.metadata import contiguous_metadata
from fxstudio.resources import example_path
from tests.compile_spy import compiles  # noqa: F401 - fixture


def _tensors():
    base = torch.randn(2, 3, 4, 5)
    out = [torch.zeros(3, 4), torch.zeros(3, 4).t(), base.to(memory_format=torch.channels_last),
           torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d), torch.zeros(1, 3, 1, 1),
           torch.zeros(0, 3), torch.zeros(5), torch.tensor(3.0), torch.zeros(2, 1, 4)[:, :, ::2],
           torch.empty(4, 4, device="meta"), torch.zeros(4, 1).expand(4, 3), base[:, :, 1:3],
           nn.Parameter(torch.zeros(2, 2)), torch.zeros(2, 2, dtype=torch.int64), torch.zeros(3, requires_grad=True),
           torch.zeros(3, 3).to_sparse(), torch.quantize_per_tensor(torch.zeros(4), 0.1, 0, torch.quint8)]
    with FakeTensorMode():
        out += [torch.zeros(3, 4), torch.zeros(3, 4).t(), torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)]
    return out


@pytest.mark.parametrize("index", range(len(_tensors())))
def test_contiguous_metadata_is_torchs_answer_or_none(index):
    tensor = _tensors()[index]
    fast = contiguous_metadata(tensor)
    if fast is not None:
        assert fast == fx_compat.extract_tensor_metadata(tensor)
        assert fast.memory_format == torch.contiguous_format


def test_contiguous_metadata_answers_for_plain_contiguous_tensors():
    assert contiguous_metadata(torch.zeros(3, 4)) is not None
    assert contiguous_metadata(torch.zeros(3, 4).t()) is None  # torch decides: not contiguous
    assert contiguous_metadata(torch.zeros(3, 3).to_sparse()) is None


@pytest.fixture
def loaded():
    return load_model(example_path("two_linear.py"))


def test_a_document_generates_code_when_first_used(loaded, compiles):
    doc = Document(loaded)
    assert compiles == []  # building the document generated no code
    x = loaded.example_inputs[0]
    expected = loaded.module(x)
    torch.testing.assert_close(doc.module()(x), expected)
    assert len(compiles) == 1
    assert doc.edited.code == doc.edited.graph.python_code(root_module="self").src
    torch.testing.assert_close(doc.original(x), expected)
    assert len(compiles) == 2  # the original's code when it was first run


def test_deferred_code_follows_edits(loaded):
    doc = Document(loaded)
    x = loaded.example_inputs[0]
    doc.apply_edit({"op": "set_target", "node": "add", "target": "torch.sub"})
    assert "torch.sub" in doc.module().code
    torch.testing.assert_close(doc.module()(x), loaded.module.linear1(x) - loaded.module.linear2(x))
    doc.undo()
    torch.testing.assert_close(doc.module()(x), loaded.module(x))


def test_an_adopted_graph_is_the_original_and_edits_leave_it(loaded):
    graph = loaded.graph_module.graph
    names = [n.name for n in graph.nodes]
    doc = Document(loaded, adopt_graph=True)
    assert doc.original.graph is graph and doc.edited.graph is not graph
    doc.apply_edit({"op": "set_target", "node": "add", "target": "torch.sub"})
    assert [n.name for n in doc.original.graph.nodes] == names
    assert all(n.target is not torch.sub for n in doc.original.graph.nodes)
    x = loaded.example_inputs[0]
    torch.testing.assert_close(doc.original(x), loaded.module(x))
