"""``fxstudio export MODEL -o OUT.pt2`` (and ``apply ... -o OUT.pt2``) as a user runs them: the edited
module through ``torch.export``, saved, checked in a fresh process, and what the user then does
with the file: ``torch.export.load`` in another fresh process, ``fxstudio inspect`` on it.

One export runs as a real ``fxstudio`` process while the others run through the same ``main`` in
the test process (each export verifies in a fresh process of its own); one more fresh ``python -c``
then loads every file written and compares it with plain torch.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fxstudio.resources import EXAMPLES_DIR

FXSTUDIO = [sys.executable, "-m", "fxstudio"]

QDQ_MODEL = '''
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers torch.ops.quantized_decomposed


class QDQ(torch.nn.Module):
    """A linear layer behind a quantize/dequantize pair, as a PT2E-converted graph calls them."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.05, 2, -128, 127, torch.int8)
        x = torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.05, 2, -128, 127, torch.int8)
        return self.lin(x)


def example_inputs():
    return (torch.linspace(-1, 1, 8).reshape(2, 4),)
'''

BRANCHY_MODEL = '''
import torch


@torch.fx.wrap
def sign_scale(x):
    if x.sum() > 0:  # data-dependent: symbolic_trace keeps the call as one node, torch.export cannot decide it
        return x * 2
    return -x


class Branchy(torch.nn.Module):
    def forward(self, x):
        return sign_scale(x + 1) + 1


def example_inputs():
    return (torch.ones(2, 3),)
