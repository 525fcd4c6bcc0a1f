"""``fxstudio inspect`` as a user runs it: the table, the JSON record, both tracers."""

import json
import subprocess
import sys
from pathlib import Path

from fxstudio.cli import main
from fxstudio.resources import EXAMPLES_DIR

FXSTUDIO = Path(sys.executable).parent / "fxstudio"


def run_cli(capsys, *argv):
    code = main(["inspect", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_lists_every_node_aligned_with_the_lint_verdict(capsys):
    code, out, err = run_cli(capsys, EXAMPLES_DIR / "clamp.py")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "clamp.py::Clamp — fx tracer, 3 nodes, inputs: 4×4 float32"
    header = lines[2]
    assert header.split() == ["name", "op", "target", "args", "kwargs", "shape", "dtype"]
    clamp_row = next(line for line in lines if line.startswith("clamp "))
    assert clamp_row.split() == ["clamp", "call_function", "torch.clamp", "(%x,)", "{'min':", "-5.0,", "'max':", "5.0}", "4×4", "float32"]
    assert clamp_row.index("torch.clamp") == header.index("target")
    assert clamp_row.index("4×4") == header.index("shape")
    assert lines[-1] == "lint: ok — graph.lint() found no problems"


def test_json_carries_normalized_args_users_meta_module_and_source(capsys):
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "residual_cnn.py", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "fxstudio.inspect/1" and doc["tracer"] == "fx" and doc["lint"]["ok"] is True
    assert doc["node_count"] == len(doc["nodes"]) == 52
    nodes = {n["name"]: n for n in doc["nodes"]}
    conv = nodes["layer1_0_conv1"]
    assert "padding=(1, 1)" in conv["module_repr"] and "Conv2d(16, 16" in conv["module_repr"]
    assert conv["args"] == "(%relu,)" and conv["inputs"] == ["relu"] and conv["users"] == ["layer1_0_bn1"]
    assert conv["normalized"] == {"input": "%relu"}
    assert conv["tensor_meta"]["shape"] == [1, 16, 32, 32] and conv["tensor_meta"]["dtype"] == "float32"
    assert conv["module_path"] == "layer1.0.conv1"
    assert conv["module_stack"][1] == ["layer1.0", "BasicBlock"]
    assert conv["source"]["line"] == 29 and conv["source"]["file"].endswith("residual_cnn.py")
    flatten = nodes["flatten"]
    assert flatten["target"] == "torch.flatten"
    assert flatten["normalized"] == {"input": "%avgpool", "start_dim": "1", "end_dim": "-1"}
    assert nodes["add"]["normalized"] is None and "positional-only" in nodes["add"]["normalized_note"]
    assert nodes["x"]["users"] == ["conv1"] and nodes["output"]["inputs"] == ["fc"]


def test_export_tracer_hides_plumbing_unless_all(capsys):
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "two_linear.py", "--tracer", "export")
    names = [line.split()[0] for line in out.splitlines()[4:] if line.strip()]
    assert code == 0 and "linear1_weight" not in names and "_guards_fn" not in names
    assert "torch.ops.aten.linear.default" in out
    assert "5 export plumbing nodes hidden" in out
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "two_linear.py", "--tracer", "export", "--all")
    names = [line.split()[0] for line in out.splitlines()[4:] if line.strip()]
    assert "linear1_weight" in names and "_guards_fn" in names
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "two_linear.py", "--tracer", "export", "--json")
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["linear1_weight"]["hidden"] is True and nodes["linear"]["hidden"] is False
    assert nodes["linear"]["normalized"] == {"input": "%x", "weight": "%linear1_weight", "bias": "%linear1_bias"}


def test_concrete_arg_input_shape_and_leaf_module_options(capsys):
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "data_branch.py", "--concrete-arg", "positive=False")
    assert code == 0 and "neg" in out and "traced with concrete args positive=False" in out
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "add_mul.py", "--input-shape", "3,5")
    assert code == 0 and "inputs: 3×5 float32" in out and "replace the file's example inputs" in out
    code, out, _ = run_cli(capsys, EXAMPLES_DIR / "residual_cnn.py", "--leaf-module", "BasicBlock")
    assert code == 0 and "layer1.0 " in out and "layer1.0.conv1" not in out


def test_installed_console_script_prints_the_table():
    proc = subprocess.run(
        [str(FXSTUDIO), "inspect", str(EXAMPLES_DIR / "wrapped_fn.py")],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrapped_fn.scaled_shift" in proc.stdout and "{'scale': 3.0}" in proc.stdout
    assert "lint: ok" in proc.stdout
