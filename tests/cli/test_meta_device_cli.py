"""``--device meta`` and ``--weights`` through the real CLI (issue #28): inspect, apply and
export without weights; compare refuses until a checkpoint is given, then agrees with plain torch in
a fresh process; a checkpoint that does not fit is one line, exit 2; a model whose float32 weights
would take 4 GiB opens in a process whose address space is limited far below that."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from tests.core.loading.hf_files import ROOT, error_lines, fxstudio
from tests.core.loading.meta_files import MLP_SOURCE, llama_source, save_checkpoint, write

EDITS = {"format": "fxstudio.edits/1", "edits": [{"op": "set_target", "node": "relu", "target": "torch.sigmoid"}]}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """The MLP model file, an edit script for it and a checkpoint of real values."""
    folder = tmp_path_factory.mktemp("meta_cli")
    path = write(folder, "mlp_cli.py", MLP_SOURCE)
    (folder / "edits.json").write_text(json.dumps(EDITS))
    sys.path.insert(0, str(folder))
    try:
        import mlp_cli
    finally:
        sys.path.remove(str(folder))
    save_checkpoint(mlp_cli.MLP(), folder / "mlp.safetensors")
    return path


def test_inspect_and_apply_without_weights(mlp):
    inspect = fxstudio("inspect", str(mlp), "--device", "meta", "--json", cwd=mlp.parent)
    assert inspect.returncode == 0, inspect.stderr[-2000:]
    nodes = {n["name"]: n for n in json.loads(inspect.stdout)["nodes"]}
    assert nodes["fc1"]["shape"] == [4, 32] and nodes["mul"]["shape"] == [4, 8]
    out = mlp.parent / "applied.py"
    apply = fxstudio("apply", str(mlp), str(mlp.parent / "edits.json"), "--device", "meta", "-o", str(out),
                     cwd=mlp.parent)
    assert apply.returncode == 0, apply.stderr[-2000:]
    assert "torch.sigmoid" in out.read_text()


def _run_export(py, cwd):
    """Run the exported file's model on its example inputs in a fresh process: the output's shape."""
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(py.parent)!r})
        import {py.stem} as m
        model = m.get_model()
        out = model(*m.example_inputs())
        out = out[0] if isinstance(out, (tuple, list)) else out
        print(list(out.shape), next(model.parameters()).device, bool(out.isfinite().all()))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


def test_export_writes_a_file_with_random_weights(mlp):
    out = mlp.parent / "exported_fx.py"
    proc = fxstudio("export", str(mlp), "--device", "meta", "-o", str(out), cwd=mlp.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no weights (built on the meta device)" in proc.stdout
    assert _run_export(out, mlp.parent) == ["[4,", "8]", "cpu", "True"]


def test_export_of_a_meta_llama_runs_on_the_cpu(tmp_path):
    pytest.importorskip("transformers")
    path = write(tmp_path, "llama_cli.py", llama_source())
    out = tmp_path / "llama_exported.py"
    proc = fxstudio("export", str(path), "--device", "meta", "--tracer", "export", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "type='meta'" not in out.read_text()  # export's device=meta constants are the cpu's in the file
    assert _run_export(out, tmp_path) == ["[1,", "8,", "1000]", "cpu", "True"]


def test_compare_refuses_without_weights(mlp):
    proc = fxstudio("compare", str(mlp), str(mlp.parent / "edits.json"), "--device", "meta", cwd=mlp.parent)
    assert proc.returncode == 2
    assert error_lines(proc) == [
        "fxstudio: the model was built on the meta device: it has no weights to run. Give its checkpoint "
        "with --weights CKPT.safetensors, a file or a folder of shards (in the window: File > Open with "
        "Options, Weights)."]
    assert "Traceback" not in proc.stderr


PLAIN_TORCH = """
import sys, json, torch
from safetensors.torch import load_file
sys.path.insert(0, sys.argv[1])
import mlp_cli
model = mlp_cli.MLP()
model.load_state_dict(load_file(sys.argv[2]))
x = mlp_cli.example_inputs()[0]
with torch.no_grad():
    h = torch.relu(model.fc1(x))
    original = model.fc2(h) * model.scale
    edited = model.fc2(torch.sigmoid(model.fc1(x))) * model.scale
print(json.dumps(float((original - edited).abs().max())))
"""


def test_compare_with_weights_agrees_with_plain_torch(mlp):
    ckpt = mlp.parent / "mlp.safetensors"
    proc = fxstudio("compare", str(mlp), str(mlp.parent / "edits.json"), "--device", "meta", "--weights", str(ckpt),
                    "--json", cwd=mlp.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    plain = subprocess.run([sys.executable, "-c", PLAIN_TORCH, str(mlp.parent), str(ckpt)], capture_output=True,
                           text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert plain.returncode == 0, plain.stderr[-2000:]
    expected = json.loads(plain.stdout)
    assert expected > 0.01  # the edit changes the output: a run on other weights would give another number
    assert report["outputs"][0]["max_abs"] == pytest.approx(expected, rel=1e-5)


def test_a_checkpoint_with_a_wrong_shape_is_one_line(mlp, tmp_path):
    from safetensors.torch import save_file

    save_file({"fc1.weight": torch.zeros(2, 2)}, str(tmp_path / "wrong.safetensors"))
    proc = fxstudio("inspect", str(mlp), "--device", "meta", "--weights", str(tmp_path / "wrong.safetensors"),
                    cwd=mlp.parent)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = error_lines(proc)
    assert "'fc1.weight' has shape (2, 2) in the checkpoint, (32, 16) in the model" in line


BIG = 32768  # one 32768x32768 float32 weight: 4 GiB


def test_a_4_gib_model_opens_with_2_gib_of_address_space_beyond_torchs_own(tmp_path):
    path = write(tmp_path, "big_meta.py", textwrap.dedent(f"""
        import torch
        from torch import nn


        class Big(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear({BIG}, {BIG}, bias=False)

            def forward(self, x):
                return torch.relu(self.proj(x))


        def example_inputs():
            return (torch.randn(2, {BIG}),)
    """))
    # What the process maps before any weight (torch's libraries: ~1 GiB of address space for the CPU
    # build, several for a CUDA build), plus half of what the weights alone would take.
    probe = subprocess.run([sys.executable, "-c", "import torch, fxstudio.cli_commands.inspect, fxstudio.core.loading; "
                            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmPeak')][0])"],
                           capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert probe.returncode == 0, probe.stderr[-2000:]
    limit = int(probe.stdout.split()[-1]) * 1024 + (2 << 30)
    code = ("import resource, sys, runpy; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0})); "
            "sys.argv = ['fxstudio'] + sys.argv[1:]; runpy.run_module('fxstudio', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code.format(limit), "inspect", str(path), "--device", "meta"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2×32768" in proc.stdout and "4.0 GiB of parameters not allocated" in proc.stdout
    refused = subprocess.run([sys.executable, "-c", code.format(limit), "inspect", str(path)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen"})
    assert refused.returncode == 2  # the same model with its weights does not fit under that limit
    [line] = error_lines(refused)
    assert "can't allocate memory" in line and "open it with --device meta" in line
