"""`fxstudio reduce MODEL EDITS.json -o repro.py [--node N]` as a user runs it: the repro it writes
reproduces in a fresh process; bad input gets one line and exit 2; nothing to reduce exits 1."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fxstudio.cli import main
from tests.model_files import DEEP_CNN_BODY, SEEDED_BLOCKS_BODY, write_model

FXSTUDIO = [sys.executable, "-m", "fxstudio"]


@pytest.fixture
def blocks(tmp_path):
    """40 seeded Linear-tanh-(* 0.5)-(+ x) blocks, 162 nodes; block i's are blocks_i_fc, tanh_i, mul_i, add_i."""
    return f"{write_model(tmp_path / 'blocks.py', SEEDED_BLOCKS_BODY)}::Net"


def _edits(path: Path, *edits) -> Path:
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": list(edits)}))
    return path


def _run(*args, cwd):
    done = subprocess.run([*FXSTUDIO, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_a_changed_constant_becomes_a_repro_that_diverges_in_a_fresh_process(blocks, tmp_path):
    script = _edits(tmp_path / "edits.json", {"op": "set_arg", "node": "mul_30", "key": 1, "value": "0.25"})
    code, out, err = _run("reduce", blocks, str(script), "-o", "repro.py", cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("divergence at %mul_30")
    assert lines[1].startswith("subgraph: 3 of 162 nodes of the edited graph (1.9%), 3 of 162 of the original")
    assert lines[2].startswith("error: the edited subgraph diverges from the original (max abs error ")
    assert "verified in a fresh process: %mul_30: reproduced" in lines[-1]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("repro")) == ["repro.data.pt", "repro.py"]

    repro = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert repro.returncode == 1 and repro.stdout.startswith("%mul_30: reproduced")
    assert "def forward(self, tanh_30):" in (tmp_path / "repro.py").read_text()


def test_a_node_that_raises_becomes_a_repro_of_the_exception(blocks, tmp_path, capsys):
    script = _edits(tmp_path / "raise.json",
                    {"op": "insert", "after": "tanh_30", "kind": "call_function", "target": "torch.reshape",
                     "args": "(%tanh_30, (3, 5))", "name": "bad"},
                    {"op": "set_arg", "node": "mul_30", "key": 0, "value": "%bad"})
    assert main(["reduce", blocks, str(script), "-o", str(tmp_path / "raises.py")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("exception at %bad")
    assert "no original counterpart (the node was added by the edits)" in out
    assert "error: the edited subgraph raises RuntimeError: shape '[3, 5]' is invalid for input of size 16" in out
    repro = subprocess.run([sys.executable, "raises.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert repro.returncode == 1 and "reproduced: the edited subgraph raises RuntimeError" in repro.stdout


QUANTIZE_ONE_CONV = """
def quantize_one_conv(gm, example_inputs):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)

    config = get_default_x86_inductor_quantization_config()
    prepared = prepare_pt2e(gm, X86InductorQuantizer().set_module_name_qconfig("blocks.40.0", config))
    prepared(*example_inputs)
    return convert_pt2e(prepared)
"""


def test_a_conv_quantized_by_a_trusted_pass_file_reduces_to_that_conv(tmp_path):
    model = write_model(tmp_path / "deep_cnn.py", DEEP_CNN_BODY)
    (tmp_path / "quantize.py").write_text(QUANTIZE_ONE_CONV)
    script = _edits(tmp_path / "quantize.json", {"op": "run_pass", "file": "quantize.py", "name": "quantize_one_conv"})
    code, out, err = _run("reduce", str(model), str(script), "-o", "conv.py", "--tracer", "export", "--trust-passes",
                          cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("divergence at %conv2d_40")
    # the input, its quantize and dequantize, the int8 weight, its scale, zero point and dequantize,
    # the bias, the conv, the output: 10 of 264 nodes (64 convs, one quantized)
    assert lines[1] == "subgraph: 10 of 264 nodes of the edited graph (3.8%), 5 of 259 of the original"
    assert lines[-1].startswith("verified in a fresh process: %conv2d_40: reproduced: the edited subgraph diverges")
    assert "quantize_per_tensor" in (tmp_path / "conv.py").read_text()


def test_node_picks_a_later_divergence_and_the_region_reaches_back_to_the_edit(blocks, tmp_path, capsys):
    script = _edits(tmp_path / "edits.json", {"op": "set_arg", "node": "mul_30", "key": 1, "value": "0.25"})
    assert main(["reduce", blocks, str(script), "-o", str(tmp_path / "later.py"), "--node", "%add_31"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("divergence at %add_31")
    # add_31 = mul_31 + add_30, add_30 = mul_30 + add_29: block 31's own branch (mul_31) is cut at its
    # original value, the path through the edited mul_30 is kept
    assert "subgraph: 7 of 162 nodes of the edited graph (4.3%), 7 of 162 of the original" in out
    text = (tmp_path / "later.py").read_text()
    assert "def forward(self, add_29, tanh_30, mul_31):" in text and "tanh_30 * 0.25" in text


@pytest.mark.parametrize("case", ["missing script", "unknown node", "not a .py", "no folder"])
def test_bad_input_is_one_line_and_exit_2(blocks, tmp_path, capsys, case):
    script = _edits(tmp_path / "edits.json", {"op": "set_arg", "node": "mul_30", "key": 1, "value": "0.25"})
    args = {"missing script": [blocks, str(tmp_path / "nope.json"), "-o", str(tmp_path / "r.py")],
            "unknown node": [blocks, str(script), "-o", str(tmp_path / "r.py"), "--node", "nowhere"],
            "not a .py": [blocks, str(script), "-o", str(tmp_path / "r.txt")],
            "no folder": [blocks, str(script), "-o", str(tmp_path / "missing" / "r.py")]}[case]
    assert main(["reduce", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("r.*"))


def test_edits_that_change_no_value_have_nothing_to_reduce(blocks, tmp_path, capsys):
    script = _edits(tmp_path / "rename.json", {"op": "rename", "node": "mul_30", "name": "halve"})
    assert main(["reduce", blocks, str(script), "-o", str(tmp_path / "r.py")]) == 1
    err = capsys.readouterr().err.strip()
    assert "nothing to reduce" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r.py").exists()
