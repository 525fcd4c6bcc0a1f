"""Issue #15 defect 5: a pickled ``GraphModule`` and a model ``.py`` without example inputs open without
``--input-shape`` (fx traces without running), with "shapes unknown" said where the user looks; with
shapes given they are known; what needs a run (export verification, compare) says how to give inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import torch
from model_files import LINEAR_RELU_BODY, write_model

BODY = LINEAR_RELU_BODY


def _fxstudio(*args, cwd):
    return subprocess.run([sys.executable, "-m", "fxstudio", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def _pickled_graph_module(tmp_path):
    namespace = {}
    exec(compile("import torch\nfrom torch import nn\n" + BODY, "net", "exec"), namespace)
    path = tmp_path / "traced.pt"
    torch.save(torch.fx.symbolic_trace(namespace["Net"]()), path)
    return path


def test_a_pickled_graph_module_opens_without_input_shapes(tmp_path):
    path = _pickled_graph_module(tmp_path)
    proc = _fxstudio("inspect", path, "--trust", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0]
    assert "inputs: none (shapes unknown: give --input-shape)" in header, header
    assert "note: shapes unknown: no example inputs (forward takes: x)" in proc.stdout
    assert "--input-shape 1,3,224,224" in proc.stdout and "failed" not in proc.stdout

    record = json.loads(_fxstudio("inspect", path, "--trust", "--json", cwd=tmp_path).stdout)
    assert record["example_inputs"] == [] and [n["name"] for n in record["nodes"]] == ["x", "lin", "relu", "mul", "output"]
    assert all(not n.get("shape") for n in record["nodes"]), record["nodes"]

    shaped = json.loads(_fxstudio("inspect", path, "--trust", "--json", "--input-shape", "2,4", cwd=tmp_path).stdout)
    assert shaped["example_inputs"] == ["2×4 float32"]
    assert not any(n.startswith("shapes unknown") for n in shaped["notes"])


def test_what_needs_a_run_says_how_to_give_inputs(tmp_path):
    model = write_model(tmp_path / "no_inputs.py", BODY)
    proc = _fxstudio("inspect", model, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "shapes unknown" in proc.stdout and "define example_inputs() in the file or give one --input-shape" in proc.stdout
    # Export verification runs the model: refused with the remedy; --no-verify writes the file.
    proc = _fxstudio("export", model, "-o", tmp_path / "out.py", cwd=tmp_path)
    assert proc.returncode == 1 and "no example inputs" in proc.stderr and "--input-shape" in proc.stderr
    assert not (tmp_path / "out.py").exists()
    proc = _fxstudio("export", model, "-o", tmp_path / "out.py", "--no-verify", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # torch.export runs the model: it still needs inputs, and says the fx tracer does not.
    proc = _fxstudio("inspect", model, "--tracer", "export", cwd=tmp_path)
    assert proc.returncode == 2 and "the fx tracer opens it without inputs" in proc.stderr
