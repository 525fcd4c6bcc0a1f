"""A ``.pt2`` opens editable without torch's program rebuild (issue #28, ``pt2_editable``).

Real archives (corpus models of ``fxstudio.testing``, a tiny GPT-2 and BERT, ResNet- and
MobileNet-style CNNs, an LSTM, the residual MLP, models with dtype/device/memory-format arguments,
keyword constants and an in-place buffer update) are opened by ``load_model`` in a fresh process,
which must not import torch's deserializer; the graph (names, targets, arguments), the weights and
the outputs must be those of ``torch.export.load(...).module()``. Programs the reader leaves to
torch (a higher-order ``torch.cond``, symbolic sizes) still open, through the full load. An edit
script recorded on the full load's document replays on the new one to the same code and outputs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.core.loading.pt2_editable_child import describe

ROOT = Path(__file__).resolve().parents[3]
FAST = ("gpt2", "bert", "resnet", "mobilenet_v2", "lstm_tagger", "mha_encoder", "mlp", "mixed", "keywords",
        "casts", "counting")
FALLBACK = ("branches", "dynamic")


def _run(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pt2_editable")
    _run("tests.core.loading.pt2_editable_archives", str(folder))
    return folder


@pytest.fixture(scope="module")
def opened(archives) -> dict:
    """What a fresh process made of each fast archive (``pt2_editable_child``)."""
    out = archives / "fast.pt"
    _run("tests.core.loading.pt2_editable_child", str(out), *(str(archives / f"{n}.pt2") for n in FAST))
    found = torch.load(out, weights_only=False)
    return {Path(path).stem: value for path, value in found.items()}


def test_the_reader_needs_neither_torchs_deserializer_nor_its_rebuild(opened):
    assert sorted(opened) == sorted(FAST)
    assert not any(v["rebuilt"] for v in opened.values())
    assert not any(v["deserializer"] for v in opened.values()), "torch._export.serde was imported"


@pytest.mark.parametrize("name", FAST)
def test_graph_weights_and_outputs_are_those_of_ep_module(archives, opened, name):
    mine = opened[name]
    reference = torch.export.load(archives / f"{name}.pt2").module()
    assert mine["graph"] == describe(reference)
    state = reference.state_dict()
    assert sorted(mine["state"]) == sorted(state)
    for key, value in state.items():
        assert torch.equal(mine["state"][key], value), key
    graph_module = torch.fx.GraphModule(reference, reference.graph)  # keyword inputs in their slots, as run
    with torch.no_grad():  # twice, as the child ran the module and its copy (a buffer updated in place)
        expected, again = graph_module(*mine["inputs"]), graph_module(*mine["inputs"])
    torch.testing.assert_close(mine["outputs"], expected, rtol=0, atol=0)
    torch.testing.assert_close(mine["copy_outputs"], again, rtol=0, atol=0)


@pytest.mark.parametrize("name", FALLBACK)
def test_what_the_reader_does_not_read_opens_through_torchs_full_load(archives, name):
    from fxstudio.core.loading import load_model

    loaded = load_model(archives / f"{name}.pt2")
    assert loaded.exported_program is not None
    reference = torch.export.load(archives / f"{name}.pt2").module()
    assert describe(loaded.graph_module) == describe(reference)
    torch.testing.assert_close(loaded.module(*loaded.example_inputs), reference(*loaded.example_inputs))


def test_an_edit_script_recorded_on_the_full_load_replays_on_the_editable_document(archives):
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model

    path = archives / "mixed.pt2"
    edits = [
        {"op": "set_arg", "node": "relu_1", "key": 0, "value": "%linear"},
        {"op": "set_target", "node": "relu_2", "target": "torch.ops.aten.sigmoid.default"},
        {"op": "insert", "after": "add_3", "kind": "call_function", "target": "torch.ops.aten.tanh.default",
         "args": "(%add_3,)", "kwargs": "{}", "name": "squash"},
        {"op": "set_arg", "node": "sum_1", "key": 0, "value": "%squash"},
        {"op": "set_arg", "node": "batch_norm", "key": 7, "value": "0.001"},
        {"op": "eliminate_dead_code"},
    ]
    full = Document(load_model(path, trust=True))  # torch.export.load + ep.module(): today's document
    for edit in edits:
        full.apply_edit(edit)
    script = full.edit_script() if hasattr(full, "edit_script") else {"format": "fxstudio.edits/1", "edits": edits}
    fast_model = load_model(path)
    assert fast_model.exported_program is None
    fast = Document(fast_model)
    for edit in script["edits"]:
        fast.apply_edit(edit)
    assert fast.edited.code == full.edited.code
    inputs = fast_model.example_inputs
    torch.testing.assert_close(fast.edited(*inputs), full.edited(*inputs), rtol=0, atol=0)
    assert not torch.equal(fast.edited(*inputs)[0], fast.original(*inputs)[0])


def test_the_value_tables_are_torchs():
    from torch._export.serde import serialize

    from fxstudio.core.loading import pt2_values
    from fxstudio.core.loading.pt2_limits import SCALAR_TYPES

    for code, dtype in serialize._SERIALIZE_TO_TORCH_DTYPE.items():
        assert SCALAR_TYPES.get(int(code)) == str(dtype).removeprefix("torch."), code
    for code, layout in serialize._SERIALIZE_TO_TORCH_LAYOUT.items():
        if layout is torch.strided or int(code) in pt2_values.LAYOUTS:
            assert pt2_values.torch_value("as_layout", int(code)) is layout
    for code, fmt in serialize._SERIALIZE_TO_TORCH_MEMORY_FORMAT.items():
        assert pt2_values.torch_value("as_memory_format", int(code)) is fmt
