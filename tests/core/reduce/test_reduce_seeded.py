"""fxstudio reduce on seeded problems (issue #27, item 3): a constant changed deep inside GPT-2, one
quantized conv deep inside a float CNN (torchao PT2E), and an edit that makes a node raise. The repro
must hold at most 5% of the nodes and show the problem again in a fresh Python process."""

import copy
import subprocess
import sys
import textwrap

import pytest
import torch

from fxstudio.core.document import replay
from fxstudio.core.errors import FxStudioError
from fxstudio.core.loading import load_model
from fxstudio.core.reduce import ReduceError, reduce_graphs, write_repro
from tests.model_files import DEEP_CNN_BODY, write_model

GPT2_FILE = """
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.inner = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=64, n_head=2, vocab_size=96, n_positions=16,
                                                use_cache=False, bos_token_id=0, eos_token_id=0)).eval()

    def forward(self, input_ids):
        return self.inner(input_ids, use_cache=False, return_dict=False)[0]


def get_model():
    return Model().eval()


def example_inputs():
    return (torch.randint(0, 96, (1, 8), generator=torch.Generator().manual_seed(1)),)
"""

@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2") / "gpt2_small.py"
    path.write_text(textwrap.dedent(GPT2_FILE))
    return load_model(path, tracer="export")


def _script(*edits):
    return {"format": "fxstudio.edits/1", "edits": list(edits)}


def _gelu_cube_muls(loaded):
    """The ``0.044715 * x**3`` node of each GPT-2 block's GELU, in graph order."""
    return [n.name for n in loaded.graph_module.graph.nodes
            if n.op == "call_function" and len(n.args) == 2 and n.args[1] == pytest.approx(0.044715)]


def _run_repro(path):
    """Run a repro as a user would: ``python repro.py`` in its folder, in a fresh process."""
    done = subprocess.run([sys.executable, path.name], cwd=path.parent, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout.strip()


def _constant_doc(gpt2):
    deep = _gelu_cube_muls(gpt2)[-1]  # the last block's
    return deep, replay(gpt2, _script({"op": "set_arg", "node": deep, "key": 1, "value": "0.05"}))


def test_a_constant_changed_deep_inside_gpt2_reduces_to_a_tiny_repro_that_diverges(gpt2, tmp_path):
    deep, doc = _constant_doc(gpt2)
    reduction = reduce_graphs(doc.original, doc.module(), tuple(gpt2.example_inputs))
    assert (reduction.node, reduction.kind) == (deep, "divergence")
    (osub, esub), (owhole, ewhole) = reduction.sub_nodes, reduction.whole_nodes
    assert ewhole > 200 and esub <= 0.05 * ewhole and osub <= 0.05 * owhole
    assert "0.05" in reduction.edited.code and "0.044715" in reduction.original.code

    # names from files land in the header's comments: a line break there must not start a line of code
    written = write_repro(reduction, tmp_path / "repro.py", about=["model x.py\nraise SystemExit(3)"])
    text = written.path.read_text()
    assert "# model x.py raise SystemExit(3)" in text
    assert "fxstudio" not in "\n".join(line for line in text.splitlines() if "import" in line)
    assert torch.load(written.data_path, weights_only=True)["inputs"].keys() == reduction.inputs.keys()
    code, said = _run_repro(written.path)
    assert code == 1 and said.startswith(f"%{deep}: reproduced: the edited subgraph diverges")

    # the same file with the constant put back finds nothing, and says so with exit 0
    written.path.write_text(text.replace(", 0.05)", ", 0.044715)"))
    code, said = _run_repro(written.path)
    assert code == 0 and "not reproduced: within tolerance" in said


def test_a_node_downstream_of_the_divergence_grows_the_region_back_to_the_edit(gpt2):
    deep, doc = _constant_doc(gpt2)
    edited = doc.module()
    cube = next(n for n in edited.graph.nodes if n.name == deep)
    later = next(iter(next(iter(cube.users)).users))  # two nodes further down: x + 0.044715 x**3, then * sqrt(2/pi)
    reduction = reduce_graphs(doc.original, edited, tuple(gpt2.example_inputs), node=later.name)
    assert reduction.node == later.name and reduction.verdict.startswith("reproduced")
    names = [n.name for n in reduction.edited.graph.nodes]
    assert deep in names and len(names) <= 8  # the edited constant is inside; the rest of the model is not


def test_an_edit_that_makes_a_node_raise_reduces_to_that_node(gpt2, tmp_path):
    view = next(n for n in gpt2.graph_module.graph.nodes
                if n.op == "call_function" and "view" in str(n.target) and list(n.args[1]) == [-1, 256])
    doc = replay(gpt2, _script({"op": "set_arg", "node": view.name, "key": 1, "value": "[-1, 255]"}))
    reduction = reduce_graphs(doc.original, doc.module(), tuple(gpt2.example_inputs))
    assert (reduction.node, reduction.kind) == (view.name, "exception")
    assert reduction.expected["type"] == "RuntimeError" and "[-1, 255]" in reduction.expected["message"]
    assert reduction.sub_nodes[1] <= 0.05 * reduction.whole_nodes[1]
    written = write_repro(reduction, tmp_path / "raises.py")
    code, said = _run_repro(written.path)
    assert code == 1 and f"raises RuntimeError: shape '[-1, 255]'" in said


def test_one_quantized_conv_deep_in_a_float_cnn_reduces_to_that_conv(tmp_path):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)

    loaded = load_model(write_model(tmp_path / "deep_cnn.py", DEEP_CNN_BODY), tracer="export")
    inputs = tuple(loaded.example_inputs)
    quantizer = X86InductorQuantizer().set_module_name_qconfig("blocks.40.0", get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(copy.deepcopy(loaded.graph_module), quantizer)
    prepared(*inputs)
    quantized = convert_pt2e(prepared)

    reduction = reduce_graphs(loaded.graph_module, quantized, inputs, match="name")
    assert reduction.node == "conv2d_40" and reduction.kind == "divergence"
    assert reduction.sub_nodes[1] <= 0.05 * reduction.whole_nodes[1]
    assert "quantize_per_tensor" in reduction.edited.code and "quantize" not in reduction.original.code
    written = write_repro(reduction, tmp_path / "quantized_conv.py", loaded=loaded)  # checked in a fresh process
    assert written.verified and written.output.startswith("%conv2d_40: reproduced: the edited subgraph diverges")


def test_nothing_to_reduce_and_unknown_nodes_are_refused(gpt2):
    doc = replay(gpt2, _script({"op": "rename", "node": _gelu_cube_muls(gpt2)[0], "name": "renamed"}))
    with pytest.raises(ReduceError, match="nothing to reduce"):
        reduce_graphs(doc.original, doc.module(), tuple(gpt2.example_inputs))
    with pytest.raises(FxStudioError, match="no node %missing") as info:
        reduce_graphs(doc.original, doc.module(), tuple(gpt2.example_inputs), node="missing")
    assert info.value.exit_code == 2
    with pytest.raises(ReduceError, match="does not diverge"):
        reduce_graphs(doc.original, doc.module(), tuple(gpt2.example_inputs), node="renamed")
