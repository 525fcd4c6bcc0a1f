"""``fxstudio export MODEL -o OUT.py`` and ``fxstudio apply MODEL EDITS.json -o OUT.py`` as a user runs
them: exit codes, messages, and the files they leave (or do not leave) behind."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

from fxstudio.cli import main
from fxstudio.resources import example_path


def test_export_command_in_a_real_process(tmp_path):
    out = tmp_path / "wrapped_export.py"
    proc = subprocess.run(
        [sys.executable, "-m", "fxstudio", "export", str(example_path("wrapped_fn.py")), "-o", out.name],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "verified: outputs identical to the graph in memory" in proc.stdout
    assert "note: the file needs the model file wrapped_fn.py importable" in proc.stdout
    # The weights file is named by its content hash, and the .py names it.
    weights = [p.name for p in tmp_path.glob("wrapped_export.weights.*.pt")]
    assert out.exists() and len(weights) == 1 and f'WEIGHTS_FILE = "{weights[0]}"' in out.read_text()
    assert "Traceback" not in proc.stderr


def test_apply_with_output_replays_exports_and_names_the_script(tmp_path, capsys):
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
        {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"},
        {"op": "replace_uses", "node": "add", "with": "relu"},
    ]}))
    out = tmp_path / "add_mul_edited.py"
    assert main(["apply", str(example_path("add_mul.py")), str(script), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "verified: outputs identical" in printed
    text = out.read_text()
    assert "# Edit script: edits.json (3 edits applied)." in text
    assert "relu = torch.relu(add)" in text and "mul = relu * 10" in text


def test_bad_targets_exit_2_with_a_message_and_no_traceback(tmp_path, capsys):
    model = str(example_path("add_mul.py"))
    assert main(["export", model, "-o", model]) == 2
    assert "refusing to overwrite the model file" in capsys.readouterr().err
    assert main(["export", model, "-o", str(tmp_path / "out.txt")]) == 2
    assert "must be a .py file" in capsys.readouterr().err
    assert main(["export", model, "-o", str(tmp_path / "no" / "such" / "dir.py")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["export", model]) == 2
    assert "-o OUT.py is required" in capsys.readouterr().err
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": []}))
    assert main(["apply", model, str(script), "-o", str(script.with_suffix(".py")), "--json", "--no-verify"]) == 0
    capsys.readouterr()
    assert main(["apply", model, str(script), "-o", "/proc/fxstudio_out.py"]) == 2
    assert "cannot write" in capsys.readouterr().err
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:2] == ["edits.json", "edits.py"] and len(names) == 3
    assert re.fullmatch(r"edits\.weights\.[0-9a-f]{16}\.pt", names[2])


def test_a_graph_that_fails_verification_exits_1_and_writes_nothing(tmp_path, capsys):
    model = tmp_path / "pid_scaled.py"
    model.write_text(textwrap.dedent('''
        import os
        import torch
        from torch import nn

        def by_process(x):
            return x * os.getpid()

        torch.fx.wrap("by_process")

        class PidScaled(nn.Module):
            def forward(self, x):
                return by_process(x)

        def example_inputs():
            return (torch.ones(3),)
    '''))
    assert main(["export", str(model), "-o", str(tmp_path / "pid_export.py")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fxstudio: output differs between the exported file and the graph")
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pid_scaled.py"]
