"""Every bad input of issue 2 gets a one-paragraph message, exit status 2 and no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fxstudio.cli import main
from fxstudio.resources import EXAMPLES_DIR

FXSTUDIO = Path(sys.executable).parent / "fxstudio"


class MarkerPayload:
    """Unpickling this object opens (creates) the marker file: code running from a pickle."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def refused(capsys, *argv) -> str:
    code = main(["inspect", *map(str, argv)])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and err.startswith("fxstudio: ") and "Traceback" not in err
    assert err.count("\n") == 1, err  # one paragraph
    return err


def py(tmp_path, name, text):
    path = tmp_path / name
    path.write_text("import torch\nfrom torch import nn\n" + text)
    return path


def test_missing_file_and_unknown_extension(capsys, tmp_path):
    err = refused(capsys, tmp_path / "nope.py")
    assert f"{tmp_path / 'nope.py'}: no such file." in err
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"\x08\x01")
    err = refused(capsys, onnx)
    assert "unknown model file type '.onnx'" in err and ".py" in err and ".pt2" in err


def test_syntax_error_and_import_failure(capsys, tmp_path):
    err = refused(capsys, py(tmp_path, "broken.py", "class Net(nn.Module)\n    pass\n"))
    assert "broken.py: syntax error at line 3" in err
    err = refused(capsys, py(tmp_path, "raises.py", "import math\nVALUE = math.sqrt(-1)\n"))
    assert "running the file raised ValueError at line 4 (`VALUE = math.sqrt(-1)`): math domain error" in err


def test_no_module_several_candidates_and_constructor_arguments(capsys, tmp_path):
    err = refused(capsys, py(tmp_path, "empty_model.py", "X = 1\n"))
    assert "empty_model.py defines no nn.Module" in err
    two = "class A(nn.Module):\n    def forward(self, x):\n        return x\nclass B(A):\n    pass\n"
    err = refused(capsys, py(tmp_path, "pair.py", two))
    assert "several nn.Module classes" in err and "pair.py::A, pair.py::B" in err
    needs = "class Net(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n"
    err = refused(capsys, py(tmp_path, "needs_args.py", needs))
    assert "needs constructor arguments (Net(width))" in err and "get_model()" in err


def test_untraceable_forward(capsys):
    err = refused(capsys, EXAMPLES_DIR / "data_branch.py")
    path = EXAMPLES_DIR / "data_branch.py"
    line = path.read_text().splitlines().index("        if positive:") + 1
    assert f"{path}:{line} in forward (`if positive:`)" in err
    assert "--concrete-arg positive=VALUE" in err


def test_truncated_pt2_and_random_bytes_pt(capsys, tmp_path):
    src = torch.export.export(torch.nn.Linear(3, 2), (torch.ones(1, 3),))
    full = tmp_path / "full.pt2"
    torch.export.save(src, full)
    cut = tmp_path / "cut.pt2"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    err = refused(capsys, cut)
    assert "cut.pt2" in err and "truncated" in err
    noise = tmp_path / "noise.pt"
    noise.write_bytes(bytes(range(256)) * 8)
    err = refused(capsys, noise)
    assert "noise.pt: not a PyTorch file" in err


def test_state_dict_is_weights_not_a_model(capsys, tmp_path):
    path = tmp_path / "weights.pth"
    torch.save(torch.nn.Linear(3, 2).state_dict(), path)
    err = refused(capsys, path, "--input-shape", "1,3")
    assert "this file holds weights, not a model" in err and "'weight'" in err


def test_code_running_pickle_needs_trust(capsys, tmp_path):
    marker = tmp_path / "marker.txt"
    payload = tmp_path / "payload.pt"
    torch.save(MarkerPayload(marker), payload)
    proc = subprocess.run(
        [str(FXSTUDIO), "inspect", str(payload), "--input-shape", "1,3"],
        capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "weights_only=True" in proc.stderr and "--trust" in proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists()
    err = refused(capsys, payload, "--input-shape", "1,3", "--trust")
    assert marker.exists()
    assert "payload.pt: this file holds a TextIOWrapper, not an nn.Module" in err


def test_bad_option_values(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["inspect", str(EXAMPLES_DIR / "add_mul.py"), "--input-shape", "1,a"])
    assert info.value.code == 2
    assert "'1,a' is not a shape" in capsys.readouterr().err
    err = refused(capsys, EXAMPLES_DIR / "data_branch.py", "--concrete-arg", "positive")
    assert "expected NAME=VALUE" in err
    err = refused(capsys, EXAMPLES_DIR / "data_branch.py", "--concrete-arg", "positive=open('x')")
    assert "--concrete-arg positive=open('x')" in err


@pytest.mark.parametrize("argv,words", [
    (["inspect", str(EXAMPLES_DIR / "relu_add.py"), "--input-shape", "100000,100000,100"], "elements is more than"),
    (["inspect"], "required: MODEL"),
    (["compare", "a.py", "b.json", "--repeats", "many"], "invalid int value"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_argument_errors_are_one_line(argv, words):
    """argparse's errors too: one line naming the fix, exit 2, not the usage block."""
    proc = subprocess.run([str(FXSTUDIO), *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio") and words in lines[0] and "--help" in lines[0], proc.stderr