'''

EDITS = {"format": "fxstudio.edits/1", "edits": [
    {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
    {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"},
    {"op": "replace_uses", "node": "add", "with": "relu"},
]}


def _env() -> dict:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen"}


def _start(args: list, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(FXSTUDIO + [str(a) for a in args], cwd=cwd, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _start_python(code: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-I", "-c", code], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _in_process(args: list, cwd: Path) -> subprocess.CompletedProcess:
    """``fxstudio ARGS`` through ``fxstudio.cli.main`` in this process (what the console script
    runs), with its stdout and stderr."""
    from fxstudio.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in args])
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every export of this file: the first as a real ``fxstudio`` process, the others through the
    same ``main`` in this process while it runs (each still verifies in a fresh process)."""
    work = tmp_path_factory.mktemp("pt2_cli")
    (work / "qdq_model.py").write_text(QDQ_MODEL)
    (work / "branchy.py").write_text(BRANCHY_MODEL)
    (work / "edits.json").write_text(json.dumps(EDITS))
    (work / "failed").mkdir()
    real = _start(["export", EXAMPLES_DIR / "two_linear.py", "-o", "two_linear.pt2"], work)
    done = {
        "refused": _in_process(["export", "branchy.py", "-o", work / "failed" / "branchy.pt2"], work),
        "apply": _in_process(["apply", EXAMPLES_DIR / "add_mul.py", "edits.json", "-o", "add_mul_edited.pt2"], work),
        # a document opened with torch.export, whose graph calls quantized_decomposed operators
        "qdq": _in_process(["export", "qdq_model.py", "--tracer", "export", "-o", "qdq.pt2"], work),
    }
    done["fx"] = _finish(real)
    return work, done


def test_export_to_pt2_prints_what_it_wrote_and_verifies(runs):
    work, done = runs
    proc = done["fx"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0] == f"wrote {work / 'two_linear.pt2'} (torch.export ExportedProgram; load it with torch.export.load)"
    assert lines[1].startswith("verified: torch.export.load gives outputs identical to the graph in memory [")
    assert "note: input shapes are fixed to the example inputs'" in proc.stdout
    assert (work / "two_linear.pt2").is_file()
    assert not [p for p in work.iterdir() if p.name.startswith(".fxstudio-export-")]


def test_apply_and_a_tracer_export_document_with_custom_ops_export_to_pt2(runs):
    work, done = runs
    for name in ("apply", "qdq"):
        assert done[name].returncode == 0, (name, done[name].stderr)
        assert "verified: torch.export.load gives outputs" in done[name].stdout
        assert done[name].stderr == ""
    assert ("note: loading the file needs `import torch.ao.quantization.fx._decomposed` before torch.export.load "
            "(it registers the quantized_decomposed operators the program calls)") in done["qdq"].stdout
    assert "import" not in done["apply"].stdout.replace("torch.export.load", "")


def test_the_files_load_in_a_fresh_python_and_match_plain_torch_and_reopen(runs):
    work, _ = runs
    code = textwrap.dedent(f"""
        import importlib, json, sys
        import torch
        sys.path[:0] = [{str(EXAMPLES_DIR)!r}, {str(work)!r}]
        import torch.ao.quantization.fx._decomposed  # what the export's note says loading qdq.pt2 needs
        result = {{}}
        def check(name, pt2, expected, inputs):
            got = torch.export.load(pt2).module()(*inputs)
            result[name] = bool(torch.allclose(got, expected, rtol=1e-5, atol=1e-6)) and got.shape == expected.shape
        two = importlib.import_module("two_linear")
        x = two.example_inputs()
        check("fx", "two_linear.pt2", two.TwoLinear()(*x), x)
        x = (torch.randn(2, 3),)  # the shape of add_mul's example input: torch.export fixed it
        check("apply", "add_mul_edited.pt2", torch.relu(x[0] + 5) * 10, x)
        qdq = importlib.import_module("qdq_model")
        x = qdq.example_inputs()
        check("qdq", "qdq.pt2", qdq.QDQ()(*x), x)
        print(json.dumps(result))
    """)
    check = _start_python(code, work)
    for name in ("two_linear.pt2", "add_mul_edited.pt2"):  # meanwhile: fxstudio opens the files it wrote
        inspected = _in_process(["inspect", name], work)
        assert inspected.returncode == 0 and "lint: ok" in inspected.stdout, inspected.stderr
    assert "relu" in inspected.stdout
    proc = _finish(check)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"fx": True, "apply": True, "qdq": True}


def test_a_module_torch_export_refuses_is_one_line_exit_1_and_no_file(runs):
    work, done = runs
    proc = done["refused"]
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("fxstudio: torch.export cannot export the edited module at node `sign_scale` (branchy.sign_scale):")
    assert "data-dependent" in err and "Traceback" not in proc.stderr and proc.stdout == ""
    assert list((work / "failed").iterdir()) == []


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder this process cannot write in: chmod for a user, a read-only tmpfs for root."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"root cannot be kept out of a folder without a read-only mount: {proc.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_an_unwritable_folder_is_one_line_exit_2(read_only_folder, tmp_path):
    proc = _in_process(["export", EXAMPLES_DIR / "add_mul.py", "-o", read_only_folder / "out.pt2"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"fxstudio: {read_only_folder / 'out.pt2'}: the folder {read_only_folder} is not writable.\n"
    assert list(read_only_folder.iterdir()) == []


def test_a_full_disk_says_so_and_keeps_the_old_file(tmp_path):
    from fxstudio.core.errors import FxStudioError
    from fxstudio.core.export import export_pt2
    from fxstudio.core.loading import load_model

    disk = tmp_path / "small_disk"
    disk.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a 64k tmpfs to fill up (needs root): {proc.stderr.strip()}")
    try:
        (tmp_path / "big.py").write_text(textwrap.dedent("""
            import torch

            class Big(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = torch.nn.Linear(160, 160)  # ~100 KiB of weights: cannot fit

                def forward(self, x):
                    return self.lin(x) * 2

            def example_inputs():
                return (torch.ones(2, 160),)
        """))
        out = disk / "out.pt2"
        export_pt2(load_model(EXAMPLES_DIR / "add_mul.py"), out, verify=False)
        before = {p.name: p.read_bytes() for p in disk.iterdir()}
        with pytest.raises(FxStudioError) as caught:
            export_pt2(load_model(tmp_path / "big.py"), out)
        assert caught.value.exit_code == 2
        assert "disk full" in str(caught.value) and len(str(caught.value).splitlines()) == 1
        assert {p.name: p.read_bytes() for p in disk.iterdir()} == before
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_bad_pt2_targets_exit_2(tmp_path, capsys):
    from fxstudio.cli import main

    model = str(EXAMPLES_DIR / "add_mul.py")
    assert main(["export", model, "-o", str(tmp_path / "no" / "such" / "dir.pt2")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "folder.pt2").mkdir()
    assert main(["export", model, "-o", str(tmp_path / "folder.pt2")]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["export", model, "-o", str(tmp_path / "out.txt")]) == 2
    assert "must be a .py file (e.g. model_edited.py), or a .pt2 file" in capsys.readouterr().err
    assert torch.__version__  # the in-process CLI shares this interpreter's torch
