"""`fxstudio compare MODEL EDITS --node-data OUT.json --metric M` in a subprocess: Model Explorer node
data whose figures agree with plain torch, and bad usage as one line with exit 2."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

QUANT_CNN = Path(__file__).resolve().parents[1] / "corpus" / "passes" / "quant_cnn.py"
ROOT = Path(__file__).resolve().parents[2]


def _fxstudio(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "fxstudio", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def edits(tmp_path_factory):
    folder = tmp_path_factory.mktemp("node_data_cli")
    path = folder / "edits.json"
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": [
        {"op": "set_target", "node": "relu_1", "target": "torch.sigmoid"}]}))
    return path


def _reference():
    """The original's conv2 output and both models' final outputs, in plain torch."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("quant_cnn_cli_ref", QUANT_CNN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m, (x,) = mod.get_model(), mod.example_inputs()
    with torch.no_grad():
        h = m.relu(m.bn1(m.conv1(x)))
        c2 = m.conv2(h)
        edited = m.fc(torch.flatten(m.pool(torch.sigmoid(c2) + h), 1))
        return c2, m(x), edited


def test_isolated_error_written_as_model_explorer_node_data(edits):
    out = edits.parent / "isolated.json"
    result = _fxstudio("compare", QUANT_CNN, edits, "--node-data", out, "--metric", "isolated", cwd=edits.parent)
    assert result.returncode == 0, result.stderr
    assert f"written to {out}" in result.stderr
    data = json.loads(out.read_text())
    results = data["results"]
    c2, _, _ = _reference()
    assert results["relu_1"]["value"] == pytest.approx((torch.sigmoid(c2) - torch.relu(c2)).abs().max().item(), rel=1e-6)
    assert results["fc"]["value"] == 0.0 and results["add"]["value"] == 0.0
    assert data["fxstudio"]["metric"] == "isolated" and data["gradient"][0]["stop"] == 0


def test_default_metric_is_the_accumulated_error_and_sqnr_has_infinities_aside(edits):
    out = edits.parent / "error.json"
    assert _fxstudio("compare", QUANT_CNN, edits, "--node-data", out, "--json", cwd=edits.parent).returncode == 0
    _, reference, edited = _reference()
    assert json.loads(out.read_text())["results"]["fc"]["value"] == pytest.approx(
        (edited - reference).abs().max().item(), rel=1e-6)
    sqnr = edits.parent / "sqnr.json"
    assert _fxstudio("compare", QUANT_CNN, edits, "--node-data", sqnr, "--metric", "sqnr", cwd=edits.parent).returncode == 0
    data = json.loads(sqnr.read_text())
    assert data["fxstudio"]["non_finite"]["conv1"] == "inf" and "conv1" not in data["results"]
    noise = (edited - reference).double().square().sum().item()
    expected = 10 * math.log10(reference.double().square().sum().item() / noise)
    assert data["results"]["fc"]["value"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("extra, message", [
    (("--metric", "time"), "--metric chooses what --node-data writes"),
    (("--node-data", "no/such/folder/out.json"), "not a file in an existing folder"),
])
def test_bad_usage_is_one_line_and_exit_2(edits, extra, message):
    result = _fxstudio("compare", QUANT_CNN, edits, *extra, cwd=edits.parent)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
