"""``fxstudio pass`` and the pass flags of ``fxstudio apply`` (issue #14), as a user runs them: real
``fxstudio`` / ``python -m fxstudio`` processes on the examples and their pass files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fxstudio.core.document import Document, replay
from fxstudio.core.loading import load_model
from fxstudio.core.passes import file_sha256
from fxstudio.resources import EXAMPLES_DIR, example_path

FXSTUDIO = Path(sys.executable).parent / "fxstudio"
PASSES = EXAMPLES_DIR / "passes"


def fx(*argv, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``fxstudio ARGV`` in a subprocess."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([str(FXSTUDIO), *map(str, argv)], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)


def module_fx(*argv, cwd=None) -> subprocess.CompletedProcess:
    """``python -m fxstudio ARGV`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "fxstudio", *map(str, argv)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env={**os.environ, "OMP_NUM_THREADS": "1"})


def one_error_line(proc) -> str:
    """The single ``fxstudio: ...`` line of stderr (never a traceback)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: "), proc.stderr
    return lines[0]


def write_script(path: Path, edits: list) -> Path:
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}))
    return path


def test_pass_runs_a_transformer_prints_the_changes_and_saves_a_replayable_script(tmp_path):
    spec = f"{PASSES / 'view_to_reshape.py'}::ViewToReshape"
    saved = tmp_path / "one.json"
    proc = module_fx("pass", example_path("view_reshape.py"), spec, "--save-script", saved, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Run pass view_to_reshape.py::ViewToReshape (1 added, 1 removed, 1 changed)"
    assert lines[1].startswith("nodes: 1 added, 1 removed,")
    assert "  added: reshape" in lines and "  removed: view" in lines
    assert proc.stderr == ""
    edits = json.loads(saved.read_text())["edits"]
    assert edits == [{"op": "run_pass", "file": str(PASSES / "view_to_reshape.py"), "name": "ViewToReshape",
                      "sha256": file_sha256(PASSES / "view_to_reshape.py")}]
    # The saved script replays with --trust-passes, to the same graph, from another folder.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = fx("apply", example_path("view_reshape.py"), saved, "--trust-passes", cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    assert any(line.split()[:3] == ["reshape", "call_method", "reshape"] for line in again.stdout.splitlines())
    assert not any(line.startswith("view ") for line in again.stdout.splitlines())


def test_a_saved_script_names_a_pass_file_beside_it_relatively(tmp_path):
    """A script and its pass file travel together: the recorded ``file`` is relative to the script."""
    folder = tmp_path / "project"
    (folder / "passes").mkdir(parents=True)
    shutil.copy(PASSES / "relu_to_gelu.py", folder / "passes" / "relu_to_gelu.py")
    saved = folder / "edits.json"
    proc = fx("pass", example_path("residual_cnn.py"), "passes/relu_to_gelu.py::relu_to_gelu",
              "--save-script", saved, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    edit = json.loads(saved.read_text())["edits"][0]
    assert edit["file"] == os.path.join("passes", "relu_to_gelu.py")
    moved = tmp_path / "moved"
    shutil.move(str(folder), str(moved))
    again = fx("apply", example_path("residual_cnn.py"), moved / "edits.json", "--trust-passes", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_apply_refuses_a_pass_file_without_trust_passes_and_runs_built_ins(tmp_path):
    shutil.copy(PASSES / "relu_pattern.py", tmp_path / "relu_pattern.py")
    script = write_script(tmp_path / "edits.json", [
        {"op": "replace_pattern", "file": "relu_pattern.py", "pattern": "pattern", "replacement": "replacement"}])
    proc = fx("apply", example_path("relu_add.py"), script, cwd=EXAMPLES_DIR)
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc)
    assert str(tmp_path / "relu_pattern.py") in line and "--trust-passes" in line, line
    trusted = fx("apply", example_path("relu_add.py"), script, "--trust-passes", cwd=EXAMPLES_DIR)
    assert trusted.returncode == 0, trusted.stderr
    assert "torch.relu" not in trusted.stdout and "operator.gt" in trusted.stdout
    builtin = write_script(tmp_path / "builtin.json", [{"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"}])
    proc = fx("apply", example_path("conv_bn_relu.py"), builtin)
    assert proc.returncode == 0, proc.stderr
    assert "bn1" not in proc.stdout and "lint: ok" in proc.stdout


def test_a_changed_pass_file_needs_allow_changed_passes(tmp_path):
    mine = tmp_path / "view_to_reshape.py"
    shutil.copy(PASSES / "view_to_reshape.py", mine)
    script = write_script(tmp_path / "edits.json", [
        {"op": "run_pass", "file": "view_to_reshape.py", "name": "ViewToReshape", "sha256": file_sha256(mine)}])
    assert fx("apply", example_path("view_reshape.py"), script, "--trust-passes").returncode == 0
    mine.write_text(mine.read_text() + "\n# edited since\n")
    proc = fx("apply", example_path("view_reshape.py"), script, "--trust-passes")
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc)
    assert str(mine) in line and "--allow-changed-passes" in line, line
    proc = fx("apply", example_path("view_reshape.py"), script, "--trust-passes", "--allow-changed-passes")
    assert proc.returncode == 0, proc.stderr


CHECK_EXPORT = r"""
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("fused_export", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.get_model()
assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
x = torch.load(sys.argv[2], weights_only=True)
with torch.no_grad():
    torch.save(model(x), sys.argv[3])
"""


def _fused_outputs_in_a_fresh_process(tmp_path, out: Path, x: torch.Tensor) -> torch.Tensor:
    torch.save(x, tmp_path / "x.pt")
    proc = subprocess.run([sys.executable, "-c", CHECK_EXPORT, str(out), str(tmp_path / "x.pt"),
                           str(tmp_path / "y.pt")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return torch.load(tmp_path / "y.pt", weights_only=True)


@pytest.mark.parametrize("command", ["apply", "pass"])
def test_export_after_fuse_conv_bn_reproduces_the_fused_model(tmp_path, command):
    """The fused weights are what gets exported: the file run in a fresh process gives the fused
    model's outputs (bit for bit) and no batch norm is left."""
    model = example_path("conv_bn_relu.py")
    out = tmp_path / "fused.py"
    edit = {"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"}
    if command == "apply":
        proc = fx("apply", model, write_script(tmp_path / "fuse.json", [edit]), "-o", out)
    else:
        proc = fx("pass", model, "fxstudio.passes.fuse_conv_bn", "-o", out, "--save-script", tmp_path / "s.json")
        assert json.loads((tmp_path / "s.json").read_text())["edits"] == [edit]
    assert proc.returncode == 0, proc.stderr
    assert "verified: outputs identical to the graph in memory" in proc.stdout
    loaded = load_model(model)
    doc = replay(loaded, {"format": "fxstudio.edits/1", "edits": [edit]})
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        fused, original = doc.module()(x), Document(load_model(model)).module()(x)
    exported = _fused_outputs_in_a_fresh_process(tmp_path, out, x)
    assert torch.equal(exported, fused)
    assert (exported - original).abs().max() <= 1e-5  # fusion keeps the numerics


def test_pass_list_names_the_passes_of_a_file_and_the_built_ins():
    proc = fx("pass", "--list", PASSES / "relu_pattern.py")
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[:2] for line in proc.stdout.splitlines()] == [
        ["relu_pattern.py::pattern", "function"], ["relu_pattern.py::replacement", "function"]]
    proc = fx("pass", "--list", PASSES / "view_to_reshape.py")
    assert proc.stdout.split("\t")[:2] == ["view_to_reshape.py::ViewToReshape", "transformer"]
    proc = fx("pass", "--list", "fxstudio.passes")
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "fxstudio.passes.fuse_conv_bn", "fxstudio.passes.remove_dropout", "fxstudio.passes.fold_constants",
        "fxstudio.passes.normalize_args", "fxstudio.passes.eliminate_dead_code"]


@pytest.mark.parametrize("argv, code, phrase", [
    (["MODEL", "nope.py::x"], 2, "There is no pass file"),
    (["MODEL", "PASSES/view_to_reshape.py::Nope"], 1, "defines no pass 'Nope'"),
    (["MODEL", "PASSES/view_to_reshape.py::"], 2, "expected passes.py::name"),
    (["MODEL", "torch.nn.ReLU"], 2, "expected passes.py::name or a built-in"),
    (["MODEL", "fxstudio.passes.nope"], 1, "Unknown built-in pass"),
    (["MODEL", "fxstudio.passes.fuse_conv_bn"], 1, "changed nothing"),
    (["MODEL"], 2, "needs MODEL and PASS"),
    (["--list", "nope.py"], 2, "There is no pass file"),
])
def test_pass_errors_are_one_line(tmp_path, argv, code, phrase):
    argv = [str(example_path("view_reshape.py")) if a == "MODEL" else a.replace("PASSES", str(PASSES)) for a in argv]
    proc = fx("pass", *argv, "-o", tmp_path / "out.py", cwd=tmp_path)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert phrase in one_error_line(proc)
    assert not (tmp_path / "out.py").exists()


def test_a_pass_that_raises_names_the_pass_and_changes_nothing(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def explode(gm):\n    raise ValueError('no luck')\n")
    proc = fx("pass", example_path("add_mul.py"), f"{bad}::explode", "--save-script", tmp_path / "s.json")
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "bad.py::explode" in line and "ValueError" in line and "bad.py:2" in line, line
    assert not (tmp_path / "s.json").exists()


def test_pass_appears_in_the_help():
    proc = fx("--help")
    assert "pass" in proc.stdout
    proc = fx("pass", "--help")
    assert proc.returncode == 0 and "--save-script" in proc.stdout and "--list" in proc.stdout
    proc = fx("apply", "--help")
    assert "--trust-passes" in proc.stdout and "--allow-changed-passes" in proc.stdout
